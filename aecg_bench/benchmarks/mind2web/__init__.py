"""Mind2Web in MindAct's offline multiple-choice setting (EDV Table 2). Docs: docs/benchmarks/mind2web.md."""

from aecg_bench.benchmarks.mind2web.benchmark import Mind2WebBenchmark, Mind2WebEnv

__all__ = ["Mind2WebBenchmark", "Mind2WebEnv"]
