"""Mechanism-test measures from one variant's eval run: its memory audit log and sample records.

All pure functions of what the run wrote. "Uses" are task-level: one `observe`
row = one task that recalled the object (at one or more decisions).

- RQ2 (Table 3): cross-scope share of selected uses = decisions that used an
  object of another level / all decisions that used a recalled object; success
  = eval success rate (%); exposure = mean downstream reach of a skill per
  task that used it (the `exposure` module's structural proxy).
- RQ3 (Figure 3): uses until the first review of each corrupted skill (a
  skill never reviewed counts all its uses, and is reported as missed);
  polluted-skill failed uses = uses, in failed tasks, of a corrupted version
  or of a descendant version that still carries the corrupted steps;
  post-corruption success = eval success rate (%).
- RQ4 (Figure 4): share of the polluted skills' predicted exposure (their
  exposure in the snapshot, before evaluation) covered by the first two
  reviews; failed-task exposure = summed reach of polluted-skill uses in
  failed tasks.
"""

from __future__ import annotations

from typing import Any


def eval_success_pct(records: list[dict[str, Any]]) -> float:
    scored = [r for r in records if r["phase"] == "eval" and r["status"] != "infra_error"]
    return 100.0 * sum(bool(r["success"]) for r in scored) / len(scored) if scored else float("nan")


def observe_rows(events: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(observe event, used row) pairs in log order."""
    return [(e, row) for e in events if e["event"] == "observe" for row in e["used"]]


def scope_measures(events: list[dict[str, Any]], records: list[dict[str, Any]]) -> dict[str, float]:
    rows = [row for _, row in observe_rows(events)]
    decisions = sum(r["decisions"] for r in rows)
    reaches = [r["reach"] for r in rows if "reach" in r]
    return {
        "cross_scope_use_pct": 100.0 * sum(r["cross_scope"] for r in rows) / decisions if decisions else 0.0,
        "success": eval_success_pct(records),
        "exposure": sum(reaches) / len(reaches) if reaches else 0.0,
        "selected_uses": float(decisions),
    }


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
    delays, missed = [], 0
    for c in corrupted:
        sid, uses, reviewed = c["skill"], 0, False
        for e in events:
            if e["event"] == "observe":
                uses += sum(row["id"] == sid for row in e["used"])
            elif e["event"] == "review" and e["skill"] == sid:
                reviewed = True
                break
        delays.append(uses)
        missed += not reviewed
    failed_uses = sum(1 for e, row in observe_rows(events) if not e["success"] and row["id"] in polluted)
    return {
        "uses_to_review": sum(delays) / len(delays) if delays else float("nan"),
        "never_reviewed": float(missed),
        "polluted_failed_uses": float(failed_uses),
        "post_corruption_success_pct": eval_success_pct(records),
    }


def triage_measures(events: list[dict[str, Any]], corrupted: list[dict[str, Any]], first: int = 2):
    predicted = {c["skill"]: float(c["exposure"]) for c in corrupted}
    reviewed = [e["skill"] for e in events if e["event"] == "review"][:first]
    total = sum(predicted.values())
    covered = sum(predicted.get(s, 0.0) for s in dict.fromkeys(reviewed))
    polluted = polluted_ids(events, corrupted)
    failed = sum(row.get("reach", 0.0) for e, row in observe_rows(events) if not e["success"] and row["id"] in polluted)
    rounds = [len(e["qualified"]) for e in events if e["event"] == "review_round" and e["qualified"]][:first]
    return {
        "exposure_covered_first_two_reviews_pct": 100.0 * covered / total if total else 0.0,
        "failed_task_exposure": failed,
        "reviews": float(sum(e["event"] == "review" for e in events)),
        # the protocol asks for more qualified candidates than the budget in the first two rounds
        "qualified_in_first_two_rounds_min": float(min(rounds)) if rounds else 0.0,
    }
