"""`aecg_oracle` mock policy: scripted answers to AECG's memory-side prompts (tests, smoke runs).

It never produces a real score. Agent prompts go to another policy
(`options.agent_policy`, default `oracle`, which solves the toy benchmarks);
AECG prompts (recognised by their `[aecg:<kind>]` tag) get deterministic
answers computed from the prompt's INPUT object:

- skill abstraction: a skill whose applicability names the seed's task type
  and whose procedure is the seed's successful actions;
- failure attribution: both judges blame the candidate whose text does not
  mention the failed task's type (failure mode "applicability"), else the
  most used candidate ("procedure"), with `options.judge_confidence`
  (default 0.9); `options.judge_abstain` makes both abstain;
- context narrowing: excludes a word that occurs in every bad case's
  context and in no supported success (task type words first), or abstains;
- procedural repair: rebuilds the procedure from the behaviours of the supported
  success fixtures (the evidence of what worked; the parent's steps when there
  are none) and appends one general verification step and rule;
- replay: the parent fails and the candidate passes failure fixtures; both
  pass success fixtures.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aecg_bench.aecg import prompts
from aecg_bench.aecg.predicate import words
from aecg_bench.llm.mock import _resolve_policy
from aecg_bench.llm.providers import ProviderResult, Request
from aecg_bench.llm.spec import ModelSpec

_WHAT_WORKED = re.compile(r"What worked: (.*)")
_TASK_TYPE = re.compile(r"Task type: (\S+)")


def _abstraction(payload: dict[str, Any], spec: ModelSpec) -> dict[str, Any]:
    seed = payload["seed"]["text"]
    kind = (_TASK_TYPE.search(seed) or [None, "general"])[1]
    worked = (_WHAT_WORKED.search(seed) or [None, "act on the observation"])[1]
    steps = list(dict.fromkeys(s.strip() for s in worked.split(";") if s.strip()))[:5]
    return {
        "name": f"{kind} {payload['scope']} routine",
        "applicability": f"{payload['scope']}-level decisions in tasks of type {kind}",
        "triggers": [f"the task is of type {kind}"],
        "procedure": steps or ["act on the observation"],
        "avoidance": ["do not repeat an action that had no effect"],
        "evidence_summary": f"supported by {payload['seed']['support']} successes",
    }


def _attribution(payload: dict[str, Any], spec: ModelSpec) -> dict[str, Any]:
    opts = spec.options
    cands = payload["candidates"]
    if opts.get("judge_abstain") or not cands:
        return {"abstain": True, "skill_id": None, "alternatives_considered": "scripted abstention"}
    task_type = payload["task"]["type"]
    misapplied = [c for c in cands if task_type and f"type {task_type}" not in c["text"] and c["kind"] == "skill"]
    chosen, mode = (misapplied[0], "applicability") if misapplied else (cands[0], "procedure")
    return {
        "abstain": False,
        "skill_id": chosen["id"],
        "scope": chosen["scope"],
        "clause": chosen["text"][:80],
        "behaviour": "followed the recalled guidance",
        "alternatives_considered": "scripted",
        "failure_mode": mode,
        "confidence": float(opts.get("judge_confidence", 0.9)),
    }


def _narrowing(payload: dict[str, Any], spec: ModelSpec) -> dict[str, Any]:
    bad = [set(words(f["context_text"])) for f in payload["bad_cases"]]
    good = set().union(*(words(f["context_text"]) for f in payload["supported_successes"]))
    common = set.intersection(*bad) - good if bad else set()
    types = [f["task_type"] for f in payload["bad_cases"] if f["task_type"] in common]
    terms = sorted(set(types)) or sorted(common)
    if not terms:
        return {"abstain": True, "reason": "no term separates the bad cases from the successes"}
    return {
        "abstain": False,
        "reason": f"bad cases share {terms[0]!r}",
        "predicate": {"all_of": [], "none_of": terms[:1]},
        "applicability": payload["skill"]["applicability"] + f", except when the context mentions {terms[0]}",
        "triggers": payload["skill"]["triggers"],
    }


def _repair(payload: dict[str, Any], spec: ModelSpec) -> dict[str, Any]:
    skill = payload["skill"]
    worked = list(dict.fromkeys(f["behaviour"] for f in payload["supported_successes"] if f["behaviour"]))
    return {
        "abstain": False,
        "reason": "the procedure ended the task without checking the goal",
        "procedure": [*(worked or skill["procedure"]), "check that the goal is reached before the final action"],
        "avoidance": [*skill["avoidance"], "do not finish before the goal state is observed"],
    }


def _replay(payload: dict[str, Any], spec: ModelSpec) -> dict[str, Any]:
    if payload["fixture_kind"] == "failure":
        return {"parent": "fail", "candidate": "pass", "reason": "the revision avoids the implicated step"}
    return {"parent": "pass", "candidate": "pass", "reason": "the supported steps are kept"}


_ANSWERS = {
    prompts.SKILL_ABSTRACTION: _abstraction,
    prompts.FAILURE_ATTRIBUTION: _attribution,
    prompts.CONTEXT_NARROWING: _narrowing,
    prompts.PROCEDURAL_REPAIR: _repair,
    prompts.REPLAY: _replay,
}


def memory_answer(request: Request, spec: ModelSpec) -> str | None:
    """The scripted answer to an AECG prompt; None for any other prompt."""
    kind = prompts.kind_of(request.messages)
    if kind is None:
        return None
    return json.dumps(_ANSWERS[kind](prompts.payload_of(request.messages), spec))


_SKILL_LINE = re.compile(r"^- \[skill\] .*$", re.M)
_PROCEDURE = re.compile(r"Procedure: (.*?)(?= Avoid: |$)")
_TYPE = re.compile(r"tasks of type (\w+)")
_OPPOSITE = {"move left": "move right", "move right": "move left"}


def skill_follower(request: Request, spec: ModelSpec) -> str | ProviderResult:
    """Mechanism tests' scripted agent: the toy oracle, except that it trusts a recalled skill's
    procedure over its own sense of direction. A skill applies when the type it names (the
    abstraction writes "tasks of type right") is the direction still to walk; an applicable skill
    that names a move and not the oracle's move makes the agent take the skill's move. So a skill
    with a corrupted procedure makes it fail, and a repaired one stops doing so. Memory prompts get
    the `aecg_oracle` answers."""
    answer = memory_answer(request, spec)
    if answer is not None:
        return answer
    action = _resolve_policy("toy_oracle")(request, spec)
    if not isinstance(action, str) or action not in _OPPOSITE:
        return action
    direction = action.split()[-1]  # the oracle moves toward the target: the walk's type
    for line in _SKILL_LINE.findall(str(request.messages[0].get("content", ""))):
        kind, procedure = _TYPE.search(line), _PROCEDURE.search(line)
        if kind is None or procedure is None or not kind[1].startswith(direction):
            continue
        steps = {step.strip().lower() for step in re.split(r"\d+\)", procedure[1]) if step.strip()}
        if action not in steps and _OPPOSITE[action] in steps:
            return _OPPOSITE[action]
    return action


def mock_policy(request: Request, spec: ModelSpec) -> str | ProviderResult:
    answer = memory_answer(request, spec)
    if answer is not None:
        return answer
    return _resolve_policy(str(spec.options.get("agent_policy", "oracle")))(request, spec)
