"""How every baseline reads a trajectory: steps, other agents' utterances, final solution, graph."""

from __future__ import annotations

from aecg_bench.types import Action, DecisionNode, Observation, Step, Trajectory
from baselines.trajectory_text import clip, final_solution, interaction_graph, render_trajectory


def team_trajectory() -> Trajectory:
    traj = Trajectory(task_id="t", framework="unit", initial_observation="You see a door.")
    traj.add_decision(DecisionNode(id="d0", agent="planner", role="planner", level="team", output="Open it, then go."))
    traj.add_decision(
        DecisionNode(
            id="d1",
            agent="critic",
            role="critic",
            level="event",
            parents=("d0",),
            output="Check it is unlocked.",
            step=0,
        )
    )
    traj.add_decision(
        DecisionNode(
            id="d2", agent="actor", role="actor", level="agent", parents=("d0", "d1"), output="open door", step=0
        )
    )
    traj.steps.append(
        Step(0, Action(kind="command", text="open door"), Observation("The door opens.", reward=1.0), "d2")
    )
    traj.steps.append(Step(1, Action(kind="command", text="kick wall"), Observation("Ouch.", reward=-1.0), None))
    return traj


def test_render_shows_other_agents_and_can_drop_negative_reward_steps():
    text = render_trajectory(team_trajectory())
    assert text.splitlines()[:5] == [
        "Initial observation: You see a door.",
        "  [planner/planner] Open it, then go.",
        "  [critic/critic] Check it is unlocked.",
        "Act 1: open door",
        "Obs 1: The door opens.",
    ]
    assert "kick wall" in text and "kick wall" not in render_trajectory(team_trajectory(), skip_negative_reward=True)
    assert "planner" not in render_trajectory(team_trajectory(), with_agents=False)


def test_final_solution_graph_and_clipping():
    traj = team_trajectory()
    assert final_solution(traj) == "1. open door\n2. kick wall"
    graph = interaction_graph(traj)
    assert [n["id"] for n in graph["nodes"]] == ["d0", "d1", "d2"]
    assert graph["edges"] == [["d0", "d1"], ["d0", "d2"], ["d1", "d2"]]
    long = "a" * 100 + "b" * 100
    clipped = clip(long, 60)
    assert len(clipped) <= 60 and clipped.startswith("a") and clipped.endswith("b")
