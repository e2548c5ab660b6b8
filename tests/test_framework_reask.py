"""The one re-ask sequence every framework shares (`EnvLoop.take`): an acting reply that gives no action is
counted and the next acting decision is told why, so its retry can differ; at the bound the sample ends."""

from __future__ import annotations

import pytest
from fw_helpers import check_graph, run_task, scripted_llm
from test_autogen import TOY

from aecg_bench.benchmarks.toy import ToyEnv, mock_oracle
from aecg_bench.llm.providers import Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.registry import build
from aecg_bench.types import Status

NOTE = "Your previous reply could not be read as an action"


def _acting(request: Request) -> bool:
    return str(request.messages[-1]["content"]).rstrip().endswith("Next action:")


def _noted(request: Request) -> bool:
    return any(NOTE in str(m.get("content")) for m in request.messages)


@pytest.mark.parametrize("framework", ["single", "autogen", "macnet", "agentnet"])
def test_an_unreadable_action_is_counted_and_the_retry_is_told_why(framework):
    """A model that only answers once it is told its reply could not be read: every framework must tell it."""
    shown: list[bool] = []

    def policy(request: Request, spec: ModelSpec) -> str:
        if not _acting(request):
            return mock_oracle(request, spec) if "You are the planner" in str(request.messages[0]) else "EXECUTE"
        shown.append(_noted(request))
        return mock_oracle(request, spec) if _noted(request) or len(shown) > 40 else "```\n```"

    params = {"topology": "chain", "nodes": 1} if framework == "macnet" else {}
    if framework == "autogen":
        params = {"critic": False}
    traj = run_task(build("framework", framework, params), TOY, ToyEnv(2, 3, 8), scripted_llm(policy))
    check_graph(traj)
    assert traj.status == Status.OK and traj.steps[-1].observation.reward == 1.0
    assert traj.invalid_actions >= 1 and any(shown)


@pytest.mark.parametrize("framework", ["single", "autogen", "macnet", "agentnet"])
def test_unreadable_actions_in_a_row_end_the_sample_at_the_bound(framework):
    def policy(request: Request, spec: ModelSpec) -> str:
        return "```\n```" if _acting(request) else "EXECUTE"

    params = {"topology": "chain", "nodes": 1} if framework == "macnet" else {}
    if framework == "autogen":
        params = {"critic": False}
    traj = run_task(build("framework", framework, params), TOY, ToyEnv(2, 3, 8), scripted_llm(policy))
    assert traj.status == Status.MODEL_ERROR and traj.steps == [] and traj.invalid_actions == 4
    assert "4 unparsable outputs in a row" in traj.error
