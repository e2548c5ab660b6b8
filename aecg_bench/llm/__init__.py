"""The model layer: one client (litellm underneath), its cache, accounting and embeddings."""

from aecg_bench.llm.client import Completion, LLMClient
from aecg_bench.llm.spec import ModelSpec, RetryPolicy
from aecg_bench.llm.usage import Usage, UsageMeter

__all__ = ["Completion", "LLMClient", "ModelSpec", "RetryPolicy", "Usage", "UsageMeter"]
