"""Which runs of a sweep start first: the longest, so the last ones left do not leave cores idle.

A sweep's launcher hands its runs to `n_jobs` workers in the order it is given.
When the longest run comes last it runs alone at the end (issue 32:
`edv_epochs2`, the two-epoch build of EDV's Figure 4, ran its last ~8 minutes
alone on one of two cores). Longest-processing-time-first is the classic
remedy for that tail. The estimate of a run, in seconds:

- a run this results root has records of: what is left of it, at the mean
  seconds per item its records took (a finished run is 0, so a rerun of a
  sweep starts with the runs it still has to do);
- any other: its planned items (`planned_items`) at the median seconds per
  item of the runs with records, or, when none has any, the item count alone.

Ties keep the sweep's order (a stable sort), so nothing moves without a reason.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aecg_bench.results_format import RUN_JSON, SAMPLES, latest_by_position
from aecg_bench.types import Status


@dataclass(frozen=True)
class Estimate:
    planned_items: float  # from the config alone
    left_items: float | None = None  # from the run's own records, when it has some
    seconds_per_item: float | None = None


def planned_items(raw: dict[str, Any]) -> float:
    """The run's stream length as far as the config tells without loading data: the eval samples
    (`protocol.limit`, 1 when unset: runs without a limit tie) plus, under build_then_freeze,
    `build_epochs` passes over a build split taken to be as long."""
    p = raw.get("protocol") or {}
    evals = float(p.get("limit") or 1)
    if p.get("mode") == "build_then_freeze":
        return evals * (1 + int(p.get("build_epochs") or 1))
    return evals


def run_dir(raw: dict[str, Any]) -> Path:
    """Where the run of this resolved config writes (runner/build.py's rule)."""
    from aecg_bench.runner.build import memory_label
    from aecg_bench.runner.config import parse_run_config
    from aecg_bench.runner.identity import results_dir

    cfg = parse_run_config(raw)
    return results_dir(
        Path(cfg.runtime.results_root),
        experiment=cfg.experiment_name,
        benchmark=cfg.benchmark.tag,
        framework=cfg.framework.tag,
        memory=memory_label(cfg),
        model=cfg.model.label,
        seed=cfg.seed,
    )


def from_records(path: Path) -> tuple[float, float] | None:
    """(items left, mean seconds per item) from a run directory's run.json and records; None when it
    has no records to go by (never started, or unreadable: the sweep itself will say so)."""
    try:
        header = json.loads((path / RUN_JSON).read_text(encoding="utf-8"))
        rows = [json.loads(line) for line in (path / SAMPLES).read_text(encoding="utf-8").splitlines() if line]
        seconds = [float(r["seconds"]) for r in rows]
        done = sum(r["status"] != Status.INFRA_ERROR for r in latest_by_position(rows).values())
        n_items = int(header["n_items"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not seconds:
        return None
    return max(n_items - done, 0), statistics.fmean(seconds)


def estimate(raw: dict[str, Any]) -> Estimate:
    planned = planned_items(raw)
    try:
        seen = from_records(run_dir(raw))
    except Exception:  # a config this sweep point cannot parse: its run reports that itself
        seen = None
    if seen is None:
        return Estimate(planned)
    return Estimate(planned, *seen)


def seconds(estimates: Sequence[Estimate]) -> list[float]:
    """Each run's estimated seconds (see the module doc)."""
    rates = [e.seconds_per_item for e in estimates if e.seconds_per_item is not None]
    rate = statistics.median(rates) if rates else 1.0
    return [
        e.left_items * e.seconds_per_item
        if e.left_items is not None and e.seconds_per_item is not None
        else e.planned_items * rate
        for e in estimates
    ]


def longest_first(costs: Sequence[float]) -> list[int]:
    """Indices of `costs`, largest first; equal costs keep their order."""
    return sorted(range(len(costs)), key=lambda i: -costs[i])
