"""Benchmarks behind the Benchmark/Environment contract, one module or package each."""
