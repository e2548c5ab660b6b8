"""AECG's mechanism-test code pinned through behaviour (issue 37: `aecg_bench/mechanisms/` in the mutation
campaigns at the bar of `aecg/`).

The seeded corruption on hand-built snapshots, each measure on hand-built audit logs and records, and the
warmup_snapshot protocol and its command line on small scripted worlds (AgentNet on the toy line walk with
the mock model, as conf/preset/mechanisms_smoke.yaml; seconds each). The RQ direction tests that read the
same measures on full smoke worlds are in tests/test_aecg_mechanisms.py.
"""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import compose

from aecg_bench.errors import ConfigError
from aecg_bench.jsonl import read_jsonl
from aecg_bench.mechanisms import metrics
from aecg_bench.mechanisms import protocol as P
from aecg_bench.mechanisms.__main__ import main
from aecg_bench.mechanisms.corruption import corrupt, slow_mean, validated, wrong_procedure


def skill(sid: str, level: str, procedure: list[str], **kw: Any) -> dict[str, Any]:
    base = {
        "id": sid,
        "lineage": sid.split(".")[0],
        "level": level,
        "status": "active",
        "uses": 3,
        "exposure": [1.0, 2.5, 0.5],
        "belief": {"slow": {"alpha": 8.0, "beta": 2.0}},
        "content": {"procedure": procedure},
    }
    return {**base, **kw}


def state_with(skills: list[dict[str, Any]]) -> dict[str, Any]:
    return {"memory": {"store": {"skills": skills}}, "framework": {"x": 1}}


# -- corruption ------------------------------------------------------------------------------------------


def test_slow_mean_is_the_slow_beliefs_mean():
    assert slow_mean(skill("s1.v1", "agent", [], belief={"slow": {"alpha": 3.0, "beta": 1.0}})) == 0.75


def test_validated_means_active_used_and_trusted_inclusive_at_both_bounds_at_the_given_levels():
    skills = [
        skill("s3.v1", "agent", ["a"], uses=2, belief={"slow": {"alpha": 1.0, "beta": 1.0}}),  # 0.5, 2 uses: in
        skill("s1.v1", "team", ["a"], uses=2),
        skill("s2.v1", "agent", ["a"], uses=1),  # too few uses
        skill("s4.v1", "agent", ["a"], belief={"slow": {"alpha": 1.0, "beta": 1.01}}),  # just under 0.5
        skill("s5.v1", "agent", ["a"], status="superseded"),
        skill("s6.v1", "agent", ["a"], status="isolated"),
    ]
    assert [s["id"] for s in validated(skills, 2, 0.5)] == ["s1.v1", "s3.v1"]  # sorted by id
    assert [s["id"] for s in validated(skills, 2, 0.5, ("agent",))] == ["s3.v1"]
    assert [s["id"] for s in validated(skills, 2, 0.5, ("team", "event"))] == ["s1.v1"]


def test_a_wrong_procedure_comes_from_a_same_level_skill_that_lacks_a_step_and_brings_one():
    me = skill("s1.v1", "agent", ["move right", "stop"])
    pool = [
        me,
        skill("s1.v2", "agent", ["move left", "stop"]),  # same lineage: never a donor
        skill("s2.v1", "agent", ["move right", "stop", "look"]),  # brings a step but lacks none
        skill("s3.v1", "agent", ["move right"]),  # lacks a step but brings none
        skill("s4.v1", "team", ["route", "stop"]),  # differs, but of another level
        skill("s5.v1", "agent", ["move left", "stop"]),
        skill("s6.v1", "agent", ["look", "stop"]),
    ]
    for seed in range(8):
        steps, how = wrong_procedure(me, pool, random.Random(seed))
        donor = how.removeprefix("same-level swap from ")
        assert (
            donor in ("s5.v1", "s6.v1") and steps == next(s for s in pool if s["id"] == donor)["content"]["procedure"]
        )
    # the donor is drawn by the generator from the pool sorted by id: the same draw whatever the list order
    assert wrong_procedure(me, pool, random.Random(1)) == wrong_procedure(me, pool[::-1], random.Random(1))
    draws = {wrong_procedure(me, pool, random.Random(s))[1] for s in range(20)}
    assert draws == {"same-level swap from s5.v1", "same-level swap from s6.v1"}


def test_without_a_same_level_donor_any_level_serves_and_without_any_the_steps_are_reversed():
    me = skill("s1.v1", "agent", ["a", "b", "c"])
    team = skill("s4.v1", "team", ["a", "d"])
    steps, how = wrong_procedure(me, [me, team, skill("s2.v1", "agent", ["a", "b"])], random.Random(0))
    assert (steps, how) == (["a", "d"], "swap from s4.v1")
    steps, how = wrong_procedure(me, [me, skill("s1.v2", "team", ["x"])], random.Random(0))
    assert (steps, how) == (["c", "b", "a"], "reversed")


def test_corruption_alters_a_seeded_sample_of_the_validated_skills_of_a_copy_and_records_each():
    skills = [
        skill(f"s{i}.v1", "agent", ["move right" if i % 2 else "move left", "stop", f"step {i}"]) for i in range(6)
    ]
    skills[2]["uses"] = 0  # not validated
    for s in skills:
        s["belief"] = {"slow": {"alpha": 2.0, "beta": 1.0}}  # a slow mean of 2/3: recorded to six digits
    state = state_with(skills)
    before = json.dumps(state, sort_keys=True)
    out, record = corrupt(state, 3, seed=7, min_uses=1, min_reliability=0.5)
    assert json.dumps(state, sort_keys=True) == before and out["framework"] == {"x": 1}
    rng = random.Random("aecg-corruption:7")
    chosen = rng.sample(validated(skills, 1, 0.5), 3)
    assert [r["skill"] for r in record] == [c["id"] for c in chosen]
    by_id = {s["id"]: s for s in out["memory"]["store"]["skills"]}
    for r in record:
        original = next(s for s in skills if s["id"] == r["skill"])
        assert r["procedure_before"] == original["content"]["procedure"]
        assert r["procedure_after"] == by_id[r["skill"]]["content"]["procedure"] != r["procedure_before"]
        assert r["how"].startswith("same-level swap from ")
        assert (r["lineage"], r["level"], r["uses"], r["exposure"], r["slow_mean"]) == (
            r["skill"].split(".")[0],
            "agent",
            3,
            4.0,
            0.666667,
        )
        kept = {k: v for k, v in by_id[r["skill"]].items() if k != "content"}
        assert kept == {k: v for k, v in original.items() if k != "content"}  # belief, history, exposure kept
    untouched = [s for s in out["memory"]["store"]["skills"] if s["id"] not in {r["skill"] for r in record}]
    assert untouched == [s for s in skills if s["id"] not in {r["skill"] for r in record}]
    assert corrupt(state, 3, seed=8)[1] != record  # another seed, another draw
    assert corrupt(state, 3, seed=7)[1] == record


def test_too_few_validated_skills_is_one_line_naming_the_pool_and_the_remedy():
    state = state_with([skill("s1.v1", "agent", ["a"]), skill("s2.v1", "team", ["b"])])
    with pytest.raises(ConfigError) as err:
        corrupt(state, 3, seed=0, min_uses=2, min_reliability=0.6)
    assert str(err.value) == (
        "the warm-up snapshot has 2 validated skills (active, used >= 2, slow mean >= 0.6); "
        "mechanism.corrupt.skills=3 needs more: lengthen the stream or lower it"
    )
    with pytest.raises(ConfigError) as err:
        corrupt(state, 2, seed=0, levels=("agent", "event"))
    assert str(err.value) == (
        "the warm-up snapshot has 1 validated skills (active, used >= 1, slow mean >= 0.5, level in "
        "['agent', 'event']); mechanism.corrupt.skills=2 needs more: lengthen the stream or lower it"
    )


# -- measures -------------------------------------------------------------------------------------------


def rec(phase: str, success: bool, status: str = "ok") -> dict[str, Any]:
    return {"phase": phase, "success": success, "status": status}


def obs(success: bool, *rows: tuple[str, int, int, float | None]) -> dict[str, Any]:
    used = []
    for sid, decisions, cross, reach in rows:
        row: dict[str, Any] = {"id": sid, "decisions": decisions, "cross_scope": cross}
        if reach is not None:
            row["reach"] = reach
        used.append(row)
    return {"event": "observe", "success": success, "used": used}


def test_success_rates_count_scored_records_of_their_phases_only():
    records = [
        rec("warmup", True),
        rec("warmup", False),
        rec("eval", True),
        rec("eval", False),
        rec("eval", False),
        rec("eval", True, "infra_error"),  # not a score
        rec("build", True),
    ]
    assert metrics.eval_success_pct(records) == pytest.approx(100 / 3)
    assert metrics.full_stream_success_pct(records) == 40.0
    assert metrics.success_pct(records, ("build",)) == 100.0
    assert math.isnan(metrics.eval_success_pct([rec("warmup", True), rec("eval", True, "infra_error")]))


def test_scope_measures_share_of_decisions_mean_reach_and_the_full_streams_success():
    events = [
        obs(True, ("s1.v1", 3, 1, 4.0), ("m1", 2, 2, None)),  # a memory has no reach
        {"event": "review", "skill": "s1.v1"},
        obs(False, ("s2.v1", 5, 0, 1.0)),
    ]
    records = [rec("eval", True), rec("eval", False), rec("eval", False), rec("eval", True)]
    full = [rec("warmup", True), rec("warmup", True), rec("warmup", True), *records]
    m = metrics.scope_measures(events, records, full)
    assert m == {
        "cross_scope_use_pct": 30.0,
        "eval_success_pct": 50.0,
        "exposure": 2.5,
        "selected_uses": 10.0,
        "success": pytest.approx(500 / 7),
    }
    assert "success" not in metrics.scope_measures(events, records)
    assert metrics.scope_measures([], records) == {
        "cross_scope_use_pct": 0.0,
        "eval_success_pct": 50.0,
        "exposure": 0.0,
        "selected_uses": 0.0,
    }


def candidate(parent: str, cand: str, procedure: list[str], outcome: str = "candidate") -> dict[str, Any]:
    return {
        "event": "intervention",
        "skill": parent,
        "outcome": outcome,
        "candidate": cand,
        "content": {"procedure": procedure},
    }


def test_polluted_versions_are_the_corrupted_ones_and_revisions_that_keep_every_corrupted_step():
    corrupted = [
        {"skill": "s1.v1", "procedure_after": ["move left", "stop"]},
        {"skill": "s2.v3", "procedure_after": ["go"]},
    ]
    events = [
        candidate("s1.v1", "s1.v2", ["move left", "stop", "check"]),  # keeps both: polluted
        candidate("s1.v2", "s1.v3", ["move left", "stop"]),  # from a polluted one, keeps both: polluted
        candidate("s1.v3", "s1.v4", ["move right", "stop"]),  # drops one: clean
        candidate("s1.v4", "s1.v5", ["move left", "stop"]),  # from a clean parent: not traced
        candidate("s3.v1", "s3.v2", ["go"]),  # another lineage, not corrupted
        candidate("s2.v3", "s2.v4", ["go", "look"]),
        {"event": "intervention", "skill": "s2.v4", "outcome": "no_change"},
    ]
    assert metrics.polluted_ids(events, corrupted) == {"s1.v1", "s1.v2", "s1.v3", "s2.v3", "s2.v4"}


def test_drift_measures_per_corrupted_skill_until_its_own_first_review():
    corrupted = [
        {"skill": "a.v1", "procedure_after": ["x"], "exposure": 1.0},
        {"skill": "b.v1", "procedure_after": ["y"], "exposure": 1.0},
    ]
    events = [
        obs(False, ("a.v1", 2, 0, 1.0), ("b.v1", 1, 0, 1.0)),
        obs(True, ("a.v1", 1, 0, 1.0)),
        {"event": "review", "skill": "c.v1"},  # another skill's review stops nobody's count
        obs(False, ("a.v1", 1, 0, 1.0), ("b.v1", 1, 0, 1.0)),
        {"event": "review", "skill": "b.v1"},
        obs(False, ("a.v1", 1, 0, 1.0), ("b.v1", 1, 0, 1.0)),  # after b's review: not counted for b
        {"event": "review", "skill": "a.v1"},
        {"event": "review", "skill": "b.v1"},
    ]
    records = [rec("eval", False), rec("eval", True), rec("eval", False), rec("eval", False), rec("warmup", True)]
    d = metrics.drift_measures(events, records, corrupted)
    assert d == {
        "uses_to_review": 3.0,  # a: 4 uses, b: 2 uses
        "never_reviewed": 0.0,
        "censored_uses": d["censored_uses"],
        "polluted_failed_uses": 6.0,  # task-level uses of a or b in failed tasks
        "post_corruption_success_pct": 25.0,
    }
    assert math.isnan(d["censored_uses"])
    d = metrics.drift_measures(events[:5], records, corrupted)  # a is never reviewed: 3 uses, censored
    assert (d["uses_to_review"], d["never_reviewed"], d["censored_uses"]) == (2.0, 1.0, 3.0)
    d = metrics.drift_measures(events[:3], records, corrupted)
    assert math.isnan(d["uses_to_review"]) and (d["never_reviewed"], d["censored_uses"]) == (2.0, 1.5)
    assert math.isnan(metrics.drift_measures([], [], [])["uses_to_review"])


def test_triage_measures_predicted_exposure_covered_and_failed_task_exposure():
    corrupted = [
        {"skill": "a.v1", "procedure_after": ["x"], "exposure": 30.0},
        {"skill": "b.v1", "procedure_after": ["y"], "exposure": 10.0},
    ]
    events = [
        {"event": "review_round", "qualified": [{"skill": "a.v1", "drift": 0.2, "severity": 6.0}] * 3},
        {"event": "review", "skill": "b.v1"},
        obs(False, ("a.v1", 1, 0, 2.5), ("c.v1", 1, 0, 7.0), ("b.v1", 1, 0, None)),  # b: no reach recorded
        obs(True, ("a.v1", 1, 0, 100.0)),  # a success: no failed exposure
        {"event": "review", "skill": "x.v1"},  # not polluted: covers nothing
        {"event": "review_round", "qualified": [{"skill": "a.v1", "drift": 0.2, "severity": 6.0}] * 4},
        {"event": "review", "skill": "a.v1"},  # the third review: too late
        obs(False, ("a.v1", 1, 0, 1.5)),
    ]
    t = metrics.triage_measures(events, corrupted)
    assert t == {
        "exposure_covered_first_two_reviews_pct": 25.0,
        "failed_task_exposure": 4.0,
        "reviews": 3.0,
        "qualified_in_first_two_rounds_min": 3.0,
        "drift_and_severity_agree_pct": 100.0,
    }
    assert metrics.triage_measures(events, corrupted, first=3)["exposure_covered_first_two_reviews_pct"] == 100.0
    empty = metrics.triage_measures([], [])
    assert (empty["exposure_covered_first_two_reviews_pct"], empty["qualified_in_first_two_rounds_min"]) == (0, 0)
    assert math.isnan(empty["drift_and_severity_agree_pct"])


# -- the protocol ---------------------------------------------------------------------------------------


def test_merge_is_a_deep_copying_merge_that_the_change_wins():
    base = {"a": {"b": 1, "c": [1]}, "d": 2}
    change = {"a": {"b": 3, "e": {"f": 4}}, "d": {"g": 5}, "h": [[1]]}
    out = P.merge(base, change)
    assert out == {"a": {"b": 3, "c": [1], "e": {"f": 4}}, "d": {"g": 5}, "h": [[1]]}
    out["a"]["c"].append(2)
    out["a"]["e"]["f"] = 0
    out["h"][0].append(2)
    assert base == {"a": {"b": 1, "c": [1]}, "d": 2}
    assert change == {"a": {"b": 3, "e": {"f": 4}}, "d": {"g": 5}, "h": [[1]]}


_COMPOSED: dict[tuple[str, ...], dict[str, Any]] = {}


def composed(tmp: Path, *overrides: str) -> dict[str, Any]:
    """`compose` once per set of overrides (Hydra takes a second or more a call), then a fresh copy with its
    results under `tmp`: the recording-runner tests are about the protocol, not the composition."""
    if overrides not in _COMPOSED:
        _COMPOSED[overrides] = compose(list(overrides), Path("/nonexistent-results"))
    raw = json.loads(json.dumps(_COMPOSED[overrides]))
    raw["runtime"]["results_root"] = str(tmp)
    return raw


def raw_of(tmp: Path, *overrides: str) -> dict[str, Any]:
    return composed(tmp, "experiment=aecg_rq3_drift_smoke", *overrides)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("mechanism.test", "rq5", "mechanism.test 'rq5' is not one of: rq2_scope, rq3_drift, rq4_triage"),
        ("mechanism.test", None, "mechanism.test None is not one of: rq2_scope, rq3_drift, rq4_triage"),
        ("mechanism.variants", {}, "mechanism.variants is empty: name at least one variant (name: memory params)"),
        ("mechanism.variants", None, "mechanism.variants is empty: name at least one variant (name: memory params)"),
        ("protocol.warmup_fraction", 0.0, "protocol.warmup_fraction=0.0 must be in (0, 1)"),
        ("protocol.warmup_fraction", 1.0, "protocol.warmup_fraction=1.0 must be in (0, 1)"),
        ("mechanism.corrupt", None, "mechanism.test=rq3_drift needs mechanism.corrupt (skills to corrupt)"),
        ("mechanism.corrupt", {}, "mechanism.test=rq3_drift needs mechanism.corrupt (skills to corrupt)"),
        ("mechanism.corrupt.levels", [], "mechanism.corrupt.levels=[] must be a non-empty list of: team, event, agent"),
        (
            "mechanism.corrupt.levels",
            ["agent", "teams"],
            "mechanism.corrupt.levels=['agent', 'teams'] must be a non-empty list of: team, event, agent",
        ),
    ],
)
def test_a_bad_mechanism_config_is_one_line_naming_the_value(tmp_path, key, value, message):
    raw = raw_of(tmp_path)
    *path, last = key.split(".")
    node = raw
    for k in path:
        node = node[k]
    node[last] = value
    with pytest.raises(ConfigError) as err:
        P.check(raw["mechanism"], raw)
    assert str(err.value) == message


def test_a_good_mechanism_config_passes_and_rq2_needs_no_corruption(tmp_path):
    raw = raw_of(tmp_path)
    P.check(raw["mechanism"], raw)
    P.check({**raw["mechanism"], "corrupt": {"skills": 1, "levels": None}}, raw)  # every level
    P.check({**raw["mechanism"], "test": "rq2_scope", "corrupt": None}, raw)
    raw["protocol"]["warmup_fraction"] = 0.01
    P.check(raw["mechanism"], raw)


def snapshot(run_dir: Path, n: int, state: dict[str, Any]) -> None:
    (run_dir / "memory").mkdir(parents=True, exist_ok=True)
    (run_dir / "memory" / f"snapshot-{n:06d}.json").write_text(json.dumps({"state": state}))


def test_the_latest_snapshot_is_the_start_state_and_none_is_one_line(tmp_path):
    for n, mark in ((9, "old"), (120, "new"), (40, "mid")):
        snapshot(tmp_path, n, {"mark": mark})
    assert P.latest_state(tmp_path) == {"mark": "new"}
    with pytest.raises(ConfigError, match=r"^.*/empty has no memory snapshot to start the mechanism variants from$"):
        P.latest_state(tmp_path / "empty")


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


SMALL = ["benchmark.params.size=20", "mechanism.seeds=[0,1]"]


def test_rq2_runs_one_shared_warm_up_per_seed_then_each_variant_from_it_and_over_the_whole_stream(tmp_path, capsys):
    raw = compose(["experiment=aecg_rq2_scope_smoke", *SMALL], tmp_path)
    path = P.run_mechanism(raw)
    assert path == tmp_path / "aecg_rq2_scope-smoke" / "mechanisms.csv"
    rows = csv_rows(path)
    assert list(rows[0]) == ["test", "quantity", "variant", "seed", "value"]
    quantities = ["cross_scope_use_pct", "eval_success_pct", "exposure", "selected_uses", "success"]
    expected = [(v, s, q) for s in ("0", "1") for v in ("hard_scope", "flat_scope") for q in quantities]
    assert [(r["variant"], r["seed"], r["quantity"]) for r in rows] == expected
    assert {r["test"] for r in rows} == {"rq2_scope"}
    # one warm-up per seed (12 of the 20 tasks), one eval run (8) and one full run (20) per variant and seed
    warm = sorted((tmp_path / "aecg_mechanisms_warmup-smoke").rglob("run.json"))
    assert [json.loads(p.read_text())["n_items"] for p in warm] == [12, 12]
    for variant, scope in (("hard_scope", "hard"), ("flat_scope", "flat")):
        for seed in (0, 1):
            run = next((tmp_path / "aecg_rq2_scope-smoke").glob(f"*/*/{variant}/*/seed={seed}"))
            full = next((tmp_path / "aecg_rq2_scope-smoke-full-stream").glob(f"*/*/{variant}/*/seed={seed}"))
            header, whole = (json.loads((d / "run.json").read_text()) for d in (run, full))
            assert (header["n_items"], header["n_eval"], whole["n_items"], whole["n_eval"]) == (8, 8, 20, 8)
            start = tmp_path / "aecg_rq2_scope-smoke" / "start" / f"seed={seed}" / "state.json"
            assert header["identity"]["start_state_hash"] is not None and whole["identity"]["start_state_hash"] is None
            assert header["labels"]["memory"] == whole["labels"]["memory"] == variant
            records = read_jsonl(full / "samples.jsonl")
            value = {
                r["quantity"]: float(r["value"]) for r in rows if (r["variant"], r["seed"]) == (variant, str(seed))
            }
            assert value["success"] == pytest.approx(metrics.full_stream_success_pct(records))
            assert value["eval_success_pct"] == pytest.approx(
                metrics.eval_success_pct(read_jsonl(run / "samples.jsonl"))
            )
            audit = read_jsonl(full / "memory" / "audit.jsonl")
            cross = sum(u["cross_scope"] for e in audit if e["event"] == "observe" for u in e["used"])
            assert (cross > 0) == (scope == "flat")
            assert json.loads(start.read_text())["memory"]["store"]["counters"]["memories"] > 0
    assert not (tmp_path / "aecg_rq2_scope-smoke" / "start" / "seed=0" / "corruption.json").exists()
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("rq2_scope seed=1 flat_scope: "))
    value = {r["quantity"]: float(r["value"]) for r in rows if (r["variant"], r["seed"]) == ("flat_scope", "1")}
    assert line == "rq2_scope seed=1 flat_scope: " + ", ".join(f"{q}={value[q]:.2f}" for q in quantities[:4]) + (
        f", success={value['success']:.2f}"
    )


def test_rq3_writes_the_corruption_beside_the_state_and_measures_each_variant_from_it(tmp_path):
    raw = compose(
        [
            "experiment=aecg_rq3_drift_smoke",
            "benchmark.params.size=60",
            "mechanism.seeds=[3]",
            "~mechanism.variants",
            "+mechanism.variants={dual_timescale:{},no_governance:{governance:false}}",
        ],
        tmp_path,
    )
    path = P.run_mechanism(raw)
    start = tmp_path / "aecg_rq3_drift-smoke" / "start" / "seed=3"
    written = json.loads((start / "corruption.json").read_text())
    assert written["seed"] == 3 and written["corrupt"] == raw["mechanism"]["corrupt"]
    warm = next((tmp_path / "aecg_mechanisms_warmup-smoke").glob("*/*/aecg/*/seed=3"))
    expected_state, expected = corrupt(P.latest_state(warm), 2, 3, min_uses=1, min_reliability=0.5, levels=("agent",))
    assert written["skills"] == expected and json.loads((start / "state.json").read_text()) == expected_state
    rows = csv_rows(path)
    assert {r["quantity"] for r in rows} == {
        "uses_to_review",
        "never_reviewed",
        "censored_uses",
        "polluted_failed_uses",
        "post_corruption_success_pct",
    }
    assert {(r["variant"], r["seed"], r["test"]) for r in rows} == {
        ("dual_timescale", "3", "rq3_drift"),
        ("no_governance", "3", "rq3_drift"),
    }
    idle = {r["quantity"]: r["value"] for r in rows if r["variant"] == "no_governance"}
    assert idle["never_reviewed"] == "2.0" and idle["uses_to_review"] == "nan"
    assert not (tmp_path / "aecg_rq3_drift-smoke-full-stream").exists()


def test_rq4_measures_the_triage_from_the_corrupted_snapshot(tmp_path):
    raw = compose(
        [
            "experiment=aecg_rq4_triage_smoke",
            "benchmark.params.size=60",
            "mechanism.seeds=[0]",
            "mechanism.corrupt.min_uses=1",
            "mechanism.corrupt.skills=2",
            "protocol.maintain_every=8",
            "memory.params.drift.min_drift=0.0",
            "memory.params.drift.gate_confidence=0.5",
            "~mechanism.variants",
            "+mechanism.variants={exposure_aware:{triage:{order:exposure,budget:1}}}",
        ],
        tmp_path,
    )
    rows = csv_rows(P.run_mechanism(raw))
    assert [r["quantity"] for r in rows] == [
        "exposure_covered_first_two_reviews_pct",
        "failed_task_exposure",
        "reviews",
        "qualified_in_first_two_rounds_min",
        "drift_and_severity_agree_pct",
    ]
    run = next((tmp_path / "aecg_rq4_triage-smoke").glob("*/*/exposure_aware/*/seed=0"))
    corrupted = json.loads((tmp_path / "aecg_rq4_triage-smoke/start/seed=0/corruption.json").read_text())["skills"]
    expected = metrics.triage_measures(read_jsonl(run / "memory" / "audit.jsonl"), corrupted)
    assert {r["quantity"]: float(r["value"]) for r in rows} == pytest.approx(expected, nan_ok=True)
    assert expected["failed_task_exposure"] > 0 and expected["reviews"] > 0


def test_a_warm_up_that_does_not_complete_stops_the_test_in_one_line(tmp_path, monkeypatch):
    import aecg_bench.run

    monkeypatch.setattr(aecg_bench.run, "run_from_config", lambda raw: {"status": "interrupted"})
    with pytest.raises(ConfigError, match=r"^the warm-up run for seed 5 did not complete; rerun to resume it$"):
        P.run_mechanism(composed(tmp_path, "experiment=aecg_rq2_scope_smoke", "mechanism.seeds=[5]"))
    monkeypatch.setattr(aecg_bench.run, "run_from_config", lambda raw: None)
    with pytest.raises(ConfigError, match="the warm-up run for seed 5 did not complete"):
        P.run_mechanism(composed(tmp_path, "experiment=aecg_rq2_scope_smoke", "mechanism.seeds=[5]"))


def test_the_runs_seed_is_used_when_the_test_names_no_seeds(tmp_path, monkeypatch):
    import aecg_bench.run

    seen: list[tuple[str, int, str]] = []

    def fake(raw: dict[str, Any]) -> None:
        seen.append((raw["experiment_name"], raw["seed"], raw["protocol"]["phases"]))

    monkeypatch.setattr(aecg_bench.run, "run_from_config", fake)
    with pytest.raises(ConfigError, match="the warm-up run for seed 4 did not complete"):
        P.run_mechanism(composed(tmp_path, "experiment=aecg_rq2_scope_smoke", "mechanism.seeds=null", "seed=4"))
    assert seen == [("aecg_mechanisms_warmup-smoke", 4, "warmup")]


# -- the command line -----------------------------------------------------------------------------------


def test_the_command_line_runs_a_test_and_names_its_measures(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "experiment=aecg_rq2_scope_smoke",
            "benchmark.params.size=10",
            "mechanism.seeds=[0]",
            f"runtime.results_root={tmp_path}",
            "runtime.progress=false",
            "embedder.backend=lexical",
        ]
    )
    assert code == 0
    assert (
        capsys.readouterr().out.splitlines()[-1] == f"measures: {tmp_path / 'aecg_rq2_scope-smoke' / 'mechanisms.csv'}"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["framework=single"],
            "error: no mechanism test configured: pass experiment=aecg_rq2_scope|aecg_rq3_drift|...",
        ),
        (["experiment=aecg_rq2_scope_smoke", "memory=nope"], "error: unknown memory 'nope'"),
        (["experiment=aecg_rq2_scope_smoke", "mechanism.test=rq9"], "error: mechanism.test 'rq9' is not one of"),
        (["experiment=aecg_rq2_scope_smoke", "protocol.nope=1"], "error: Could not override 'protocol.nope'."),
    ],
)
def test_the_command_line_says_what_is_wrong_in_one_line(tmp_path, capsys, argv, message):
    assert main([*argv, f"runtime.results_root={tmp_path}"]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert line.startswith(message) and "Traceback" not in captured.err


# -- the protocol's bookkeeping with a recording runner (no world: milliseconds per test) -----------------


class Runner:
    """Stands in for `run_from_config`: records each config it is given and writes the run directory a
    run would leave (a snapshot whose agent skills can be corrupted, an audit log, records), so the
    protocol's own logic is tested in isolation; the tests above run the real runner."""

    def __init__(self, status: str = "complete") -> None:
        self.calls: list[dict[str, Any]] = []
        self.status = status

    def __call__(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        self.calls.append(json.loads(json.dumps(raw)))
        p, memory = raw["protocol"], raw["memory"]
        label = memory.get("label") or memory["name"]
        header = {
            "status": self.status,
            "runtime": {"results_root": raw["runtime"]["results_root"]},
            "labels": {
                "experiment": raw["experiment_name"],
                "benchmark": raw["benchmark"]["name"],
                "framework": raw["framework"]["name"],
                "memory": label,
                "model": raw["model"]["label"],
                "seed": raw["seed"],
            },
        }
        if label == "skip" or (label == "skipfull" and p["phases"] == "all"):
            return None
        run_dir = P.results_dir_of(header)
        seed = raw["seed"]
        skills = [skill(f"s{i}.v1", "agent", [f"move {d}", "stop"]) for i, d in enumerate(("left", "right", "up"))]
        skills.append(skill("s9.v1", "team", ["route"]))
        snapshot(run_dir, 1, {"memory": {"store": {"skills": [skills[0]]}}, "framework": {}})  # an older one
        snapshot(run_dir, 30 + seed, {"memory": {"store": {"skills": skills}}, "framework": {"seed": seed}})
        flat = (memory.get("params") or {}).get("scope", {}).get("mode") == "flat"
        events = [
            obs(False, ("s0.v1", 2, 2 if flat else 0, 3.0), ("s1.v1", 1, 0, 1.0)),
            {"event": "review_round", "qualified": [{"skill": "s0.v1", "drift": 0.3, "severity": 1.0}] * 2},
            {"event": "review", "skill": "s0.v1"},
            obs(True, ("s1.v1", 1, 0, 2.0)),
        ]
        (run_dir / "memory" / "audit.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        phases = {"warmup": ["warmup"], "eval": ["eval"], "all": ["warmup", "eval"]}[p["phases"]]
        records = [
            {"position": i, "attempt": 0, "phase": ph, "status": "ok", "success": (i + seed) % 3 != 0}
            for i, ph in enumerate(ph for ph in phases for _ in range(6))
        ]
        records.append({**records[0], "attempt": 1, "success": not records[0]["success"]})  # the last attempt counts
        (run_dir / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        return header


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> Runner:
    import aecg_bench.run

    r = Runner()
    monkeypatch.setattr(aecg_bench.run, "run_from_config", r)
    return r


def test_the_protocol_runs_the_warm_up_then_each_variant_from_the_start_state(tmp_path, runner, capsys):
    raw = composed(tmp_path, "experiment=aecg_rq3_drift_smoke", "mechanism.seeds=[0,2]")
    path = P.run_mechanism(raw)
    out = tmp_path / "aecg_rq3_drift-smoke"
    assert path == out / "mechanisms.csv"
    variants = ["dual_timescale", "cumulative_only", "no_governance"]
    assert [
        (c["experiment_name"], c["seed"], c["protocol"]["phases"], c["memory"].get("label")) for c in runner.calls
    ] == [
        (name, seed, phase, label)
        for seed in (0, 2)
        for name, phase, label in [
            ("aecg_mechanisms_warmup-smoke", "warmup", None),
            *(("aecg_rq3_drift-smoke", "eval", v) for v in variants),
        ]
    ]
    for call in runner.calls:
        assert "mechanism" not in call and call["protocol"]["warmup_fraction"] == 0.6
        assert call["memory"]["params"]["recall"]["k_skills"] == 1  # the base's params, merged into
    warm, *evals = runner.calls[:4]
    assert warm["protocol"].get("start_state") is None and warm["memory"]["name"] == "aecg"
    for call, v in zip(evals, variants, strict=True):
        assert call["protocol"]["start_state"] == str(out / "start" / "seed=0" / "state.json")
        assert call["memory"]["params"]["governance"] is (v != "no_governance")
        assert call["memory"]["params"]["beliefs"]["fast"] is (v != "cumulative_only")
    for seed in (0, 2):
        start = out / "start" / f"seed={seed}"
        state = json.loads((start / "state.json").read_text())
        written = json.loads((start / "corruption.json").read_text())
        assert state["framework"] == {"seed": seed}  # the latest snapshot of that seed's warm-up
        assert written["seed"] == seed and written["corrupt"] == raw["mechanism"]["corrupt"]
        assert {c["skill"] for c in written["skills"]} <= {"s0.v1", "s1.v1", "s2.v1"} and len(written["skills"]) == 2
        by_id = {s["id"]: s for s in state["memory"]["store"]["skills"]}
        for c in written["skills"]:
            assert by_id[c["skill"]]["content"]["procedure"] == c["procedure_after"] != c["procedure_before"]
        warm = P.results_dir_of(runner(runner.calls[0] | {"seed": seed}))
        assert (state, written["skills"]) == corrupt(
            P.latest_state(warm), 2, seed, min_uses=1, min_reliability=0.5, levels=("agent",)
        )
    assert raw["mechanism"]["seeds"] == [0, 2]  # the caller's config is left as it was
    rows = csv_rows(path)
    assert len(rows) == 2 * 3 * 5 and {r["test"] for r in rows} == {"rq3_drift"}
    assert [(r["seed"], r["variant"]) for r in rows[::5]] == [(str(s), v) for s in (0, 2) for v in variants]
    # seed 0's eval records: 4 of 6 succeed, and the retried first one now succeeds: 5 of 6
    first = {r["quantity"]: float(r["value"]) for r in rows[:5]}
    corrupted = {c["skill"] for c in json.loads((out / "start" / "seed=0" / "corruption.json").read_text())["skills"]}
    uses = {"s0.v1": 1, "s1.v1": 2, "s2.v1": 0}  # before s0's review (the only one) / in the whole log
    delays = [uses[c] for c in sorted(corrupted) if c == "s0.v1"]
    censored = [uses[c] for c in sorted(corrupted) if c != "s0.v1"]
    assert first == pytest.approx(
        {
            "uses_to_review": sum(delays) / len(delays) if delays else math.nan,
            "never_reviewed": len(censored),
            "censored_uses": sum(censored) / len(censored),
            "polluted_failed_uses": sum(c in corrupted for c in ("s0.v1", "s1.v1")),
            "post_corruption_success_pct": 500 / 6,
        },
        nan_ok=True,
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "rq3_drift seed=0 dual_timescale: " + ", ".join(
        f"{r['quantity']}={float(r['value']):.2f}" for r in rows[:5]
    )


def test_rq2_full_stream_runs_are_named_apart_and_give_the_success(tmp_path, runner):
    raw = composed(tmp_path, "experiment=aecg_rq2_scope_smoke", "mechanism.seeds=[1]")
    rows = csv_rows(P.run_mechanism(raw))
    full = [c for c in runner.calls if c["experiment_name"] == "aecg_rq2_scope-smoke-full-stream"]
    assert [(c["memory"]["label"], c["protocol"]["phases"], c["seed"]) for c in full] == [
        ("hard_scope", "all", 1),
        ("flat_scope", "all", 1),
    ]
    assert [c["memory"]["params"]["scope"]["mode"] for c in full] == ["hard", "flat"]
    assert all(c["protocol"].get("start_state") is None for c in full)
    assert not (tmp_path / "aecg_rq2_scope-smoke" / "start" / "seed=1" / "corruption.json").exists()
    value = {(r["variant"], r["quantity"]): float(r["value"]) for r in rows}
    # seed 1: 8 of the full run's 12 records succeed and 4 of the eval run's 6; the retried first item's
    # last attempt fails: 7 of 12 and 3 of 6
    assert value["hard_scope", "success"] == pytest.approx(700 / 12) and value["hard_scope", "eval_success_pct"] == 50.0
    assert value["flat_scope", "cross_scope_use_pct"] == 50.0 and value["hard_scope", "cross_scope_use_pct"] == 0.0
    assert value["hard_scope", "exposure"] == 2.0 and value["hard_scope", "selected_uses"] == 4.0


def test_a_variant_or_full_run_that_returns_nothing_is_left_out_and_the_rest_measured(tmp_path, runner):
    raw = composed(tmp_path, "experiment=aecg_rq2_scope_smoke", "mechanism.seeds=[0,1]")
    variants = raw["mechanism"]["variants"]
    raw["mechanism"]["variants"] = {"skip": {}, "skipfull": {}, **variants}
    rows = csv_rows(P.run_mechanism(raw))
    assert [(r["seed"], r["variant"]) for r in rows[::5]] == [
        (s, v) for s in ("0", "1") for v in ("hard_scope", "flat_scope")
    ]
    assert "mechanism" in raw and raw["mechanism"]["variants"]["skip"] == {}  # the caller's config is untouched
    raw = composed(tmp_path, "experiment=aecg_rq4_triage_smoke", "mechanism.seeds=[0]", "mechanism.corrupt.min_uses=1")
    raw["mechanism"]["corrupt"]["skills"] = 3
    rows = csv_rows(P.run_mechanism(raw))
    value = {(r["variant"], r["quantity"]): float(r["value"]) for r in rows}
    assert value["random", "qualified_in_first_two_rounds_min"] == 2.0 and value["random", "reviews"] == 1.0
    assert {r["test"] for r in rows} == {"rq4_triage"} and len(rows) == 3 * 5


def test_rq2_without_full_stream_runs_reports_the_eval_measures_only(tmp_path, runner):
    raw = composed(tmp_path, "experiment=aecg_rq2_scope_smoke", "mechanism.seeds=[0]", "mechanism.full_stream=false")
    rows = csv_rows(P.run_mechanism(raw))
    assert [r["quantity"] for r in rows[:4]] == ["cross_scope_use_pct", "eval_success_pct", "exposure", "selected_uses"]
    assert len(rows) == 8 and not any(c["experiment_name"].endswith("-full-stream") for c in runner.calls)


def test_the_validated_pool_follows_the_configured_bounds(tmp_path, runner):
    raw = composed(tmp_path, "experiment=aecg_rq3_drift_smoke", "mechanism.seeds=[0]", "mechanism.corrupt.min_uses=4")
    with pytest.raises(ConfigError, match=r"has 0 validated skills \(active, used >= 4, slow mean >= 0.5, level in"):
        P.run_mechanism(raw)
    raw = composed(tmp_path, "experiment=aecg_rq3_drift_smoke", "mechanism.seeds=[0]")
    raw["mechanism"]["corrupt"]["min_reliability"] = 0.85
    with pytest.raises(ConfigError, match=r"has 0 validated skills \(active, used >= 1, slow mean >= 0.85, level in"):
        P.run_mechanism(raw)


def test_a_rehearsal_corrupts_as_many_validated_skills_as_there_are_up_to_the_configured_count(tmp_path, runner):
    """A rehearsal's short warm-up validates few skills: it corrupts those it has (at most `corrupt.skills`); a
    real run with too few is refused in one line."""
    raw = composed(tmp_path, "experiment=aecg_rq3_drift_smoke", "mechanism.seeds=[0]")
    raw["mechanism"]["corrupt"]["skills"] = 5
    with pytest.raises(ConfigError, match=r"has 3 validated skills"):
        P.run_mechanism(raw)
    written = tmp_path / "aecg_rq3_drift-smoke" / "start" / "seed=0" / "corruption.json"
    for asked, corrupted in ((5, 3), (2, 2)):
        raw["mechanism"]["corrupt"]["skills"] = asked
        P.run_mechanism({**raw, "rehearsal": True})
        skills = json.loads(written.read_text())["skills"]
        assert len(skills) == corrupted and {c["skill"] for c in skills} <= {"s0.v1", "s1.v1", "s2.v1"}


def test_a_config_without_a_mechanism_test_is_refused(tmp_path, runner):
    raw = composed(tmp_path, "framework=agentnet")
    with pytest.raises(ConfigError, match=r"^mechanism.test None is not one of"):
        P.run_mechanism(raw)
    with pytest.raises(ConfigError, match=r"^mechanism.test None is not one of"):  # no `mechanism` key at all
        P.run_mechanism({k: v for k, v in raw.items() if k != "mechanism"})
    assert runner.calls == []


def test_every_level_is_corrupted_when_the_test_names_none(tmp_path, runner):
    raw = composed(tmp_path, "experiment=aecg_rq3_drift", "mechanism.seeds=[0]", "model=mock_aecg")
    raw["mechanism"]["corrupt"]["skills"] = 4
    P.run_mechanism(raw)
    written = json.loads((tmp_path / "aecg_rq3_drift" / "start" / "seed=0" / "corruption.json").read_text())
    assert {c["level"] for c in written["skills"]} == {"agent", "team"}


def test_the_command_line_prints_where_the_measures_are(tmp_path, capsys, monkeypatch, recwarn):
    import aecg_bench.mechanisms.protocol

    seen = []
    monkeypatch.setattr(
        aecg_bench.mechanisms.protocol, "run_mechanism", lambda raw: seen.append(raw) or tmp_path / "m.csv"
    )
    monkeypatch.setenv("AECG_DATA_ROOT", str(tmp_path / "data"))
    assert main(["experiment=aecg_rq2_scope_smoke", "seed=3"]) == 0
    assert capsys.readouterr().out == f"measures: {tmp_path / 'm.csv'}\n"
    assert seen[0]["mechanism"]["test"] == "rq2_scope" and seen[0]["seed"] == 3
    assert seen[0]["runtime"]["data_root"] == str(tmp_path / "data")  # interpolations resolved
    assert not [w for w in recwarn if "version_base" in str(w.message)]  # Hydra's 1.3 defaults, named


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("protocol.nope=1", "error: Could not override 'protocol.nope'.: Key 'nope' is not in struct"),
        ("~nothing", "error: Could not delete from config. 'nothing' does not exist."),  # an error with no cause
    ],
)
def test_a_hydra_error_is_its_message_and_its_causes_first_lines(tmp_path, capsys, override, line):
    assert main(["experiment=aecg_rq2_scope_smoke", override, f"runtime.results_root={tmp_path}"]) == 2
    assert capsys.readouterr().err == line + "\n"


def test_an_error_without_a_readable_cause_is_its_own_message(tmp_path, capsys, monkeypatch):
    import hydra
    from hydra.errors import ConfigCompositionException

    def compose(**kw: Any) -> None:
        raise ConfigCompositionException("the defaults list is broken") from ValueError("")

    monkeypatch.setattr(hydra, "compose", compose)
    assert main(["experiment=aecg_rq2_scope_smoke"]) == 2
    assert capsys.readouterr().err == "error: the defaults list is broken\n"
