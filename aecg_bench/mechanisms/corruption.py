"""Controlled corruption of validated skills in a memory snapshot (AECG RQ3/RQ4, appendix C.3).

The paper corrupts "validated skills" and measures how fast governance finds
them; it does not publish the alteration. Ours, a pure seeded function of the
snapshot (recorded beside the runs):

- validated = active skill versions used at least `min_uses` times whose slow
  belief mean is at least `min_reliability` (they earned their history), at
  the given `levels` (default: every level);
- `n` of them are drawn with a generator seeded by the run seed;
- each gets a wrong procedure that still parses: the procedure of another
  skill of the same level that both lacks one of its steps and brings one it
  lacks (drawn by the same generator), else of any level, else its own steps
  reversed. Everything else (belief,
  history, exposure, fixtures, scope) is kept, so the corrupted skill enters
  the evaluation with the trust it had earned: that is the inertia RQ3 tests.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from aecg_bench.errors import ConfigError


def slow_mean(skill: dict[str, Any]) -> float:
    slow = skill["belief"]["slow"]
    return slow["alpha"] / (slow["alpha"] + slow["beta"])


def validated(
    skills: list[dict[str, Any]], min_uses: int, min_reliability: float, levels: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    ok = [
        s
        for s in skills
        if s["status"] == "active"
        and s["uses"] >= min_uses
        and slow_mean(s) >= min_reliability
        and (levels is None or s["level"] in levels)
    ]
    return sorted(ok, key=lambda s: s["id"])


def wrong_procedure(skill: dict[str, Any], skills: list[dict[str, Any]], rng: random.Random) -> tuple[list[str], str]:
    own = set(skill["content"]["procedure"])

    def differs(other: dict[str, Any]) -> bool:
        steps = set(other["content"]["procedure"])
        return bool(steps - own) and bool(own - steps)

    others = [s for s in skills if s["lineage"] != skill["lineage"] and differs(s)]
    for pool, how in (([s for s in others if s["level"] == skill["level"]], "same-level swap"), (others, "swap")):
        if pool:
            donor = rng.choice(sorted(pool, key=lambda s: s["id"]))
            return list(donor["content"]["procedure"]), f"{how} from {donor['id']}"
    return list(reversed(skill["content"]["procedure"])), "reversed"


def corrupt(
    state: dict[str, Any],
    n: int,
    seed: int,
    *,
    min_uses: int = 1,
    min_reliability: float = 0.5,
    levels: tuple[str, ...] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(altered copy of a runner snapshot state, what was altered); the input is unchanged."""
    out = copy.deepcopy(state)
    skills = out["memory"]["store"]["skills"]
    pool = validated(skills, min_uses, min_reliability, levels)
    if len(pool) < n:
        at = f", level in {list(levels)}" if levels is not None else ""
        raise ConfigError(
            f"the warm-up snapshot has {len(pool)} validated skills (active, used >= {min_uses}, slow mean >= "
            f"{min_reliability}{at}); mechanism.corrupt.skills={n} needs more: lengthen the stream or lower it"
        )
    rng = random.Random(f"aecg-corruption:{seed}")
    record = []
    for skill in rng.sample(pool, n):
        before = list(skill["content"]["procedure"])
        skill["content"]["procedure"], how = wrong_procedure(skill, skills, rng)
        record.append(
            {
                "skill": skill["id"],
                "lineage": skill["lineage"],
                "level": skill["level"],
                "how": how,
                "procedure_before": before,
                "procedure_after": list(skill["content"]["procedure"]),
                "exposure": sum(skill["exposure"]),
                "uses": skill["uses"],
                "slow_mean": round(slow_mean(skill), 6),
            }
        )
    return out, record
