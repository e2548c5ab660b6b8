"""Which llama.cpp build this process loads: the portable x86-64-v3 one, or its AVX-512 VNNI variant.

`make setup` builds llama-cpp-python's libraries twice, each with fixed flags and never the build
machine's (scripts/setup/llama_flags.sh): the x86-64-v3 baseline that every supported CPU runs,
installed as the package, and a variant adding AVX-512 (F, CD, VL, DQ, BW) and AVX-512 VNNI, kept in
the venv's `lib/llama-cpp-avx512/`. The variant evaluates prompts ~25% faster where the CPU has those
instructions (docs/infra/speed.md). llama-cpp-python loads its libraries from `$LLAMA_CPP_LIB_PATH`
when that is set, so the choice is made here, from this CPU's flags, before llama_cpp is first
imported; child processes inherit it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

BASELINE = "x86-64-v3"
VARIANT = "avx512-vnni"
# /proc/cpuinfo flags the variant's code uses: the baseline's and GGML_AVX512 + GGML_AVX512_VNNI's
VARIANT_NEEDS = frozenset(
    {"avx", "avx2", "fma", "f16c", "avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw", "avx512_vnni"}
)
VARIANT_DIR = Path(sys.prefix) / "lib" / "llama-cpp-avx512"
OPT_OUT_ENV = "AECG_LLAMA_BASELINE"  # set (to anything but 0) to always load the baseline
LIB_ENVS = ("LLAMA_CPP_LIB_PATH", "MTMD_CPP_LIB")  # llama-cpp-python's library overrides


def cpu_flags(cpuinfo: str) -> set[str]:
    """The instruction-set flags of /proc/cpuinfo's first `flags` line."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name, which every speed figure is reported with ("unknown CPU" where unreadable)."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def host_cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """This machine's CPU flags; none where they cannot be read (then only the baseline is chosen)."""
    try:
        return cpu_flags(cpuinfo.read_text())
    except OSError:
        return set()


def variant_libs(flags: set[str], variant_dir: Path, environ: MutableMapping[str, str]) -> Path | None:
    """The variant's library directory if this CPU runs it and no other build was asked for."""
    if environ.get(OPT_OUT_ENV, "0") not in ("", "0") or any(environ.get(k) for k in LIB_ENVS):
        return None
    if not flags >= VARIANT_NEEDS or not (variant_dir / "libllama.so").is_file():
        return None
    return variant_dir


def select_llama_build(
    environ: MutableMapping[str, str] = os.environ, flags: set[str] | None = None, variant_dir: Path = VARIANT_DIR
) -> None:
    """Point llama-cpp-python at the variant when this CPU runs it. A no-op once llama_cpp is
    imported (its libraries are loaded by then) or when the user set a build."""
    if "llama_cpp" in sys.modules:
        return
    libs = variant_libs(host_cpu_flags() if flags is None else flags, variant_dir, environ)
    if libs is not None:
        for key in LIB_ENVS:
            environ[key] = str(libs)


def loaded_build(environ: MutableMapping[str, str] = os.environ, variant_dir: Path = VARIANT_DIR) -> str:
    """The build this process loads (or loaded): `avx512-vnni`, `x86-64-v3`, or the directory a user set."""
    path = environ.get("LLAMA_CPP_LIB_PATH")
    if not path:
        return BASELINE
    return VARIANT if Path(path) == variant_dir else path


def llama_cpp_build() -> str:
    """The build this process loads llama.cpp from, choosing it now if llama_cpp is not imported yet
    (the same choice the embedded model's first load makes)."""
    select_llama_build()
    return loaded_build()


def baseline_env(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """`environ` for a child process that must load the baseline (e.g. to write pinned bytes)."""
    return {k: v for k, v in environ.items() if k not in LIB_ENVS}
