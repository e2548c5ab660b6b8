"""tau2-bench: tools, gold replay, reward components, the simulated user and full conversations.

The replay tests read the real release data in ../shared/data/tau2 (skipped when it is
absent); the conversation tests script both the agent and the user with the mock model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fw_helpers import run_task, scripted_llm

from aecg_bench.benchmarks.tau2 import Tau2Benchmark
from aecg_bench.benchmarks.tau2.airline import AirlineTools
from aecg_bench.benchmarks.tau2.benchmark import agent_prompt
from aecg_bench.benchmarks.tau2.evaluate import Call, evaluate
from aecg_bench.benchmarks.tau2.mock import MockDB, MockTools
from aecg_bench.benchmarks.tau2.retail import RetailTools
from aecg_bench.benchmarks.tau2.telecom import TelecomTools
from aecg_bench.benchmarks.tau2.telecom_user import TelecomUserTools
from aecg_bench.benchmarks.tau2.toolkit import ToolKind, arithmetic, parse_docstring
from aecg_bench.benchmarks.tau2.world import World
from aecg_bench.contracts import EnvContext
from aecg_bench.errors import ConfigError
from aecg_bench.llm import LLMClient
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.llm.providers import ProviderResult, Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.registry import build
from aecg_bench.types import Action, ToolCall


def bench(shared_data: Path, domain: str, **params) -> Tau2Benchmark:
    return Tau2Benchmark({"domain": domain, **params}, data_dir=shared_data / "tau2")


def gold_reward(b: Tau2Benchmark, task_id: str, drop_last_write: bool = False):
    """Replay a task's gold actions (agent's and, in telecom, the user's) through our tools, no LLM, and score."""
    task = b.tasks[task_id]
    world = b.fresh_world(task)
    actions = list(task.evaluation_criteria.actions or []) if task.evaluation_criteria else []
    if drop_last_write:
        writes = [i for i, a in enumerate(actions) if type(world.kit(a.requestor)).kind(a.name) == ToolKind.WRITE]
        actions.pop(writes[-1])
    calls = []
    for a in actions:
        world.call(a.name, a.arguments, a.requestor)
        calls.append(Call(a.name, a.arguments, a.requestor))
    texts = list(task.evaluation_criteria.communicate_info or []) if task.evaluation_criteria else []
    return evaluate(
        task, final=world, gold_hashes=b.gold_hashes(task), calls=calls, agent_texts=texts, termination="user_stop"
    )


def _replay_domain(shared_data: Path, domain: str, limit: int | None) -> None:
    b = bench(shared_data, domain)
    ids = list(b.tasks)[:limit]
    for task_id in ids:
        r = gold_reward(b, task_id)
        # mock's update_task_with_history_and_env_assertions has no gold action: its env assertion
        # (task_2 completed) is something the gold actions do not decide. Telecom's DB check is
        # never in its basis (tau2 replays gold actions without syncing the phone, so it can differ).
        decided = [n for n in r.basis if b.tasks[task_id].evaluation_criteria.actions or n != "ENV_ASSERTION"]
        assert all(r.components[n] == 1.0 for n in decided), (domain, task_id, r)


@pytest.mark.parametrize("domain,limit", [("mock", None), ("airline", 2), ("retail", 2), ("telecom", None)])
def test_gold_actions_earn_full_reward(shared_data, domain, limit):
    _replay_domain(shared_data, domain, limit)


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_gold_actions_earn_full_reward_on_every_task(shared_data, domain):
    _replay_domain(shared_data, domain, None)


def test_telecom_small_task_set_gold_actions_satisfy_the_env_assertions(shared_data):
    b = bench(shared_data, "telecom", task_set="small")
    assert len(b.tasks) == 20
    for task_id in b.tasks:
        r = gold_reward(b, task_id)
        assert r.reward == 1.0 and all(r.checks["env_assertions"]), (task_id, r)


def test_telecom_a_missing_user_fix_fails_the_env_assertions(shared_data):
    b = bench(shared_data, "telecom")
    checked = 0
    for task_id, task in list(b.tasks.items())[:12]:
        user_fixes = [a for a in task.evaluation_criteria.actions or [] if a.requestor == "user"]
        if not user_fixes:
            continue
        world = b.fresh_world(task)
        for a in task.evaluation_criteria.actions:
            if a is not user_fixes[-1]:
                world.call(a.name, a.arguments, a.requestor)
        r = evaluate(
            task, final=world, gold_hashes=b.gold_hashes(task), calls=[], agent_texts=[], termination="user_stop"
        )
        assert r.components["ENV_ASSERTION"] == 0.0, task_id
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("domain", ["airline", "retail", "mock"])
def test_a_missing_write_gives_db_reward_zero(shared_data, domain):
    b = bench(shared_data, domain)
    kit_cls = type(b.fresh_world(next(iter(b.tasks.values()))).agent)
    task_id = next(
        t.id
        for t in b.tasks.values()
        if t.evaluation_criteria
        and any(kit_cls.kind(a.name) == ToolKind.WRITE for a in t.evaluation_criteria.actions or [])
    )
    assert gold_reward(b, task_id).reward == 1.0
    r = gold_reward(b, task_id, drop_last_write=True)
    assert r.components["DB"] == 0.0
    assert r.reward == 0.0


def test_a_different_payment_method_fails_the_db_check(shared_data):
    b = bench(shared_data, "retail")
    task = next(
        t for t in b.tasks.values() if any(a.name == "cancel_pending_order" for a in t.evaluation_criteria.actions)
    )
    world = b.fresh_world(task)
    for a in task.evaluation_criteria.actions:
        args = dict(a.arguments)
        if a.name == "cancel_pending_order":  # the other allowed reason: a different, valid write
            args["reason"] = "ordered by mistake" if args["reason"] == "no longer needed" else "no longer needed"
        assert not world.call(a.name, args).error
    assert world.db_hash() != b.gold_hashes(task)[0]


def test_tool_errors_carry_tau2_messages(shared_data):
    airline = bench(shared_data, "airline").fresh_world(next(iter(bench(shared_data, "airline").tasks.values())))
    assert airline.call("get_reservation_details", {"reservation_id": "NOPE00"}).content == (
        "Error: Reservation NOPE00 not found"
    )
    assert airline.call("update_reservation_baggages", {"reservation_id": "NOPE00"}).content.startswith(
        "Error: AirlineTools.update_reservation_baggages() missing 3 required positional arguments"
    )
    retail_bench = bench(shared_data, "retail")
    retail = retail_bench.fresh_world(next(iter(retail_bench.tasks.values())))
    assert retail.call("get_order_details", {"order_id": "#W0"}).content == "Error: Order not found"
    assert retail.call("cancel_pending_order", {"order_id": "#W0", "reason": "x"}).error
    telecom_bench = bench(shared_data, "telecom")
    telecom = telecom_bench.fresh_world(next(iter(telecom_bench.tasks.values())))
    assert telecom.call("get_customer_by_id", {"customer_id": "C0"}).content == "Error: Customer with ID C0 not found"
    assert telecom.call("get_details_by_id", {"id": "X1"}).content == "Error: Unknown ID format or type: X1"
    assert telecom.call("toggle_data", {}).error  # a user tool is not the agent's
    mock = World(MockTools(MockDB(tasks={}, users={})))
    assert (
        mock.call("update_task_status", {"task_id": "t9", "status": "completed"}).content == "Error: Task t9 not found"
    )
    assert mock.call("delete_task", {}).content == "Error: Tool 'delete_task' not found."


def test_an_assertion_about_an_object_the_agent_never_created_fails_the_task_not_the_run():
    from aecg_bench.benchmarks.tau2.evaluate import assertion_holds
    from aecg_bench.benchmarks.tau2.tasks import EnvAssertion

    mock = World(MockTools(MockDB(tasks={}, users={})))
    missing = EnvAssertion(
        env_type="assistant",
        func_name="assert_task_status",
        arguments={"task_id": "task_2", "expected_status": "pending"},
    )
    assert assertion_holds(mock, missing) is False


def test_tool_specs_come_from_docstrings_and_kinds_are_tau2s():
    specs = {s.name: s for s in MockTools(MockDB(tasks={}, users={})).specs()}
    assert set(specs) == {"create_task", "get_users", "update_task_status", "transfer_to_human_agents"}
    create = specs["create_task"]
    assert create.description == "Create a new task for a user."
    assert create.parameters["required"] == ["user_id", "title"]
    assert create.parameters["properties"]["title"]["description"] == "The title of the task"
    assert specs["update_task_status"].parameters["properties"]["status"]["enum"] == ["pending", "completed"]
    assert MockTools.kind("create_task") == ToolKind.WRITE and MockTools.kind("get_users") == ToolKind.READ


def test_docstring_parser_splits_short_long_and_continued_args():
    short, long, args = parse_docstring(
        """First line,
        second line.

        Args:
            a: One.
            b: Two
               continued.

        Returns:
            Nothing.
        """
    )
    assert (short, long) == ("First line,", "second line.")
    assert args == {"a": "One.", "b": "Two\ncontinued."}


def test_calculate_matches_python_arithmetic_and_refuses_other_text():
    assert arithmetic("(2 + 3) * 4 / 3") == "6.67"
    assert arithmetic("-5 + 2") == "-3.0"
    with pytest.raises(ValueError, match="Invalid characters"):
        arithmetic("__import__('os')")


def test_splits_are_deterministic_disjoint_and_unknown_split_is_one_error(shared_data):
    b = bench(shared_data, "retail")
    train, test, every = (b.samples(s) for s in ("train", "test", "all"))
    assert {s.id for s in train}.isdisjoint({s.id for s in test})
    assert len(train) + len(test) == len(every) == 114
    assert [s.id for s in train] == [s.id for s in bench(shared_data, "retail").samples("train")]
    with pytest.raises(ConfigError, match="unknown tau2 split 'dev'"):
        b.samples("dev")
    with pytest.raises(ConfigError, match="task_set 'small' exists only for telecom"):
        bench(shared_data, "retail", task_set="small").data_hashes()
    with pytest.raises(ConfigError, match="domain"):
        bench(shared_data, "airlines")


def test_a_changed_data_file_is_refused(tmp_path, shared_data):
    root = tmp_path / "tau2"
    for rel in ("domains/mock/db.json", "domains/mock/policy.md", "domains/mock/tasks.json"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text((shared_data / "tau2" / rel).read_text())
    (root / "domains/mock/db.json").write_text("{}")
    with pytest.raises(Exception, match="sha256"):
        Tau2Benchmark({"domain": "mock"}, data_dir=root).samples("all")


# --- conversations with a scripted agent and a scripted user ---------------------------------


def mock_conversation_policy(request: Request, spec: ModelSpec) -> str | ProviderResult:
    """Plays both sides of tau2 mock task create_task_1: the user (system prompt has <scenario>) and the agent."""
    system = str(request.messages[0].get("content", "")) if request.messages else ""
    last = str(request.messages[-1].get("content") or "")
    if "<scenario>" in system:  # the user simulator
        if "created successfully" in last:
            return "Great, thanks! ###STOP###"
        return "Please create a task called 'Important Meeting' for user_1."
    if "You are the router" in system:  # AgentNet: the holder keeps the task
        return "EXECUTE"
    if request.messages[-1].get("role") == "tool" or '"task_id": "task_2"' in last:
        return "The agent confirmed the task was created successfully."
    if re.search(r"Important Meeting", last):
        return json.dumps({"tool": "create_task", "arguments": {"user_id": "user_1", "title": "Important Meeting"}})
    return "How can I help?"


@pytest.mark.parametrize("framework", ["single", "autogen", "macnet", "agentnet"])
def test_scripted_conversation_scores_every_component_under_each_framework(shared_data, framework):
    b = bench(shared_data, "mock")
    sample = next(s for s in b.samples("all") if s.gold["task_id"] == "create_task_1")
    llm = scripted_llm(mock_conversation_policy)
    env = b.make_env(sample, EnvContext(llm=llm, seed=0))
    fw = build("framework", framework, {})
    traj = run_task(fw, sample.task, env, llm)
    score = env.score()
    assert score.success, (framework, score, [s.action for s in traj.steps])
    assert score.metrics["reward_db"] == 1.0 and score.metrics["reward_communicate"] == 1.0
    assert score.metrics["user_stop"] == 1.0
    assert any(s.action.kind == "tool" for s in traj.steps)


TELECOM_TASK = "[mobile_data_issue]airplane_mode_on|data_mode_off[PERSONA:None]"


def telecom_conversation_policy(request: Request, spec: ModelSpec) -> str | ProviderResult:
    """Plays both sides of a telecom task: the user fixes its own phone with its tools when asked."""
    system = str(request.messages[0].get("content", "")) if request.messages else ""
    last = request.messages[-1]
    content = str(last.get("content") or "")
    if "<scenario>" in system:  # the user simulator, offered its phone's tools
        if last.get("role") == "tool" and "Airplane Mode is now OFF" in content:
            return json.dumps({"tool": "toggle_data", "arguments": {}})
        if last.get("role") == "tool" and "Mobile Data is now ON" in content:
            return "Done, my data works again. ###STOP###"
        if "airplane mode" in content:
            return json.dumps({"tool": "toggle_airplane_mode", "arguments": {}})
        return "My mobile data is not working."
    return "Please turn off airplane mode and turn on mobile data."


@pytest.mark.parametrize("framework", ["single", "macnet"])
def test_telecom_user_fixes_its_phone_with_its_own_tools(shared_data, framework):
    b = bench(shared_data, "telecom")
    sample = next(s for s in b.samples("all") if s.gold["task_id"] == TELECOM_TASK)
    llm = scripted_llm(telecom_conversation_policy)
    env = b.make_env(sample, EnvContext(llm=llm, seed=0))
    run_task(build("framework", framework, {}), sample.task, env, llm)
    score = env.score()
    assert score.metrics["user_tool_calls"] == 2 and score.metrics["user_stop"] == 1.0
    assert score.metrics["reward_env_assertion"] == 1.0 and score.success, score
    assert {"toggle_data", "check_status_bar"} <= {t["function"]["name"] for t in b.user_tool_specs}
    assert "toggle_data" not in {t.name for t in sample.task.tools}  # the phone is the user's, not the agent's


def test_user_simulator_has_its_own_role_and_sees_flipped_roles(shared_data):
    seen: list[Request] = []

    def user_policy(request: Request, spec: ModelSpec) -> str:
        seen.append(request)
        return "I need help. ###STOP###" if len(seen) > 1 else "Hello"

    register_mock_policy("tau2_test_user", user_policy)
    specs = {
        "agent": ModelSpec(label="agent", provider="mock", model="mock/a", options={"default": "AGENT"}),
        "user": ModelSpec(label="user", provider="mock", model="mock/u", options={"policy": "tau2_test_user"}),
    }
    llm = LLMClient(specs, {"default": "agent", "user_simulator": "user"}, ResponseCache(None, "off"))
    b = bench(shared_data, "mock")
    env = b.make_env(b.samples("all")[0], EnvContext(llm=llm, seed=0))
    first = env.reset()
    assert first.text == "Hello" and not first.done
    obs = env.step(Action(kind="message", text="What do you need?"))
    assert obs.done and obs.text.endswith("###STOP###")
    msgs = seen[-1].messages
    assert (
        msgs[0]["role"] == "system" and "<scenario>" in msgs[0]["content"] and "Important Meeting" in msgs[0]["content"]
    )
    assert [m["role"] for m in msgs[1:]] == ["user", "assistant", "user"]
    assert msgs[1]["content"] == "Hi! How can I help you today?"


TEXT_WITH_CALL = "The agent confirmed the task was created successfully"


def text_with_tool_call_policy(request: Request, spec: ModelSpec) -> str | ProviderResult:
    """create_task_1 where the required information travels only as text beside a tool call: tau2 keeps such a
    message whole (its content counts for COMMUNICATE) and routes it to the environment, never to the user."""
    system = str(request.messages[0].get("content", "")) if request.messages else ""
    last = request.messages[-1]
    if "<scenario>" in system:  # the user simulator stops when asked whether anything else is needed
        return (
            "No, thanks. ###STOP###"
            if "Anything else?" in str(last.get("content"))
            else ("Please create a task called 'Important Meeting' for user_1.")
        )
    if "You are the router" in system:
        return "EXECUTE"
    if "You are the critic" in system:
        return "APPROVE"
    if "You are the planner" in system:
        return "1. create the task\n2. confirm"
    chat = [m for m in request.messages if m.get("role") == "tool"]
    if not chat and "reviewing the proposal" in system:
        return "<INFO> Finished"
    if not chat:
        call = ToolCall("create_task", {"user_id": "user_1", "title": "Important Meeting"}, "c1")
        return ProviderResult(text="Creating it now.", tool_calls=(call,))
    if len(chat) == 1:
        return ProviderResult(text=f"{TEXT_WITH_CALL}.", tool_calls=(ToolCall("get_users", {}, "c2"),))
    return "Anything else?"


def converse(b: Tau2Benchmark, framework: str, policy: Any, **params: Any) -> tuple[Any, Any, list[Request]]:
    """mock task create_task_1 under `framework` with a scripted policy: (environment, trajectory, requests)."""
    sample = next(s for s in b.samples("all") if s.gold["task_id"] == "create_task_1")
    seen: list[Request] = []

    def recording(request: Request, spec: ModelSpec) -> str | ProviderResult:
        seen.append(request)
        return policy(request, spec)

    llm = scripted_llm(recording)
    env = b.make_env(sample, EnvContext(llm=llm, seed=0))
    return env, run_task(build("framework", framework, params), sample.task, env, llm), seen


@pytest.mark.parametrize("framework", ["single", "autogen", "macnet", "agentnet"])
def test_text_sent_with_a_tool_call_counts_for_communicate_and_stays_in_the_agents_history(shared_data, framework):
    params = {"max_steps": 8} if framework != "single" else {}
    env, traj, seen = converse(bench(shared_data, "mock"), framework, text_with_tool_call_policy, **params)
    score = env.score()
    tool_steps = [s.action for s in traj.steps if s.action.kind == "tool"]
    assert [a.text for a in tool_steps] == ["Creating it now.", f"{TEXT_WITH_CALL}."]
    # tau2 evaluator_communicate.py: every AssistantMessage with text content counts, tool calls or not
    assert score.metrics["reward_communicate"] == 1.0 and score.metrics["reward_db"] == 1.0 and score.success
    assert env.agent_texts.count(f"{TEXT_WITH_CALL}.") == 1
    users = [r for r in seen if "<scenario>" in str(r.messages[0]["content"])]
    assert users and not any(TEXT_WITH_CALL in str(m.get("content")) for r in users for m in r.messages)
    acting = [r for r in seen if r.tools and any(m.get("role") == "tool" for m in r.messages)]
    assert any(
        m.get("role") == "assistant" and m.get("content") == "Creating it now." and m.get("tool_calls")
        for m in acting[-1].messages
    )


@pytest.mark.parametrize("framework", ["single", "autogen", "macnet", "agentnet"])
def test_tau2s_system_prompt_is_the_system_message_not_a_user_turn(shared_data, framework):
    """tau2's LLMAgent sends SYSTEM_PROMPT (instructions + policy) as the system message and the user's words as
    user turns. The single agent is that agent exactly; the teams' agents get it at the head of theirs."""
    b = bench(shared_data, "mock")
    _, _, seen = converse(b, framework, mock_conversation_policy)
    prompt = agent_prompt(b.policy)
    agents = [r for r in seen if "<scenario>" not in str(r.messages[0]["content"])]
    acting = [r for r in agents if r.tools]
    first = acting[0].messages
    assert first[1] == {"role": "user", "content": "Please create a task called 'Important Meeting' for user_1."}
    if framework == "single":
        assert first[0] == {"role": "system", "content": prompt}
    assert all(str(r.messages[0]["content"]).startswith(prompt) for r in agents)
    assert not any(prompt in str(m.get("content")) for r in agents for m in r.messages[1:])


def test_tool_errors_never_end_the_run_by_default_as_in_tau2(shared_data):
    """tau2's orchestrator declares max_errors (10) but never increments its error counter."""
    b = bench(shared_data, "mock")
    assert b.params.max_errors is None
    env = b.make_env(b.samples("all")[0], EnvContext(llm=scripted_llm(lambda r, s: "hi"), seed=0))
    env.reset()
    bad = Action(
        kind="tool", tool_calls=(ToolCall("update_task_status", {"task_id": "x", "status": "completed"}, "c1"),)
    )
    for _ in range(12):
        assert not env.step(bad).done
    assert env.errors == 12 and env.termination == ""


def test_tool_schemas_equal_tau2s_own():
    """tests/data/tau2_tool_schemas.json: every tool's function as tau2's Tool.openai_schema builds it at 37199f36
    with its pinned pydantic 2.10.6 (scripts/tau2_reference_schemas.py)."""
    reference = json.loads((Path(__file__).parent / "data" / "tau2_tool_schemas.json").read_text())
    kits = {"mock": MockTools, "airline": AirlineTools, "retail": RetailTools, "telecom": TelecomTools}
    kits["telecom_user"] = TelecomUserTools
    for side, kit in kits.items():
        ours = {t.name: t.to_openai()["function"] for t in kit(kit.DB.model_construct()).specs()}
        assert ours == reference[side], side


def test_tool_errors_beyond_the_limit_end_the_run_with_reward_zero(shared_data):
    b = bench(shared_data, "mock", max_errors=2)
    sample = b.samples("all")[0]
    env = b.make_env(sample, EnvContext(llm=scripted_llm(lambda r, s: "hi"), seed=0))
    env.reset()
    bad = Action(
        kind="tool", tool_calls=(ToolCall("update_task_status", {"task_id": "x", "status": "completed"}, "c1"),)
    )
    assert not env.step(bad).done
    assert env.step(bad).done
    score = env.score()
    assert score.value == 0.0 and score.metrics["premature"] == 1.0


def test_a_premature_end_scores_zero_even_when_every_component_holds(shared_data):
    b = bench(shared_data, "mock")
    task = b.tasks["create_task_1"]
    world = b.fresh_world(task)
    world.call("create_task", {"user_id": "user_1", "title": "Important Meeting"})
    done = {"calls": [Call("create_task", {"user_id": "user_1", "title": "Important Meeting"})]}
    texts = ["The agent confirmed the task was created successfully"]
    kwargs = {"final": world, "gold_hashes": b.gold_hashes(task), "agent_texts": texts, **done}
    assert evaluate(task, termination="user_stop", **kwargs).reward == 1.0
    for end in ("max_steps", "too_many_errors"):
        r = evaluate(task, termination=end, **kwargs)
        assert r.reward == 0.0 and r.components["DB"] == r.components["COMMUNICATE"] == 1.0


def test_runner_records_every_reward_component_and_each_sample_starts_from_a_fresh_db(
    shared_data, make_config, tmp_path
):
    from aecg_bench.run import run_from_config
    from aecg_bench.runner.identity import results_dir_of
    from aecg_bench.runner.records import RunDir

    register_mock_policy("tau2_test_conversation", mock_conversation_policy)
    final = run_from_config(
        make_config(
            "benchmark=tau2_mock",
            "protocol.split=all",
            "protocol.limit=2",
            "model.models.mock.options.policy=tau2_test_conversation",
            data_root=shared_data,
        )
    )
    records = RunDir(results_dir_of(final)).records()
    assert len(records) == 2
    first = records[0]
    assert first["sample_id"] == "mock:create_task_1" and first["status"] == "ok"
    metrics = first["metrics"]
    for name in ("reward_db", "reward_communicate", "reward_action", "reward_env_assertion", "reward"):
        assert name in metrics
    assert metrics["reward"] == 1.0 and first["success"] is True
    assert "user_simulator" in first["usage"]["by_role"]  # the user is accounted apart from the agent


def test_a_new_environment_for_the_same_sample_starts_from_the_initial_db(shared_data):
    b = bench(shared_data, "mock")
    sample = next(s for s in b.samples("all") if s.gold["task_id"] == "create_task_1")
    llm = scripted_llm(mock_conversation_policy)
    env = b.make_env(sample, EnvContext(llm=llm, seed=0))
    env.reset()
    initial = env.world.db_hash()
    env.step(Action(kind="tool", tool_calls=(ToolCall("create_task", {"user_id": "user_1", "title": "x"}, "c1"),)))
    assert env.world.db_hash() != initial
    again = b.make_env(sample, EnvContext(llm=llm, seed=0))
    again.reset()
    assert again.world.db_hash() == initial


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_the_embedded_local_model_runs_a_task_to_completion_offline(shared_data, make_config, domain):
    from aecg_bench.run import run_from_config
    from aecg_bench.runner.identity import results_dir_of
    from aecg_bench.runner.records import RunDir

    final = run_from_config(
        make_config(
            f"benchmark=tau2_{domain}",
            "model=local",
            "protocol.split=all",
            "protocol.limit=1",
            "benchmark.params.max_steps=6",  # a few turns prove the path; quality is irrelevant
            data_root=shared_data,
        )
    )
    (record,) = RunDir(results_dir_of(final)).records()
    assert record["status"] in {"ok", "limit_exceeded", "model_error"}
    assert "reward_db" in record["metrics"] and record["value"] in (0.0, 1.0)
    assert {"actor", "user_simulator"} <= set(record["usage"]["by_role"])  # the single agent's role


def _run_memory(make_config, shared_data, memory: str, *extra: str) -> list[dict]:
    from aecg_bench.run import run_from_config
    from aecg_bench.runner.identity import results_dir_of
    from aecg_bench.runner.records import RunDir

    register_mock_policy("tau2_test_conversation", mock_conversation_policy)
    final = run_from_config(
        make_config(
            "benchmark=tau2_mock", f"memory={memory}", "benchmark.params.max_steps=12", *extra, data_root=shared_data
        )
    )
    return RunDir(results_dir_of(final)).records()


SCRIPTED = ("protocol.split=all", "protocol.limit=2", "model.models.mock.options.policy=tau2_test_conversation")


@pytest.mark.parametrize("memory", ["reasoningbank", "aecg"])
def test_memory_methods_run_on_tau2(make_config, shared_data, memory):
    records = _run_memory(make_config, shared_data, memory, *SCRIPTED)
    assert [r["status"] for r in records] == ["ok", "ok"] and records[0]["value"] == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("memory", ["memorybank", "g_memory", "conmem", "macnet_m"])
def test_more_memory_methods_run_on_tau2(make_config, shared_data, memory):
    records = _run_memory(make_config, shared_data, memory, *SCRIPTED)
    assert [r["status"] for r in records] == ["ok", "ok"] and records[0]["value"] == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("memory", ["edv", "judge", "router"])
def test_edv_and_its_baselines_run_on_tau2(make_config, shared_data, memory):
    extra = ["protocol.mode=build_then_freeze"] if memory == "edv" else []
    records = _run_memory(make_config, shared_data, memory, "model=edv_pool_mock", "protocol.limit=2", *extra)
    assert records and all(r["status"] == "ok" for r in records)
    assert sum(r["phase"] == "eval" for r in records) == 2


_LAUNCH = (
    "import sys; sys.path.insert(0, 'tests');"
    "from aecg_bench.llm.mock import register_mock_policy;"
    "from test_tau2 import mock_conversation_policy;"
    "register_mock_policy('tau2_test_conversation', mock_conversation_policy);"
    "from aecg_bench.run import main; main()"
)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kill_9_during_a_tau2_run_then_rerun_loses_and_duplicates_nothing(shared_data, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import REPO

    from aecg_bench.runner.identity import results_dir
    from aecg_bench.runner.records import RunDir, latest_by_position

    def cli(root: Path, *extra: str) -> list[str]:
        return [
            sys.executable,
            "-c",
            _LAUNCH,
            f"runtime.results_root={root}",
            f"runtime.data_root={shared_data}",
            "runtime.progress=false",
            "benchmark=tau2_mock",
            "benchmark.params.max_steps=12",
            "memory=recorder",
            "protocol.split=all",
            "model.models.mock.options.policy=tau2_test_conversation",
            *extra,
        ]

    def run_dir(root: Path) -> RunDir:
        kw = {"experiment": "default", "benchmark": "tau2", "framework": "single", "memory": "recorder"}
        return RunDir(results_dir(root, model="mock", seed=0, **kw))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    subprocess.run(cli(clean), check=True, env=env, capture_output=True, cwd=REPO)
    slow = "+model.models.mock.options.delay_s=0.05"
    proc = subprocess.Popen(
        cli(killed, slow),
        env=env,
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    samples = run_dir(killed).samples_file
    deadline = time.time() + 300
    while time.time() < deadline and not (samples.exists() and samples.read_bytes().count(b"\n") >= 3):
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 3 <= len(run_dir(killed).records()) < 9, "the kill must land midway"
    subprocess.run(cli(killed, slow), check=True, env=env, capture_output=True, cwd=REPO)

    def stable(rd: RunDir) -> list[tuple]:
        latest = latest_by_position(rd.records())
        return [(p, latest[p]["sample_id"], latest[p]["value"], latest[p]["metrics"]) for p in sorted(latest)]

    killed_records = run_dir(killed).records()
    assert sorted(r["position"] for r in killed_records) == list(range(9)), "every sample exactly once"
    assert stable(run_dir(killed)) == stable(run_dir(clean))


def gold_conversation_policy(task):
    """A scripted agent that makes the task's gold calls one per turn, then says the required
    information; a scripted user that asks for help and stops when the agent is done."""
    gold = [a for a in (task.evaluation_criteria.actions or []) if a.requestor == "assistant"]
    closing = " ".join(task.evaluation_criteria.communicate_info or []) + " ALL DONE."

    def policy(request: Request, spec: ModelSpec) -> str:
        system = str(request.messages[0].get("content", "")) if request.messages else ""
        if "<scenario>" in system:
            return "Thanks, bye. ###STOP###" if "ALL DONE" in str(request.messages[-1].get("content")) else "Help me."
        made = sum(1 for m in request.messages if m.get("role") == "assistant" and m.get("tool_calls"))
        if made < len(gold):
            return json.dumps({"tool": gold[made].name, "arguments": gold[made].arguments})
        return closing

    return policy


@pytest.mark.parametrize("domain", [pytest.param("airline", marks=pytest.mark.slow), "retail"])
def test_a_scripted_gold_conversation_earns_full_reward_through_the_whole_loop(shared_data, domain):
    b = bench(shared_data, domain)
    for sample in b.samples("all")[:1]:
        task = b.tasks[sample.gold["task_id"]]
        llm = scripted_llm(gold_conversation_policy(task))
        env = b.make_env(sample, EnvContext(llm=llm, seed=0))
        traj = run_task(build("framework", "single", {}), sample.task, env, llm)
        score = env.score()
        assert score.success, (sample.id, score.metrics)
        assert score.metrics["reward_db"] == score.metrics["reward_communicate"] == 1.0
        n_gold = sum(a.requestor == "assistant" for a in task.evaluation_criteria.actions or [])
        assert sum(s.action.kind == "tool" for s in traj.steps) == n_gold
