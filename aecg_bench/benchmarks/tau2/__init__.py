"""tau2-bench: mock, airline and retail domains with tau2's tools, user simulator and reward."""

from aecg_bench.benchmarks.tau2.benchmark import Tau2Benchmark

__all__ = ["Tau2Benchmark"]
