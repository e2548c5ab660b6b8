"""AgentNet's router replies: parsing and validity checks, and the router's prompt.

A router answers with one line: `EXECUTE`, `FORWARD <agent>` or
`SPLIT <part> || <part> ...`. A reply is valid only if the option was offered
(forwarding needs a connected agent off the current path, within the hop
bound; splitting is offered on the whole task only, into 2..max parts).
Anything else falls back to EXECUTE and is counted as an invalid route.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

HANDOVER = "SUBTASK DONE"
_ROUTE = re.compile(r"^(execute|forward|split)\b[\s:,\-]*(.*)$", re.I)
_AGENT = re.compile(r"agent[\s_\-]*(\d+)", re.I)


@dataclass(frozen=True)
class Route:
    kind: Literal["execute", "forward", "split"]
    target: str = ""
    parts: tuple[str, ...] = ()
    valid: bool = True

    @property
    def detail(self) -> str:
        return self.target or " || ".join(self.parts)


def parse_route(text: str, targets: list[str], can_split: bool, max_parts: int) -> Route:
    """The route a router's reply names, if it is one of the offered options; else an invalid EXECUTE."""
    line = next((ln.strip(" \t*`>#-") for ln in text.splitlines() if ln.strip(" \t*`>#-")), "")
    m = _ROUTE.match(line)
    if m is None:
        return Route("execute", valid=False)
    kind, rest = m.group(1).lower(), m.group(2).strip()
    if kind == "forward":
        agent = _AGENT.search(rest)
        target = f"agent_{agent.group(1)}" if agent else ""
        return Route("forward", target=target) if target in targets else Route("execute", valid=False)
    if kind == "split":
        parts = tuple(p.strip() for p in rest.split("||") if p.strip())
        ok = can_split and 2 <= len(parts) <= max_parts
        return Route("split", parts=parts) if ok else Route("execute", valid=False)
    return Route("execute")


def router_prompt(
    agent: str, task_type: str, ability: float, targets: list[tuple[str, float, float]], can_split: bool, max_parts: int
) -> str:
    """System prompt of `agent`'s router; `targets` are (agent, ability, connection weight), best first."""
    kind = task_type or "this"
    lines = [
        f"You are the router of {agent} in a decentralized network of agents with no central coordinator. "
        "Decide who handles the task below.",
        f"Your ability on {kind} tasks: {ability:.2f}.",
    ]
    options = ["EXECUTE - you handle it yourself"]
    if targets:
        listed = ", ".join(f"{a} (ability {ab:.2f}, connection {w:.2f})" for a, ab, w in targets)
        lines.append(f"Agents you can forward to: {listed}.")
        options.append("FORWARD <agent name> - an agent better suited to it takes it over")
    if can_split:
        options.append(
            f"SPLIT <part 1> || <part 2> - it has separable parts (at most {max_parts}); "
            "you take the first, your neighbours the others"
        )
    lines.append("Reply with exactly one line, one of:\n" + "\n".join(options))
    return "\n".join(lines)
