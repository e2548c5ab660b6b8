"""The model layer: one client (litellm underneath), its cache, accounting and embeddings."""

import os

# litellm fetches its cost map over the network when imported unless told not to; whichever
# module imports it first, this package has already been imported.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from aecg_bench.llm.client import Completion, LLMClient
from aecg_bench.llm.spec import ModelSpec, RetryPolicy
from aecg_bench.llm.usage import Usage, UsageMeter

__all__ = ["Completion", "LLMClient", "ModelSpec", "RetryPolicy", "Usage", "UsageMeter"]
