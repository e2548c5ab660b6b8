"""ScienceWorld in AgentBoard's setup: data and benchmark (`benchmark`), the JVM (`simulator`,
`pool`), one task's environment (`env`), subgoal scoring (`subgoals`), action hint (`prompt`)."""

from aecg_bench.benchmarks.scienceworld.benchmark import ScienceWorldBenchmark

__all__ = ["ScienceWorldBenchmark"]
