"""The EDV reproduction's plan: its experiments, their smoke overrides, and the paper preset's size and price.

`make reproduce-edv` runs conf/experiment/edv_<name>.yaml for every name in
EXPERIMENTS. The smoke preset runs each on toy_tools (one seed, two train and
two test tasks, the embedded-model pool); the dry run scales the smoke runs'
measured usage per build task and per test task to the paper's benchmarks.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

EXPERIMENTS = (
    "table1",
    "table2",
    "table3",
    "table4",
    "table5",
    "contamination",
    "fig4_epochs",
    "fig5_topk",
    "fig6_threshold",
)
TAU2_RETAIL = ("tau2_retail",)
# The paper's benchmarks of each experiment (the smoke runs toy_tools in their place).
PAPER_BENCHMARKS: dict[str, tuple[str, ...]] = {
    "table1": ("tau2_airline", "tau2_retail", "tau2_telecom"),
    "table2": ("mind2web_cross_task", "mind2web_cross_website", "mind2web_cross_domain"),
    "table3": ("mmtb",),
    **{
        name: TAU2_RETAIL
        for name in ("table4", "table5", "contamination", "fig4_epochs", "fig5_topk", "fig6_threshold")
    },
}
# (build tasks, test tasks). tau2: the train/test halves of the task-level hash split
# (train_fraction 0.5; counted from the shared data: airline 22/28, retail 69/45, telecom
# 61/53). Mind2Web: train 1,009; test sets 252 / 177 / 912 (docs/benchmarks/mind2web.md). MMTB:
# not known here (pass --size mmtb=BUILD,EVAL).
PAPER_SIZES: dict[str, tuple[int, int] | None] = {
    "tau2_airline": (22, 28),
    "tau2_retail": (69, 45),
    "tau2_telecom": (61, 53),
    "mind2web_cross_task": (1009, 252),
    "mind2web_cross_website": (1009, 177),
    "mind2web_cross_domain": (1009, 912),
    "mmtb": None,
}
SEEDS = 3
# Dollars per million input / output tokens for every pool model: MiniMax-M2.1's list price as
# litellm's MiniMax provider page documents it ($0.30 / $1.20); an assumption for the other two.
DEFAULT_PRICE = (0.30, 1.20)


def smoke_overrides(name: str) -> list[str]:
    """Command-line overrides that turn conf/experiment/edv_<name>.yaml into its smoke run."""
    out = ["preset=edv_smoke", "benchmark=toy_tools", "seed=0", f"experiment_name=edv_{name}-smoke"]
    if name == "table3":
        out.append("protocol.split=test")  # MMTB's held-out half; toy_tools has train/test
    if name == "contamination":
        # beside toy_tools, the procedures benchmark: a bank that fills with the embedded model, and injected
        # wrong procedures of its own devices (conf/preset/edv_smoke.yaml, docs/benchmarks/procedures.md)
        out[1] = "benchmark=toy_tools,procedures"
    if name == "fig4_epochs":
        # two points show the curve's path (a second epoch builds on the first's bank); epochs 1-4 took
        # 14.4 of the smoke's first 15.6 minutes (docs/infra/speed.md), 3 and 4 add no code path
        out.append("protocol.build_epochs=1,2")
    return out


def parse_sizes(items: list[str]) -> dict[str, tuple[int, int] | None]:
    """`BENCH=BUILD,EVAL` flags over PAPER_SIZES; a bad one raises ValueError naming it."""
    sizes = dict(PAPER_SIZES)
    for item in items:
        bench, _, value = item.partition("=")
        try:
            build, ev = (int(v) for v in value.split(","))
        except ValueError:
            raise ValueError(f"bad --size {item!r}: expected BENCH=BUILD,EVAL, e.g. mmtb=500,500") from None
        sizes[bench] = (build, ev)
    return sizes


def estimate(
    root: Path,
    experiments: list[str] | tuple[str, ...],
    *,
    price: tuple[float, float],
    sizes: dict[str, tuple[int, int] | None] | None = None,
) -> pd.DataFrame:
    """Per experiment, run (memory x model label) and paper benchmark: tasks, calls, tokens, dollars."""
    from aecg_bench.analysis.load import load

    sizes = sizes if sizes is not None else PAPER_SIZES
    rows = []
    for name in experiments:
        df = load(root / f"edv_{name}-smoke")
        if df.empty:
            continue
        for (memory, model), run in df.groupby(["memory", "model"], sort=True):
            per: dict[str, dict[str, float]] = {}
            for phase in ("build", "eval"):
                part = run[run["phase"] == phase]
                n = max(len(part), 1)
                per[phase] = {
                    "calls": float(part["calls"].sum()) / n,
                    "in": float(part["input_tokens"].sum()) / n,
                    "out": float(part["output_tokens"].sum()) / n,
                    "epochs": float(part["epoch"].max() + 1) if len(part) else 0.0,
                }
            for bench in PAPER_BENCHMARKS[name]:
                size = sizes.get(bench)
                if size is None:
                    rows.append(
                        {
                            "experiment": name,
                            "memory": memory,
                            "model": model,
                            "benchmark": bench,
                            "tasks": float("nan"),
                            "calls": 0,
                            "tokens": 0,
                            "dollars": float("nan"),
                        }
                    )
                    continue
                n_build = SEEDS * size[0] * per["build"]["epochs"]
                n_eval = SEEDS * size[1]
                calls = n_build * per["build"]["calls"] + n_eval * per["eval"]["calls"]
                tin = n_build * per["build"]["in"] + n_eval * per["eval"]["in"]
                tout = n_build * per["build"]["out"] + n_eval * per["eval"]["out"]
                rows.append(
                    {
                        "experiment": name,
                        "memory": memory,
                        "model": model,
                        "benchmark": bench,
                        "tasks": n_build + n_eval,
                        "calls": calls,
                        "tokens": tin + tout,
                        "dollars": (tin * price[0] + tout * price[1]) / 1e6,
                    }
                )
    return pd.DataFrame(rows)
