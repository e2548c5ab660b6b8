"""AECG's memory-side prompts (paper appendix D), written for this harness.

The paper publishes the constraints of each prompt but omits formatting,
examples and boilerplate; the wording below is ours and keeps every listed
constraint. Each prompt is a system message that starts with a tag
`[aecg:<kind>]` (so logs and the mock model can tell them apart) and a user
message holding the inputs as one JSON object after `INPUT:`. Replies are
one JSON object; `llm_json.parse_object` reads them robustly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from aecg_bench.aecg.admission import FAILURE_MODES
from aecg_bench.types import LEVELS

SKILL_ABSTRACTION = "skill_abstraction"
FAILURE_ATTRIBUTION = "failure_attribution"
CONTEXT_NARROWING = "context_narrowing"
PROCEDURAL_REPAIR = "procedural_repair"

_SYSTEMS: dict[str, str] = {
    SKILL_ABSTRACTION: """You turn successful experience of a multi-agent system into one reusable procedural skill.
Rules:
- The SEED memory is the primary evidence. AUXILIARY memories are supplementary: use them only to clarify where the skill applies, never as a source of steps the seed does not support.
- Preserve the coordination scope given in the input (team, event or agent) and the granularity of the seed: the skill guides decisions at that level only.
- Remove task-specific details (identifiers, names, numbers, literal answers) so the skill transfers to new tasks of the same kind.
- State applicability (when to use it), triggers (observable cues), the procedure (ordered steps), avoidance (what not to do) and a one-sentence evidence summary.
Reply with one JSON object and nothing else:
{"name": str, "applicability": str, "triggers": [str], "procedure": [str], "avoidance": [str], "evidence_summary": str}""",
    FAILURE_ATTRIBUTION: """You are one of two independent judges deciding whether a recalled memory object is responsible for a failed task. Your verdict can admit negative evidence against it, so be conservative.
Rules:
- Link a candidate to the failure only through a specific clause of its text that the trace shows was applied, and the observed behaviour that followed from that clause.
- Test alternative explanations: other candidates, the task's difficulty, environment feedback, agent errors unrelated to any memory.
- Abstain when the evidence is incomplete, when candidates cannot be told apart, or when a non-memory explanation is stronger.
- Name the candidate's id and its scope (team, event or agent) exactly as given.
- failure_mode: "applicability" if the object was applied in a context where it does not hold, "procedure" if it applied but its steps or avoidance rules were wrong, "unclear" otherwise.
Reply with one JSON object and nothing else:
{"abstain": bool, "skill_id": str or null, "scope": str or null, "clause": str, "behaviour": str, "alternatives_considered": str, "failure_mode": "applicability" | "procedure" | "unclear", "confidence": number between 0 and 1}""",
    CONTEXT_NARROWING: """You revise a skill by context narrowing: the bad cases show it was applied where it does not hold.
Rules:
- Propose a minimal pre-execution applicability predicate supported by the bad cases: words or short phrases that must all appear ("all_of") or must not appear ("none_of") in the decision context (task type, task, level, role, agent, observation) before the skill may be used. Use at most the number of terms given in the input.
- The predicate must exclude the bad cases and keep the listed supported successes.
- Revise only the applicability and the triggers. The procedure and avoidance stay exactly as they are.
- The result is an inactive candidate; it is activated only after replay.
- Abstain if no safe predicate can represent the failure region, or if it would exclude valid uses.
Reply with one JSON object and nothing else:
{"abstain": bool, "reason": str, "predicate": {"all_of": [str], "none_of": [str]}, "applicability": str, "triggers": [str]}""",
    PROCEDURAL_REPAIR: """You revise a skill by procedural repair: the bad cases show it applied in the right context but its procedure or avoidance rules were defective.
Rules:
- Change only the steps or avoidance rules that the bad cases show to be defective; keep every useful step and keep the scope.
- Do not change the applicability or the triggers.
- Do not hard-code any single bad case: no identifiers, names, numbers or literal answers from it; state general rules.
- The result is an inactive candidate; it is activated only after replay.
- Abstain if the evidence does not identify a procedural defect.
Reply with one JSON object and nothing else:
{"abstain": bool, "reason": str, "procedure": [str], "avoidance": [str]}""",
}

KINDS = tuple(_SYSTEMS)


def skill_grammar(max_chars: int = 16, max_steps: int = 2) -> str:
    """The skill abstraction's JSON object as GBNF, in the prompt's key order: a name, the applicability, one
    trigger and 1 to `max_steps` procedure steps, then optionally at most one avoidance rule and the evidence
    summary; every string one line of 1 to `max_chars` characters.

    A decoding aid, not the paper's (as ConMem's `cards_grammar` and ReasoningBank's `items_grammar`):
    grammar-capable models (the embedded one) follow it and other providers drop it, so the paper preset is
    unchanged. Without it SmolLM2-135M answered every abstraction on `procedures` with unparsable JSON
    (repeated trigger strings, echoed input fields) cut at the smoke preset's 96-token cap; constrained by a
    JSON schema with unbounded strings it repeated one string ("A:A:A:...") up to the cap. The keys alone
    take 30 tokens (43 with the optional two), and the model fills each string to its bound, so the bounds
    keep a whole object under that cap; avoidance and evidence summary are optional because `parse_skill`
    needs only the applicability and the procedure (docs/benchmarks/procedures.md has the measurements).
    """
    steps = f' ("," ws text){{0,{max_steps - 1}}}' if max_steps > 1 else ""
    return (
        r"""root ::= "{" ws "\"name\": " text "," ws "\"applicability\": " text "," ws "\"triggers\": [" text "]," ws "\"procedure\": [" text"""
        + steps
        + r""" "]" ("," ws "\"avoidance\": [" text? "]")? ("," ws "\"evidence_summary\": " text)? ws "}"
ws ::= " "?
"""
        + f'text ::= "\\"" [^"\\\\\\x00-\\x1F]{{1,{max_chars}}} "\\""\n'
    )


def attribution_grammar(candidate_ids: Sequence[str], max_chars: int = 16) -> str:
    """The failure-attribution verdict as GBNF, in the prompt's key order: `abstain` a boolean, `skill_id`
    one of `candidate_ids` (the objects this call offers) or null, `scope` a level or null, then clause,
    behaviour and alternatives considered as one-line strings of 1 to `max_chars` characters, `failure_mode`
    one of the prompt's three and `confidence` a number in [0, 1] with at most two decimals.

    A decoding aid, not the paper's (as `skill_grammar`): grammar-capable models (the embedded one) follow it,
    other providers drop it. Without it every SmolLM2-135M verdict on `procedures` was unparsable, so no
    negative evidence reached any skill (docs/benchmarks/procedures.md). The grammar only shapes the reply:
    which object, which scope, the confidence and abstention are still the judge's, and the agreement rule
    still checks that the named scope is the object's own. Built per call because the ids differ per call.
    """
    if not candidate_ids:
        raise ValueError("a failure-attribution grammar needs at least one candidate id")
    ids = " | ".join(_gbnf_literal(json.dumps(i, ensure_ascii=False)) for i in dict.fromkeys(candidate_ids))
    scopes = " | ".join(_gbnf_literal(f'"{level}"') for level in LEVELS)
    modes = " | ".join(_gbnf_literal(f'"{mode}"') for mode in FAILURE_MODES)
    return (
        r"""root ::= "{" ws "\"abstain\": " ("true" | "false") "," ws "\"skill_id\": " (id | "null") "," ws "\"scope\": " (scope | "null") "," ws "\"clause\": " text "," ws "\"behaviour\": " text "," ws "\"alternatives_considered\": " text "," ws "\"failure_mode\": " mode "," ws "\"confidence\": " confidence ws "}"
confidence ::= "0" ("." [0-9] [0-9]?)? | "1" (".0" "0"?)?
ws ::= " "?
"""
        + f"id ::= {ids}\nscope ::= {scopes}\nmode ::= {modes}\n"
        + f'text ::= "\\"" [^"\\\\\\x00-\\x1F]{{1,{max_chars}}} "\\""\n'
    )


def _gbnf_literal(text: str) -> str:
    """`text` as a GBNF string literal: backslashes and quotes escaped (the callers pass JSON strings, in
    which `json.dumps` has already escaped every control character)."""
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{out}"'


_TAG = re.compile(r"^\[aecg:(\w+)\]")


def messages(kind: str, payload: dict[str, Any]) -> list[dict[str, str]]:
    if kind not in _SYSTEMS:
        raise ValueError(f"unknown AECG prompt {kind!r}; valid: {', '.join(KINDS)}")
    return [
        {"role": "system", "content": f"[aecg:{kind}] {_SYSTEMS[kind]}"},
        {"role": "user", "content": "INPUT:\n" + json.dumps(payload, indent=1, ensure_ascii=False, sort_keys=True)},
    ]


def kind_of(request_messages: list[dict[str, Any]]) -> str | None:
    """The AECG prompt kind of a request (None for any other prompt)."""
    for m in request_messages:
        if m.get("role") == "system":
            match = _TAG.match(str(m.get("content") or ""))
            return match.group(1) if match else None
    return None


def payload_of(request_messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The INPUT object of an AECG prompt (for the mock model and tests)."""
    for m in reversed(request_messages):
        content = str(m.get("content") or "")
        if m.get("role") == "user" and content.startswith("INPUT:\n"):
            return json.loads(content[len("INPUT:\n") :])
    return {}
