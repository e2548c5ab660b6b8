"""Every AECG ablation config (conf/memory/aecg_*.yaml, paper Table 2) does what it ablates (issue 17).

`test_aecg_end_to_end` shows that each config composes and runs; here each one is shown to change the
behaviour it names, against the full method (`memory=aecg`) on the same input, so a test goes red when the
ablation stops ablating (a config that no longer sets its switch) or the mechanism stops acting (the full
method behaving like the ablation). The params always come from the composed YAML.

Two settings, both with the scripted mock model:
- the real runner on AgentNet (team, event and agent decisions) in the drifting toy world of
  `test_aecg_end_to_end` (easy right-walks, long right-walks, left-walks; routers decide at team level,
  executors at agent level): scope, governance, the replay gate and admission;
- hand-built team -> event -> agent decision graphs for the ones that need a controlled history (the
  belief timescales, the review order).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aecg_fixtures import episode, events, make_memory
from conftest import compose
from test_aecg_end_to_end import AECG_CONFIGS, drift_config

from aecg_bench import registry
from aecg_bench.aecg import prompts
from aecg_bench.aecg.method import AECGMemory
from aecg_bench.aecg.mock_policy import mock_policy
from aecg_bench.aecg.objects import ACTIVE, ISOLATED
from aecg_bench.jsonl import read_jsonl
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.mechanisms.metrics import scope_measures
from aecg_bench.run import run_from_config

ABLATIONS = [c for c in AECG_CONFIGS if c != "aecg"]
TESTED = {
    "aecg_flat_scope",
    "aecg_no_governance",
    "aecg_no_replay_gate",
    "aecg_symmetric_admission",
    "aecg_cumulative_only",
    "aecg_risk_only",
    "aecg_random_review",
}


def test_every_ablation_config_has_a_behaviour_test_here():
    assert set(ABLATIONS) == TESTED, "a new ablation config needs a test of what it ablates"


def params_of(config: str) -> dict[str, Any]:
    return compose([f"memory={config}"], Path("/tmp/unused"))["memory"]["params"]


# -- the runner on AgentNet ---------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    events: list[dict[str, Any]]
    records: list[dict[str, Any]]

    def kinds(self) -> Counter[str]:
        return Counter(e["event"] for e in self.events)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == kind]


@pytest.fixture(scope="module")
def agentnet_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Run]]:
    """One 40-task run per memory config on AgentNet, shared by the tests of this module."""
    runs: dict[str, Run] = {}

    def run(config: str) -> Run:
        if config not in runs:
            root = tmp_path_factory.mktemp(config)
            final = run_from_config(drift_config(root, f"memory={config}", "framework=agentnet"))
            assert final is not None and final["status"] == "complete"
            run_dir = next(root.rglob("run.json")).parent
            runs[config] = Run(read_jsonl(run_dir / "memory" / "audit.jsonl"), read_jsonl(run_dir / "samples.jsonl"))
        return runs[config]

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(registry.REGISTRY["benchmark"], "aecg_drift_toy", "aecg_fixtures:DriftToy")
        yield run


def test_the_agentnet_world_decides_at_more_than_one_level(agentnet_run):
    """Routers decide at team level, executors at agent level (no splits in this world): scope can matter."""
    levels: Counter[str] = Counter()
    for r in agentnet_run("aecg").records:
        levels.update(r["decisions_by"]["level"])
    assert levels["team"] > 0 and levels["agent"] > 0, levels


def test_flat_scope_uses_objects_across_levels_and_hard_scope_never_does(agentnet_run):
    hard, flat = (scope_measures(agentnet_run(c).events, agentnet_run(c).records) for c in ("aecg", "aecg_flat_scope"))
    assert hard["selected_uses"] > 20 and hard["cross_scope_use_pct"] == 0.0  # hard scope recalled, within levels
    assert flat["cross_scope_use_pct"] > 10.0


def test_no_governance_accumulates_but_never_opens_a_review(agentnet_run):
    full, idle = agentnet_run("aecg").kinds(), agentnet_run("aecg_no_governance").kinds()
    # the same world gives governance work to do: reviews that write candidates and replay them
    assert full["review"] >= 1 and full["intervention"] >= 1 and full["replay"] >= 1
    assert idle["promotion"] >= 1 and idle["admit_failure"] >= 1  # memory still grows and learns
    for kind in ("review_round", "review", "intervention", "replay", "activation", "isolation"):
        assert idle[kind] == 0, kind


def test_without_the_replay_gate_candidates_go_live_unreplayed(agentnet_run):
    gated, gateless = agentnet_run("aecg").of("replay"), agentnet_run("aecg_no_replay_gate").of("replay")
    assert gated and all(e["results"] and all(r["how"] == "replayed" for r in e["results"]) for e in gated)
    assert gateless and all(e["results"] == [] and e["gate"]["decision"] == "activate" for e in gateless)
    assert len(agentnet_run("aecg_no_replay_gate").of("activation")) == len(gateless)


def blamed_per_failure(run: Run) -> list[int]:
    return sorted(Counter(e["badcase"] for e in run.of("admit_failure")).values())


def test_symmetric_admission_blames_every_recalled_object_and_asymmetric_one(agentnet_run):
    asym, sym = agentnet_run("aecg"), agentnet_run("aecg_symmetric_admission")
    assert blamed_per_failure(asym) and set(blamed_per_failure(asym)) == {1}
    assert max(blamed_per_failure(sym)) >= 2
    assert {e["mode"] for e in sym.of("admit_failure")} == {"symmetric"}
    used = {e["task"]: {u["id"] for u in e["used"]} for e in sym.of("observe") if not e["success"]}
    blamed: dict[str, set[str]] = {}
    for e in sym.of("admit_failure"):
        blamed.setdefault(e["task"], set()).add(e.get("skill") or e["memory"])
    assert blamed and all(blamed[task] == used[task] for task in blamed)


# -- hand-built team -> event -> agent graphs -----------------------------------------------

CHAIN = [
    ("t0", "team", (), (), "split the list in halves"),
    ("e1", "event", ("t0",), (), "hand over the halves"),
    ("e2", "event", ("t0",), (), "hand over the halves"),
    ("a1", "agent", ("e1", "e2"), (), "merge the halves"),
    ("a2", "agent", ("a1",), (), "check the order"),
]
LONG = "The list is long and unsorted."


def recalling(team: tuple[str, ...] = (), agent: tuple[str, ...] = ()) -> list:
    """CHAIN with the team skill recalled at the team decision and the agent skill at the last agent one."""
    return [(i, lvl, par, team if lvl == "team" else agent if i == "a2" else (), act) for i, lvl, par, _, act in CHAIN]


def grown(config: str, **options: Any) -> tuple[AECGMemory, str, str]:
    """A memory (params from `config`) with one promoted skill per level; returns (memory, team, agent)."""
    mem = make_memory(params_of(config), **options)
    for i in range(3):
        mem.observe(episode(f"grow{i}", CHAIN, True))
    mem.maintain(0)
    team = next(s.id for s in mem.store.active_skills() if s.level == "team")
    agent = next(s.id for s in mem.store.active_skills() if s.level == "agent")
    return mem, team, agent


def failures_until_review(config: str, history: int = 20, horizon: int = 12) -> int | None:
    """A long good history for the team skill, then one failure per round until it is reviewed."""
    mem, team, _ = grown(config)
    for i in range(history):
        mem.observe(episode(f"good{i}", recalling((team,)), True))
    for k in range(1, horizon):
        mem.observe(episode(f"bad{k}", recalling((team,)), False, observation=LONG))
        mem.maintain(k)
        if any(e["skill"] == team for e in events(mem, "review")):
            return k
    return None


def test_cumulative_only_reviews_a_drifting_skill_later_than_dual_timescale():
    dual, cumulative = failures_until_review("aecg"), failures_until_review("aecg_cumulative_only")
    print(f"failures until the team skill is reviewed: dual {dual}, cumulative only {cumulative}")
    assert dual is not None and cumulative is not None and dual < cumulative


def two_degraded(config: str) -> tuple[AECGMemory, dict[str, str]]:
    """A team skill whose decisions feed the whole graph and a more degraded agent skill, both qualified
    for review (see test_aecg_mechanisms' exposure test); nothing reviewed yet."""
    mem, team, agent = grown(config)
    for i in range(20):
        mem.observe(episode(f"good{i}", recalling((team,), (agent,)), True))
    for i in range(10):
        mem.observe(episode(f"bad{i}", recalling((team,), (agent,)), False))
    for i in range(6):
        mem.observe(episode(f"agent-bad{i}", recalling((), (agent,)), False))
    return mem, {team: "team", agent: "agent"}


def first_reviewed(config: str, rounds: range) -> list[str]:
    """The level of the skill reviewed first (budget 1) in each review round index, from the same state."""
    mem, level = two_degraded(config)
    state = mem.state_dict()
    chosen = []
    for r in rounds:
        fresh = make_memory(params_of(config))
        fresh.load_state_dict(copy.deepcopy(state))
        fresh.maintain(r)
        assert len(events(fresh, "review_round")[-1]["qualified"]) == 2
        chosen.append(level[events(fresh, "review")[0]["skill"]])
    return chosen


def test_risk_only_reviews_the_most_degraded_skill_and_exposure_the_widest_reaching_one():
    assert first_reviewed("aecg", range(1, 3)) == ["team", "team"]
    assert first_reviewed("aecg_risk_only", range(1, 3)) == ["agent", "agent"]


def test_random_review_draws_the_order_per_round_where_exposure_keeps_it():
    drawn = first_reviewed("aecg_random_review", range(1, 7))
    print("first reviewed per round under random review:", drawn)
    assert set(drawn) == {"team", "agent"}  # seeded per round: different rounds, different orders


def useless_repair(request, spec) -> str:
    """A reviser whose repair only adds an avoidance rule: replayed, it still fails what failed."""
    if prompts.kind_of(request.messages) == prompts.PROCEDURAL_REPAIR:
        skill = prompts.payload_of(request.messages)["skill"]
        return json.dumps({"procedure": skill["procedure"], "avoidance": [*skill["avoidance"], "x"]})
    return mock_policy(request, spec)


register_mock_policy("aecg_ablation_useless_repair", useless_repair)


def test_the_replay_gate_isolates_a_useless_revision_that_goes_live_without_it():
    outcome = {}
    for config in ("aecg", "aecg_no_replay_gate"):
        mem, team, _ = grown(config, policy="aecg_ablation_useless_repair")
        for i in range(8):
            mem.observe(episode(f"good{i}", recalling((team,)), True))
        for i in range(6):
            mem.observe(episode(f"bad{i}", recalling((team,)), False, observation=LONG))
        mem.maintain(1)
        assert [e["skill"] for e in events(mem, "review")] == [team]
        candidate = events(mem, "intervention")[0]["candidate"]
        outcome[config] = mem.store.skills[candidate].status
    assert outcome == {"aecg": ISOLATED, "aecg_no_replay_gate": ACTIVE}
