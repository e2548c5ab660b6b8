"""Multi-Mission Tool Bench with its decision-tree evaluator (EDV Table 3). Docs: docs/benchmarks/mmtb.md."""

from aecg_bench.benchmarks.mmtb.benchmark import MmtbBenchmark, MmtbEnv

__all__ = ["MmtbBenchmark", "MmtbEnv"]
