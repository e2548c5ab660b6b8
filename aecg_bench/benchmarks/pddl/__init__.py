"""AgentBoard's PDDL benchmark: parser, STRIPS engine, AgentBoard-style text environment."""

from aecg_bench.benchmarks.pddl.benchmark import PddlBenchmark

__all__ = ["PddlBenchmark"]
