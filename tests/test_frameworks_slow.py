"""Slow tier: each multi-agent framework runs one sample of toy and of FEVER (claim_only) on the embedded model.

The model (SmolLM2-135M) is far too weak for real scores; these runs prove the
whole path works offline with a real model: grammar-constrained actions,
free-text plans, critiques and routes, usage recorded per role.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aecg_bench.run import run_from_config
from aecg_bench.runner.records import RunDir

pytestmark = pytest.mark.slow

ROLES = {"autogen": {"planner", "executor", "critic"}, "macnet": {"solver", "merger", "instructor", "decider"}}
ROLES["agentnet"] = {"router", "executor"}


@pytest.mark.parametrize("framework", ["autogen", "macnet", "agentnet"])
@pytest.mark.parametrize(
    ("benchmark", "overrides"),
    [("toy", ["benchmark.params.max_steps=2"]), ("fever", ["benchmark.params.mode=claim_only"])],
)
def test_one_sample_on_the_embedded_model(make_config, shared_data, framework, benchmark, overrides):
    cfg = make_config(
        f"framework={framework}",
        f"benchmark={benchmark}",
        "benchmark.params.size=1",
        "memory=recorder",
        "model=local",
        *overrides,
        data_root=shared_data,
    )
    final = run_from_config(cfg)
    assert final["status"] == "complete" and final["counts"]["recorded"] == 1
    labels = final["labels"]
    rd = RunDir(
        Path(final["runtime"]["results_root"]) / "default" / benchmark / framework / "recorder" / "local" / "seed=0"
    )
    rec = rd.records()[0]
    assert rec["status"] in ("ok", "limit_exceeded"), rec["error"]
    assert labels["model"] == "local" and rec["steps"] >= 1
    trajectory = rd.read_trajectory(0, rec["attempt"])["rollouts"][0]["episode"]["trajectory"]
    decisions = trajectory["decisions"]
    assert {d["role"] for d in decisions} <= ROLES[framework] and all(d["output"].strip() for d in decisions)
    acted = {s["decision_id"] for s in trajectory["steps"]}
    assert all(d["action"] for d in decisions if d["id"] in acted)
    assert all(s["observation"]["valid"] for s in trajectory["steps"])  # the action grammar keeps actions valid
    usage = rec["usage"]["by_role"]  # accounted by decision role (MacNet's nodes as "node")
    assert sum(u["calls"] for u in usage.values()) == len(decisions) and rec["usage"]["total"]["input_tokens"] > 0
