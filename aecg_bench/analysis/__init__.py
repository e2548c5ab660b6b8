"""Read a results tree into a tidy table, aggregate it with honest statistics, render tables and figures."""

from aecg_bench.analysis.load import load
from aecg_bench.analysis.stats import paired_difference, summarize

__all__ = ["load", "paired_difference", "summarize"]
