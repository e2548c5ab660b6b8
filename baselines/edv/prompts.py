"""EDV's prompts (Distill, Verify) and the Judge baseline's adjudication prompt, with the
GBNF grammars that let grammar-capable local models answer in the parseable format.

The paper shows the Distill and Verify prompts only as figures (Figures 7-8)
and describes them in Appendix B; these are written from that description:

- Distill (B.1): a strict evaluator compares the candidate trajectories (no
  self-reflection), selects the best under "Compliance > Accuracy >
  Efficiency", and extracts a few high-value memory items (Title, one-sentence
  Description, 1-3 sentence Content: Appendix C.2), each evidence-based,
  grounded in observed log events and written as "Context -> Risk -> Action";
  for tool-use tasks, instructions about tool outputs are injected (check data
  integrity, align conclusions with the returned fields).
- Verify (B.2): an exceptionally strict auditor with a default-reject stance
  approves only non-obvious, high-utility lessons supported by concrete
  evidence; for tool-use tasks it loads the tool definitions and requires
  every referenced function name and argument to exist in them, and every
  referenced return field to appear in what the tools returned.

Return fields: B.2 checks them against "the provided schema". The harness's
tool schemas (`ToolSpec`, OpenAI's function-calling shape) carry a name, a
description and the arguments, no return type, so `render_tools` cannot show
return fields; both prompts check them against the tool outputs in the
trajectories they show, the only place the prompt holds them.

The item format is ReasoningBank's Markdown ("# Memory Item / ## Title / ##
Description / ## Content"), which EDV's Appendix C.2 schema matches, so both
methods' items parse the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from aecg_bench.types import Task, Trajectory
from baselines.trajectory_text import render_trajectory

DISTILL_SYSTEM = """You are a strict third-party evaluator of agent trajectories. You produced none of them. \
You are given one task and {n} candidate trajectories from different agents; compare them, do not merely \
summarise one.

Objective 1 - select the best candidate under the priority Compliance > Accuracy > Efficiency: a candidate \
that follows the task's rules and policy beats a more accurate one that breaks them; among compliant \
candidates the one that reached the correct result wins; among those, the one with fewer wasted steps.

Objective 2 - extract at most {max_items} memory items that will help an agent on similar future tasks, \
learned from the comparison: what the better candidates did that the worse ones did not, and what failed \
and why. Every item must:
- be evidence-based: grounded in events observed in the trajectories (cite them, e.g. "candidate 2, act 3"); \
no generic advice such as "read carefully" or "double-check";
- state its Content as Context -> Risk -> Action: in which situation it applies, what goes wrong there, \
what to do instead;
- transfer: no task-specific names, numbers or identifiers.
{tool_section}
Objective 3 - assess each candidate: did it complete the task correctly while following the rules? \
Judge only from what it did and observed; no outcome labels are given.

Reply in exactly this format:
Analysis: <one paragraph comparing the candidates>
Best: <candidate number>
Assessment: {assessment_format}
# Memory Item 1
## Title <a short identifier>
## Description <one sentence>
## Content <1-3 sentences: Context -> Risk -> Action>
(and so on, one block per item)"""

DISTILL_TOOLS = """
Tool outputs: this task is solved with tools. Verify data integrity against what the tools actually \
returned: state only function names and argument formats that appear in the tool schema below, and only \
facts and return fields that appear in the tool outputs in the trajectories; align every conclusion with \
the returned fields.
Tool schema (names, descriptions, arguments):
{tools}
"""

VERIFY_SYSTEM = """You are an exceptionally strict auditor of candidate memories for an agent's long-term \
memory bank. Your default is REJECT: a wrong or vacuous memory pollutes every future task that retrieves it. \
Approve the candidate only if all of these hold:
1. Grounded: concrete evidence in the trajectories below supports it, and nothing in them contradicts it.
2. Specific and non-obvious: it is a concrete, high-utility lesson, not generic advice and not a restatement \
of the task.
3. Dense: it carries real information in few words.
{schema_rule}If any check fails or you are unsure, reject.
Reply in exactly this format:
Rationale: <one paragraph naming the checks and the evidence>
Verdict: APPROVE or REJECT"""

VERIFY_SCHEMA_RULE = """4. Schema-aligned: every function name and argument it mentions exists in this tool \
schema, and every return field it mentions appears in a tool output in the trajectories below:
{tools}
"""

JUDGE_SYSTEM = """You are a judge choosing the best of several independent attempts at the same task. \
Decide which attempt most likely completed the task correctly while following its rules, judging only from \
what the attempts did and observed.
Reply in exactly this format:
Reason: <one paragraph>
Best: <attempt number>"""


@dataclass(frozen=True)
class Candidate:
    """One executed trajectory, as the distiller, the verifiers and the judge see it."""

    number: int  # 1-based, as shown in prompts
    executor: str  # "executor 1", ... (pool labels stay out of prompts)
    trajectory: Trajectory
    outcome: str  # "success" | "failure" | "unknown" (the run's label, never the gold score)


def render_tools(task: Task) -> str:
    return "\n".join(
        json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}, sort_keys=True)
        for t in task.tools
    )


def render_candidates(candidates: Sequence[Candidate], max_chars: int, *, show_outcome: bool) -> str:
    """Each candidate's trajectory, clipped to `max_chars` each: every trajectory gets the budget
    ReasoningBank's extractor gets for its one, however many candidates there are."""
    blocks = []
    for c in candidates:
        head = f"### Candidate {c.number} ({c.executor}" + (f"; outcome: {c.outcome})" if show_outcome else ")")
        blocks.append(f"{head}\n{render_trajectory(c.trajectory, max_chars=max_chars)}")
    return "\n\n".join(blocks)


def distill_messages(
    task: Task, candidates: Sequence[Candidate], *, max_items: int, max_chars: int, show_outcome: bool
) -> tuple[str, str]:
    """(system, user) of the distiller's call."""
    tools = DISTILL_TOOLS.format(tools=render_tools(task)) if task.tools else ""
    assessment = "; ".join(f"{c.number}=<success|failure>" for c in candidates)
    system = DISTILL_SYSTEM.format(
        n=len(candidates), max_items=max_items, tool_section=tools, assessment_format=assessment
    )
    user = (
        f"## Task\n{task.instruction.strip()}\n\n## Candidates\n"
        f"{render_candidates(candidates, max_chars, show_outcome=show_outcome)}"
    )
    return system, user


def verify_messages(
    task: Task, candidates: Sequence[Candidate], item_text: str, *, max_chars: int, show_outcome: bool
) -> tuple[str, str]:
    """(system, user) of one verifier's audit of one candidate memory."""
    rule = VERIFY_SCHEMA_RULE.format(tools=render_tools(task)) if task.tools else ""
    user = (
        f"## Task\n{task.instruction.strip()}\n\n## Trajectories\n"
        f"{render_candidates(candidates, max_chars, show_outcome=show_outcome)}\n\n"
        f"## Candidate memory\n{item_text}"
    )
    return VERIFY_SYSTEM.format(schema_rule=rule), user


def judge_messages(task: Task, candidates: Sequence[Candidate], *, max_chars: int) -> tuple[str, str]:
    """(system, user) of the Judge baseline's adjudication; attempts carry no outcome; `max_chars` each."""
    blocks = [f"### Attempt {c.number}\n{render_trajectory(c.trajectory, max_chars=max_chars)}" for c in candidates]
    user = f"## Task\n{task.instruction.strip()}\n\n## Attempts\n" + "\n\n".join(blocks)
    return JUDGE_SYSTEM, user


# -- grammars (used only by models whose server accepts GBNF; dropped elsewhere) -----------

_LINE = "line ::= [^\\n]{1,300}"


def _choice(n: int) -> str:
    return " | ".join(f'"{i}"' for i in range(1, n + 1))


def _assessment(n: int) -> str:
    return ' "; " '.join(f'"{i}=" verdict' for i in range(1, n + 1))


def distill_grammar(n_candidates: int, max_items: int) -> str:
    items = " ".join(["item"] + ["item?"] * (max_items - 1))
    return "\n".join(
        [
            f'root ::= "Analysis: " line "\\nBest: " ({_choice(n_candidates)}) "\\nAssessment: " {_assessment(n_candidates)} "\\n" {items}',
            'verdict ::= "success" | "failure"',
            'item ::= "# Memory Item\\n## Title " line "\\n## Description " line "\\n## Content " line "\\n"',
            _LINE,
        ]
    )


VERIFY_GRAMMAR = "\n".join(['root ::= "Rationale: " line "\\nVerdict: " ("APPROVE" | "REJECT")', _LINE])


def judge_grammar(n_candidates: int) -> str:
    return "\n".join([f'root ::= "Reason: " line "\\nBest: " ({_choice(n_candidates)})', _LINE])
