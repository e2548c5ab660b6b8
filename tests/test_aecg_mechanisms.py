"""AECG mechanism tests (RQ2-RQ4) through the warmup_snapshot protocol on AgentNet (team, event and
agent decisions) in the scripted world of conf/preset/mechanisms_smoke.yaml, plus the protocol's parts.

Each behaviour test compares variants from one shared snapshot, so it goes red when the mechanism it
names is removed: hard scope (cross-scope uses appear), the fast belief (dual and cumulative-only
coincide), exposure in the triage order (exposure-aware ranks like risk-only), asymmetric admission
(healthy co-recalled objects get negative evidence), the replay gate (harmful repairs go live).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from aecg_fixtures import episode, events, make_memory
from conftest import compose

from aecg_bench.errors import ConfigError
from aecg_bench.jsonl import read_jsonl
from aecg_bench.mechanisms import metrics
from aecg_bench.mechanisms.corruption import corrupt
from aecg_bench.mechanisms.protocol import run_mechanism


def run(tmp: Path, experiment: str, *overrides: str) -> dict[tuple[str, str], list[float]]:
    """(quantity, variant) -> values over seeds, and the printed numbers in the test log."""
    path = run_mechanism(compose([f"experiment={experiment}", *overrides], tmp))
    out: dict[tuple[str, str], list[float]] = {}
    with path.open() as fh:
        for row in csv.DictReader(fh):
            out.setdefault((row["quantity"], row["variant"]), []).append(float(row["value"]))
    for (q, v), values in sorted(out.items()):
        print(f"{experiment} {v:16s} {q:40s} {sum(values) / len(values):8.2f}  {values}")
    return out


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def variant_dir(tmp: Path, experiment: str, variant: str, seed: int = 0) -> Path:
    return next((tmp / experiment).glob(f"*/*/{variant}/*/seed={seed}"))


# -- RQ2: scope ---------------------------------------------------------------------------


def test_rq2_hard_scope_never_crosses_levels_and_flat_scope_does(tmp_path):
    m = run(tmp_path, "aecg_rq2_scope_smoke", "benchmark.params.size=80", "mechanism.seeds=[0]")
    assert m[("cross_scope_use_pct", "hard_scope")] == [0.0]
    assert m[("cross_scope_use_pct", "flat_scope")][0] > 5.0
    assert m[("selected_uses", "hard_scope")][0] > 50  # hard scope did recall: zero is not for want of uses
    # the same snapshot and stream for both: the warm-up ran once
    assert len(list((tmp_path / "aecg_mechanisms_warmup-smoke").rglob("run.json"))) == 1


# -- RQ3: dual-timescale reliability and asymmetric admission ------------------------------


def test_rq3_dual_timescale_reviews_corrupted_skills_sooner_and_asymmetric_admission_spares_healthy_skills(
    tmp_path,
):
    m = run(
        tmp_path,
        "aecg_rq3_drift_smoke",
        "+mechanism.variants.symmetric_admission.admission.mode=symmetric",
    )
    dual, cumulative = (m[("uses_to_review", v)] for v in ("dual_timescale", "cumulative_only"))
    assert mean(dual) < mean(cumulative)
    # dual-timescale reviews every corrupted skill; cumulative-only, slower, leaves at least as many
    # unreviewed (censored) in each seed; without governance none is reviewed
    assert m[("never_reviewed", "dual_timescale")] == [0.0, 0.0]
    pairs = zip(m[("never_reviewed", "cumulative_only")], m[("never_reviewed", "dual_timescale")], strict=True)
    assert all(c >= d for c, d in pairs)
    assert m[("never_reviewed", "no_governance")] == [2.0, 2.0] and mean(m[("censored_uses", "no_governance")]) > 20
    failed = {v: mean(m[("polluted_failed_uses", v)]) for v in ("dual_timescale", "cumulative_only", "no_governance")}
    assert failed["dual_timescale"] < failed["cumulative_only"] < failed["no_governance"]

    def healthy_blamed(variant: str) -> int:
        corrupted = json.loads((tmp_path / "aecg_rq3_drift-smoke/start/seed=0/corruption.json").read_text())
        bad = {c["lineage"] for c in corrupted["skills"]}
        evs = read_jsonl(variant_dir(tmp_path, "aecg_rq3_drift-smoke", variant) / "memory" / "audit.jsonl")
        return sum(1 for e in evs if e["event"] == "admit_failure" and e.get("lineage") not in bad)

    assert healthy_blamed("dual_timescale") < healthy_blamed("symmetric_admission")

    # the replay gate judged preservation on evidence: a repair of a corrupted skill restores what its
    # historical successes did (the corrupted parent no longer does), so no activation passes on "0/0"
    for seed in (0, 1):
        for variant in ("dual_timescale", "cumulative_only"):
            evs = read_jsonl(variant_dir(tmp_path, "aecg_rq3_drift-smoke", variant, seed) / "memory" / "audit.jsonl")
            gates = [e["gate"] for e in evs if e["event"] == "replay" and e["gate"]["decision"] == "activate"]
            assert gates and all(g["supported"] >= 1 for g in gates), (variant, seed, gates)


def test_the_variants_start_from_the_corrupted_snapshot(tmp_path):
    """The corruption is applied to the state every variant starts from (not only recorded): without
    governance nothing revises a skill, so the eval run ends with each corrupted skill's wrong procedure,
    and the scripted agents that follow it fail where the uncorrupted snapshot would not have failed."""
    m = run(
        tmp_path,
        "aecg_rq3_drift_smoke",
        "benchmark.params.size=80",
        "mechanism.seeds=[0]",
        "~mechanism.variants",
        "+mechanism.variants={no_governance:{governance:false}}",
    )
    start = tmp_path / "aecg_rq3_drift-smoke" / "start" / "seed=0"
    corrupted = json.loads((start / "corruption.json").read_text())["skills"]
    skills = {s["id"]: s for s in json.loads((start / "state.json").read_text())["memory"]["store"]["skills"]}
    run_dir = variant_dir(tmp_path, "aecg_rq3_drift-smoke", "no_governance")
    final = json.loads(sorted((run_dir / "memory").glob("snapshot-*.json"))[-1].read_text())["state"]["memory"]
    after = {s["id"]: s for s in final["store"]["skills"]}
    assert len(corrupted) == 2
    for c in corrupted:
        assert c["procedure_after"] != c["procedure_before"]
        assert skills[c["skill"]]["content"]["procedure"] == c["procedure_after"]
        assert after[c["skill"]]["content"]["procedure"] == c["procedure_after"]
        assert after[c["skill"]]["uses"] > skills[c["skill"]]["uses"]  # used in the evaluation
    assert m[("polluted_failed_uses", "no_governance")][0] > 5


# -- RQ4: exposure-aware triage -------------------------------------------------------------


def test_rq4_exposure_aware_review_covers_more_polluted_exposure_than_random(tmp_path):
    m = run(tmp_path, "aecg_rq4_triage_smoke")
    covered = {v: m[("exposure_covered_first_two_reviews_pct", v)] for v in ("exposure_aware", "random")}
    assert all(e >= r for e, r in zip(covered["exposure_aware"], covered["random"], strict=True))  # in every seed

    def rounds(variant: str, seed: int) -> list[dict[str, Any]]:
        evs = read_jsonl(variant_dir(tmp_path, "aecg_rq4_triage-smoke", variant, seed) / "memory" / "audit.jsonl")
        return [e for e in evs if e["event"] == "review_round" and e["selected"]]

    # the mechanism: each exposure-aware round reviews its most severe qualified candidate (drift x
    # exposure, aecg/triage.py), and random review chose otherwise in at least one round (two seeds are
    # too few for the outcome's direction: docs/memory/aecg.md, "Secondary directions")
    differs = 0
    for seed in (0, 1):
        aware, rand = rounds("exposure_aware", seed), rounds("random", seed)
        for r in aware:
            top = max((q for q in r["qualified"] if q["qualified"]), key=lambda q: q["severity"])["skill"]
            assert r["selected"] == [top], (seed, r["position"])
        differs += sum(
            a["selected"] != b["selected"] for a, b in zip(aware, rand, strict=False)
        )  # rounds with a selection
    assert differs >= 1
    # the protocol's precondition, in every variant and seed: more qualified candidates than budget (1) in both rounds
    assert min(v for (q, _), vs in m.items() if q == "qualified_in_first_two_rounds_min" for v in vs) >= 2


# -- the replay gate ---------------------------------------------------------------------------


def _misleads(content: dict[str, Any]) -> bool:
    """Scripted-world truth: a skill for walks of type d whose procedure names the opposite move and
    not d's makes the skill-following agent walk the wrong way."""
    kind = re.search(r"type (\w+)", content["applicability"])
    if kind is None or kind[1] not in ("left", "right"):
        return False
    steps = {step.strip().lower() for step in content["procedure"]}
    other = "left" if kind[1] == "right" else "right"
    return f"move {other}" in steps and f"move {kind[1]}" not in steps


def _failed_tasks_with_a_misleading_skill(start: Path, run_dir: Path) -> int:
    contents = {s["id"]: s["content"] for s in json.loads(start.read_text())["memory"]["store"]["skills"]}
    failed = 0
    for e in read_jsonl(run_dir / "memory" / "audit.jsonl"):
        if e["event"] == "intervention" and e.get("content"):
            contents[e["candidate"]] = e["content"]
        if e["event"] == "observe" and not e["success"]:
            failed += any(
                u["level"] == "agent" and _misleads(contents[u["id"]]) for u in e["used"] if u["id"] in contents
            )
    return failed


@pytest.mark.slow
def test_the_replay_gate_keeps_a_harmful_revision_out_and_admitting_every_candidate_lets_it_mislead(tmp_path):
    """A reviser that reverses every move of a skill (model option repair=reverse) proposes revisions
    that make the scripted agents walk the wrong way. Replay re-executes held-out recorded decisions
    through the agent model with parent and candidate: the candidate no longer does what worked, so
    the gate isolates it. Without the gate (every candidate admitted) the revisions go live and tasks
    fail with them. Reviews are made frequent (any degradation qualifies, three per round) so that
    healthy skills are revised at all."""
    m = run(
        tmp_path,
        "aecg_rq2_scope_smoke",
        "benchmark.params.size=120",
        "mechanism.seeds=[0]",
        "+model.models.mock.options.repair=reverse",
        "memory.params.drift.min_drift=0.0",
        "memory.params.drift.gate_confidence=0.5",
        "memory.params.triage.budget=3",
        "~mechanism.variants",
        "+mechanism.variants={replay_gate:{},no_replay_gate:{replay:{enabled:false}}}",
    )
    start = tmp_path / "aecg_rq2_scope-smoke" / "start" / "seed=0" / "state.json"
    misled = {
        v: _failed_tasks_with_a_misleading_skill(start, variant_dir(tmp_path, "aecg_rq2_scope-smoke", v))
        for v in ("replay_gate", "no_replay_gate")
    }
    print("failed tasks that used a misleading revision:", misled)
    assert misled["replay_gate"] == 0 and misled["no_replay_gate"] > 0
    assert m[("success", "replay_gate")][0] > m[("success", "no_replay_gate")][0]
    gated = read_jsonl(variant_dir(tmp_path, "aecg_rq2_scope-smoke", "replay_gate") / "memory" / "audit.jsonl")
    replays = [e for e in gated if e["event"] == "replay"]
    assert any(e["gate"]["decision"] == "isolate" and "regresses" in e["gate"]["reason"] for e in replays)
    assert all(r["how"] == "replayed" for e in replays for r in e["results"])


def test_exposure_ranks_a_widely_propagating_team_skill_above_a_more_degraded_agent_skill():
    """Two degraded skills on a team -> event -> agent graph under a budget of one review: exposure-aware
    triage reviews the team skill (its decisions feed the whole graph); risk-only the agent skill."""
    chain = [
        ("t0", "team", (), (), "split the list in halves"),
        ("e1", "event", ("t0",), (), "hand over the halves"),
        ("e2", "event", ("t0",), (), "hand over the halves"),
        ("a1", "agent", ("e1", "e2"), (), "merge the halves"),
        ("a2", "agent", ("a1",), (), "check the order"),
    ]

    def with_recall(team: tuple[str, ...], agent: tuple[str, ...]):
        return [
            (i, lvl, par, team if lvl == "team" else agent if i == "a2" else (), act) for i, lvl, par, _, act in chain
        ]

    chosen = {}
    for order in ("exposure", "risk"):
        mem = make_memory({"triage": {"order": order}})
        for i in range(3):
            mem.observe(episode(f"grow{i}", chain, True))
        mem.maintain(0)  # pending promotions (one per level)
        team = next(s.id for s in mem.store.active_skills() if s.level == "team")
        agent = next(s.id for s in mem.store.active_skills() if s.level == "agent")
        for i in range(20):
            mem.observe(episode(f"good{i}", with_recall((team,), (agent,)), True))
        for i in range(10):  # both recalled: the judges blame the team skill (half weight)
            mem.observe(episode(f"bad{i}", with_recall((team,), (agent,)), False))
        for i in range(6):  # the agent skill alone (full weight): it degrades a little more
            mem.observe(episode(f"agent-bad{i}", with_recall((), (agent,)), False))
        mem.maintain(1)
        qualified = events(mem, "review_round")[-1]["qualified"]
        assert {q["skill"] for q in qualified} == {team, agent}, qualified
        chosen[order] = events(mem, "review")[0]["skill"]
        levels = {team: "team", agent: "agent"}
    assert levels[chosen["exposure"]] == "team" and levels[chosen["risk"]] == "agent"


# -- protocol parts ---------------------------------------------------------------------------


def state_with(skills: list[dict[str, Any]]) -> dict[str, Any]:
    return {"memory": {"store": {"skills": skills}}, "framework": {}}


def skill(sid: str, level: str, procedure: list[str], uses: int = 3, alpha: float = 8.0) -> dict[str, Any]:
    return {
        "id": sid,
        "lineage": sid.split(".")[0],
        "level": level,
        "status": "active",
        "uses": uses,
        "exposure": [1.0] * uses,
        "belief": {"slow": {"alpha": alpha, "beta": 2.0}},
        "content": {"procedure": procedure},
    }


def test_corruption_is_a_seeded_pure_function_that_swaps_in_a_wrong_procedure_of_the_same_level():
    state = state_with(
        [
            skill("s1.v1", "agent", ["move right", "stop"]),
            skill("s2.v1", "agent", ["move left", "stop"]),
            skill("s3.v1", "team", ["route"]),
            skill("s4.v1", "agent", ["move up"], uses=0),  # never used: not validated
        ]
    )
    before = json.dumps(state, sort_keys=True)
    a, rec_a = corrupt(state, 2, seed=0)
    assert json.dumps(state, sort_keys=True) == before  # input untouched
    assert (a, rec_a) == corrupt(state, 2, seed=0)
    assert {r["skill"] for r in rec_a} <= {"s1.v1", "s2.v1", "s3.v1"}
    for r in rec_a:
        assert r["procedure_after"] != r["procedure_before"]
        if r["level"] == "agent":
            assert r["how"].startswith("same-level swap")
    with pytest.raises(ConfigError, match="validated skills"):
        corrupt(state, 4, seed=0)
    for seed in range(5):  # restricted to the levels the world's agents act on
        _, rec = corrupt(state, 2, seed=seed, levels=("agent",))
        assert {r["skill"] for r in rec} == {"s1.v1", "s2.v1"}
    with pytest.raises(ConfigError, match=r"level in \['team'\]"):
        corrupt(state, 2, seed=0, levels=("team",))


def test_corruption_levels_name_real_levels(tmp_path):
    from aecg_bench.mechanisms.protocol import check

    raw = compose(["experiment=aecg_rq3_drift_smoke"], tmp_path)
    assert raw["mechanism"]["corrupt"]["levels"] == ["agent"]
    check(raw["mechanism"], raw)
    raw["mechanism"]["corrupt"]["levels"] = ["agents"]
    with pytest.raises(ConfigError, match=r"levels=\['agents'\] must be a non-empty list of: team, event, agent"):
        check(raw["mechanism"], raw)


def test_drift_measures_count_uses_until_the_first_review_and_failed_uses_of_polluted_versions():
    evs = [
        {"event": "observe", "success": False, "used": [{"id": "s1.v1", "decisions": 2, "cross_scope": 0, "reach": 3}]},
        {"event": "observe", "success": True, "used": [{"id": "s1.v1", "decisions": 1, "cross_scope": 0, "reach": 1}]},
        {"event": "review", "skill": "s1.v1"},
        {
            "event": "intervention",
            "skill": "s1.v1",
            "outcome": "candidate",
            "candidate": "s1.v2",
            "content": {"procedure": ["move left", "stop", "check"]},
        },
        {"event": "observe", "success": False, "used": [{"id": "s1.v2", "decisions": 1, "cross_scope": 0, "reach": 2}]},
    ]
    corrupted = [{"skill": "s1.v1", "procedure_after": ["move left", "stop"], "exposure": 4.0}]
    records = [{"phase": "eval", "status": "ok", "success": s} for s in (False, True, False)]
    d = metrics.drift_measures(evs, records, corrupted)
    assert d["uses_to_review"] == 2 and d["never_reviewed"] == 0 and d["censored_uses"] != d["censored_uses"]
    assert d["polluted_failed_uses"] == 2  # s1.v2 kept the corrupted steps
    t = metrics.triage_measures(evs, corrupted)
    assert t["exposure_covered_first_two_reviews_pct"] == 100.0 and t["failed_task_exposure"] == 5
    # a corrupted skill never reviewed is censored: reported apart, never averaged into the delay
    never = {"skill": "s7.v1", "procedure_after": ["stop"], "exposure": 1.0}
    late = [{"event": "observe", "success": False, "used": [{"id": "s7.v1", "decisions": 1, "cross_scope": 0}]}] * 9
    d = metrics.drift_measures(evs + late, records, [*corrupted, never])
    assert (d["uses_to_review"], d["never_reviewed"], d["censored_uses"]) == (2, 1, 9)


def test_rq4_coverage_counts_the_first_two_reviews_only():
    """Figure 4: the share of the polluted skills' predicted exposure covered by the first two reviews;
    a third review (of the skill with the most exposure) and a repeated review add nothing."""
    corrupted = [{"skill": s, "procedure_after": ["stop"], "exposure": x} for s, x in (("a.v1", 10), ("b.v1", 30))]
    corrupted.append({"skill": "c.v1", "procedure_after": ["stop"], "exposure": 60.0})
    reviews = [{"event": "review", "skill": s} for s in ("a.v1", "a.v1", "c.v1", "b.v1")]
    t = metrics.triage_measures(reviews, corrupted)
    assert t["exposure_covered_first_two_reviews_pct"] == 10.0 and t["reviews"] == 4
    assert metrics.triage_measures(reviews[1:], corrupted)["exposure_covered_first_two_reviews_pct"] == 70.0


def test_rq4_says_whether_drift_and_severity_rank_the_same_skill_first_in_the_first_two_rounds():
    def q(skill: str, drift: float, exposure: float) -> dict[str, Any]:
        return {"skill": skill, "drift": drift, "exposure": exposure, "severity": drift * exposure}

    rounds = [
        {"event": "review_round", "qualified": [q("a", 0.5, 10), q("b", 0.4, 40)]},  # risk: a, exposure: b
        {"event": "review_round", "qualified": []},  # nothing qualified: not a round of the protocol
        {"event": "review_round", "qualified": [q("a", 0.5, 40), q("b", 0.5, 40)]},  # a tie: both take a
        {"event": "review_round", "qualified": [q("b", 0.6, 10), q("c", 0.1, 90)]},  # a third round: ignored
    ]
    t = metrics.triage_measures(rounds, [])
    assert t["drift_and_severity_agree_pct"] == 50.0 and t["qualified_in_first_two_rounds_min"] == 2
    # the most degraded is also the most severe, the least degraded is not the least severe: they agree
    spread = [{"event": "review_round", "qualified": [q("a", 0.5, 40), q("b", 0.4, 10), q("c", 0.1, 100)]}]
    assert metrics.triage_measures(spread, [])["drift_and_severity_agree_pct"] == 100.0


def test_an_eval_only_run_starts_from_the_given_state_and_its_identity_names_that_state(tmp_path):
    from aecg_bench.run import run_from_config

    base = [
        "framework=agentnet",
        "memory=aecg",
        "model=mock_aecg",
        "benchmark.params.size=10",
        "protocol.warmup_fraction=0.6",
    ]
    warm = run_from_config(compose([*base, "protocol.phases=warmup", "experiment_name=w"], tmp_path))
    assert warm is not None and warm["n_items"] == 6 and warm["n_eval"] == 0
    snap = sorted((tmp_path / "w").rglob("snapshot-*.json"))[-1]
    state = json.loads(snap.read_text())["state"]
    (tmp_path / "start.json").write_text(json.dumps(state))
    evals = [*base, "protocol.phases=eval", f"protocol.start_state={tmp_path / 'start.json'}", "experiment_name=e"]
    final = run_from_config(compose(evals, tmp_path))
    assert final is not None and final["n_items"] == 4 and final["n_eval"] == 4
    assert final["identity"]["start_state_hash"] is not None
    first = json.loads(sorted((tmp_path / "e").rglob("snapshot-*.json"))[0].read_text())["state"]["memory"]
    assert first["store"]["counters"]["memories"] >= state["memory"]["store"]["counters"]["memories"]
    with pytest.raises(ConfigError, match="start_state"):
        run_from_config(compose([*base, "protocol.phases=eval", "protocol.start_state=/nonexistent.json"], tmp_path))


@pytest.mark.parametrize(
    "name", ["aecg_rq2_scope", "aecg_rq3_drift", "aecg_rq4_triage", "aecg_rq2_scope_smoke", "aecg_rq4_triage_smoke"]
)
def test_every_mechanism_experiment_composes_into_a_valid_run_and_protocol(name, tmp_path):
    from aecg_bench.mechanisms.protocol import check
    from aecg_bench.runner.config import parse_run_config, validate_components

    raw = compose([f"experiment={name}"], tmp_path)
    check(raw["mechanism"], raw)
    cfg = parse_run_config(raw)
    validate_components(cfg)
    assert cfg.protocol.warmup_fraction == 0.6 and cfg.framework.name == "agentnet"
    if not name.endswith("smoke"):
        assert cfg.benchmark.name == "scienceworld" and raw["mechanism"]["seeds"] == [0, 1, 2]


def test_tables_and_figures_render_from_measures_beside_the_papers(tmp_path):
    from aecg_bench.analysis.mechanisms import render

    rows = [
        ("rq2_scope", "cross_scope_use_pct", "flat_scope", 0, 20.0),
        ("rq2_scope", "cross_scope_use_pct", "flat_scope", 1, 30.0),
        ("rq2_scope", "cross_scope_use_pct", "hard_scope", 0, 0.0),
        ("rq3_drift", "uses_to_review", "dual_timescale", 0, 4.0),
        ("rq4_triage", "failed_task_exposure", "random", 0, 50.0),
    ]
    d = tmp_path / "m"
    d.mkdir()
    lines = ["test,quantity,variant,seed,value", *(",".join(map(str, r)) for r in rows)]
    (d / "mechanisms.csv").write_text("\n".join(lines) + "\n")
    summary = render([d], tmp_path / "out", "SMOKE")
    flat = summary[(summary["variant"] == "flat_scope") & (summary["quantity"] == "cross_scope_use_pct")].iloc[0]
    assert flat["ours"] == 25.0 and flat["paper"] == 36.5 and flat["seeds"] == 2
    table = (tmp_path / "out" / "table3.md").read_text()
    assert "25.00" in table and "(paper 36.50)" in table
    for stem in ("figure3", "figure4"):
        assert (tmp_path / "out" / f"{stem}.png").stat().st_size > 0 and (tmp_path / "out" / f"{stem}.pdf").exists()
