"""EDV unit tests with scripted pools: verdict routing, hierarchical retrieval, the Ability Matrix,
deterministic role assignment, per-role usage, atomic construction, the ablation configs."""

from __future__ import annotations

import json
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import edv_mocks as em
import numpy as np
import pytest
import yaml
from conftest import REPO

from aecg_bench import registry
from aecg_bench.errors import ConfigError, InfraError
from aecg_bench.llm import LLMClient, ModelSpec, RetryPolicy, UsageMeter
from aecg_bench.llm.providers import Provider, TransientProviderError
from baselines.edv.ability import AbilityMatrix
from baselines.edv.banks import Banks
from baselines.edv.pool import Pool, StagePlan
from baselines.edv.verify import parse_vote, route


def edv(params: dict | None = None, services=None):
    services = services or em.services()
    return registry.build("memory", "edv", {"rotate_roles": False, **(params or {})}, services=services), services


def events(services, name: str) -> list[dict]:
    return [e for e in services.audit.read() if e["event"] == name]


# -- Verify: three-way routing ---------------------------------------------------------------


def test_unanimous_partial_and_no_approval_land_in_shared_private_and_nowhere():
    memory, services = edv()  # executors ma, mb (fixed order from ma); the outsider mc distils
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    items = {i["title"]: i for i in memory.banks.items.values()}
    assert set(items) == {"Alpha rule", "Beta rule"}
    assert items["Alpha rule"]["bank"] == "shared" and items["Alpha rule"]["owners"] == []
    assert items["Beta rule"]["bank"] == "private" and items["Beta rule"]["owners"] == ["ma"]
    assert memory.discarded == 1 and items["Alpha rule"]["distiller"] == "mc"
    votes = events(services, "vote")
    assert len(votes) == 6 and {v["verifier"] for v in votes} == {"ma", "mb"}
    assert all(v["rationale"] and v["parsed"] for v in votes)
    outcome = {e["title"]: (e["event"], e["destination"], e["owners"]) for e in services.audit.read() if "title" in e}
    assert outcome == {
        "Alpha rule": ("admit", "shared", []),
        "Beta rule": ("admit", "private", ["ma"]),
        "Gamma rule": ("discard", "discard", []),
    }
    assign = events(services, "assign")[0]
    assert assign["executors"] == ["ma", "mb"] and assign["distiller"] == "mc" and assign["verifiers"] == ["ma", "mb"]


def test_route_follows_the_bank_mode():
    voters = ("a", "b")
    assert route(("a", "b"), voters, "hierarchical") == ("shared", ())
    assert route(("b",), voters, "hierarchical") == ("private", ("b",))
    assert route((), voters, "hierarchical") == ("discard", ())
    assert route(("b",), voters, "shared_only") == ("shared", ())
    assert route(("a", "b"), voters, "private_only") == ("private", ("a", "b"))
    assert route((), voters, "private_only") == ("discard", ())


def test_a_missing_or_garbled_verdict_is_a_rejection():
    assert parse_vote("m", "Rationale: fine.\nVerdict: APPROVE").approve
    garbled = parse_vote("m", "I think this memory is quite good and I approve of it")
    assert not garbled.approve and not garbled.parsed
    assert not parse_vote("m", None).approve
    assert not parse_vote("m", "Verdict: APPROVE\nOn reflection...\nVerdict: REJECT").approve  # last verdict counts


def test_without_verification_every_item_goes_to_the_shared_bank():
    memory, services = edv(
        {"n_executors": 1, "candidates_per_executor": 1, "distill_by": "executor", "verify_by": "none"}
    )
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    assert [i["bank"] for i in memory.banks.items.values()] == ["shared"] * 3
    assert events(services, "vote") == [] and all(not e["verified"] for e in events(services, "admit"))


def test_an_unparsable_distillation_stores_nothing_and_teaches_the_ability_matrix_nothing():
    scripts = {label: [{"match": "strict third-party evaluator", "reply": "no idea"}] for label in ("ma", "mb", "mc")}
    memory, services = edv(services=em.services(em.pool_client(scripts)))
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    assert memory.banks.items == {} and events(services, "distill")[0]["reason"] == "unparsable"
    assert memory.ability.record("ma", "cancel") == (0, 0) and memory.ability.record("mb", "cancel") == (0, 0)


CONTRARIAN = (
    "Analysis: only executor 2 followed the policy.\nBest: 3\n"
    "Assessment: 1=failure; 2=failure; 3=success; 4=success\n"
    "# Memory Item 1\n## Title Alpha rule\n## Description d.\n## Content c."
)


def test_the_ability_matrix_learns_the_distillers_assessment_not_the_run_labels():
    """Fig. 3 / sec. 4.5: the distiller updates the Ability Matrix; no ground truth reaches construction."""
    scripts = {m: [{"match": "strict third-party evaluator", "reply": CONTRARIAN}] for m in ("ma", "mb", "mc")}
    memory, services = edv(services=em.services(em.pool_client(scripts)))
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory, succeeds=("ma",)))
    assert memory.ability.record("ma", "cancel") == (0, 2) and memory.ability.record("mb", "cancel") == (2, 2)
    assert events(services, "distill")[0]["assessment"] == {"1": False, "2": False, "3": True, "4": True}
    assert events(services, "ability")[0]["source"] == "distiller"
    labelled, _ = edv({"ability_from": "labels"}, services=em.services(em.pool_client(scripts)))
    labelled.build(em.task(), em.ScriptedRollout(em.task(), labelled, succeeds=("ma",)))
    assert labelled.ability.record("ma", "cancel") == (2, 2) and labelled.ability.record("mb", "cancel") == (0, 2)


def test_construction_prompts_carry_no_outcome_label_unless_the_labelled_variant_asks():
    """The distiller answers differently when it sees labels: only `edv_labelled` (show_outcomes) gets them."""
    saw_labels = {"match": "outcome: (success|failure)", "reply": CONTRARIAN.replace("Alpha rule", "Labelled rule")}
    scripts = {m: [*em.verdicts(("Alpha rule", "Labelled rule")), saw_labels] for m in ("ma", "mb", "mc")}
    default, _ = edv(services=em.services(em.pool_client(scripts)))
    default.build(em.task(), em.ScriptedRollout(em.task(), default))
    assert {i["title"] for i in default.banks.items.values()} == {"Alpha rule"}
    labelled_cfg = yaml.safe_load((REPO / "conf/memory/edv_labelled.yaml").read_text())["params"]
    labelled, _ = edv(labelled_cfg, services=em.services(em.pool_client(scripts)))
    labelled.build(em.task(), em.ScriptedRollout(em.task(), labelled))
    assert {i["title"] for i in labelled.banks.items.values()} == {"Labelled rule"}


def test_each_candidate_gets_the_whole_per_candidate_budget():
    from baselines.edv.prompts import Candidate, render_candidates

    long_obs = "x" * 20_000
    cands = []
    for n in range(1, 5):
        traj = em.Trajectory(task_id="t1", framework="scripted", initial_observation=long_obs)
        cands.append(Candidate(n, f"executor {n}", traj, "unknown"))
    one = len(render_candidates(cands[:1], 6000, show_outcome=False))
    four = len(render_candidates(cands, 6000, show_outcome=False))
    assert one > 5000 and four > 4 * 5000  # a shared budget would give each of four about 1500


# -- Execute: candidates, temperatures, roles ------------------------------------------------------


def test_executors_run_their_candidates_in_order_at_their_own_temperature():
    memory, _ = edv(services=em.services(em.pool_client(ma=1.0, mb=0.3)))
    rollout = em.ScriptedRollout(em.task(), memory)
    memory.build(em.task(), rollout)
    seen = [(c["model"], c["temperature"], c["sample_index"], c["usage_role"], c["use_memory"]) for c in rollout.calls]
    assert seen == [  # executors read memory while constructing (A.1; RB's build rollouts do too)
        ("ma", 1.0, 1, "executor", True),
        ("ma", 1.0, 2, "executor", True),
        ("mb", 0.3, 3, "executor", True),
        ("mb", 0.3, 4, "executor", True),
    ]
    override, _ = edv(
        {"execute_temperature": 0.5, "execute_with_memory": False}, em.services(em.pool_client(ma=1.0, mb=0.3))
    )
    rollout = em.ScriptedRollout(em.task(), override)
    override.build(em.task(), rollout)
    assert {c["temperature"] for c in rollout.calls} == {0.5} and not any(c["use_memory"] for c in rollout.calls)


def test_distiller_and_verifier_tokens_are_accounted_under_their_roles():
    services = em.services()
    meter = UsageMeter()
    services.llm = services.llm.with_context(meter=meter)
    memory, _ = edv(services=services)
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    roles = meter.by_role()
    assert set(roles) == {"distiller", "verifier"}
    assert roles["distiller"]["calls"] == 1 and roles["verifier"]["calls"] == 6
    assert set(meter.by_model()) == {"ma", "mb", "mc"}


def test_a_usage_role_view_changes_accounting_only():
    llm = em.pool_client()
    meter = UsageMeter()
    plain = llm.with_context(meter=meter).complete([{"role": "user", "content": "hi"}], role="agent", model="mb")
    view = llm.with_context(meter=meter, usage_role="executor")
    out = view.complete([{"role": "user", "content": "hi"}], role="agent", model="mb")
    assert out.key == plain.key and out.model == "mb" and out.role == "agent"
    assert meter.by_role()["executor"]["calls"] == 1 and meter.by_role()["agent"]["calls"] == 1
    assert view.with_context(seed=3).usage_role == "executor"  # inherited by derived views


# -- Construction is atomic and replayable ---------------------------------------------------


class _Down(Provider):
    def __call__(self, spec, request):
        raise TransientProviderError("provider down")


def test_a_provider_failure_leaves_memory_and_audit_as_they_were():
    memory, services = edv()
    memory.build(em.task("t0"), em.ScriptedRollout(em.task("t0"), memory))
    before, n_events = memory.state_dict(), len(services.audit.read())
    specs = {m: ModelSpec(label=m, provider="mock", model=f"down/{m}") for m in ("ma", "mb", "mc")}
    services.llm = LLMClient(specs, {"default": "ma"}, retry=RetryPolicy(max_attempts=1), providers={"mock": _Down()})
    with pytest.raises(InfraError):
        memory.build(em.task("t1"), em.ScriptedRollout(em.task("t1"), memory))
    assert memory.state_dict() == before and len(services.audit.read()) == n_events


def test_state_round_trips_and_the_restored_memory_recalls_and_routes_the_same():
    memory, _ = edv()
    for i in range(3):
        t = em.task(f"t{i}")
        memory.build(t, em.ScriptedRollout(t, memory, succeeds=("ma", "mb") if i else ("ma",)))
    state = memory.state_dict()
    assert json.loads(json.dumps(state)) == state
    fresh, _ = edv()
    fresh.load_state_dict(json.loads(json.dumps(state)))
    assert fresh.state_dict() == state
    probe = em.task("new")
    a, b = em.ScriptedRollout(probe, memory), em.ScriptedRollout(probe, fresh)
    memory.solve(probe, a)
    fresh.solve(probe, b)
    assert a.calls == b.calls and a.calls[0]["recalled"]


def test_a_second_visit_of_a_task_draws_a_new_assignment():
    memory, services = edv({"rotate_roles": True})
    t = em.task("t1")
    groups = []
    for _ in range(6):
        memory.build(t, em.ScriptedRollout(t, memory))
        groups.append(tuple(events(services, "assign")[-1]["executors"]))
    assert memory.visits == {"t1": 6} and len(set(groups)) > 1
    assert [e["visit"] for e in events(services, "assign")] == list(range(6))


# -- Inference: routing and hierarchical retrieval -------------------------------------------------


def test_the_solver_reads_the_shared_bank_first_then_its_own_private_bank():
    memory, _ = edv()
    memory.build(em.task("t1"), em.ScriptedRollout(em.task("t1"), memory))
    ids = {i["title"]: i["id"] for i in memory.banks.items.values()}
    probe = em.task("t2")
    rollout = em.ScriptedRollout(probe, memory)
    memory.solve(probe, rollout)  # ma succeeded in construction, mb failed: ma solves
    assert rollout.calls == [
        {
            "model": "ma",
            "temperature": 0.0,
            "sample_index": 0,
            "use_memory": True,
            "usage_role": "solver",
            "recalled": [ids["Alpha rule"], ids["Beta rule"]],
        }
    ]
    as_mb, _ = edv({"routing": "fixed", "fixed_model": "mb"})
    as_mb.load_state_dict(memory.state_dict())
    rollout = em.ScriptedRollout(probe, as_mb)
    as_mb.solve(probe, rollout)
    assert rollout.calls[0]["model"] == "mb" and rollout.calls[0]["recalled"] == [ids["Alpha rule"]]
    own = em.ScriptedRollout(em.task("t1"), memory)  # items from the task itself are never recalled
    memory.solve(em.task("t1"), own)
    assert own.calls[0]["recalled"] == []


class _Planar:
    """Embedder placing each text at a chosen cosine to the query (2-D unit vectors)."""

    dim = 2

    def __init__(self, cosines: dict[str, float]) -> None:
        self.cosines = cosines

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = [[c, np.sqrt(1 - c * c)] for c in (self.cosines.get(t, 1.0) for t in texts)]
        return np.asarray(rows, dtype=np.float32)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def _item(iid: str, bank: str, owners: list[str], task_id: str = "src") -> dict:
    return {
        "id": iid,
        "title": iid,
        "description": "",
        "content": iid,
        "task_id": task_id,
        "query": iid,
        "bank": bank,
        "owners": owners,
    }


def test_retrieval_honours_each_banks_threshold_and_puts_shared_first():
    cos = {"s90": 0.90, "s79": 0.79, "s81": 0.81, "pa86": 0.86, "pa84": 0.84, "pa99": 0.99, "pb99": 0.99}
    banks = Banks(_Planar(cos))  # type: ignore[arg-type]
    for iid, bank, owners in [
        ("s90", "shared", []),
        ("s79", "shared", []),
        ("pa86", "private", ["a"]),
        ("pa84", "private", ["a"]),
        ("pb99", "private", ["b"]),
    ]:
        banks.add(_item(iid, bank, owners))

    def ids(solver, k=3, **kw):
        args = {"shared_threshold": 0.80, "private_threshold": 0.85, **kw}
        return [(h.item["id"], h.bank) for h in banks.retrieve("query", task_id="q", solver=solver, k=k, **args)]

    assert ids("a") == [("s90", "shared"), ("pa86", "private:a")]  # 0.79 < 0.80, 0.84 < 0.85, b's bank unseen
    assert ids("b") == [("s90", "shared"), ("pb99", "private:b")]  # shared first despite the lower score
    assert ids(None) == [("s90", "shared")]
    assert ids("a", k=1) == [("s90", "shared")]  # k reached by the shared bank: no private lookup
    assert ids("a", shared_threshold=0.5) == [("s90", "shared"), ("s79", "shared"), ("pa86", "private:a")]
    banks.add(_item("s81", "shared", []))
    banks.add(_item("pa99", "private", ["a"]))
    assert ids("a", k=2) == [("s90", "shared"), ("s81", "shared")]


# -- The Ability Matrix ----------------------------------------------------------------------------


def _matrix(records: dict[str, tuple[int, int]], task_type: str = "x") -> AbilityMatrix:
    m = AbilityMatrix()
    for model, (s, n) in records.items():
        for i in range(n):
            m.update(model, task_type, i < s)
    return m


def test_the_ability_matrix_ranks_by_recorded_outcomes():
    m = _matrix({"a": (2, 10), "b": (8, 10), "c": (5, 10)})
    assert [name for name, _ in m.rank("x", ["a", "b", "c"])] == ["b", "c", "a"]
    assert round(m.score("b", "x"), 3) == round(9 / 12 - np.sqrt(9 * 3 / (144 * 13)), 3)


def test_one_lucky_success_does_not_beat_a_long_good_record():
    for good in [(9, 10), (7, 10), (16, 20)]:
        m = _matrix({"lucky": (1, 1), "steady": good})
        assert m.best("x", ["lucky", "steady"]) == "steady", good
        assert m.best("x", ["steady", "lucky"]) == "steady", good
    assert round(_matrix({"m": (1, 1)}).score("m", "x"), 2) == 0.43
    assert round(_matrix({"m": (7, 10)}).score("m", "x"), 2) == 0.54


def test_untried_pairs_get_a_prior_from_the_models_record_elsewhere():
    m = _matrix({"bad": (1, 4)})
    assert m.best("x", ["bad", "untried"]) == "untried"  # Beta(1,1) prior beats a bad record
    assert round(m.score("untried", "x"), 2) == 0.21
    for i in range(10):  # "expert" is strong on another task type, never tried on "x"
        m.update("expert", "y", i < 9)
    m.update("mediocre", "x", True)
    m.update("mediocre", "x", False)
    assert m.best("x", ["mediocre", "expert", "untried"]) == "expert"
    assert m.score("expert", "x") > m.score("untried", "x")


def test_ties_go_to_more_attempts_then_pool_order_and_state_round_trips():
    m = AbilityMatrix()
    assert m.best("x", ["b", "a"]) == "b" and m.best("x", ["a", "b"]) == "a"
    m2 = AbilityMatrix()
    m2.load_state_dict(json.loads(json.dumps(_matrix({"a": (3, 4)}).state_dict())))
    assert m2.record("a", "x") == (3, 4)
    assert _matrix({"a": (3, 4), "b": (1, 4)}, "y").best_overall(["b", "a"]) == "a"


# -- Role assignment: deterministic, pre-allocated, scheduling-free ---------------------------------


def _pool(n: int = 3) -> Pool:
    labels = [f"m{i}" for i in range(n)]
    return Pool(labels, {m: ModelSpec(label=m, provider="mock", model=f"mock/{m}") for m in labels})


def test_assignment_is_a_pure_function_of_seed_task_and_visit():
    pool, plan = _pool(), StagePlan()
    keys = [(seed, f"task-{t}", visit) for seed in (0, 1) for t in range(20) for visit in (0, 1)]
    first = {k: pool.assign(plan, seed=k[0], task_id=k[1], visit=k[2]) for k in keys}
    again = {k: _pool().assign(plan, seed=k[0], task_id=k[1], visit=k[2]) for k in reversed(keys)}
    assert first == again

    def jittered(key):
        time.sleep(random.random() / 500)  # random interleaving of the threads
        return key, pool.assign(plan, seed=key[0], task_id=key[1], visit=key[2])

    shuffled = random.Random(5).sample(keys, len(keys))
    with ThreadPoolExecutor(max_workers=8) as ex:
        threaded = dict(ex.map(jittered, shuffled))
    assert threaded == first
    for a in first.values():
        assert len(set(a.executors)) == 2 and a.distiller not in a.executors and a.verifiers == a.executors
    assert len({a.executors for a in first.values()}) > 1, "role rotation varies across tasks"
    assert any(first[(0, f"task-{t}", 0)] != first[(1, f"task-{t}", 0)] for t in range(20)), "the seed matters"


def test_the_pool_refuses_plans_it_cannot_staff():
    with pytest.raises(ConfigError, match="third-party distillation needs a pool model outside"):
        _pool(2).check(StagePlan())
    with pytest.raises(ConfigError, match="external verifier"):
        _pool(3).check(StagePlan(verify_by="external"))
    with pytest.raises(ConfigError, match="unknown pool model 'mz'"):
        Pool(["ma", "mz"], em.pool_client().models)
    with pytest.raises(ConfigError, match="unknown key 'n_executor'"):
        registry.build("memory", "edv", {"n_executor": 2}, services=em.services())


# -- The ablation configs mean what the paper's tables say -----------------------------------------


def _config_params(name: str) -> dict:
    return yaml.safe_load((REPO / "conf" / "memory" / f"{name}.yaml").read_text())["params"]


@pytest.mark.parametrize(
    ("config", "n_exec", "distiller_is_executor", "verifiers"),
    [
        ("edv_sa_basic", 1, True, "none"),
        ("edv_sa_selfverify", 1, True, "executors"),
        ("edv_sa_indep_verifier", 1, True, "outsider"),
        ("edv_ma_selfdistill", 2, True, "executors"),
        ("edv_ma_thirdparty_distill", 2, False, "distiller"),
        ("edv", 2, False, "executors"),
    ],
)
def test_table4_configs_staff_the_roles_of_their_row(config, n_exec, distiller_is_executor, verifiers):
    memory, _ = edv({"rotate_roles": True, **_config_params(config)})
    for t in range(10):
        a = memory.pool.assign(memory.plan, seed=0, task_id=f"t{t}", visit=0)
        assert len(a.executors) == n_exec and (a.distiller in a.executors) == distiller_is_executor
        expected = {
            "none": (),
            "executors": a.executors,
            "distiller": (a.distiller,),
        }.get(verifiers)
        if verifiers == "outsider":
            assert len(a.verifiers) == 1 and a.verifiers[0] not in a.executors
        else:
            assert a.verifiers == expected
        if n_exec == 1:
            assert a.executors == ("ma",)  # fixed: the first pool model
    if n_exec == 1:
        assert memory.select_model(em.task()) == "ma"


def test_table5_configs_change_routing_and_storage():
    # one task type (RETAIL): construction shows mb is better, yet EDV-Fixed keeps its fixed solver
    full, _ = edv({"ability_from": "labels"})
    fixed, _ = edv({**_config_params("edv_fixed"), "ability_from": "labels"})
    for memory in (full, fixed):
        for i in range(2):
            t = em.task(f"t{i}", task_type="retail")
            memory.build(t, em.ScriptedRollout(t, memory, succeeds=("mb",)))
    assert full.select_model(em.task("q", task_type="retail")) == "mb"
    assert fixed.select_model(em.task("q", task_type="retail")) == "ma"  # the pool's designated best backbone
    shared, _ = edv(_config_params("edv_only_shared"))
    shared.build(em.task(), em.ScriptedRollout(em.task(), shared))
    assert sorted(i["bank"] for i in shared.banks.items.values()) == ["shared", "shared"]
    private, _ = edv(_config_params("edv_only_private"))
    private.build(em.task(), em.ScriptedRollout(em.task(), private))
    assert {i["title"]: i["owners"] for i in private.banks.items.values()} == {
        "Alpha rule": ["ma", "mb"],
        "Beta rule": ["ma"],
    }


def test_every_edv_config_builds_with_a_three_model_pool():
    for path in sorted((REPO / "conf" / "memory").glob("edv*.yaml")):
        cfg = yaml.safe_load(path.read_text())
        registry.build("memory", cfg["name"], cfg.get("params") or {}, services=em.services())


def test_online_variant_constructs_after_solving_and_never_without_a_rollout():
    memory, services = edv()
    t = em.task("t1")
    rollout = em.ScriptedRollout(t, memory)
    episode, _ = memory.solve(t, rollout)
    memory.observe(episode)
    assert [c["usage_role"] for c in rollout.calls] == ["solver"] + ["executor"] * 4
    assert [c["sample_index"] for c in rollout.calls] == [0, 1, 2, 3, 4]
    assert memory.banks.items
    memory.observe(episode)  # no pending rollout any more
    assert events(services, "skip")[-1]["reason"] == "no_rollout"


def test_retrieval_keys_on_what_the_task_presents_not_only_its_shared_instruction():
    """Fix 4: identical instructions (tau2) must not hand every task the same first entries."""
    instruction = "You are a customer service agent. Help the user according to the policy."
    params = {"shared_threshold": 0.0, "private_threshold": 0.0, "top_k": 1}
    memory, _ = edv(params)
    for task_id, opening in [
        ("cancel", "Hi, I need to cancel my pending order of office chairs."),
        ("exchange", "Hello, I want to exchange my running shoes for a larger size."),
    ]:
        t = replace(em.task(task_id, instruction=instruction), mode="conversation")
        memory.build(t, em.ScriptedRollout(t, memory, opening=opening))
    asking = replace(em.task("new", instruction=instruction), mode="conversation")
    query = em.RecallQuery(task=asking, level="agent", agent="solver", role="actor", context="Exchange my shoes?")
    assert {i.metadata["source_task"] for i in memory.recall(query)} == {"exchange"}
