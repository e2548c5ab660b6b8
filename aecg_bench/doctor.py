"""`python -m aecg_bench.doctor`: check that a fresh install can run offline.

Prints which llama.cpp build this CPU loads (the portable baseline or its AVX-512
VNNI variant, llm/cpu_build.py), the CPU features it was built to use, and checks the
host has them (a natively built llama.cpp dies with "Illegal instruction" on
another CPU), loads the embedded model and asks it one constrained question,
loads the packaged embedder, and checks for Java (ScienceWorld). Prints one
line per check; exits non-zero if a required one fails.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time

from aecg_bench.llm.cpu_build import BASELINE, VARIANT, host_cpu_flags

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


def main() -> int:
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
