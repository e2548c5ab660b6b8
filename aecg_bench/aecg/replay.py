"""Replay gate (AECG sec. 3.4.2, appendix D "replay contract").

A candidate version is activated only after paired replay: on failure
fixtures (the BadCases admitted against the parent) it must mitigate the
implicated behaviour, and on disjoint historical same-scope success fixtures
(successful uses of the parent, its seed and the seed's neighbours; never a
task that is also a failure fixture) it must keep the supported behaviour
within a tolerance.

How replay is realised here (the paper re-executes fixtures; a memory
method cannot re-run old environments, and the `solve`/`build` rollout
hooks only re-run the current task):
- context narrowing changes only when the skill applies, and the procedure
  is unchanged, so replay is exact without a model: on a failure fixture
  the candidate mitigates iff its predicate excludes the fixture's decision
  context; on a success fixture it preserves iff the predicate still admits
  it (the parent's behaviour there is the recorded one);
- procedural repair changes behaviour, so each fixture is replayed by the
  memory model, which predicts pass/fail for parent and candidate on the
  same recorded decision (paired). An unreadable reply counts as the
  recorded outcome for the parent and as a failure for the candidate.

Gate (thresholds ours; the paper gives none):
- reproduced = failure fixtures where the parent fails; supported = success
  fixtures where the parent passes;
- no reproduced failure, or fewer than `min_success_fixtures` supported
  successes: the evidence cannot decide -> monitor (the candidate waits,
  the parent stays active, the next review replays it again);
- activate iff mitigated/reproduced >= min_mitigation (and >= 1 mitigated)
  and regressed/supported <= max_regression; otherwise isolate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from aecg_bench.aecg import llm_json
from aecg_bench.aecg.intervention import fixture_payload
from aecg_bench.aecg.objects import Fixture, SkillContent
from aecg_bench.aecg.params import ReplayParams
from aecg_bench.aecg.predicate import normalised

ACTIVATE, ISOLATE, MONITOR = "activate", "isolate", "monitor"
FAILURE, SUCCESS = "failure", "success"


@dataclass(frozen=True)
class FixtureResult:
    task_id: str
    kind: str  # failure | success
    parent_pass: bool
    candidate_pass: bool
    how: str  # predicate | simulated | unreadable
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GateResult:
    decision: str
    reason: str
    reproduced: int
    mitigated: int
    supported: int
    regressed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def narrowing_results(
    candidate: SkillContent, failures: list[Fixture], successes: list[Fixture]
) -> list[FixtureResult]:
    out = []
    for f in failures:
        admitted = candidate.predicate.admits(normalised(f.text()))
        out.append(FixtureResult(f.task_id, FAILURE, False, not admitted, "predicate"))
    for f in successes:
        admitted = candidate.predicate.admits(normalised(f.text()))
        out.append(FixtureResult(f.task_id, SUCCESS, True, admitted, "predicate"))
    return out


def replay_payload(parent: SkillContent, candidate: SkillContent, level: str, fixture: Fixture, kind: str) -> dict:
    return {
        "fixture_kind": kind,
        "fixture": fixture_payload(fixture),
        "parent": {"scope": level, "text": parent.render(level)},
        "candidate": {"scope": level, "text": candidate.render(level)},
    }


def _verdict(value: Any) -> bool | None:
    text = llm_json.as_str(value, 20).lower()
    if text in {"pass", "passes", "passed", "yes", "true", "success"}:
        return True
    if text in {"fail", "fails", "failed", "no", "false", "failure"}:
        return False
    return None


def simulated_result(text: str, fixture: Fixture, kind: str) -> FixtureResult:
    obj = llm_json.parse_object(text)
    parent = _verdict(obj.get("parent")) if obj else None
    candidate = _verdict(obj.get("candidate")) if obj else None
    if parent is None or candidate is None:
        return FixtureResult(fixture.task_id, kind, kind == SUCCESS, False, "unreadable", "unreadable replay verdict")
    return FixtureResult(fixture.task_id, kind, parent, candidate, "simulated", llm_json.as_str(obj.get("reason"), 200))


def gate(results: list[FixtureResult], params: ReplayParams) -> GateResult:
    reproduced = [r for r in results if r.kind == FAILURE and not r.parent_pass]
    supported = [r for r in results if r.kind == SUCCESS and r.parent_pass]
    mitigated = sum(r.candidate_pass for r in reproduced)
    regressed = sum(not r.candidate_pass for r in supported)

    def result(decision: str, reason: str) -> GateResult:
        return GateResult(decision, reason, len(reproduced), mitigated, len(supported), regressed)

    if not reproduced:
        return result(MONITOR, "no failure fixture reproduces the implicated behaviour")
    if len(supported) < params.min_success_fixtures:
        return result(MONITOR, f"{len(supported)} supported success fixtures < {params.min_success_fixtures}")
    rate = mitigated / len(reproduced)
    regression = regressed / len(supported) if supported else 0.0
    if mitigated < 1 or rate < params.min_mitigation:
        return result(ISOLATE, f"mitigates {mitigated}/{len(reproduced)} failures (< {params.min_mitigation:.2f})")
    if regression > params.max_regression:
        return result(ISOLATE, f"regresses {regressed}/{len(supported)} successes (> {params.max_regression:.2f})")
    return result(
        ACTIVATE, f"mitigates {mitigated}/{len(reproduced)} failures, regresses {regressed}/{len(supported)} successes"
    )
