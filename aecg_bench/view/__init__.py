"""The run viewer: `python -m aecg_bench.view results/...` serves a local page over a results folder."""
