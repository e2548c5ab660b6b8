"""PDDL progress, success and grounding accuracy on a tiny hand-made domain (no shared data; issue 17).

Each test pins one rule of AgentBoard's `EvalPddl` / `PDDL.step` as `aecg_bench.benchmarks.pddl.env` documents
it, on a world small enough to follow by hand, so a one-line change to the scorer or the engine fails here.
"""

from __future__ import annotations

import pytest

from aecg_bench.benchmarks.pddl.engine import World
from aecg_bench.benchmarks.pddl.env import CHECK, GOAL_REACHED, INAPPLICABLE, LOOK, UNPARSED, PddlEnv, meta_actions
from aecg_bench.benchmarks.pddl.parser import Problem, parse_domain, parse_problem
from aecg_bench.types import Action

DOMAIN = """
(define (domain lamps)
  (:requirements :strips :typing)
  (:types room lamp - object)
  (:predicates (inroom ?r - room) (glow ?l - lamp) (door ?a - room ?b - room) (placed ?l - lamp ?r - room))
  (:action walk
    :parameters (?from - room ?to - room)
    :precondition (and (inroom ?from) (door ?from ?to))
    :effect (and (inroom ?to) (not (inroom ?from))))
  (:action shine
    :parameters (?l - lamp ?r - room)
    :precondition (and (inroom ?r) (placed ?l ?r))
    :effect (glow ?l))
  (:action dim
    :parameters (?l - lamp ?r - room)
    :precondition (and (inroom ?r) (placed ?l ?r) (glow ?l))
    :effect (not (glow ?l))))
"""
PROBLEM = """
(define (problem two-lamps) (:domain lamps)
  (:objects r1 r2 - room l1 l2 - lamp)
  (:init (inroom r1) (door r1 r2) (door r2 r1) (placed l1 r1) (placed l2 r2))
  (:goal (and (glow l1) (glow l2) (inroom r1))))
"""


@pytest.fixture
def world() -> World:
    domain = parse_domain(DOMAIN, "lamps")
    return World(domain, parse_problem(PROBLEM, domain, "two-lamps"))


def act(env: PddlEnv, text: str):
    return env.step(Action(kind="command", text=text))


def test_goal_fraction_and_satisfaction(world):
    init = world.init
    assert world.goal_fraction(init) == pytest.approx(1 / 3)  # (inroom r1) holds initially
    assert not world.satisfied(init)
    lit = init | {("glow", "l1"), ("glow", "l2")}
    assert world.goal_fraction(lit) == 1.0 and world.satisfied(lit)
    assert world.goal_fraction(frozenset()) == 0.0
    empty = World(world.domain, Problem("none", "lamps", dict(world.problem.objects), init, ()))
    assert empty.goal_fraction(init) == 1.0 and empty.satisfied(init)  # nothing to reach


def test_grounding_skips_repeats_wrong_types_and_impossible_statics(world):
    keys = {(a.name, a.args) for a in world.actions}
    assert ("walk", ("r1", "r2")) in keys and ("walk", ("r2", "r1")) in keys
    assert ("walk", ("r1", "r1")) not in keys  # repeated object
    assert ("shine", ("l1", "r1")) in keys and ("shine", ("l1", "r2")) not in keys  # static (placed l1 r2) false
    assert world.lookup("shine", ("r1", "l1")) is None  # wrong types
    shine = world.lookup("shine", ("l1", "r1"))
    assert shine is not None and shine.pre == {("inroom", "r1"), ("placed", "l1", "r1")}
    assert shine.add == {("glow", "l1")} and shine.delete == frozenset()
    assert [a.name for a in world.actions] == sorted(a.name for a in world.actions)


def test_an_action_applies_when_the_state_is_exactly_its_precondition(world):
    shine = world.lookup("shine", ("l1", "r1"))
    assert shine in world.applicable(shine.pre)  # pre <= state, equality included
    assert world.applicable(frozenset()) == []


def test_successor_deletes_then_adds(world):
    walk = world.lookup("walk", ("r1", "r2"))
    after = world.successor(world.init, walk)
    assert ("inroom", "r2") in after and ("inroom", "r1") not in after
    assert world.init - after == {("inroom", "r1")}


def test_progress_rate_is_a_running_maximum_updated_only_by_valid_actions(world):
    env = PddlEnv(world, "lamps")
    first = env.reset()
    assert first.info == {"progress_rate": 0.0}  # AgentBoard starts at 0 though one goal atom holds
    assert env.score().metrics == {
        "progress_rate": 0.0,
        "grounding_accuracy": 0.0,
        "steps": 0.0,
        "invalid_actions": 0.0,
    }
    obs = act(env, "shine l1 r1")
    assert obs.valid and obs.reward == 0.0 and not obs.done
    assert obs.info == {"progress_rate": pytest.approx(2 / 3)}
    obs = act(env, "walk r1 r2")  # leaves r1: the goal fraction drops to 2/3, progress stays
    assert obs.info["progress_rate"] == pytest.approx(2 / 3)
    assert act(env, "walk r2 r2").text == INAPPLICABLE  # never valid: repeated object
    assert act(env, "shine l2 r2").info["progress_rate"] == pytest.approx(2 / 3)
    score = env.score()
    assert score.value == pytest.approx(2 / 3) and not score.success
    assert score.metrics["grounding_accuracy"] == pytest.approx(3 / 4)
    assert score.metrics["invalid_actions"] == 1.0 and score.metrics["steps"] == 4.0
    obs = act(env, "walk r2 r1")
    assert obs.done and obs.reward == 1.0 and obs.text.endswith(GOAL_REACHED)
    score = env.score()
    assert score.success and score.value == 1.0 and score.metrics["progress_rate"] == 1.0
    late = act(env, "dim l1 r1")
    assert (late.text, late.valid, late.done, late.reward) == ("The task is already finished.", False, True, 1.0)
    assert env.score().metrics["steps"] == 5.0  # a step after the end is not counted


def test_invalid_and_meta_actions(world):
    env = PddlEnv(world, "lamps")
    env.reset()
    assert act(env, "jump").text == UNPARSED
    assert act(env, "shine l1").text == UNPARSED  # too few objects
    assert act(env, "dim l1 r1").text == UNPARSED  # dim applies nowhere yet, so its name is not recognised
    assert act(env, "shine l2 r1").text == INAPPLICABLE  # (placed l2 r1) never holds
    check = act(env, "Please CHECK valid actions")
    assert check.valid and check.text == "Valid actions are: shine l1 r1, walk r1 r2, check valid actions"
    look = act(env, "look around")
    assert look.valid and look.text.startswith("Door r1 r2 Door r2 r1 Inroom r1")
    assert env.state == world.init
    act(env, "shine l1 r1")
    repeat = act(env, "shine l1 r1")  # applies, but changes nothing
    assert (repeat.text, repeat.valid, repeat.done) == (INAPPLICABLE, False, False)
    assert env.valid_steps == 3 and env.steps == 8
    assert env.score().metrics["grounding_accuracy"] == pytest.approx(3 / 8)


def test_observations_show_the_whole_state_or_only_what_became_true(world):
    whole = PddlEnv(world, "lamps")
    whole.reset()
    assert act(whole, "shine l1 r1").text == ("Door r1 r2 Door r2 r1 Glow l1 Inroom r1 Placed l1 r1 Placed l2 r2")
    diff = PddlEnv(world, "barman")  # barman and tyreworld show only the new facts
    diff.reset()
    assert act(diff, "shine l1 r1").text == "Glow l1"
    assert meta_actions("barman") == [CHECK, LOOK] and meta_actions("tyreworld") == [CHECK, LOOK]
    assert meta_actions("gripper") == [CHECK] and meta_actions("lamps") == [CHECK]


def test_reset_starts_over(world):
    env = PddlEnv(world, "lamps")
    env.reset()
    for text in ("shine l1 r1", "walk r1 r2", "shine l2 r2", "walk r2 r1"):
        act(env, text)
    assert env.done
    env.reset()
    assert (env.state, env.progress, env.steps, env.valid_steps, env.done) == (world.init, 0.0, 0, 0, False)
    assert act(env, "shine l1 r1").valid


SWITCH = """
(define (domain switch) (:requirements :strips)
  (:predicates (dark ?x) (bright ?x))
  (:action flip :parameters (?x) :precondition (dark ?x) :effect (and (bright ?x) (not (dark ?x)))))
"""


def test_env_applies_an_action_whose_precondition_is_the_whole_state():
    domain = parse_domain(SWITCH, "switch")
    problem = parse_problem(
        "(define (problem one) (:domain switch) (:objects a) (:init (dark a)) (:goal (bright a)))", domain
    )
    env = PddlEnv(World(domain, problem), "switch")
    env.reset()
    obs = act(env, "flip a")
    assert obs.valid and obs.done and env.score().success
