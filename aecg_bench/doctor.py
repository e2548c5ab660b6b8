"""`python -m aecg_bench.doctor`: check that a fresh install can run offline;
`python -m aecg_bench.doctor model=<name> [overrides]`: check that a config's models answer.

With overrides, it composes the config as `python -m aecg_bench.run` would and
sends each configured model one tiny request (and the embedding server, with
`embedder.backend=qwen3_embedding`, one tiny text): one line per endpoint, with
the URL, which key variable it sends (never its value) and the answer or the
error and what to set. Exits 1 if one does not answer, 2 on a config error.

Without overrides it prints which llama.cpp build this CPU loads (the portable baseline or its AVX-512
VNNI variant, llm/cpu_build.py), the CPU features it was built to use, and checks the
host has them (a natively built llama.cpp dies with "Illegal instruction" on
another CPU), loads the embedded model and asks it one constrained question,
loads the packaged embedder, and checks for Java (ScienceWorld). Prints one
line per check; exits non-zero if a required one fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

from aecg_bench.llm.cpu_build import BASELINE, VARIANT, host_cpu_flags
from aecg_bench.llm.spec import ModelSpec

# llama.cpp's system-info names -> /proc/cpuinfo flag names (x86-64).
_CPUINFO_FLAG = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX_VNNI": "avx_vnni",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}


def runtime_cpu_features(system_info: str) -> list[str]:
    """Instruction-set extensions llama.cpp reports as compiled in (`AVX2 = 1`), not its other switches."""
    names = {m.group(1) for m in re.finditer(r"([A-Z0-9_]+) = 1", system_info)}
    return sorted(n for n in names if re.match(r"(SSE|SSSE|AVX|AMX|F16C|FMA|BMI|NEON|SVE)", n))


def missing_host_features(features: list[str], host_flags: set[str]) -> list[str]:
    """Runtime features this CPU lacks: each one is an "Illegal instruction" waiting to happen."""
    return [f for f in features if f in _CPUINFO_FLAG and _CPUINFO_FLAG[f] not in host_flags]


def _check_cpu_features() -> str:
    # In a child process: a runtime built for another CPU may die with SIGILL as it loads. The child
    # chooses its build as the harness does (llm/cpu_build.py: the AVX-512 VNNI variant where it runs).
    probe = (
        "from aecg_bench.llm.cpu_build import llama_cpp_build; print(llama_cpp_build(), flush=True); "
        "import llama_cpp; print(llama_cpp.llama_print_system_info().decode(errors='replace'))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    build, _, info = out.stdout.partition("\n")
    if out.returncode != 0:
        why = "Illegal instruction" if out.returncode == -4 else (out.stderr.strip().splitlines() or ["?"])[-1]
        raise RuntimeError(f"the embedded runtime ({build or 'unknown'} build) does not load ({why}); {_advice(build)}")
    features = runtime_cpu_features(info)
    host = host_cpu_flags()
    missing = missing_host_features(features, host) if host else []
    if missing:
        raise RuntimeError(
            f"the embedded runtime uses {', '.join(missing)}, which this CPU lacks; rebuild it portably: "
            "rm -f .venv/.llama-cpp-portable && make setup"
        )
    return f"runtime ({build} build) uses " + (" ".join(features) or "no SIMD extensions")


def _advice(build: str) -> str:
    """What to do when a llama.cpp build does not load, by which build it was (llm/cpu_build.py)."""
    rebuild = "rebuild it portably: rm -f .venv/.llama-cpp-portable && make setup"
    if build == VARIANT:
        return f"AECG_LLAMA_BASELINE=1 loads the portable build; or {rebuild}"
    if build and build != BASELINE:
        return "it is the LLAMA_CPP_LIB_PATH you set: unset it to load the installed builds"
    return rebuild


def _check_local_model() -> str:
    from aecg_bench.llm import LLMClient, ModelSpec

    spec = ModelSpec(
        label="local", model="aecg-local/smollm2-135m-instruct-q8_0", native_tools=False, grammar=True, max_tokens=8
    )
    client = LLMClient({"local": spec}, {"default": "local"})
    start = time.perf_counter()
    out = client.complete(
        [{"role": "user", "content": "Is the sky blue? Answer yes or no."}], grammar='root ::= "yes" | "no"'
    )
    return f"answered {out.text!r} in {time.perf_counter() - start:.2f}s"


def _check_embedder() -> str:
    from aecg_bench.llm.embeddings import Embedder

    vecs = Embedder("minilm").embed(["pick up the ball", "grasp the ball"])
    return f"dim {vecs.shape[1]}, similarity {float(vecs[0] @ vecs[1]):.2f}"


def _check_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java not found (ScienceWorld needs Java 17)")
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    return (out.stderr or out.stdout).splitlines()[0]


CHECKS = {
    "cpu features": (_check_cpu_features, True),
    "embedded model": (_check_local_model, True),
    "embedder": (_check_embedder, True),
    "java": (_check_java, False),
}


PROBE = [{"role": "user", "content": "Reply with the word OK."}]
PROBE_TIMEOUT_S = 30.0  # a silent server costs at most this long per endpoint


def describe_endpoint(spec: ModelSpec) -> str:
    """Where a model's calls go and which key variable they carry: never the key itself."""
    from aecg_bench.llm.client import endpoint_of

    key = "no key" if not spec.api_key_env else f"key from ${spec.api_key_env}"
    if spec.api_key_env and not os.environ.get(spec.api_key_env):
        key += " (not set)"
    return f"{spec.model} at {endpoint_of(spec) or 'this process'}, {key}"


def check_model(spec: ModelSpec) -> str:
    """One tiny request straight to the provider (no cache, no retry); raises with the reason."""
    from aecg_bench.llm.client import endpoint_of, unreachable_line
    from aecg_bench.llm.mock import MockProvider
    from aecg_bench.llm.providers import ConnectionFailure, LiteLLMProvider, Request

    provider = MockProvider() if spec.provider == "mock" else LiteLLMProvider()
    probe = spec.model_copy(update={"timeout_s": min(spec.timeout_s, PROBE_TIMEOUT_S)})
    start = time.perf_counter()
    try:
        result = provider(probe, Request(messages=PROBE, params={"temperature": 0.0, "max_tokens": 8, "seed": 0}))
    except ConnectionFailure as exc:
        raise RuntimeError(unreachable_line(spec, endpoint_of(spec) or spec.model, exc.reason, then="")) from None
    text = " ".join(result.text.split())[:40] or f"{len(result.tool_calls)} tool call(s)"
    return f"answered {text!r} in {time.perf_counter() - start:.2f}s"


def check_embedder(model: str, api_base: str | None, api_key_env: str | None, dim: int) -> str:
    from aecg_bench.llm.embeddings import RemoteEmbedding, remote_vectors

    start = time.perf_counter()
    vecs = remote_vectors(RemoteEmbedding(model, api_base, api_key_env, dim), ["ok"])
    return f"answered a {vecs.shape[1]}-dim vector in {time.perf_counter() - start:.2f}s"


def check_endpoints(overrides: list[str]) -> int:
    """`doctor model=<name> ...`: every model of the composed config, and its embedding server."""
    from aecg_bench.errors import AecgBenchError, one_line
    from aecg_bench.run import check_overrides, precheck, secret_envs
    from aecg_bench.runner.config import parse_run_config
    from aecg_bench.runner.identity import Redactor

    try:
        check_overrides(overrides)
        raw = precheck(overrides)
        cfg = parse_run_config(raw)
        specs = cfg.model.specs()
    except AecgBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    redact = Redactor(secret_envs(raw))
    checks = [(f"model {label} ({describe_endpoint(spec)})", check_model, (spec,)) for label, spec in specs.items()]
    e = cfg.embedder
    if e.backend == "qwen3_embedding":
        key = f"key from ${e.api_key_env}" if e.api_key_env else "no key"
        where = f"embedder ({e.model} at {e.api_base or 'its provider'}, {key})"
        checks.append((where, check_embedder, (e.model, e.api_base, e.api_key_env, e.dim)))
    failed = 0
    for name, check, args in checks:
        try:
            line = f"ok    {name}: {check(*args)}"
        except Exception as exc:  # every failure is this endpoint's one line
            failed += 1
            line = f"FAIL  {name}: {one_line(exc)}"
        print(redact(line))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    overrides = sys.argv[1:] if argv is None else argv
    if overrides:
        return check_endpoints(overrides)
    failed = 0
    for name, (check, required) in CHECKS.items():
        try:
            print(f"ok    {name}: {check()}")
        except Exception as exc:
            failed += int(required)
            print(f"{'FAIL' if required else 'warn'}  {name}: {exc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
