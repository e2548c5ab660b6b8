"""EDV's reproduction: the experiment grids (conf/experiment/edv_*, conf/arm/), the tables and
figures beside the paper's (aecg_bench/analysis/edv.py, scripts/make_edv_*.py) and the dry run.

Default tier: a five-arm Table 1 sweep with the scripted mock pool (conf/model/edv_pool_mock.yaml)
run in process, and hand-built results where a number must come out exactly. Slow tier: `reproduce.py
edv --preset smoke --pool edv_pool_mock` renders all five tables and three figures, then the dry run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, compose

from aecg_bench.analysis import edv
from aecg_bench.analysis.edv_plan import estimate, parse_sizes, smoke_overrides
from aecg_bench.analysis.load import load
from aecg_bench.run import run_from_config
from aecg_bench.runner.config import parse_run_config
from aecg_bench.runner.identity import results_dir_of
from aecg_bench.runner.records import RunDir


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TINY = ("model=edv_pool_mock", "benchmark=toy_tools", "benchmark.params.size=2", "benchmark.params.train_size=2")
ARMS = ("nm_b1", "nm_b2", "rb_b1", "judge", "router", "edv")
ENV = {**os.environ, "PYTHONPATH": str(REPO)}  # the scripts import this checkout's package


def _cfg(tmp: Path, *overrides: str):
    return parse_run_config(compose(["experiment=edv_table1", *TINY, *overrides], tmp))


@pytest.fixture(scope="module")
def table1_root(tmp_path_factory) -> Path:
    """A one-seed Table 1 sweep on toy_tools with the scripted pool (six arms, ~3 s)."""
    root = tmp_path_factory.mktemp("edv")
    for arm in ARMS:
        run_from_config(compose(["experiment=edv_table1", f"arm={arm}", *TINY], root))
    return root


def test_arms_pin_backbone_protocol_and_labels(tmp_path):
    """Single-backbone rows send every call to pool backbone i under its own label; ensemble rows
    keep the pool; each row runs its paper's protocol; no row learns from the environment, and Router
    and EDV learn from the same source (the distiller's assessment) unless both get labels."""
    pool = {"backbone_1": "mock-solver", "backbone_2": "mock-idle", "backbone_3": "mock-skeptic"}
    for arm, (memory, mode) in {
        "nm_b2": ("no_memory", "online"),
        "rb_b3": ("reasoningbank", "build_then_freeze"),
        "judge": ("judge", "online"),
        "router": ("router", "build_then_freeze"),
        "edv": ("edv", "build_then_freeze"),
        "router_env": ("router", "build_then_freeze"),
        "edv_labelled": ("edv", "build_then_freeze"),
    }.items():
        cfg = _cfg(tmp_path, f"arm={arm}")
        assert (cfg.memory.name, cfg.protocol.mode) == (memory, mode), arm
        labelled = arm in ("router_env", "edv_labelled")
        assert cfg.protocol.label_source == ("environment" if labelled else "none"), arm
        if memory in ("router", "edv"):
            assert cfg.memory.params["ability_from"] == ("labels" if labelled else "distiller"), arm
        assert cfg.model.roles["user_simulator"] == "mock-solver", arm  # one tau2 user for every row
        if arm[-2:-1] == "b":
            label = pool[f"backbone_{arm[-1]}"]
            assert cfg.model.roles["default"] == label and cfg.model.label == label
        else:
            assert cfg.model.label == "edv-pool-mock" and cfg.model.roles["default"] == "mock-solver"


def test_sweep_points_get_their_own_results_folders(tmp_path):
    from aecg_bench.runner.build import memory_label

    labels = {
        memory_label(parse_run_config(compose([f"experiment=edv_{e}", *TINY, *o], tmp_path)))
        for e, o in [
            ("fig4_epochs", ["arm=edv", "protocol.build_epochs=2"]),
            ("fig4_epochs", ["arm=edv", "protocol.build_epochs=3"]),
            ("fig5_topk", ["arm=rb_b3", "memory.params.top_k=0"]),
            ("fig5_topk", ["arm=rb_b3", "memory.params.top_k=2"]),
            ("fig6_threshold", ["arm=edv_tau60"]),
            ("fig6_threshold", ["arm=edv_tau90"]),
        ]
    }
    assert labels == {
        "edv_epochs2",
        "edv_epochs3",
        "reasoningbank_top0_build_then_freeze",
        "reasoningbank_top2_build_then_freeze",
        "edv_tau0.60",
        "edv_tau0.90",
    }
    tau = parse_run_config(compose(["experiment=edv_fig6_threshold", *TINY, "arm=edv_tau70"], tmp_path))
    assert (tau.memory.params["shared_threshold"], tau.memory.params["private_threshold"]) == (0.70, 0.75)


def _build_recalls(final: dict) -> dict[tuple[int, str], list[list[str]]]:
    """Per (epoch, build task): the memory ids each of its rollouts recalled."""
    rd = RunDir(results_dir_of(final))
    out = {}
    for r in rd.records():
        if r["phase"] == "build":
            rollouts = rd.read_trajectory(r["position"], r["attempt"])["rollouts"]
            out[r["epoch"], r["sample_id"]] = [
                sorted({m for d in ro["episode"]["trajectory"]["decisions"] for m in d["recalled_memory_ids"]})
                for ro in rollouts
            ]
    return out


def test_fig4_a_second_epoch_changes_both_methods_build_rollouts(tmp_path):
    """Fig. 4's epochs mean the same for EDV and RB (docs/memory/edv.md): a pass over the build split whose
    rollouts read what earlier tasks and epochs stored. So the first build task, blind in epoch 1, reads
    stored items in every rollout of epoch 2, for both methods."""
    sweep = (REPO / "conf/experiment/edv_fig4_epochs.yaml").read_text()
    assert "arm: edv,rb_b3" in sweep
    for arm, rollouts in (("edv", 4), ("rb_b3", 1)):
        overrides = ["experiment=edv_fig4_epochs", f"arm={arm}", *TINY, "protocol.build_epochs=2"]
        recalls = _build_recalls(run_from_config(compose(overrides, tmp_path / arm)))
        first, second = "train-0", "train-1"
        assert recalls[0, first] == [[]] * rollouts, arm  # nothing stored yet
        assert all(recalls[0, second]), arm  # within an epoch too: the first task's items
        assert len(recalls[1, first]) == rollouts and all(recalls[1, first]), arm
    # the official toy code's reading (executors blind) is a knob, not the default
    overrides = ["experiment=edv_fig4_epochs", "arm=edv", *TINY, "protocol.build_epochs=2"]
    blind = _build_recalls(
        run_from_config(compose([*overrides, "memory.params.execute_with_memory=false"], tmp_path / "blind"))
    )
    assert all(ids == [] for rollouts in blind.values() for ids in rollouts)


def test_fig5_counts_retrieved_memories_in_items_for_both_methods(tmp_path):
    """Fig. 5's RB arm caps ReasoningBank's recall at top_k items (EDV's unit); RB's own top_k
    counts entries of up to 3 items, so at k = 1 the uncapped arm hands the agent 3 items here."""
    sweep = (REPO / "conf/experiment/edv_fig5_topk.yaml").read_text()
    assert "rb_items_b3_top1,rb_items_b3_top2,rb_items_b3_top3" in sweep and "rb_b3_top" not in sweep
    recalled, frames = {}, []
    for arm in ("rb_items_b3", "rb_b3"):
        overrides = ["experiment=edv_fig5_topk", f"arm={arm}", *TINY, "memory.params.top_k=1"]
        cfg = parse_run_config(compose(overrides, tmp_path / arm))
        assert cfg.memory.name == "reasoningbank" and cfg.model.roles["default"] == "mock-skeptic"
        final = run_from_config(compose(overrides, tmp_path / arm))
        df = edv.annotate(load(tmp_path / arm / "edv_fig5_topk"))
        frames.append(df)
        recalled[arm] = [len(ids) for ids in df.loc[df["phase"] == "eval", "recalled_memory_ids"]]
        assert final["status"] == "complete" and set(df["row"]) == {"rb_b3"}
    assert recalled == {"rb_items_b3": [1, 1], "rb_b3": [3, 3]}
    assert edv.recall_units(frames[0]) == "items" and edv.recall_units(frames[1]) == "EDV: items; RB: entries"


def test_fig5s_two_curves_start_from_one_no_memory_point(tmp_path):
    """x = 0 is one run both curves share, No-Memory on RB's backbone (App. A.2: "both methods start
    from the same baseline (0.781)", Table 1's GLM NM); EDV with nothing recalled would still route
    over the pool (the Router), so no EDV run sits at x = 0."""
    sweep = (REPO / "conf/experiment/edv_fig5_topk.yaml").read_text()
    points = "arm: nm_b3,edv_top1,edv_top2,edv_top3,rb_items_b3_top1,rb_items_b3_top2,rb_items_b3_top3"
    assert points in sweep and "memory.params.top_k:" not in sweep
    for arm in ("nm_b3", "edv_top1", "rb_items_b3_top2"):
        final = run_from_config(compose(["experiment=edv_fig5_topk", f"arm={arm}", *TINY], tmp_path))
        assert final["status"] == "complete", arm
    df = edv.annotate(load(tmp_path / "edv_fig5_topk"))
    assert set(df.loc[df["row"] == "nm_b3", "model"]) == {"mock-skeptic"}  # RB's backbone, as rb_items_b3's
    assert set(df["memory"]) == {"no_memory_top0", "edv_top1", "reasoningbank_top2_build_then_freeze"}
    data = edv.curve(df, "top_k", n_boot=50)
    assert sorted(zip(data["method"], data["top_k"], strict=True)) == [("edv", 0), ("edv", 1), ("rb", 0), ("rb", 2)]
    zero = data[data["top_k"] == 0].set_index("method")
    assert zero.loc["edv"].to_dict() == zero.loc["rb"].to_dict()  # the same point
    nm = df[df["row"] == "nm_b3"]
    assert zero.loc["edv", "mean"] == pytest.approx(100 * nm["success"].mean())
    assert edv.recall_units(df) == "items"


def test_an_arm_on_a_model_config_without_backbones_fails_in_one_line(tmp_path):
    cfg = parse_run_config(compose(["arm=nm_b1"], tmp_path))
    with pytest.raises(Exception, match="no-backbone_1-role"):
        cfg.model.specs()


def test_table1_rows_tests_and_paper_side_by_side(table1_root):
    df = edv.annotate(load(table1_root / "edv_table1"))
    assert set(df["row"]) == set(ARMS)
    assert set(df.loc[df["row"] == "nm_b2", "model"]) == {"mock-idle"}
    table = edv.main_table(df, edv.reference("table1"), n_boot=200)
    # mock-idle never acts: NM on backbone 2 fails every task; the oracle backbone 1 solves them
    assert table.ours.loc["NM (backbone 2)", "toy_tools"].startswith("0.00")
    assert table.ours.loc["NM (backbone 1)", "toy_tools"].startswith("100.00")
    assert table.ours.loc["RB (backbone 3)", "toy_tools"] == "–"  # not run: shown, not dropped
    assert table.paper.loc["EDV (Ensemble)", "tau2_retail"] == 88.6
    assert list(table.paper.columns) == ["tau2_airline", "tau2_retail", "tau2_telecom", "avg"]
    test = table.tests.iloc[0]
    summary = edv.cells(df, ["benchmark", "row"], n_boot=50).set_index("row")["mean"]
    baselines = summary.drop("edv")
    assert summary[test["strongest_baseline"]] == baselines.max()
    assert test["mean_diff"] == pytest.approx(summary["edv"] - baselines.max())
    assert test["n"] == 2


def test_make_edv_tables_writes_every_present_table(table1_root, tmp_path):
    root = tmp_path / "results"
    for name in ("table1", "table2", "table3", "table5", "contamination"):
        shutil.copytree(table1_root / "edv_table1", root / f"edv_{name}")
    shutil.copytree(
        table1_root / "edv_table1" / "toy_tools" / "single" / "edv", root / "edv_table4/toy_tools/single/edv"
    )
    tables = root / "edv_tables"
    written = _script("make_edv_tables").render(root, "", tables, n_boot=50)
    assert len(written) == 6
    for name in ("table1", "table2", "table3", "table4", "table5", "contamination"):
        text = (tables / f"{name}.md").read_text()
        assert "## The paper" in text and "## Paired tests" in text, name
    assert "88.6" in (tables / "table4.md").read_text()
    assert "Inference tokens vs RB" in (tables / "table1.md").read_text()
    assert "Retrieval per bank" in (tables / "table5.md").read_text()


def test_audit_sheet_is_blind_and_keyed(table1_root, tmp_path):
    df = edv.annotate(load(table1_root / "edv_table1"))
    items = edv.audit_items(df)
    assert set(items["row"]) <= {"edv", "rb_b1"} and len(items) > 0
    sheet, key = edv.audit_sheets(items, seed=1)
    assert list(sheet.columns) == ["item_key", "title", "description", "content", *edv.AUDIT_DIMENSIONS, "notes"]
    assert not ({"row", "run_dir", "where"} & set(sheet.columns))
    assert set(sheet["item_key"]) == set(key["item_key"])
    joined = sheet.merge(key, on="item_key")
    assert sorted(joined["memory_id"]) == sorted(items["memory_id"])
    # rate every EDV item 5 and every RB item 1: the scores come back per method beside the paper's
    joined["groundedness_correctness"] = [1 if r.startswith("rb") else 5 for r in joined["row"]]
    scores = edv.audit_scores(joined[sheet.columns], key)
    g = scores[scores["quantity"] == "groundedness_correctness"].set_index("method")
    assert g.loc["edv", "paper"] == 4.41
    if "rb" in set(joined["row"].str[:2]):
        assert g.loc["rb", "mean"] == 1
    assert g.loc["edv", "mean"] == 5


def _run(tmp: Path, name: str, state: dict, records: list[dict], method: str = "edv", row: str = "edv") -> list[dict]:
    run_dir = tmp / name
    (run_dir / "memory").mkdir(parents=True)
    (run_dir / "memory" / "snapshot-000003.json").write_text(json.dumps({"state": {"memory": state}}))
    return [
        {"benchmark": "b", "row": row, "seed": 0, "run_dir": str(run_dir), "method": method, "phase": "eval", **r}
        for r in records
    ]


def test_bank_retrieval_rate_gain_and_contribution(tmp_path):
    state = {"items": [{"id": "edv-0", "bank": "shared"}, {"id": "edv-1", "bank": "private"}]}
    recs = [
        {"recalled_memory_ids": ["edv-0"], "success": True},
        {"recalled_memory_ids": ["edv-0", "edv-1"], "success": True},
        {"recalled_memory_ids": ["edv-0"], "success": False},
        {"recalled_memory_ids": [], "success": False},
    ]
    out = edv.bank_retrieval(pd.DataFrame(_run(tmp_path, "r", state, recs))).set_index("bank")
    # shared: 3/4 of tasks, success 2/3 with vs 0/1 without
    assert out.loc["shared", "retrieval_rate_pct"] == 75
    assert out.loc["shared", "gain_per_hit_pct"] == pytest.approx(100 * 2 / 3)
    assert out.loc["shared", "contribution_pct"] == pytest.approx(75 * 2 / 3)
    # private: 1/4 of tasks, success 1/1 with vs 1/3 without
    assert out.loc["private", "retrieval_rate_pct"] == 25
    assert out.loc["private", "gain_per_hit_pct"] == pytest.approx(100 * 2 / 3)


def test_contamination_recall_share_counts_items_of_injected_entries(tmp_path):
    state = {
        "entries": [
            {"id": "rb-0", "origin": "induced", "items": [{}, {}, {}]},
            {"id": "rb-1", "origin": "contamination", "items": [{}]},
            {"id": "rb-2", "origin": "induced", "items": [{}]},
        ]
    }
    recs = [{"recalled_memory_ids": ["rb-1-0"]}, {"recalled_memory_ids": ["rb-0-0", "rb-0-1", "rb-2-0"]}]
    out = edv.contamination_recall(
        pd.DataFrame(_run(tmp_path, "c", state, recs, method="reasoningbank_contaminated"))
    ).iloc[0]
    assert out["injected_stored_pct"] == 20 and out["injected_recalled_pct"] == 25


def test_inference_tokens_leave_out_the_user_simulator():
    rows = [
        {
            "benchmark": "b",
            "row": "edv",
            "phase": "eval",
            "input_tokens": 700,
            "output_tokens": 100,
            "tokens_user_simulator": 50,
        },
        {
            "benchmark": "b",
            "row": "rb_b1",
            "phase": "eval",
            "input_tokens": 900,
            "output_tokens": 100,
            "tokens_user_simulator": 0,
        },
        {
            "benchmark": "b",
            "row": "rb_b2",
            "phase": "eval",
            "input_tokens": 1400,
            "output_tokens": 100,
            "tokens_user_simulator": 500,
        },
        {
            "benchmark": "b",
            "row": "rb_b1",
            "phase": "build",
            "input_tokens": 9999,
            "output_tokens": 0,
            "tokens_user_simulator": 0,
        },
    ]
    out = edv.inference_tokens(pd.DataFrame(rows)).set_index("vs")
    assert out.loc["rb_b1", "edv_tokens_per_task"] == 750
    assert out.loc["rb_b2", "rb_tokens_per_task"] == 1000
    assert out.loc["rb_mean", "reduction_pct"] == 25.0


def _smoke_run(root: Path) -> None:
    """One Table 4 smoke run: a build task of 10 calls (1,100 tokens), a test task of 2 (210)."""
    run = root / "edv_table4-smoke/toy_tools/single/edv/pool/seed=0"
    run.mkdir(parents=True)
    header = {
        "labels": {
            "experiment": "edv_table4-smoke",
            "benchmark": "toy_tools",
            "framework": "single",
            "memory": "edv",
            "model": "pool",
            "seed": 0,
        },
        "n_eval": 1,
        "status": "complete",
    }
    (run / "run.json").write_text(json.dumps(header))

    def rec(pos: int, phase: str, calls: int, tin: int, tout: int) -> str:
        usage = {"total": {"input_tokens": tin, "output_tokens": tout, "calls": calls, "cost": 0.0}, "by_role": {}}
        r = {
            "position": pos,
            "attempt": 1,
            "sample_id": str(pos),
            "phase": phase,
            "epoch": 0,
            "status": "ok",
            "success": True,
            "value": 1.0,
            "steps": 1,
            "invalid_actions": 0,
            "decisions": 1,
            "usage": usage,
        }
        return json.dumps(r)

    (run / "samples.jsonl").write_text("\n".join([rec(0, "build", 10, 1000, 100), rec(1, "eval", 2, 200, 10)]) + "\n")


def test_dry_run_scales_build_and_test_tasks_separately(tmp_path):
    root = tmp_path / "r"
    _smoke_run(root)
    est = estimate(root, ["table4"], price=(1.0, 2.0), sizes=parse_sizes(["tau2_retail=5,7"])).iloc[0]
    assert est["benchmark"] == "tau2_retail" and est["tasks"] == 3 * (5 + 7)
    assert est["calls"] == 3 * (5 * 10 + 7 * 2)
    assert est["tokens"] == 3 * (5 * 1100 + 7 * 210)
    assert est["dollars"] == pytest.approx(3 * (5 * (1000 + 200) + 7 * (200 + 20)) / 1e6)
    with pytest.raises(ValueError, match="bad --size 'mmtb=x'"):
        parse_sizes(["mmtb=x"])


def test_dry_run_prints_calls_tokens_and_dollars_of_the_paper_preset(tmp_path, monkeypatch, capsys):
    """`make reproduce-edv DRY_RUN=1` = `reproduce.py edv --dry-run`: scaled from the smoke runs."""
    _smoke_run(tmp_path / "r")
    argv = ["reproduce.py", "edv", "--dry-run", "--results-root", str(tmp_path / "r"), "--price", "1,2"]
    monkeypatch.setattr(sys, "argv", [*argv, "--only", "table4", "--size", "tau2_retail=5,7"])
    assert _script("reproduce").main() == 0
    out = capsys.readouterr().out
    assert re.search(r"\|\s+calls\s+\|\s+tokens\s+\|\s+dollars\s+\|", out) and "tau2_retail" in out
    assert "Total: 192 calls, 20,910 tokens, $0.02" in out  # 3 seeds x (5 x 10 + 7 x 2) calls
    rule = (REPO / "Makefile").read_text().split("\nreproduce-edv:")[1].split("\n\n")[0]
    assert "scripts/reproduce.py edv" in rule and "$(if $(DRY_RUN),--dry-run)" in rule


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_reproduce_edv_smoke_with_the_mock_pool_renders_everything_and_prices_the_paper(tmp_path):
    """The acceptance path: every EDV sweep at smoke size with the scripted pool, all five tables,
    sec. 5.4 and the three figures; then DRY_RUN prices the paper preset from those runs."""
    root = tmp_path / "results"
    cmd = [
        sys.executable,
        "scripts/reproduce.py",
        "edv",
        "--preset",
        "smoke",
        "--pool",
        "edv_pool_mock",
        "--results-root",
        str(root),
        "--jobs",
        "1",
    ]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1700, env=ENV)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    tables = root / "edv_tables-smoke"
    for name in ("table1", "table2", "table3", "table4", "table5", "contamination"):
        assert (tables / f"{name}.md").exists(), name
    for name in ("fig4_epochs", "fig5_topk", "fig6_threshold"):
        assert (tables / f"{name}.png").stat().st_size > 0 and (tables / f"{name}.csv").exists()
    # Figure 4: the smoke's epochs (edv_plan), each for both methods; a second epoch's build rollouts
    # read what the first stored, for EDV as for RB (the epoch the docs define)
    smoke_epochs = next(o for o in smoke_overrides("fig4_epochs") if o.startswith("protocol.build_epochs="))
    epochs = [int(e) for e in smoke_epochs.split("=")[1].split(",")]
    fig4 = pd.read_csv(tables / "fig4_epochs.csv")
    assert sorted(zip(fig4["method"], fig4["build_epochs"], strict=True)) == [
        (m, e) for m in ("edv", "rb") for e in epochs
    ]
    runs = edv.annotate(load(root / "edv_fig4_epochs-smoke"))
    second = runs[(runs["phase"] == "build") & (runs["epoch"] == 1)]
    assert set(second["method"]) == {"edv", "reasoningbank"} and all(second["recalled_memory_ids"].map(len))
    # Figure 5: both curves start from the one No-Memory point at x = 0
    fig5 = pd.read_csv(tables / "fig5_topk.csv")
    zero = fig5[fig5["top_k"] == 0].set_index("method")
    assert sorted(zero.index) == ["edv", "rb"] and zero.loc["edv"].equals(zero.loc["rb"])
    assert sorted(fig5["top_k"].unique()) == [0, 1, 2, 3]
    # every EDV test task goes to a model that acts (never mock-idle), and every memory row builds memory
    table1 = edv.annotate(load(root / "edv_table1-smoke"))
    assert table1.loc[(table1["row"] == "edv") & (table1["phase"] == "eval"), "success"].all()
    assert {"edv", "rb_b1", "rb_b2", "rb_b3"} <= set(edv.audit_items(table1)["row"])
    assert edv.recall_units(edv.annotate(load(root / "edv_fig5_topk-smoke"))) == "items"
    dry = subprocess.run(
        [*cmd[:3], "--dry-run", "--results-root", str(root)], cwd=REPO, capture_output=True, text=True, env=ENV
    )
    assert dry.returncode == 0 and re.search(r"\|\s+calls\s+\|\s+tokens\s+\|\s+dollars\s+\|", dry.stdout)
    total = re.search(r"Total: ([\d,]+) calls, ([\d,]+) tokens, \$([\d,.]+)", dry.stdout)
    assert total and all(float(v.replace(",", "")) > 0 for v in total.groups())
    assert {"tau2_retail", "mind2web_cross_domain"} <= set(re.findall(r"\| (\w+) +\|", dry.stdout))
    assert set(pd.read_csv(tables / "table1_vs_paper.csv")["row"]) == set(edv.MAIN_ROWS)


def test_mmtb_table_uses_mmtbs_own_rates_per_seed():
    """Table 3 from per-mission metrics: rates over each mission type, then mean over seeds."""
    kinds = ("single", "multi", "chat", "clarify", "parallel", "serial", "serial_parallel")

    def mission(seed: int, kind: str, ok: bool) -> dict:
        flags = {f"metric_is_{k}": float(k == kind) for k in kinds}
        return {
            "benchmark": "mmtb",
            "row": "edv",
            "seed": seed,
            "phase": "eval",
            "success": ok,
            "status": "ok",
            "sample_id": f"{kind}-{seed}",
            "metric_success": float(ok),
            "metric_optimal": 0.0,
            "metric_progress_steps": 0.0,
            "metric_progress_total": 0.0,
            **flags,
        }

    rows = [
        mission(0, "single", True),
        mission(0, "clarify", False),
        mission(1, "single", True),
        mission(1, "clarify", True),
    ]
    table = edv.mmtb_table(pd.DataFrame(rows), edv.reference("table3"))
    ours = table.ours.loc["EDV (Ensemble)"]
    assert ours["All"].startswith("75.00") and ours["A_sgl"].startswith("100.00")
    assert ours["A_clr"] == "50.00 ± 70.71" and ours["A_cht"] == "–"
    assert table.paper.loc["EDV (Ensemble)", "All"] == 58.10


def test_table_cells_carry_a_ci_over_seeds_and_edv_is_paired_against_the_strongest_baseline():
    """Three seeds x 10 tasks: EDV fails task 0, RB (the strongest baseline) tasks 0-2, NM half."""
    fails = {"edv": {0}, "rb_b1": {0, 1, 2}, "nm_b1": set(range(5))}
    rows = [
        {"benchmark": "b", "row": row, "seed": seed, "phase": "eval", "status": "ok", "sample_id": f"t{i}"}
        | {"success": i not in failed}
        for row, failed in fails.items()
        for seed in range(3)
        for i in range(10)
    ]
    table = edv.main_table(pd.DataFrame(rows), edv.reference("table1"), n_boot=400)
    cell = table.ours.loc["EDV (Ensemble)", "b"]
    mean, rest = cell.split(" ± ")
    low, high = (float(v) for v in rest.split("[")[1].rstrip("]").split(", "))
    assert mean == "90.00" and rest.startswith("0.00 [") and low < 90 < high
    test = table.tests.set_index("benchmark").loc["b"]
    assert test["strongest_baseline"] == "rb_b1" and test["n"] == 30
    assert test["mean_diff"] == pytest.approx(20.0) and test["ci_low"] > 0 and test["p_value"] < 0.05


def test_the_audit_export_is_a_csv_with_a_rating_column_per_dimension(table1_root, tmp_path, monkeypatch, capsys):
    """Sec. 5.3: `make_edv_tables.py --audit` writes the blind sheet and its key; a filled sheet
    scores per method beside the paper's."""
    tables = _script("make_edv_tables")
    out = tmp_path / "audit"
    monkeypatch.setattr(sys, "argv", ["make_edv_tables.py", str(table1_root), "--audit", "--out", str(out)])
    assert tables.main() == 0
    sheet, key = pd.read_csv(out / "audit_sheet.csv"), pd.read_csv(out / "audit_key.csv")
    assert {*edv.AUDIT_DIMENSIONS, "notes"} <= set(sheet.columns)
    assert sheet[list(edv.AUDIT_DIMENSIONS)].isna().all().all()  # empty 0-5 rating columns
    assert len(sheet) == len(key) > 0 and {"edv", "rb_b1"} <= set(key["row"])
    sheet["actionability"] = 4
    sheet.to_csv(out / "filled.csv", index=False)
    argv = ["make_edv_tables.py", "--score-audit", str(out / "filled.csv"), str(out / "audit_key.csv")]
    monkeypatch.setattr(sys, "argv", argv)
    capsys.readouterr()
    assert tables.main() == 0
    assert "actionability" in capsys.readouterr().out
