"""Probe AgentNet's relay over a stream: are forwards and hand-offs carried out to the last task?

Runs AgentNet through the real runner on the toy benchmark (offline, the mock model) with No-Memory and
the network evolving on the whole stream (`protocol.framework_learning=all`), for each error rate and
evolution rule. The routers are scripted to ask for a hand-over whenever they can: a task's router forwards
to the first agent it lists while FORWARD is offered, else splits; after a split part the router passes the
rest to the first agent listed; a router of a passed-on remainder executes. The executors are the toy oracle,
wrong on a fixed share of its decisions (`error_rate`), so abilities fall under the paper's rule. Per run it
prints how many forwards and hand-offs were asked and carried out, how each target was chosen (named, best,
random), the last task with a forward, the success rate and the final abilities.

    python scripts/agentnet_probe.py [--tasks 24] [--error-rates 0.3 0.6] [--rules paper code]
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from aecg_bench.benchmarks.toy import mock_oracle
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.llm.providers import Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.run import CONF_DIR, run_from_config
from aecg_bench.runner.records import RunDir
from aecg_bench.types import trajectory_from_dict

_AVAILABLE = re.compile(r"Available agents: (agent_\d+)")


def policy(request: Request, spec: ModelSpec) -> str:
    """Routers that always hand over when they can; executors are the toy oracle."""
    system = str(request.messages[0].get("content") or "")
    if not system.startswith("You are the router"):
        return mock_oracle(request, spec)
    first = _AVAILABLE.search(system)
    if "INCOMPLETE agent_<n>" in system:
        return f"INCOMPLETE {first.group(1)}: finish the walk" if first else "COMPLETE"
    if "Remaining task to route" in str(request.messages[-1].get("content") or ""):
        return "EXECUTE"
    if "FORWARD agent_<n>" in system and first:
        return f"FORWARD {first.group(1)}"
    return "SPLIT: walk toward the target" if "SPLIT:" in system else "EXECUTE"


def compose(overrides: list[str]) -> dict[str, Any]:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=overrides)
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    return raw


def probe(root: Path, tasks: int, error_rate: float, rule: str) -> dict[str, Any]:
    experiment = f"probe-{rule}-{error_rate}"
    final = run_from_config(
        compose(
            [
                f"runtime.results_root={root}",
                "runtime.progress=false",
                "runtime.fsync=false",
                "embedder.backend=lexical",
                f"experiment_name={experiment}",
                "framework=agentnet",
                f"framework.params.rule={rule}",
                "benchmark=toy",
                f"benchmark.params.size={tasks}",
                "memory=no_memory",
                "model.models.mock.options.policy=agentnet_probe",
                f"+model.models.mock.options.error_rate={error_rate}",
                "protocol.framework_learning=all",
            ]
        )
    )
    rd = RunDir(root / experiment / "toy" / final["labels"]["framework"] / "no_memory" / "mock" / "seed=0")
    asked, carried, chosen, with_forward, successes = Counter[str](), Counter[str](), Counter[str](), [], 0
    records = rd.records()
    for rec in records:
        episode = rd.read_trajectory(rec["position"], rec["attempt"])["rollouts"][0]["episode"]
        routes = trajectory_from_dict(episode["trajectory"]).metadata["agentnet"]["routes"]
        successes += bool(rec["success"])
        for r in routes:
            if r["route"] in ("forward", "incomplete"):
                asked[r["route"]] += 1
                carried[r["route"]] += bool(r.get("to"))
                chosen[r.get("chosen", "refused")] += 1
        if any(r["route"] == "forward" and r.get("to") for r in routes):
            with_forward.append(rec["position"])
    state = rd.latest_snapshot(len(records)).state["framework"]
    abilities = {a: {t: round(v, 3) for t, v in sorted(by.items())} for a, by in state["abilities"].items()}
    return {
        "asked": dict(asked),
        "carried": dict(carried),
        "chosen": dict(chosen),
        "tasks_with_forward": len(with_forward),
        "last_forward_task": max(with_forward, default=-1) + 1,
        "tasks": len(records),
        "success": successes / len(records),
        "abilities": abilities,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--error-rates", type=float, nargs="+", default=[0.3, 0.6])
    parser.add_argument("--rules", nargs="+", default=["paper", "code"], choices=["paper", "code"])
    args = parser.parse_args()
    register_mock_policy("agentnet_probe", policy)
    with tempfile.TemporaryDirectory() as tmp:
        for rule in args.rules:
            for rate in args.error_rates:
                out = probe(Path(tmp), args.tasks, rate, rule)
                print(
                    f"rule={rule} error_rate={rate}: forwards {out['carried'].get('forward', 0)}/"
                    f"{out['asked'].get('forward', 0)} carried, hand-offs {out['carried'].get('incomplete', 0)}/"
                    f"{out['asked'].get('incomplete', 0)} carried; targets {out['chosen']}; "
                    f"tasks with a forward {out['tasks_with_forward']}/{out['tasks']} (last: task "
                    f"{out['last_forward_task']}); success {out['success']:.2f}"
                )
                print(f"    final abilities: {out['abilities']}")


if __name__ == "__main__":
    main()
