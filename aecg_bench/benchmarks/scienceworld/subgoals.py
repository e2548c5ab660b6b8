"""AgentBoard's subgoal-progress scoring for ScienceWorld, with no simulator involved.

AgentBoard annotates each task with subgoals: regular expressions that an
observation shows when a milestone is reached ("You move to the outside.",
"the thermometer measures a temperature of (-?[0-9]|...) degrees celsius").
After every simulator step it runs `re.search(subgoal, observation)` for each
subgoal and marks the matches; marks are never taken back. Progress rate =
marked / total; the task succeeds (and the episode ends) when every subgoal
is marked. The initial observation and AgentBoard's `check valid actions`
reply are not matched. This module holds exactly that logic, so it can be
tested on synthetic observation strings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def compile_subgoals(patterns: Sequence[str]) -> list[re.Pattern[str]]:
    """Compile subgoal patterns as AgentBoard uses them (`re.search`, no flags)."""
    if not patterns:
        raise ValueError("a task needs at least one subgoal")
    compiled = []
    for i, pattern in enumerate(patterns):
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"subgoal {i} is not a non-empty string: {pattern!r}")
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"subgoal {i} {pattern!r} is not a valid regular expression: {exc}") from None
    return compiled


class SubgoalTracker:
    """Marks subgoals as observations match them; progress never decreases."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self._patterns = compile_subgoals(patterns)
        self._matched = [False] * len(self._patterns)

    def observe(self, text: str) -> int:
        """Mark every subgoal the observation matches; return how many were newly marked."""
        new = 0
        for i, pattern in enumerate(self._patterns):
            if not self._matched[i] and pattern.search(text):
                self._matched[i] = True
                new += 1
        return new

    @property
    def matched(self) -> int:
        return sum(self._matched)

    @property
    def total(self) -> int:
        return len(self._patterns)

    @property
    def progress(self) -> float:
        return self.matched / self.total

    @property
    def complete(self) -> bool:
        return self.matched == self.total
