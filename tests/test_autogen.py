"""The AutoGen adapter: the critic's revision loop, G-Memory's stuck helper, errors, the bridge client."""

from __future__ import annotations

import asyncio

import pytest
from autogen_core.models import SystemMessage, UserMessage
from fw_helpers import ANSWER_TASK, AnswerEnv, check_graph, memory, oracle_llm, run_task, scripted_llm, system_of

from aecg_bench.benchmarks.toy import ToyEnv, mock_oracle
from aecg_bench.errors import InfraError
from aecg_bench.llm.providers import Request, TransientProviderError
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.types import Status, Task
from frameworks.autogen import AutoGenFramework
from frameworks.autogen.bridge import NoSelectorModel

TOY = Task(
    id="t0",
    benchmark="toy",
    instruction="Walk to the target cell on a line of 8 cells, then stop.",
    task_type="right",
    action_hint="Actions: move left | move right | stop",
    max_steps=12,
)


def test_critic_rejections_make_the_executor_revise_within_the_bound():
    def policy(request: Request, spec: ModelSpec) -> str:
        if "You are the critic" in system_of(request):
            return "REJECT: check the position again"
        return mock_oracle(request, spec)

    traj = run_task(AutoGenFramework({"max_revisions": 2}), TOY, ToyEnv(2, 4, 8), scripted_llm(policy))
    check_graph(traj)
    assert traj.status == Status.OK and len(traj.steps) == 3
    per_step = ["executor", "critic"] * 3  # a proposal and two revisions, each rejected
    assert [d.role for d in traj.decisions] == ["planner", *per_step * 3]
    first_step = traj.decisions[1:7]
    revision, rejection = first_step[2], first_step[1]
    assert rejection.parents[-1] == first_step[0].id
    assert rejection.id in revision.parents  # the revision consumed the critique
    assert traj.steps[0].decision_id == first_step[4].id  # the latest proposal is executed
    assert traj.metadata["autogen"]["agents"]["critic"] == {"role": "critic", "level": "event"}


def test_gmemory_helper_takes_over_when_the_solver_repeats_itself():
    def policy(request: Request, spec: ModelSpec) -> str:
        if "You assist the solver" in system_of(request):
            return mock_oracle(request, spec)
        return "move left"

    fw = AutoGenFramework({"variant": "gmemory"})
    traj = run_task(fw, TOY, ToyEnv(4, 4, 8), scripted_llm(policy))
    check_graph(traj)
    roles = [d.role for d in traj.decisions]
    assert roles[:4] == ["solver", "solver", "solver", "helper"]  # third repeat of "move left" -> helper
    solver, helper = traj.decisions[2], traj.decisions[3]
    assert helper.level == "event" and solver.id in helper.parents
    assert traj.steps[2].decision_id == helper.id and traj.steps[2].action.text == "move right"
    assert fw.describe()["params"]["variant"] == "gmemory"


def test_answer_tasks_run_plan_answer_review():
    traj = run_task(AutoGenFramework(), ANSWER_TASK, AnswerEnv(), oracle_llm(default="SUPPORTS"))
    assert [(d.role, d.level) for d in traj.decisions] == [
        ("planner", "team"),
        ("executor", "agent"),
        ("critic", "event"),  # the oracle approves
    ]
    assert [v["verdict"] for v in traj.metadata["autogen"]["verdicts"]] == ["approve"]
    assert traj.steps[0].action.kind == "answer" and traj.steps[0].observation.reward == 1.0


def _team_llm(critic: list[str], executor: str | None = None, seen: dict[str, list] | None = None):
    """Critic replies from `critic` in turn (then APPROVE); the executor plays the oracle (or says `executor`);
    `seen` collects each role's requests."""
    replies = iter(critic)

    def policy(request: Request, spec: ModelSpec) -> str:
        system = system_of(request)
        role = next(r for r in ("planner", "executor", "critic") if f"You are the {r}" in system)
        if seen is not None:
            seen.setdefault(role, []).append(request)
        if role == "critic":
            return next(replies, "APPROVE")
        if role == "planner":
            return "1. walk right\n2. stop"
        return executor or mock_oracle(request, spec)

    return scripted_llm(policy)


def test_an_unreadable_verdict_is_feedback_the_executor_revises_on_never_an_approval():
    """AutoGen's critic pattern ends an exchange only on an approving message (TextMentionTermination("APPROVE"));
    any other critic message is feedback the primary agent revises on. An unreadable verdict is recorded as
    such and makes the executor revise, exactly like a rejection."""
    seen: dict[str, list] = {}
    llm = _team_llm(["This move is wrong.", "REJECT: you are past the target"], seen=seen)
    traj = run_task(AutoGenFramework(), TOY, ToyEnv(2, 4, 8), llm)
    check_graph(traj)
    assert [d.role for d in traj.decisions[:6]] == ["planner", "executor", "critic", "executor", "critic", "executor"]
    verdicts = [v["verdict"] for v in traj.metadata["autogen"]["verdicts"]]
    assert verdicts[:3] == ["unparsed", "reject", "approve"]
    assert traj.steps[0].decision_id == traj.decisions[3].id  # the revision, not the first proposal, is executed
    assert "[critic] This move is wrong." in system_of(seen["executor"][1])


def test_a_critic_that_never_gives_a_verdict_does_not_act_as_approval():
    """The probe of issue 28: an executor that first proposes a wrong move and fixes it on any feedback, under a
    critic that only ever writes "This move is wrong.". Read as approval the wrong first proposals go ahead and
    the task fails; read as feedback (AutoGen's pattern) the revisions go ahead and it succeeds."""

    def policy(request: Request, spec: ModelSpec) -> str:
        system = system_of(request)
        if "You are the critic" in system:
            return "This move is wrong."
        if "You are the planner" in system:
            return "1. walk right\n2. stop"
        return mock_oracle(request, spec) if "[critic]" in system else "stop"

    traj = run_task(AutoGenFramework(), TOY, ToyEnv(2, 4, 8), scripted_llm(policy))
    assert {v["verdict"] for v in traj.metadata["autogen"]["verdicts"]} == {"unparsed"}
    assert [s.action.text for s in traj.steps] == ["move right", "move right", "stop"]
    assert traj.steps[-1].observation.reward == 1.0


def test_the_revising_executor_sees_its_rejected_proposal_and_every_message_keeps_its_parent():
    seen: dict[str, list] = {}
    llm = _team_llm(["REJECT: think again"], executor="move right", seen=seen)
    traj = run_task(AutoGenFramework({"max_steps": 1}), TOY, ToyEnv(2, 4, 8), llm)
    _, first, rejection, revision, review = traj.decisions[:5]
    revising = system_of(seen["executor"][1])
    assert "[executor (you, earlier)] move right" in revising and "[critic] REJECT: think again" in revising
    assert {first.id, rejection.id} <= set(revision.parents)
    # the revision repeats the first proposal word for word: the critic's review still has both as parents
    assert first.output == revision.output
    assert {first.id, rejection.id, revision.id} <= set(review.parents)


def test_each_role_prompt_ends_with_its_own_cue_and_the_critic_has_a_verdict_grammar():
    seen: dict[str, list] = {}
    llm = _team_llm([], seen=seen)
    llm.models["mock"] = llm.models["mock"].model_copy(update={"grammar": True})  # a grammar-capable model
    run_task(AutoGenFramework({"max_steps": 1}), TOY, ToyEnv(2, 4, 8), llm)
    ending = {role: str(reqs[0].messages[-1]["content"]).splitlines()[-1] for role, reqs in seen.items()}
    assert ending == {
        "planner": "Plan (numbered steps):",
        "executor": "Next action:",
        "critic": "Verdict (APPROVE, or REJECT: <reason>):",
    }
    assert "APPROVE" in seen["critic"][0].params["grammar"]
    assert "APPROVE" not in str(seen["executor"][0].params.get("grammar", ""))


def test_unparsable_replies_are_recorded_and_bounded():
    def policy(request: Request, spec: ModelSpec) -> str:
        return "```\n```" if "executor" in system_of(request) else "APPROVE"

    traj = run_task(AutoGenFramework(), TOY, ToyEnv(2, 4, 8), scripted_llm(policy), max_invalid_actions=2)
    assert traj.status == Status.MODEL_ERROR and traj.invalid_actions == 3 and traj.steps == []
    assert [d.role for d in traj.decisions] == ["planner", "executor", "executor", "executor"]


@pytest.mark.parametrize("variant", ["team", "gmemory"])
def test_provider_failure_propagates_as_infra_error_through_autogen(variant):
    def policy(request: Request, spec: ModelSpec) -> str:
        raise TransientProviderError("503 from the provider")

    with pytest.raises(InfraError, match="503"):
        run_task(AutoGenFramework({"variant": variant}), TOY, ToyEnv(2, 4, 8), scripted_llm(policy))


def test_memory_is_recalled_once_per_agent_scope():
    mem = memory("recorder")
    mem.items = [{"id": "m9", "task_type": "right", "level": "team", "text": "plan short"}]
    traj = run_task(AutoGenFramework(), TOY, ToyEnv(2, 4, 8), oracle_llm(), mem)
    scopes = [(c["level"], c["agent"], c["role"]) for c in mem.calls]
    assert scopes == [("team", "planner", "planner"), ("agent", "executor", "executor"), ("event", "critic", "critic")]
    assert [d.recalled_memory_ids for d in traj.decisions if d.role == "planner"] == [("m9",)]
    assert all(d.recalled_memory_ids == () for d in traj.decisions if d.role != "planner")


def test_bridge_counts_tokens_with_litellm_offline_and_selector_model_refuses():
    client = NoSelectorModel()
    client.model_name = "openai/gpt-4.1-mini"
    messages = [SystemMessage(content="You are a planner."), UserMessage(content="hello there friend", source="env")]
    assert 5 < client.count_tokens(messages) < 40
    assert client.remaining_tokens(messages) > 1000
    with pytest.raises(RuntimeError, match="rule-based"):
        asyncio.run(client.create(messages))


def test_runs_when_called_from_async_code():
    async def caller():
        return run_task(AutoGenFramework(), TOY, ToyEnv(2, 4, 8), oracle_llm())

    traj = asyncio.run(caller())
    assert traj.status == Status.OK and traj.steps[-1].observation.reward == 1.0
