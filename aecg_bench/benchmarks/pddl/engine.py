"""A STRIPS state machine over a parsed domain and problem.

A state is the frozenset of true ground atoms (closed world). An action is
applicable when its parameters are bound to objects of the right types, the
objects are pairwise distinct, and every precondition atom holds; applying it
removes the delete effects and then adds the add effects (standard PDDL, and
pddlgym's order).

Two choices follow pddlgym as AgentBoard configures it (operators as actions,
dynamic action space, Fast Downward's instantiator):
- ground actions that repeat an object (`move rooma rooma`) are never valid;
- actions whose static preconditions (predicates no action changes) are false
  in the initial state are dropped at grounding time; they could never apply,
  so this only saves work.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from aecg_bench.benchmarks.pddl.parser import ROOT_TYPE, Atom, Domain, Problem

State = frozenset[Atom]


@dataclass(frozen=True)
class GroundAction:
    name: str
    args: tuple[str, ...]
    pre: frozenset[Atom]
    add: frozenset[Atom]
    delete: frozenset[Atom]


class World:
    """One problem's ground actions, transition function and goal test."""

    def __init__(self, domain: Domain, problem: Problem) -> None:
        self.domain = domain
        self.problem = problem
        self.init: State = problem.init
        self.goal: tuple[Atom, ...] = problem.goal
        self.arity = {name: len(op.params) for name, op in domain.operators.items()}
        self.actions = self._ground()
        self._by_key = {(a.name, a.args): a for a in self.actions}

    def objects_of(self, typ: str) -> list[str]:
        return sorted(o for o, t in self.problem.objects.items() if typ == ROOT_TYPE or self.domain.is_subtype(t, typ))

    def _ground(self) -> list[GroundAction]:
        changed = {a[0] for op in self.domain.operators.values() for a in (*op.add, *op.delete)}
        out: list[GroundAction] = []
        for op in self.domain.operators.values():
            choices = [self.objects_of(typ) for _, typ in op.params]
            for combo in itertools.product(*choices):
                if len(set(combo)) != len(combo):
                    continue
                binding = {
                    **{c: c for c in self.domain.constants},
                    **dict(zip((v for v, _ in op.params), combo, strict=True)),
                }
                pre = frozenset(_bind(a, binding) for a in op.pre)
                if any(a[0] not in changed and a not in self.init for a in pre):
                    continue
                add = frozenset(_bind(a, binding) for a in op.add)
                delete = frozenset(_bind(a, binding) for a in op.delete)
                out.append(GroundAction(op.name, tuple(combo), pre, add, delete))
        return sorted(out, key=lambda a: (a.name, a.args))

    def lookup(self, name: str, args: tuple[str, ...]) -> GroundAction | None:
        """The ground action `name(args)`, or None if it can never apply (bad types, repeats, statics)."""
        return self._by_key.get((name, args))

    def applicable(self, state: State) -> list[GroundAction]:
        return [a for a in self.actions if a.pre <= state]

    @staticmethod
    def successor(state: State, action: GroundAction) -> State:
        return (state - action.delete) | action.add

    def goal_fraction(self, state: State) -> float:
        return sum(a in state for a in self.goal) / len(self.goal) if self.goal else 1.0

    def satisfied(self, state: State) -> bool:
        return all(a in state for a in self.goal)


def _bind(atom: Atom, binding: dict[str, str]) -> Atom:
    return (atom[0], *(binding[x] for x in atom[1:]))
