"""Natural language for PDDL atoms and actions, and free-text actions back to ground actions.

Rendering reproduces AgentBoard's `pddl_env.py` (hkust-nlp/AgentBoard,
`agentboard/environment/pddl_env/pddl_env.py`, `predicate_map` and
`literal_to_text`): one template per predicate or action name, shared by all
domains, filled with the arguments in order; a name without a template renders
as `name arg1 arg2`. AgentBoard's map is a Python dict literal with repeated
keys, so the later entry wins; the table below is the effective map for the
four domains, including the quirks that follow:
- `clear` renders as "The {} is clear." and `holding` as "You are holding {}. "
  (the Hanoi and barman entries override the blocks ones);
- barman's two-argument `holding ?h ?c` keeps only the hand ("You are holding left. "),
  since `str.format` ignores surplus arguments;
- tyreworld's `free` uses gripper's "{} is free. ";
- barman's `used ?c ?b` renders as "Pour {} from a shot glass to a used shaker {}";
- several templates end with a space, so joined observations contain double spaces.

Parsing reproduces AgentBoard's `text_to_action`: lower-case the text, split
it into word tokens, take the first token that names an action with at least
one applicable grounding in the current state, then the object names among
the tokens in order of appearance, truncated to the action's arity (too few =
unparsable). AgentBoard tokenises with nltk's `word_tokenize` (which needs a
punkt download); here a regular expression yields the same word tokens for the
characters these domains' names use (letters, digits, `-`, `_`), without nltk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from aecg_bench.benchmarks.pddl.parser import Atom

TEMPLATES: dict[str, str] = {
    # blockworld
    "on": "{} is on {}.",
    "clear": "The {} is clear.",
    "arm-empty": "Your arm is empty.",
    "holding": "You are holding {}. ",
    "on-table": "{} is on the table.",
    "putdown": "Putdown {}.",
    "stack": "Stack {} on {}.",
    "pickup": "Pickup {}.",
    "unstack": "Unstack {} from {}.",
    # tyreworld
    "isopen": "{} is open.",
    "closed": "{} is closed.",
    "have": "You have {}.",
    "in": "{} is in {}.",
    "loose": "The nut {} on the hub {} is loose.",
    "tight": "The nut {} on the hub {} is tight.",
    "unlocked": "{} is unlocked.",
    "on-ground": "Hub {} is on the ground.",
    "not-on-ground": "Hub {} is not on the ground.",
    "inflated": "Wheel {} is inflated.",
    "not-inflated": "Wheel {} is not inflated.",
    "fastened": "Hub {} is fastened.",
    "unfastened": "Hub {} is unfastened.",
    "intact": "Wheel {} is intact.",
    "open": "Open {}.",
    "close": "Close {}.",
    "fetch": "Fetch {} from {}.",
    "put-away": "Put-away {} in {}.",
    "loosen": "Loosen the nut {} on the hub {}.",
    "tighten": "Tighten the nut {} on the hub {}.",
    "jack-up": "jack-up the hub {}.",
    "jack-down": "Jack-down the hub {}.",
    "undo": "Undo the fastening of the nut {} on the hub {}.",
    "do-up": "Do-up the nut {} on the hub {}.",
    "remove-wheel": "Remove-wheel {} from the hub {}.",
    "put-on-wheel": "put-on-wheel {} on the hub {}.",
    "inflate": "Inflate the wheel {}.",
    # gripper
    "ball": "{} is a ball. ",
    "gripper": "{} is a gripper. ",
    "at-robby": "Robby is at {}. ",
    "at": "{} is at {}. ",
    "free": "{} is free. ",
    "carry": "{} is carrying {}. ",
    "move": "Move from {} to {}. ",
    "pick": "Pick up {} at {} with arm {}. ",
    # barman
    "ontable": "{} is on the table. ",
    "empty": "{} is empty. ",
    "contains": "{} contains {}. ",
    "clean": "{} is clean. ",
    "used": "Pour {} from a shot glass to a used shaker {}",
    "dispenses": "{} dispenses {}. ",
    "shaker-empty-level": "{} is at empty level {}. ",
    "shaker-level": "{} is at level {}. ",
    "next": "level {} is next to level {}. ",
    "unshaked": "{} is unshaked. ",
    "shaked": "{} is shaked. ",
    "cocktail-part1": "{} part1 ingredient is {}. ",
    "cocktail-part2": "{} part2 ingredient is {}. ",
    "grasp": "{} grasp {}. ",
    "leave": "{} leave {}. ",
    "fill-shot": "fill-shot glass {} with {} with {} and {} holding {}. ",
    "refill-shot": "refill-shot {} with {} with {} and {} holding {}. ",
    "empty-shot": "use hand {} to empty-shot glass {} with beverage {}. ",
    "clean-shot": "clean-shot glass {} with {} with hand {} holding shot glass and {}. ",
    "pour-shot-to-clean-shaker": "pour-shot-to-clean-shaker from a shot glass {} with {} to a clean shaker {} "
    "with hand {} from level {} to level {}",
    "pour-shot-to-used-shaker": "pour-shot-to-used-shaker from a shot glass {} with {} to a used shaker {} "
    "with hand {} from level {} to level {}",
    "empty-shaker": "use hand {} to empty-shaker {} with ingredient {} from level {} to level {}.",
    "clean-shaker": "use hand {} and hand {} to clean-shaker {}",
    "shake": "shake a cocktail {} with ingredient {} and ingredient {} in a shaker {} with hand {} and hand {}",
    "pour-shaker-to-shot": "pour-shaker-to-shot to a shot glass {} the ingredient {} with hand {} "
    "from shaker {} from level {} to level {}",
}

_WORD = re.compile(r"[a-z0-9_][a-z0-9_\-]*")


def render(name: str, args: Iterable[str]) -> str:
    """An atom or action in AgentBoard's words (not capitalised)."""
    args = list(args)
    template = TEMPLATES.get(name)
    if template is None:
        return " ".join([name, *args])
    return template.format(*args)


def render_atom(atom: Atom) -> str:
    return render(atom[0], atom[1:])


def render_facts(atoms: Iterable[Atom]) -> str:
    """A set of facts as AgentBoard shows a state: each capitalised, sorted, joined by spaces."""
    return " ".join(sorted(render_atom(a).capitalize() for a in atoms))


def render_goal(goal: Iterable[Atom]) -> str:
    return "The goal is to satisfy the following conditions: " + ", ".join(sorted(render_atom(a) for a in goal))


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def parse_action(
    text: str, applicable_names: set[str], arity: dict[str, int], objects: set[str]
) -> tuple[str, tuple[str, ...]] | None:
    """(action name, objects) named by a free-text action, or None when it names none."""
    tokens = words(text)
    name = next((t for t in tokens if t in applicable_names), None)
    if name is None:
        return None
    named = [t for t in tokens if t in objects]
    if len(named) < arity[name]:
        return None
    return name, tuple(named[: arity[name]])
