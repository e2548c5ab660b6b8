"""MMTB's mission outcome and its nine summary numbers (EDV Table 3), as
`bench_test/analysis_result.py` (`main2`) computes them.

Per mission: `action_correct` = the walk of the decision tree ended correct;
`success` = that, and the argument check passed (the original's
`param_predict_label`, the number every table reports); `optimal` = correct and
finished at the last step of a shortest path. The multi-tool kind of a mission
(parallel / serial / serial+parallel) comes from its golden dependency graph
(`analysis_answer_type`), whatever the mission's type code says.

Summary: All and the per-type rates are success rates over missions of that
code (single 单, chat 拒, clarify 反, multi 多) or of that multi-tool kind;
Opt.Path = missions of kind parallel or serial+parallel that succeeded on an
optimal path, over all missions of those kinds; Acc.Prog = accomplished steps
summed over serial and serial+parallel missions, over their golden node counts
(`calculate_predict_result_steps`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aecg_bench.benchmarks.mmtb.graph import ANSWER, ASK

TYPE_CODES = {"单": "single", "多": "multi", "拒": "chat", "反": "clarify"}
MULTI_KINDS = {"combine": "parallel", "serial": "serial", "cs": "serial_parallel"}


def multi_tool_kind(answer_list: Sequence[Mapping[str, Any]]) -> str | None:
    """'combine' (parallel), 'serial', 'cs' (both) or None, from the golden dependencies."""
    steps: list[list[int]] = []
    current: list[int] = []
    for node in answer_list:
        if node["action"]["name"] in (ASK, ANSWER):
            continue
        if any(d in current for d in node.get("dependency_list", [])):
            steps.append(list(current))
            current = [node["idx"]]
        else:
            current.append(node["idx"])
    if current:
        steps.append(current)
    serial, parallel = len(steps) > 1, any(len(s) > 1 for s in steps)
    if serial and parallel:
        return "cs"
    return "serial" if serial else "combine" if parallel else None


def accomplished_steps(
    success: bool, predicted: Sequence[Mapping[str, Any]], n_golden: int, bad_arguments: bool
) -> int:
    """The original's `calculate_predict_result_steps`: every golden node when the mission succeeded;
    else the calls (or turns) of all steps before the last, plus the last step's when it failed only
    on its arguments. (The original then writes `predict_step - len(bad_items)` without assigning it,
    so nothing is subtracted; we keep that.)"""
    if success:
        return n_golden

    def width(step: Mapping[str, Any]) -> int:
        calls = step.get("tool_calls")
        return len(calls) if calls else 1

    done = sum(width(s) for s in predicted[:-1])
    if bad_arguments and predicted:
        done += width(predicted[-1])
    return done


def _rate(rows: Sequence[Mapping[str, float]], flag: str) -> float | None:
    chosen = [r for r in rows if r.get(flag, 0.0) == 1.0]
    return sum(r["success"] for r in chosen) / len(chosen) if chosen else None


def summary(rows: Sequence[Mapping[str, float]]) -> dict[str, float | None]:
    """EDV Table 3's nine numbers (plus A_multi) from per-mission metrics; None where no mission qualifies."""
    if not rows:
        return {}
    out: dict[str, float | None] = {"all": sum(r["success"] for r in rows) / len(rows)}
    for name in (*TYPE_CODES.values(), *MULTI_KINDS.values()):
        out[name] = _rate(rows, f"is_{name}")
    opt = [r for r in rows if r.get("is_parallel") == 1.0 or r.get("is_serial_parallel") == 1.0]
    out["optimal_path"] = sum(r["success"] * r["optimal"] for r in opt) / len(opt) if opt else None
    prog = [r for r in rows if r.get("is_serial") == 1.0 or r.get("is_serial_parallel") == 1.0]
    total = sum(r["progress_total"] for r in prog)
    out["accomplished_progress"] = sum(r["progress_steps"] for r in prog) / total if total else None
    return out
