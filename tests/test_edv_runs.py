"""EDV, Judge and Router end to end through the runner: toy_tools with the scripted mock pool
(conf/model/edv_pool_mock.yaml), resume, reruns; FEVER with the embedded-model pool (slow)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import compose

from aecg_bench.run import run_from_config
from aecg_bench.runner.identity import results_dir_of
from aecg_bench.runner.records import RunDir
from baselines.edv.verify import route

# seed 1 draws executor groups {skeptic, idle}, {skeptic, solver}, {idle, skeptic}, {solver, idle}
# for train-0..3: the skeptic approves only the identity item, so its groups send that item to the
# shared bank and the other to the approver's private bank; the last group approves both (shared).
EDV_RUN = (
    "benchmark=toy_tools",
    "memory=edv",
    "model=edv_pool_mock",
    "seed=1",
    "protocol.mode=build_then_freeze",
    "benchmark.params.train_size=4",
    "benchmark.params.size=2",
    "memory.params.ability_from=labels",  # edv_labelled's matrix; the default (the distiller's) is tested below
)


def _rd(final: dict) -> RunDir:
    return RunDir(results_dir_of(final))


def _audit(rd: RunDir) -> list[dict]:
    return [json.loads(line) for line in rd.audit_file.read_text().splitlines()]


def _rollout_models(rd: RunDir) -> list[list[str]]:
    """Per record, the model that served each rollout (from the stored trajectories)."""
    out = []
    for r in rd.records():
        rollouts = rd.read_trajectory(r["position"], r["attempt"])["rollouts"]
        out.append([ro["episode"]["trajectory"]["decisions"][0]["model"] for ro in rollouts])
    return out


def test_edv_builds_then_serves_frozen_memory_on_toy_tools(make_config):
    final = run_from_config(make_config(*EDV_RUN))
    assert final["status"] == "complete" and final["eval"]["success_rate"] == 1.0
    rd = _rd(final)
    records = rd.records()
    assert [r["phase"] for r in records] == ["build"] * 4 + ["eval"] * 2
    for r in records[:4]:
        assert set(r["usage"]["by_role"]) == {"executor", "distiller", "verifier"} and r["n_rollouts"] == 4
    for r in records[4:]:
        assert set(r["usage"]["by_role"]) == {"solver"} and r["n_rollouts"] == 1
    assert set(final["usage"]["by_role"]) == {"executor", "distiller", "verifier", "solver"}

    audit = _audit(rd)
    votes: dict[str, list[dict]] = {}
    for e in audit:
        if e["event"] == "vote":
            assert e["rationale"]
            votes.setdefault(e["memory_id"], []).append(e)
    verdicts = [e for e in audit if e["event"] in ("admit", "discard")]
    for v in verdicts:  # every stored destination follows from that item's recorded votes
        ballots = votes[v["memory_id"]]
        expected = route(
            [b["verifier"] for b in ballots if b["approve"]], [b["verifier"] for b in ballots], "hierarchical"
        )
        assert (v["destination"], tuple(v["owners"])) == expected
    destinations = {(v["destination"], tuple(v["owners"])) for v in verdicts}
    assert destinations == {("shared", ()), ("private", ("mock-idle",)), ("private", ("mock-solver",))}

    # frozen: eval changes nothing; the routed model (best record) recalls the shared items
    assert records[4]["memory_stats"] == records[3]["memory_stats"] == records[5]["memory_stats"]
    shared = [v["memory_id"] for v in verdicts if v["destination"] == "shared"]
    assert all(r["recalled_memory_ids"] == shared[:3] for r in records[4:])  # top_k 3; ties: stored first
    assert _rollout_models(rd)[4:] == [["mock-skeptic"], ["mock-skeptic"]]  # 6/6 beats mock-solver's 4/4
    assert sorted(rd.memory_dir.glob("snapshot-*.json"))


def test_the_distillers_assessment_follows_what_each_candidate_did_so_routing_avoids_the_idle_model(make_config):
    """The scripted pool's distiller reads the candidates (a cut-off rollout failed). A fixed reply
    ("1=success; 2=success; 3=failure; 4=failure") credited whichever model was drawn as executor 1:
    at seed 3 mock-idle was, the Ability Matrix ranked it first and every test task failed."""
    for seed in (0, 3):  # both draw mock-idle as executor 1 of a build task
        final = run_from_config(
            make_config(
                "experiment=edv_table1",
                "arm=edv",
                "model=edv_pool_mock",
                "benchmark=toy_tools",
                "benchmark.params.train_size=2",
                "benchmark.params.size=2",
                f"seed={seed}",
            )
        )
        rd = _rd(final)
        audit = _audit(rd)
        executed = [e for e in audit if e["event"] == "execute"]
        assessed = [e["assessment"] for e in audit if e["event"] == "distill"]
        assert len(assessed) == 2 and len(executed) == 8
        verdicts = [
            a[str(e["candidate"])]
            for a, group in zip(assessed, (executed[:4], executed[4:]), strict=True)
            for e in group
        ]
        assert verdicts == [e["model"] != "mock-idle" for e in executed], seed
        assert "mock-idle" in (executed[0]["model"], executed[4]["model"]), seed
        assert {m for ms in _rollout_models(rd)[2:] for m in ms} <= {"mock-solver", "mock-skeptic"}, seed
        assert final["eval"]["success_rate"] == 1.0, seed


def test_reruns_draw_the_same_models_and_a_resume_replays_exactly(tmp_path):
    runs = [run_from_config(compose([*EDV_RUN, "protocol.snapshot_every=2"], tmp_path / f"r{i}")) for i in (0, 1)]
    a, b = (_rd(f) for f in runs)
    assigns = [[e for e in _audit(rd) if e["event"] == "assign"] for rd in (a, b)]
    assert assigns[0] == assigns[1] and len(assigns[0]) == 4
    assert _rollout_models(a) == _rollout_models(b)

    # a run cut after 3 records (snapshot at 2): the third is replayed, the rest run again
    cut_root = tmp_path / "cut"
    shutil.copytree(tmp_path / "r1", cut_root)
    cut = RunDir(Path(str(b.path).replace(str(tmp_path / "r1"), str(cut_root))))
    lines = cut.samples_file.read_text().splitlines(keepends=True)
    cut.samples_file.write_text("".join(lines[:3]))
    final = run_from_config(compose([*EDV_RUN, "protocol.snapshot_every=2"], cut_root))
    assert final["status"] == "complete" and len(final["resumes"]) == 1
    assert _audit(cut) == _audit(b)
    last = sorted(cut.memory_dir.glob("snapshot-*.json"))[-1].name
    assert json.loads((cut.memory_dir / last).read_text()) == json.loads((b.memory_dir / last).read_text())


def test_more_construction_epochs_revisit_each_task_with_a_new_draw(make_config):
    final = run_from_config(make_config(*EDV_RUN, "protocol.build_epochs=2", "benchmark.params.size=1"))
    audit = _audit(_rd(final))
    assigns = [(e["task"], e["visit"]) for e in audit if e["event"] == "assign"]
    assert assigns == [(f"train-{i}", epoch) for epoch in (0, 1) for i in range(4)]
    assert final["n_items"] == 9


def test_the_online_variant_solves_then_constructs(make_config):
    final = run_from_config(
        make_config("benchmark=toy_tools", "model=edv_pool_mock", "experiment=edv_online", "benchmark.params.size=3")
    )
    records = _rd(final).records()
    assert all(r["phase"] == "eval" and r["learned"] and r["n_rollouts"] == 5 for r in records)
    assert set(records[0]["usage"]["by_role"]) == {"solver", "executor", "distiller", "verifier"}
    assert records[0]["memory_stats"]["constructions"] == 1 and records[-1]["memory_stats"]["constructions"] == 3
    assert final["labels"]["memory"] == "edv_online"


def test_judge_adjudicates_between_the_pools_answers(make_config):
    final = run_from_config(
        make_config("benchmark=toy_tools", "model=edv_pool_mock", "memory=judge", "benchmark.params.size=2")
    )
    rd = _rd(final)
    records = rd.records()
    assert all(r["n_rollouts"] == 2 and set(r["usage"]["by_role"]) == {"solver", "adjudicator"} for r in records)
    decisions = [e for e in _audit(rd) if e["event"] == "adjudicate"]
    pool = ["mock-solver", "mock-idle", "mock-skeptic"]
    assert [d["best"] for d in decisions] == [1, 1]
    assert all(d["attempts"] == [m for m in pool if m != d["judge"]] for d in decisions)  # never its own
    for r, d in zip(records, decisions, strict=True):
        chosen = rd.read_trajectory(r["position"], r["attempt"])["rollouts"][0]["episode"]["trajectory"]
        assert chosen["metadata"]["adjudication"]["judge"] == d["judge"]
        assert chosen["decisions"][0]["model"] == d["attempts"][0]  # attempt 1, as the scripted judge says


def test_router_learns_the_matrix_on_the_build_split_and_routes_each_task(make_config):
    final = run_from_config(
        make_config(
            "benchmark=toy_tools",
            "model=edv_pool_mock",
            "memory=router",
            "protocol.mode=build_then_freeze",
            "benchmark.params.train_size=2",
            "benchmark.params.size=2",
        )
    )
    rd = _rd(final)
    records = rd.records()
    assert [r["n_rollouts"] for r in records] == [4, 4, 1, 1]  # EDV's 2 executors x 2 candidates
    assert set(records[0]["usage"]["by_role"]) == {"executor", "distiller"} and final["labels"]["memory"] == "router"
    probes = [(e["model"], e["success"], e["source"]) for e in _audit(rd) if e["event"] == "probe"]
    assert len(probes) == 8 and {s for _, _, s in probes} == {"distiller"}
    assert all(ok == (model != "mock-idle") for model, ok, _ in probes)  # the distiller read what each did
    assert "mock-idle" not in {m for models in _rollout_models(rd)[2:] for m in models}
    assert final["eval"]["success_rate"] == 1.0


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_edv_runs_fever_with_the_embedded_model_pool(make_config, shared_data):
    """2 learning + 2 evaluation claims (FEVER has one split: warm-up items learn, online)."""
    final = run_from_config(
        make_config(
            "benchmark=fever",
            "benchmark.params.size=4",
            "benchmark.params.download=false",
            "experiment=edv_online",
            "model=edv_pool_local",
            "protocol.warmup_fraction=0.5",
            "memory.params.candidates_per_executor=1",
            "memory.params.distill_max_tokens=160",
            "memory.params.verify_max_tokens=64",
            "memory.params.max_chars_per_candidate=600",
            data_root=shared_data,
        )
    )
    assert final["status"] == "complete" and final["eval"]["n"] == 2
    assert "ONE-MODEL" in final["labels"]["model"]
    records = _rd(final).records()
    assert [r["phase"] for r in records] == ["warmup", "warmup", "eval", "eval"]
    assert all(r["status"] in ("ok", "model_error") for r in records)
    roles = final["usage"]["by_role"]
    assert {"solver", "executor", "distiller"} <= set(roles) and roles["executor"]["output_tokens"] > 0
    audit = _audit(_rd(final))
    assert [e["event"] for e in audit].count("assign") == 4
