"""The warmup_snapshot protocol for AECG's mechanism tests (paper sec. 4.1, appendix C.3).

For each seed: one warm-up run of the base configuration on the first
`protocol.warmup_fraction` of the stream (shared by every test and variant
with the same base: same run identity, so it runs once and is reused), its
final memory + framework snapshot, an optional seeded corruption of that
snapshot (written as `start/seed=<n>/state.json` with `corruption.json`),
then one eval-only run per variant from that state. A variant changes only
memory parameters (deep-merged into the base's); tasks, order, per-sample
seeds, budget and model are the base's. With `mechanism.full_stream` (RQ2)
each variant also runs the whole stream under its own parameters (experiment
`<name>-full-stream`), whose success rate is the one the paper's Table 3
prints. Each variant's measures go to `mechanisms.csv` in the experiment's
results folder.
"""

from __future__ import annotations

import copy
import csv
from pathlib import Path
from typing import Any

from aecg_bench.errors import ConfigError
from aecg_bench.jsonl import read_jsonl, write_json_atomic
from aecg_bench.mechanisms import metrics
from aecg_bench.mechanisms.corruption import corrupt, validated
from aecg_bench.results_format import latest_snapshot_state
from aecg_bench.runner.identity import results_dir_of, safe_label

TESTS = ("rq2_scope", "rq3_drift", "rq4_triage")
COLUMNS = ("test", "quantity", "variant", "seed", "value")
LEVELS = ("team", "event", "agent")


def merge(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in change.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def check(mech: dict[str, Any], raw: dict[str, Any]) -> None:
    if mech.get("test") not in TESTS:
        raise ConfigError(f"mechanism.test {mech.get('test')!r} is not one of: {', '.join(TESTS)}")
    if not mech.get("variants"):
        raise ConfigError("mechanism.variants is empty: name at least one variant (name: memory params)")
    if not 0.0 < raw["protocol"]["warmup_fraction"] < 1.0:
        raise ConfigError(f"protocol.warmup_fraction={raw['protocol']['warmup_fraction']} must be in (0, 1)")
    if mech["test"] != "rq2_scope" and not mech.get("corrupt"):
        raise ConfigError(f"mechanism.test={mech['test']} needs mechanism.corrupt (skills to corrupt)")
    levels = (mech.get("corrupt") or {}).get("levels")
    if levels is not None and (not levels or set(levels) - set(LEVELS)):
        raise ConfigError(f"mechanism.corrupt.levels={list(levels)} must be a non-empty list of: {', '.join(LEVELS)}")


def run_mechanism(raw: dict[str, Any]) -> Path:
    """Run a mechanism experiment (all seeds, all variants); returns its mechanisms.csv."""
    from aecg_bench.run import run_from_config

    raw = dict(raw)  # the caller's config keeps its `mechanism`
    mech = raw.pop("mechanism", None) or {}
    check(mech, raw)
    out_dir = Path(raw["runtime"]["results_root"]) / safe_label(raw["experiment_name"])
    rows: list[dict[str, Any]] = []
    for seed in mech.get("seeds") or [raw["seed"]]:
        base = {**raw, "seed": seed}  # never mutated: every run's config is a deep-copying `merge` of it
        warm = merge(base, {"experiment_name": mech["warmup_name"], "protocol": {"phases": "warmup"}})
        final = run_from_config(warm)
        if final is None or final["status"] != "complete":
            raise ConfigError(f"the warm-up run for seed {seed} did not complete; rerun to resume it")
        state = latest_state(results_dir_of(final))
        start = out_dir / "start" / f"seed={seed}"
        corrupted: list[dict[str, Any]] = []
        if mech.get("corrupt"):
            c = mech["corrupt"]
            levels = tuple(c["levels"]) if c.get("levels") is not None else None
            n = int(c["skills"])
            if raw.get("rehearsal"):  # a few warm-up tasks validate few skills: a rehearsal corrupts what there is
                n = min(
                    n, len(validated(state["memory"]["store"]["skills"], c["min_uses"], c["min_reliability"], levels))
                )
            state, corrupted = corrupt(
                state,
                n,
                seed,
                min_uses=int(c["min_uses"]),
                min_reliability=float(c["min_reliability"]),
                levels=levels,
            )
            write_json_atomic(start / "corruption.json", {"seed": seed, "corrupt": c, "skills": corrupted})
        write_json_atomic(start / "state.json", state)
        for name, params in mech["variants"].items():
            variant = merge(
                base,
                {
                    "memory": {"label": name, "params": params or {}},
                    "protocol": {"phases": "eval", "start_state": str(start / "state.json")},
                },
            )
            final = run_from_config(variant)
            if final is None:
                continue
            full_dir = None
            if mech.get("full_stream"):
                full = run_from_config(
                    merge(
                        base,
                        {
                            "experiment_name": f"{raw['experiment_name']}-full-stream",
                            "memory": {"label": name, "params": params or {}},
                        },
                    )
                )
                if full is None:
                    continue
                full_dir = results_dir_of(full)
            measures = measure(mech["test"], results_dir_of(final), corrupted, full_dir)
            rows += [
                {"test": mech["test"], "quantity": q, "variant": name, "seed": seed, "value": v}
                for q, v in measures.items()
            ]
            print(f"{mech['test']} seed={seed} {name}: " + ", ".join(f"{q}={v:.2f}" for q, v in measures.items()))
    path = out_dir / "mechanisms.csv"  # out_dir exists: every seed wrote its start state there
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def latest_state(run_dir: Path) -> dict[str, Any]:
    state = latest_snapshot_state(run_dir)
    if state is None:
        raise ConfigError(f"{run_dir} has no memory snapshot to start the mechanism variants from")
    return state


def measure(
    test: str, run_dir: Path, corrupted: list[dict[str, Any]], full_dir: Path | None = None
) -> dict[str, float]:
    """One variant's measures from its eval run (and, for RQ2's success, its full-stream run)."""
    events = read_jsonl(run_dir / "memory" / "audit.jsonl")
    records = list(metrics_records(run_dir))
    if test == "rq2_scope":
        full = metrics_records(full_dir) if full_dir is not None else None
        return metrics.scope_measures(events, records, full)
    if test == "rq3_drift":
        return metrics.drift_measures(events, records, corrupted)
    return metrics.triage_measures(events, corrupted)


def metrics_records(run_dir: Path) -> list[dict[str, Any]]:
    from aecg_bench.runner.records import latest_by_position

    return list(latest_by_position(read_jsonl(run_dir / "samples.jsonl")).values())
