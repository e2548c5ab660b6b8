"""AgentNet's router replies: their grammars, parsing and prompts.

Two router decisions, after AgentNet's code (config/setting.py
ROUTER_PROMPT_FORMAT and ROUTER_PROMPT_DECIDE_NEXT_AGENT_ID_FORMAT; src/agent.py
`router_decide_action`, `router_decide_next_agent_id`):

- route (a task arrives): `EXECUTE`, `FORWARD agent_<n>` or `SPLIT: <the part I do now>`;
- next (after a split part is done): `COMPLETE` or `INCOMPLETE agent_<n>: <what remains>`.

The original reads labelled fields (DECISION, NEXT_AGENT_ID, EXECUTABLE ...)
from free text; here each reply is one line with its own grammar (GBNF for
grammar-capable models), or the same decision as a JSON object (`schema`) on
providers with structured output, and a reply that matches none of the offered
options is `unparsed`: recorded and counted, never read as a decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from aecg_bench.llm.structured import OutputSchema, json_object

HANDOVER = "SUBTASK DONE"
_ROUTE = re.compile(r"^(execute|forward|split|complete|incomplete)\b[\s:,\-]*(.*)$", re.I)
_AGENT = re.compile(r"agent[\s_\-]*(\d+)", re.I)

Kind = Literal["execute", "forward", "split", "complete", "incomplete", "unparsed"]


@dataclass(frozen=True)
class Route:
    kind: Kind
    target: str = ""  # the agent named (forward, incomplete)
    text: str = ""  # the part taken (split) or what remains (incomplete)


def parse_reply(text: str, offered: tuple[str, ...]) -> Route:
    """The decision a router's reply names, if it is one of `offered`; else `unparsed`."""
    line = next((ln.strip(" \t*`>#-") for ln in text.splitlines() if ln.strip(" \t*`>#-")), "")
    m = _ROUTE.match(line)
    if m is None or m.group(1).lower() not in offered:
        return Route("unparsed")
    kind, rest = m.group(1).lower(), m.group(2).strip()
    if kind in ("forward", "incomplete"):
        agent = _AGENT.search(rest)
        if agent is None:
            return Route("unparsed")
        remains = rest[agent.end() :].lstrip(" :,-")
        return Route(kind, target=f"agent_{agent.group(1)}", text=remains)  # type: ignore[arg-type]
    if kind == "split":
        return Route("split", text=rest) if rest else Route("unparsed")
    return Route(kind)  # type: ignore[arg-type]


def grammar(offered: tuple[str, ...], agents: list[str]) -> str:
    """GBNF for one line naming an offered option (agent names limited to `agents`)."""
    names = " | ".join(f'"{a}"' for a in agents) or '"agent_0"'
    alts = {
        "execute": '"EXECUTE"',
        "forward": '"FORWARD " agent',
        "split": '"SPLIT: " text',
        "complete": '"COMPLETE"',
        "incomplete": '"INCOMPLETE " agent ": " text',
    }
    return "\n".join(
        [
            "root ::= " + " | ".join(alts[o] for o in offered),
            f"agent ::= {names}",
            "text ::= [^\\n]{1,300}",
        ]
    )


def schema(offered: tuple[str, ...], agents: list[str]) -> OutputSchema:
    """The router's decision as a JSON object (structured-output providers): the option, the agent it
    names (forward, incomplete) and its text (split: the part taken; incomplete: what remains)."""
    props: dict[str, Any] = {"decision": {"type": "string", "enum": [o.upper() for o in offered]}}
    if {"forward", "incomplete"} & set(offered):
        props["agent"] = {"type": "string", "enum": [*agents, ""], "description": "empty unless FORWARD/INCOMPLETE"}
    if {"split", "incomplete"} & set(offered):
        props["text"] = {"type": "string", "description": "SPLIT: the part you do now; INCOMPLETE: what remains"}
    body = {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}
    return OutputSchema("route", body, "The router's decision on the task it holds.")


def read_route(text: str, offered: tuple[str, ...], structured: bool) -> Route:
    """A router reply: its JSON object when the provider was asked for one, else (or when the reply is no
    JSON object at all) its line (`parse_reply`). The object is rewritten as the line it stands for, so
    both are read by the same rules."""
    obj = json_object(text) if structured else None
    if obj is None:
        return parse_reply(text, offered)
    kind, agent, rest = obj.get("decision"), obj.get("agent", ""), obj.get("text", "")
    if not (isinstance(kind, str) and isinstance(agent, str) and isinstance(rest, str)):
        return Route("unparsed")
    line = {"FORWARD": f"FORWARD {agent}", "SPLIT": f"SPLIT: {rest}", "INCOMPLETE": f"INCOMPLETE {agent}: {rest}"}
    return parse_reply(line.get(kind, kind), offered)


OPTION_TEXT = {
    "execute": "EXECUTE - you solve the whole remaining task yourself",
    "forward": "FORWARD agent_<n> - pass the task unchanged to a more suitable agent",
    "split": "SPLIT: <the part you do now> - do that part yourself, then pass the rest on",
    "complete": "COMPLETE - the major task is done (or the progress suffices to finish it)",
    "incomplete": "INCOMPLETE agent_<n>: <what remains> - pass the rest to that agent",
}

ROUTER_SYSTEM = (
    "You are the router of {agent} in a decentralized network of agents with no central coordinator. "
    "The major task should be completed through cooperation among agents; consider the agents' abilities "
    "and success rates, and prioritise expertise matching. If you execute or split, your ability improves "
    "when the task succeeds and drops when it fails; forwarding changes neither."
)
"""After AgentNet config/setting.py ROUTER_SYSTEM_PROMPT and the rules of ROUTER_PROMPT_FORMAT."""


def router_prompt(
    agent: str,
    task_type: str,
    own: tuple[float, float],
    neighbours: list[tuple[str, float, float, float]],
    offered: tuple[str, ...],
    progress: list[tuple[str, str]],
) -> str:
    """System prompt of `agent`'s router. `own` = (ability, success rate); `neighbours` =
    (agent, ability, success rate, connection weight); `progress` = (agent, what it did) so far."""
    kind = task_type or "this"
    lines = [
        ROUTER_SYSTEM.format(agent=agent),
        f"Your ability on {kind} tasks: {own[0]:.2f}; your success rate: {own[1]:.0%}.",
    ]
    if neighbours:
        listed = "; ".join(
            f"{a}: ability {ab:.2f}, success rate {sr:.0%}, connection {w:.2f}" for a, ab, sr, w in neighbours
        )
        lines.append(f"Available agents: {listed}.")
    if progress:
        lines.append("Progress so far:\n" + "\n".join(f"- {a}: {t.strip()[:300]}" for a, t in progress))
    lines.append("Reply with exactly one line, one of:\n" + "\n".join(OPTION_TEXT[o] for o in offered))
    return "\n".join(lines)
