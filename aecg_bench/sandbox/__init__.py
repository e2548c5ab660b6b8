"""Run untrusted Python in isolation: `run_python(source, stdin=..., limits=Limits(...))`.

One job: execute generated code so that nothing it does reaches the machine,
the network or the calling process, and every run is bounded. Any benchmark
that runs model-written code uses it (MBPP-Plus does, through
`aecg_bench.sandbox.functions`). See docs/infra/sandbox.md for what isolation is
achieved where, and the fallbacks.
"""

from aecg_bench.sandbox.limits import Limits
from aecg_bench.sandbox.runner import SandboxResult, run_python

__all__ = ["Limits", "SandboxResult", "run_python"]
