"""Mechanism-test measures from one variant's eval run: its memory audit log and sample records.

All pure functions of what the run wrote. "Uses" are task-level: one `observe`
row = one task that recalled the object (at one or more decisions).

- RQ2 (Table 3): cross-scope share of selected uses = decisions that used an
  object of another level / all decisions that used a recalled object;
  success = the variant's success rate (%) over the whole task stream, as the
  paper's Table 3 prints it (68.18 = 60/88, Table 1's end-task score; its
  flat-scope 51.29 = Table 2's 68.18 - 16.89): a full run of the variant
  (`full_stream_success_pct`); `eval_success_pct` = the rate on the
  evaluation split alone, from the shared snapshot; exposure = mean
  downstream reach of a skill per task that used it (the `exposure`
  module's structural proxy).
- RQ3 (Figure 3): uses until the first review, averaged over the corrupted
  skills that were reviewed; a skill never reviewed is censored (its delay
  is only known to exceed its uses), so it is reported apart
  (`never_reviewed`, and `censored_uses`, the mean of their uses so far),
  never averaged in; polluted-skill failed uses = uses, in failed tasks, of
  a corrupted version or of a descendant version that still carries the
  corrupted steps; post-corruption success = eval success rate (%).
- RQ4 (Figure 4): share of the polluted skills' predicted exposure (their
  exposure in the snapshot, before evaluation) covered by the first two
  reviews (reviews after the second do not count); failed-task exposure =
  summed reach of polluted-skill uses in failed tasks.
"""

from __future__ import annotations

from typing import Any


def success_pct(records: list[dict[str, Any]], phases: tuple[str, ...]) -> float:
    """Success rate (%) of the scored records of the given phases (an infra error is not a score)."""
    scored = [r for r in records if r["phase"] in phases and r["status"] != "infra_error"]
    return 100.0 * sum(bool(r["success"]) for r in scored) / len(scored) if scored else float("nan")


def eval_success_pct(records: list[dict[str, Any]]) -> float:
    return success_pct(records, ("eval",))


def full_stream_success_pct(records: list[dict[str, Any]]) -> float:
    """Over every task of a full run (warm-up and evaluation): the paper's Table 3 success."""
    return success_pct(records, ("warmup", "eval"))


def observe_rows(events: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(observe event, used row) pairs in log order."""
    return [(e, row) for e in events if e["event"] == "observe" for row in e["used"]]


def scope_measures(
    events: list[dict[str, Any]], records: list[dict[str, Any]], full_records: list[dict[str, Any]] | None = None
) -> dict[str, float]:
    """`full_records`: the records of the variant's full run (warm-up and evaluation under its own
    parameters), whose success rate is the paper's; without them `success` is not reported."""
    rows = [row for _, row in observe_rows(events)]
    decisions = sum(r["decisions"] for r in rows)
    reaches = [r["reach"] for r in rows if "reach" in r]
    out = {
        "cross_scope_use_pct": 100.0 * sum(r["cross_scope"] for r in rows) / decisions if decisions else 0.0,
        "eval_success_pct": eval_success_pct(records),
        "exposure": sum(reaches) / len(reaches) if reaches else 0.0,
        "selected_uses": float(decisions),
    }
    if full_records is not None:
        out["success"] = full_stream_success_pct(full_records)
    return out


def polluted_ids(events: list[dict[str, Any]], corrupted: list[dict[str, Any]]) -> set[str]:
    """Corrupted versions and the candidates derived from them that keep every corrupted step."""
    steps = {c["skill"]: set(c["procedure_after"]) for c in corrupted}
    out = set(steps)
    for e in events:
        if e["event"] == "intervention" and e.get("outcome") == "candidate" and e["skill"] in out:
            bad = next(v for k, v in steps.items() if k in out and _lineage(k) == _lineage(e["skill"]))
            if bad <= set(e["content"]["procedure"]):
                out.add(e["candidate"])
    return out


def _lineage(skill_id: str) -> str:
    return skill_id.split(".")[0]


def drift_measures(events: list[dict[str, Any]], records: list[dict[str, Any]], corrupted: list[dict[str, Any]]):
    polluted = polluted_ids(events, corrupted)
    delays, censored = [], []
    for c in corrupted:
        sid, uses, reviewed = c["skill"], 0, False
        for e in events:
            if e["event"] == "observe":
                uses += sum(row["id"] == sid for row in e["used"])
            elif e["event"] == "review" and e["skill"] == sid:
                reviewed = True
                break
        (delays if reviewed else censored).append(uses)
    failed_uses = sum(1 for e, row in observe_rows(events) if not e["success"] and row["id"] in polluted)
    return {
        "uses_to_review": _mean(delays),
        "never_reviewed": float(len(censored)),
        "censored_uses": _mean(censored),
        "polluted_failed_uses": float(failed_uses),
        "post_corruption_success_pct": eval_success_pct(records),
    }


def _mean(xs: list[float] | list[int]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def triage_measures(events: list[dict[str, Any]], corrupted: list[dict[str, Any]], first: int = 2):
    predicted = {c["skill"]: float(c["exposure"]) for c in corrupted}
    reviewed = [e["skill"] for e in events if e["event"] == "review"][:first]
    total = sum(predicted.values())
    covered = sum(predicted.get(s, 0.0) for s in dict.fromkeys(reviewed))
    polluted = polluted_ids(events, corrupted)
    failed = sum(row.get("reach", 0.0) for e, row in observe_rows(events) if not e["success"] and row["id"] in polluted)
    rounds = [e["qualified"] for e in events if e["event"] == "review_round" and e["qualified"]][:first]
    return {
        "exposure_covered_first_two_reviews_pct": 100.0 * covered / total if total else 0.0,
        "failed_task_exposure": failed,
        "reviews": float(sum(e["event"] == "review" for e in events)),
        # the protocol asks for more qualified candidates than the budget in the first two rounds
        "qualified_in_first_two_rounds_min": float(min(len(q) for q in rounds)) if rounds else 0.0,
        # whether exposure could change the order there: the share of those rounds whose most degraded
        # candidate is also the most severe (100: risk-only and exposure-aware review the same skill first)
        "drift_and_severity_agree_pct": _mean([100.0 * (_top(q, "drift") == _top(q, "severity")) for q in rounds]),
    }


def _top(qualified: list[dict[str, Any]], key: str) -> str:
    """The candidate a triage order ranking by `key` reviews first (ties by id, as `triage.rank`)."""
    return min(qualified, key=lambda q: (-q[key], q["skill"]))["skill"]
