"""Import litellm once, offline-safe, with the embedded local model registered.

litellm fetches a cost map over the network at import unless told not to, and
takes seconds to import, so it is imported lazily and only by code that calls a
real provider (the mock model never imports it).
"""

from __future__ import annotations

import os
import threading
from typing import Any

_lock = threading.Lock()
_litellm: Any = None

LOCAL_PROVIDER = "aecg-local"


def import_litellm() -> Any:
    global _litellm
    if _litellm is not None:
        return _litellm
    with _lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            import litellm

            from aecg_bench.llm.local import LocalModelHandler

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            litellm.drop_params = False
            litellm.turn_off_message_logging = True  # prompts stay out of litellm's logging objects
            litellm.disable_hf_tokenizer_download = True  # token counting must never reach the hub
            if not any(p.get("provider") == LOCAL_PROVIDER for p in litellm.custom_provider_map):
                litellm.custom_provider_map = [
                    *litellm.custom_provider_map,
                    {"provider": LOCAL_PROVIDER, "custom_handler": LocalModelHandler()},
                ]
                from litellm.utils import custom_llm_setup

                custom_llm_setup()
            _litellm = litellm
    return _litellm
