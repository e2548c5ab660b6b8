"""Replay gate (AECG sec. 3.4.2; appendix D "replay contract"): paired re-execution of held-out fixtures.

A candidate version is activated only after paired replay: on failure
fixtures (decisions of the BadCases admitted against the parent) it must
mitigate the implicated behaviour, and on disjoint historical same-scope
success fixtures it must preserve the supported behaviour within tolerance
(paper sec. 3.4.2: "Failure fixtures test the implicated behavior; disjoint
historical same-scope success fixtures test preservation of supported
behavior"; replay contract, p. 22).

Replay re-executes each fixture's recorded decision through the agent model
(LLM role `replay`, accounted apart from agents and other memory calls): the
observation the decision was made on, the task, the deciding agent and role,
and the skill version under test, shown exactly as agents see a recalled
skill (`frameworks.base.format_memory`). Whether a version is shown is decided
on the context it was recalled against (the task text for a router, the
observation for an executor), as recall decides it. Each fixture is replayed twice with the same prompt except
for the skill: once with the parent, once with the candidate (paired). A
version whose applicability predicate excludes the fixture's context would
not be recalled there, so that side is replayed without the skill.

Scoring a replayed decision against the recorded one (ours; the paper names
the contract, not the comparison): the replayed output and the recorded
behaviour are compared after normalisation (first non-empty line, lowercase,
whitespace collapsed).
- success fixture: the version passes iff it reproduces the recorded
  (supported) behaviour;
- failure fixture: the version passes iff it does NOT reproduce the recorded
  (implicated) behaviour; the parent failing here = the failure reproduces.
An empty reply (no decision) never passes for the candidate and counts as
the recorded outcome for the parent.

Held-out fixtures: every fixture is assigned once, by a hash of (run seed,
skill lineage, task id, kind), to the reviser's side or the replay side
(`holdout_fraction` to replay). The intervention prompt sees only reviser-side
fixtures; replay uses only held-out ones, so a candidate is never judged on the
cases it was written from, also when a monitored candidate is replayed again later.

Gate (thresholds ours; the paper gives none):
- reproduced = failure fixtures where the parent fails; supported = success
  fixtures on which either version shows the recorded (historically
  successful) behaviour: the parent repeats it, or the candidate restores it
  where the parent no longer does (a corrupted parent); a regression is a
  success the parent repeats and the candidate loses. A success fixture that
  neither version shows tells nothing about preservation (the recorded
  decision is out of the model's reach, or both versions are wrong there);
- no reproduced failure, or fewer than `min_success_fixtures` supported
  success fixtures: the evidence cannot decide -> monitor (so preservation
  is never passed on no evidence);
- activate iff mitigated/reproduced >= min_mitigation (and >= 1 mitigated)
  and regressed/supported <= max_regression; otherwise isolate.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from aecg_bench.aecg.objects import Fixture, SkillContent
from aecg_bench.aecg.params import ReplayParams
from aecg_bench.aecg.predicate import normalised
from aecg_bench.types import MemoryItem
from frameworks.base import format_memory

ACTIVATE, ISOLATE, MONITOR = "activate", "isolate", "monitor"
FAILURE, SUCCESS = "failure", "success"
REPLAY_ROLE = "replay"


@dataclass(frozen=True)
class FixtureResult:
    task_id: str
    kind: str  # failure | success
    parent_pass: bool
    candidate_pass: bool
    how: str  # replayed
    note: str = ""  # the recorded and replayed decisions

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


# -- held-out split -------------------------------------------------------------------


def held_out(fixture: Fixture, kind: str, key: str, fraction: float) -> bool:
    """Whether a fixture belongs to replay (True) or to the reviser (False): fixed per fixture."""
    digest = hashlib.sha256(f"{key}:{kind}:{fixture.task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split(fixtures: list[Fixture], kind: str, key: str, fraction: float) -> tuple[list[Fixture], list[Fixture]]:
    """(shown to the reviser, held out for replay), each in the original order."""
    shown = [f for f in fixtures if not held_out(f, kind, key, fraction)]
    return shown, [f for f in fixtures if held_out(f, kind, key, fraction)]


# -- re-execution ----------------------------------------------------------------------


def decision_messages(fixture: Fixture, skill: SkillContent | None, level: str) -> list[dict[str, str]]:
    """The recorded decision as an agent prompt, with the version under test as its recalled skill."""
    memory = (
        format_memory([MemoryItem(id="replayed", text=skill.render(level), level=level, kind="skill")]) if skill else ""
    )
    system = (
        f"You are agent {fixture.agent} ({fixture.role}) making a {fixture.level}-level decision "
        f"in a multi-agent system.\nTask: {fixture.instruction}"
    )
    user = f"{fixture.observation or fixture.context}\n\nReply with this decision's output only (for an action, the action command alone)."
    return [
        {"role": "system", "content": system + (f"\n\n{memory}" if memory else "")},
        {"role": "user", "content": user},
    ]


def shown_skill(content: SkillContent, fixture: Fixture) -> SkillContent | None:
    """The version as recall would give it at this decision: None where its predicate excludes it."""
    return content if content.predicate.admits(normalised(fixture.text())) else None


def same_decision(replayed: str, recorded: str) -> bool:
    return _norm(replayed) == _norm(recorded)


def _norm(text: str) -> str:
    for line in str(text).replace("```", "\n").splitlines():
        line = " ".join(line.split()).strip().strip("`").lower()
        if line:
            return line[:240]
    return ""


def replay_fixture(
    fixture: Fixture,
    kind: str,
    parent: SkillContent,
    candidate: SkillContent,
    level: str,
    execute: Callable[[list[dict[str, str]]], str],
) -> FixtureResult:
    """Re-execute one recorded decision with the parent and with the candidate; score both (paired)."""
    outs = []
    for content in (parent, candidate):
        outs.append(execute(decision_messages(fixture, shown_skill(content, fixture), level)))
    p_out, c_out = outs
    p_same, c_same = same_decision(p_out, fixture.behaviour), same_decision(c_out, fixture.behaviour)
    if kind == SUCCESS:
        parent_pass = p_same if _norm(p_out) else True
        candidate_pass = c_same
    else:
        parent_pass = not p_same if _norm(p_out) else False
        candidate_pass = bool(_norm(c_out)) and not c_same
    note = f"recorded {_norm(fixture.behaviour)!r}; parent {_norm(p_out)!r}; candidate {_norm(c_out)!r}"
    return FixtureResult(fixture.task_id, kind, parent_pass, candidate_pass, "replayed", note[:400])


def gate(results: list[FixtureResult], params: ReplayParams) -> GateResult:
    reproduced = [r for r in results if r.kind == FAILURE and not r.parent_pass]
    successes = [r for r in results if r.kind == SUCCESS]
    supported = [r for r in successes if r.parent_pass or r.candidate_pass]
    mitigated = sum(r.candidate_pass for r in reproduced)
    regressed = sum(not r.candidate_pass for r in supported)

    def result(decision: str, reason: str) -> GateResult:
        return GateResult(decision, reason, len(reproduced), mitigated, len(supported), regressed)

    if not reproduced:
        return result(MONITOR, "no failure fixture reproduces the implicated behaviour")
    if len(supported) < params.min_success_fixtures:
        return result(
            MONITOR,
            f"{len(supported)} of {len(successes)} success fixtures replayed show the supported behaviour "
            f"< {params.min_success_fixtures}",
        )
    rate = mitigated / len(reproduced)
    regression = regressed / len(supported) if supported else 0.0
    if mitigated < 1 or rate < params.min_mitigation:
        return result(ISOLATE, f"mitigates {mitigated}/{len(reproduced)} failures (< {params.min_mitigation:.2f})")
    if regression > params.max_regression:
        return result(ISOLATE, f"regresses {regressed}/{len(supported)} successes (> {params.max_regression:.2f})")
    return result(
        ACTIVATE, f"mitigates {mitigated}/{len(reproduced)} failures, regresses {regressed}/{len(supported)} successes"
    )
