"""Paper-preset rehearsals (aecg_bench/rehearsal.py) and the cost model they calibrate
(aecg_bench/analysis/cost_model.py, `reproduce.py --dry-run`), and a run's duration across resumes.

Default tier: rehearsals with the scripted mock models, in process (the paper configs with LIMIT=1,
offline data, every costly code path asserted from the records), the dry run's range against a
larger rehearsal of the same cells, and the printout. Slow tier: the real rehearsal's records, when
a results root holds them (AECG_REHEARSAL_RESULTS), show every path with the embedded model.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, compose

from aecg_bench import rehearsal
from aecg_bench.analysis import cost_model as cm
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.results_format import read_runs
from aecg_bench.run import run_from_config

SHARED = Path(os.environ.get("AECG_DATA_ROOT", REPO.parent / "shared" / "data"))
needs_fever = pytest.mark.skipif(not (SHARED / "fever" / "paper_dev.jsonl").exists(), reason="no shared FEVER data")


def _react_walker(request, spec) -> str:
    """ReAct on FEVER: three searches, a lookup, then an answer (five steps: beyond the smoke's 3);
    any other prompt (the memory side) gets an empty JSON object."""
    text = "\n".join(str(m.get("content") or "") for m in request.messages)
    if "Search[entity]" not in text:
        return "{}"
    seen = len(re.findall(r"(?:Search|Lookup)\[(?!entity\]|keyword\])", text))  # actions taken so far
    return (
        ["Search[Colin Kaepernick]", "Search[49ers]", "Search[Soul Food (film)]", "Lookup[Fox]"][seen]
        if (seen < 4)
        else "Finish[NOT ENOUGH INFO]"
    )  # right on the first two claims: AECG forms memory, then recalls it


register_mock_policy("react_walker", _react_walker)
REACT_MOCK = ["model=mock", "model.models.mock.options.policy=react_walker"]


def _rehearsal_args(experiment: str, data: Path, limit: int = 1) -> list[str]:
    overrides, _ = rehearsal.rehearsal_overrides(experiment, limit=limit, data_dir=data)
    return [f"experiment={experiment}", *[o for o in overrides if not o.startswith("benchmark=")]]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    from test_mind2web import make_data
    from test_mmtb import ENTRY_1, ENTRY_2, write_entries

    return rehearsal.prepare_data(
        tmp_path_factory.mktemp("data"),
        source=SHARED,
        mind2web=make_data,
        mmtb=lambda root: write_entries(root, [ENTRY_1, ENTRY_2])[1],
    )


@pytest.fixture(scope="module")
def mock_rehearsal(data, tmp_path_factory) -> Path:
    """Table 1's FEVER cell with AECG and EDV Table 1's EDV, Judge and Router rows on tau2 RETAIL,
    as the rehearsal configures them (LIMIT=1, maintenance every sample, offline data)."""
    if not (SHARED / "tau2" / "domains" / "retail" / "db.json").exists():  # a clone without ../shared/data
        pytest.skip(f"no shared tau2 data under {SHARED}")
    root = tmp_path_factory.mktemp("rehearsal")
    if (SHARED / "fever" / "paper_dev.jsonl").exists():
        fever = _rehearsal_args("aecg_table1", data)
        run_from_config(compose([*fever, "benchmark=fever_react_offline", "memory=aecg", *REACT_MOCK], root))
    for arm in ("edv", "judge", "router"):
        edv = _rehearsal_args("edv_table1", data)
        run_from_config(compose([*edv, f"arm={arm}", "benchmark=tau2_retail", "model=edv_pool_mock"], root))
    return root


def test_a_rehearsal_changes_only_the_limit_the_maintenance_cadence_and_what_needs_the_network(tmp_path):
    table1, notes = rehearsal.rehearsal_overrides("aecg_table1", limit=1, data_dir=tmp_path)
    assert "benchmark=pddl,fever_react_offline,scienceworld_aecg,mbpp_plus_aecg" in table1
    expected = {
        "protocol.limit=2",
        "protocol.maintain_every=1",
        "rehearsal=true",
        "experiment_name=aecg_table1-rehearsal",
    }
    assert expected <= set(table1)  # AECG recalls an earlier sample: at least 2
    assert [n.split()[0] for n in notes] == ["AECG's", "Memory", "FEVER"]
    edv2, notes2 = rehearsal.rehearsal_overrides("edv_table2", limit=1, data_dir=tmp_path)
    assert "benchmark.params.download=false" in edv2
    assert "benchmark=mind2web_cross_task,mind2web_cross_website,mind2web_cross_domain" in edv2
    assert "protocol.limit=1" in edv2 and notes2[-1].startswith("Mind2Web")
    table2, notes = rehearsal.rehearsal_overrides("aecg_table2", limit=1, data_dir=tmp_path)
    assert "benchmark=scienceworld_aecg,mbpp_plus_aecg" in table2  # nothing of Table 2 needs the network
    assert not any(o.startswith("benchmark.params") for o in table2) and len(notes) == 2


def test_rehearsal_runs_are_marked_and_never_pooled_with_paper_runs(mock_rehearsal):
    from aecg_bench.analysis.load import load
    from aecg_bench.analysis.paper import configurations, is_smoke

    df = load(mock_rehearsal)
    assert set(df["experiment"]) <= {"aecg_table1-rehearsal", "edv_table1-rehearsal"}
    assert set(df["preset_label"]) == {"rehearsal"} and set(df["preset"]) == {"limit=1", "limit=2"}
    assert configurations(df) and all(is_smoke(c) for c in configurations(df))  # never beside the paper
    per_run = df.groupby(["experiment", "memory"])["phase"].agg(lambda p: sorted(p))
    assert per_run[("edv_table1-rehearsal", "edv")] == ["build", "eval"]  # LIMIT bounds the build split too
    assert per_run[("edv_table1-rehearsal", "judge")] == ["eval"]


@needs_fever
def test_fever_store_answers_search_and_lookup_from_the_claims(data):
    from aecg_bench.benchmarks.fever import FeverBenchmark
    from aecg_bench.contracts import EnvContext
    from aecg_bench.types import Action

    bench = FeverBenchmark(
        {"mode": "react", "search": "local", "pages_path": rehearsal.PAGES, "tool_cache": "off", "download": False},
        data_dir=data / "fever",
    )
    sample = next(s for s in bench.samples("test") if "Soul Food" in s.task.instruction)
    env = bench.make_env(sample, EnvContext(llm=None, seed=0))
    env.reset()
    page = env.step(Action(kind="command", text="Search[Soul Food (film)]")).text
    assert "Fox 2000 Pictures released the film Soul Food" in page
    assert "(Result 1 / " in env.step(Action(kind="command", text="Lookup[Fox]")).text
    assert "Similar" in env.step(Action(kind="command", text="Search[Soul Food]")).text


def test_every_costly_paper_path_runs_in_a_mock_rehearsal(mock_rehearsal):
    """The acceptance assertion on the scripted models: what the embedded-model rehearsal must show."""
    paths = rehearsal.code_paths([mock_rehearsal])
    expected = {
        "steps_beyond_3",
        "tau2_user_simulator",
        "edv_construction",
        "judge_adjudication",
        "router_probes",
        "memory_side:edv",
        "memory_side:judge",
        "memory_side:router",
    }
    if (SHARED / "fever" / "paper_dev.jsonl").exists():
        expected |= {"fever_react_actions", "memory_side:aecg"}
    assert expected <= set(paths)
    assert all(paths[p] for p in expected), {p: paths.get(p) for p in expected}


def test_code_paths_fail_when_a_path_did_not_run(mock_rehearsal, tmp_path):
    """The same records with the user simulator's and the distiller's calls removed read as missing."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(mock_rehearsal, copy)
    for samples in copy.rglob("samples.jsonl"):
        rows = [json.loads(line) for line in samples.read_text().splitlines()]
        for r in rows:
            r["usage"]["by_role"].pop("user_simulator", None)
            r["usage"]["by_role"].pop("distiller", None)
            r["steps"] = min(r["steps"], 3)
        samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    paths = rehearsal.code_paths([copy])
    assert not paths["tau2_user_simulator"] and not paths["edv_construction"] and not paths["steps_beyond_3"]


# -- the cost model --------------------------------------------------------------------------------


def _price(role: str) -> tuple[float, float]:
    return (1.0, 4.0) if cm.role_group(role) == "agent" else (0.5, 2.0)


def _toy_runs(root: Path, limit: int, every: int) -> pd.DataFrame:
    for memory in ("no_memory", "aecg"):
        for framework in ("single", "macnet"):
            run_from_config(
                compose(
                    [
                        "experiment_name=toy-rehearsal",
                        "model=mock",
                        "benchmark=toy",
                        f"framework={framework}",
                        f"memory={memory}",
                        f"protocol.limit={limit}",
                        f"protocol.maintain_every={every}",
                        "rehearsal=true",
                    ],
                    root,
                )
            )
    return cm.sample_rows(read_runs(root), _price, cm.Throughput(), "-rehearsal")


def test_the_dry_run_from_a_small_rehearsal_brackets_a_larger_one(tmp_path):
    """Calibrated on 2 samples per cell (maintenance every 2), priced for 6 (every 3): expected within
    a factor of 2 of what the 6-sample rehearsal measured, and low <= measured <= high, per cell."""
    small = _toy_runs(tmp_path / "small", limit=2, every=2)
    large = _toy_runs(tmp_path / "large", limit=6, every=3)
    est = cm.estimate(small, lambda e, b, p: 6, maintain_every=3).set_index(cm.CELL)
    got = cm.measured(large).set_index(cm.CELL)
    assert len(est) == len(got) == 4
    for cell, row in got.iterrows():
        for q in ("calls", "input_tokens", "output_tokens"):
            exp = est.loc[cell, f"expected_{q}"]
            assert row[q] / 2 <= exp <= row[q] * 2, (cell, q, exp, row[q])
            assert est.loc[cell, f"low_{q}"] <= row[q] <= est.loc[cell, f"high_{q}"], (cell, q)
    aecg = est.xs("aecg", level="memory")
    assert (aecg["expected_maintenance_calls"] + aecg["expected_memory_calls"] > 0).all()


def test_the_range_follows_steps_and_maintenance_is_priced_at_the_presets_cadence():
    def row(steps: int, limit: int, agent: float, maintained: bool) -> dict:
        r = {c: "x" for c in cm.CELL} | {"seed": 0, "epoch": 0, "share": str(steps), "maintained": maintained}
        r |= {"framework": "fw", "steps": steps, "step_limit": limit}
        for g in cm.GROUPS:
            for q in cm.QUANTITIES:
                r[f"{g}_{q}"] = 0.0
        r["agent_calls"], r["memory_calls"], r["maintenance_calls"] = agent, 2.0, 10.0 if maintained else 0.0
        return r

    samples = pd.DataFrame([row(4, 12, 8.0, True), row(2, 12, 4.0, False)])
    silent = pd.DataFrame([row(3, 12, 6.0, False) | {"benchmark": "y", "memory_calls": 0.0}])
    both = cm.estimate(pd.concat([samples, silent]), lambda e, b, p: 100, seeds=1, maintain_every=10)
    assert list(both["memory_side"]) == ["measured", "other cells of the method"]  # cell y: none of its own
    frozen = pd.DataFrame([row(3, 12, 6.0, False) | {"phase": "eval", "memory_calls": 0.0}])
    evals = cm.estimate(pd.concat([samples, frozen]), lambda e, b, p: 100, seeds=1).set_index("phase")
    assert evals.loc["eval", "memory_side"] == "none in this phase" and evals.loc["eval", "expected_memory_calls"] == 0
    alone = cm.estimate(frozen, lambda e, b, p: 100, seeds=1).iloc[0]
    assert alone["memory_side"] == "none measured"  # a method never seen calling a model is named
    router = cm.estimate(frozen.assign(phase="build"), lambda e, b, p: 100, seeds=1).iloc[0]
    assert router["memory_side"] == "none in this phase"  # its build calls are its construction (EDV's Router)
    assert both.iloc[1]["expected_memory_calls"] == both.iloc[0]["expected_memory_calls"]  # never $0 for a caller
    fixture = cm.estimate(samples, lambda e, b, p: 100, seeds=1, task_steps={"x": 7.0}).iloc[0]
    assert fixture["expected_agent_calls"] == 100 * (8.0 * 7 / 4 + 4.0 * 7 / 2) / 2 == fixture["high_agent_calls"]
    assert fixture["low_agent_calls"] == fixture["expected_agent_calls"] / 2 and fixture["steps"] == 7.0
    assert fixture["expected_memory_calls"] == 100 * 2.0  # the memory side as measured
    est = cm.estimate(samples, lambda e, b, p: 100, seeds=1).iloc[0]  # the preset's cadence: every 10
    assert est["expected_agent_calls"] == 100 * 6.0
    assert est["high_agent_calls"] == 100 * (8.0 * 3 + 4.0 * 6) / 2  # every sample at its budget of 12
    assert est["low_agent_calls"] == 100 * (8.0 / 2 + 4.0 / 2) / 2  # half the steps: 2 of 4, 1 of 2
    assert est["expected_maintenance_calls"] == 100 * 10.0 / 10  # one round per 10 samples
    assert est["expected_memory_calls"] == 100 * 2.0


def test_cells_a_rehearsal_left_out_are_priced_from_their_row_and_column():
    """Table 1's grid from a partial rehearsal: a left-out cell's agents come from the same benchmark
    and framework, its memory side from the same method's rehearsed cells; both marked unmeasured."""
    grid = rehearsal.paper_grid("aecg_table1")
    assert len(grid) == 4 * 3 * 6 and ("fever", "agentnet", "g_memory", "eval") in grid
    assert {b for b, *_ in grid} == {"pddl", "fever", "scienceworld", "mbpp_plus"}
    assert len(rehearsal.paper_grid("aecg_table2")) == 2 * 8 and rehearsal.paper_grid("aecg_mechanisms_warmup") == []

    def row(framework: str, memory: str, agent: float, mem: float) -> dict:
        r = {"experiment": "aecg_table1", "benchmark": "fever", "framework": framework, "memory": memory}
        r |= {"phase": "eval", "seed": 0, "epoch": 0, "share": framework + memory, "maintained": False}
        r |= {"steps": 4, "step_limit": 12}
        r |= {f"{g}_{q}": 0.0 for g in cm.GROUPS for q in cm.QUANTITIES}
        return r | {"agent_calls": agent, "memory_calls": mem}

    samples = pd.DataFrame([row("agentnet", "aecg", 10.0, 3.0), row("autogen", "no_memory", 20.0, 0.0)])
    est = cm.estimate(samples, lambda e, b, p: 100, seeds=3, grid={"aecg_table1": grid}).set_index(cm.CELL)
    fever = est.xs(("aecg_table1", "fever"), level=("experiment", "benchmark"))
    assert len(fever) == 3 * 6 and fever["measured"].sum() == 2
    left_out = fever.loc[("autogen", "aecg", "eval", 0)]
    assert not left_out["measured"] and left_out["expected_agent_calls"] == 300 * 20.0
    assert left_out["expected_memory_calls"] == 300 * 3.0 and left_out["shared_with"] == ""
    assert left_out["memory_side"] == "other cells of the method"
    assert fever.loc[("macnet", "aecg", "eval", 0), "expected_agent_calls"] == 300 * 15.0  # the benchmark's mean
    assert fever.loc[("macnet", "g_memory", "eval", 0), "memory_side"] == "none measured"


def test_paper_sizes_prices_and_wall_time():
    sizes = {"tau2_retail": (69, 45)}
    assert cm.paper_samples("aecg_table1", "fever", "eval", sizes) == 100
    assert cm.paper_samples("aecg_rq3_drift", "scienceworld", "eval", sizes) == 88 - 53
    assert cm.paper_samples("aecg_mechanisms_warmup", "scienceworld", "warmup", sizes) == 53
    assert [cm.paper_samples("edv_table4", "tau2_retail", p, sizes) for p in ("build", "eval")] == [69, 45]
    with pytest.raises(KeyError, match="--size mmtb=BUILD,EVAL"):
        cm.paper_samples("edv_table3", "mmtb", "eval", sizes)

    models = {"a": {"model": "openai/gpt-4.1-mini"}, "m": {"model": "openai/gpt-4o-mini"}, "x": {"model": "z/unknown"}}
    price, table = cm.role_prices(models, {"agent": "a", "default": "m", "replay": "a", "judge": "x"}, (9.0, 9.5))
    assert price("planner") == price("agent") == price("replay") == (0.40, 1.60)  # framework roles: the agent's
    assert price("abstraction") == (0.15, 0.60) and price("judge") == (9.0, 9.5) and table["x"][2]
    own = {"a": {"model": "z/unknown", "price": {"input": 1.0, "output": 2.0}}}
    assert cm.role_prices(own, {"default": "a"}, (9.0, 9.0))[0]("agent") == (1.0, 2.0)

    est = pd.DataFrame({"expected_seconds": [3600.0, 3600.0], "expected_calls": [600.0, 0.0]})
    est = est.assign(expected_input_tokens=[1e6, 0.0], expected_output_tokens=[0.0, 0.0])
    assert cm.wall_seconds(est, "expected", cm.Limits(jobs=2)) == 3600.0
    assert cm.wall_seconds(est, "expected", cm.Limits(jobs=4, requests_per_minute=6)) == 6000.0
    assert cm.wall_seconds(est, "expected", cm.Limits(jobs=4, tokens_per_minute=1e4)) == 6000.0
    assert cm.Throughput(overhead_s=0.5, prompt_tps=100.0, output_tps=10.0).seconds(2, 300, 50) == 1 + 3 + 5
    assert cm.wall_seconds(pd.DataFrame(), "expected", cm.Limits()) == 0.0
    assert cm.wall_seconds(est, "expected", cm.Limits(jobs=1)) == 7200.0
    est2 = est.assign(expected_output_tokens=[5e5, 0.0])
    assert cm.wall_seconds(est2, "expected", cm.Limits(jobs=4, tokens_per_minute=1e4)) == 9000.0
    assert table["a"][2] is False and table["m"][:2] == (0.15, 0.60)
    assert cm.role_group("executor") == "agent" and cm.role_group("user_simulator") == "user"
    assert cm.role_group("distiller") == "memory"


def test_cells_whose_prompts_reached_the_models_window_are_flagged():
    header = {"models": {"local": {"max_output_tokens": 192, "options": {"n_ctx": 2048}}, "api": {"max_tokens": 9}}}
    assert cm.prompt_window(header) == 2048 - 192
    assert cm.prompt_window({"models": {"api": {"max_tokens": 1024}}}) == float("inf")
    masked = {"models": {"local": {"max_output_tokens": "***", "options": {"n_ctx": 2048}}}}
    assert cm.prompt_window(masked) == 2048
    cell = pd.DataFrame({"agent_input_tokens": [1500.0, 0.0], "agent_calls": [1.0, 0.0], "window": [1856.0] * 2})
    assert cm.at_window(cell) and not cm.at_window(cell.assign(agent_input_tokens=[1400.0, 0.0]))
    assert cm.at_window(cell.assign(agent_input_tokens=[0.8 * 1856, 0.0]))  # at the share exactly
    assert not cm.at_window(cell.assign(agent_input_tokens=[2000.0, 0.0], agent_calls=[2.0, 0.0]))  # per call
    assert not cm.at_window(cell.drop(columns=["window"]))  # no window recorded: nothing cut


def test_a_build_phase_another_run_repeats_is_counted_once():
    """Figure 4's 2-epoch run repeats the 1-epoch run's first epoch call for call (the response
    cache serves it); a run whose configuration differs in anything else is priced in full."""
    header = {"identity": {"config": {"experiment_name": "a", "memory": {"name": "edv", "label": "edv_epochs1"}}}}
    h2 = json.loads(json.dumps(header))
    h2["identity"]["config"]["memory"]["label"] = "edv_epochs2"
    h2["identity"]["config"]["protocol"] = {"build_epochs": 2}
    header["identity"]["config"]["protocol"] = {"build_epochs": 1}
    assert cm.share_key(header, "build", 0, "t1") == cm.share_key(h2, "build", 0, "t1")
    assert cm.share_key(header, "eval", 0, "t1") != cm.share_key(h2, "eval", 0, "t1")
    other = json.loads(json.dumps(header))
    other["identity"]["config"]["memory"]["params"] = {"top_k": 2}
    assert cm.share_key(header, "build", 0, "t1") != cm.share_key(other, "build", 0, "t1")


def test_the_dry_run_prints_every_cell_and_a_range_with_the_memory_side_priced(
    mock_rehearsal, monkeypatch, capsys, tmp_path
):
    """`make reproduce-edv DRY_RUN=1`: priced from the rehearsal's records, never $0 on the memory side."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("reproduce", REPO / "scripts" / "reproduce.py")
    reproduce = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reproduce)
    argv = ["reproduce.py", "edv", "--dry-run", "--results-root", str(mock_rehearsal), "--only", "table1"]
    monkeypatch.setattr(sys, "argv", argv)
    assert reproduce.main() == 0
    out = capsys.readouterr().out
    assert re.search(r"\| experiment +\| benchmark", out) and "tau2_retail" in out
    totals = dict(re.findall(r"Total (low|expected|high): [\d,]+ calls, [\d,]+ tokens .*?\$([\d,.]+)", out))
    low, exp, high = (float(totals[k].replace(",", "")) for k in ("low", "expected", "high"))
    assert 0 < low <= exp <= high
    memory = float(re.search(r"memory side \$([\d,.]+)", out).group(1).replace(",", ""))
    assert memory > 0
    monkeypatch.setattr(sys, "argv", ["reproduce.py", "table2", "--dry-run", "--results-root", str(tmp_path)])
    assert reproduce.main() == 2
    assert "make reproduce-table2 PRESET=paper LIMIT=1" in capsys.readouterr().out


# -- a run's duration ------------------------------------------------------------------------------


def test_a_resumed_runs_duration_leaves_out_the_pause(make_config, monkeypatch):
    """Stopped after one sample, resumed an hour later: active_seconds is the two spans' sum."""
    import aecg_bench.runner.batch as batch

    args = ["benchmark=toy", "benchmark.params.size=3", "memory=no_memory"]
    real_run_item, real_time = batch._run_item, batch.time.time
    calls = {"n": 0}

    def stop_after_one(*a, **kw):
        if calls["n"] == 1:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real_run_item(*a, **kw)

    monkeypatch.setattr(batch, "_run_item", stop_after_one)
    with pytest.raises(KeyboardInterrupt):
        run_from_config(make_config(*args))
    monkeypatch.setattr(batch, "_run_item", real_run_item)
    monkeypatch.setattr(batch.time, "time", lambda: real_time() + 3600.0)
    final = run_from_config(make_config(*args))
    assert final["status"] == "complete" and len(final["sessions"]) == 2
    assert final["finished_at"] - final["started_at"] > 3600
    assert 0 < final["active_seconds"] < 600
    assert final["active_seconds"] == pytest.approx(sum(e - s for s, e in final["sessions"]), abs=0.01)


def test_a_span_cut_by_a_kill_ends_at_its_last_record():
    from aecg_bench.runner.batch import closed_sessions

    records = [{"started_at": 90.0, "seconds": 50.0}, {"started_at": 110.0, "seconds": 5.0}]
    records.append({"started_at": 120.0, "seconds": 7.5})
    assert closed_sessions([[100.0, None]], records) == [[100.0, 127.5]]  # the record of an earlier span is not its
    assert closed_sessions([[100.0, None]], []) == [[100.0, 100.0]]
    assert closed_sessions([[50.0, 60.0], [100.0, None]], records[1:]) == [[50.0, 60.0], [100.0, 127.5]]


# -- the embedded-model rehearsal (slow) -----------------------------------------------------------


@pytest.mark.slow
def test_the_embedded_model_rehearsal_ran_every_costly_path():
    """Reads a finished `make reproduce-{table1,table2,mechanisms,edv} PRESET=paper LIMIT=1` results
    root (AECG_REHEARSAL_RESULTS): every path named in issue 26 ran with the embedded model."""
    root = os.environ.get("AECG_REHEARSAL_RESULTS")
    if not root:
        pytest.skip("set AECG_REHEARSAL_RESULTS to a results root holding the rehearsals")
    folders = sorted(p for p in Path(root).iterdir() if p.name.endswith(rehearsal.SUFFIX))
    paths = rehearsal.code_paths(folders)
    required = ["fever_react_actions", "steps_beyond_3", "tau2_user_simulator", "edv_construction"]
    required += ["judge_adjudication", "router_probes"]
    assert all(paths.get(p) for p in required), paths
    assert all(ok for p, ok in paths.items() if p.startswith("memory_side:")), paths


def test_make_rehearses_the_paper_experiment_with_the_embedded_model_by_default(monkeypatch, capsys, tmp_path):
    """`make reproduce-table1 PRESET=paper LIMIT=1` = reproduce.py table1 --preset paper --limit 1: the paper
    experiment's sweep with the rehearsal's overrides and `model=local`, then its table from the rehearsal
    folder; the Makefile passes LIMIT to every reproduce target."""
    import importlib.util
    import subprocess

    spec = importlib.util.spec_from_file_location("reproduce", REPO / "scripts" / "reproduce.py")
    reproduce = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reproduce)
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd) or subprocess.CompletedProcess(cmd, 0))
    argv = ["reproduce.py", "table1", "--preset", "paper", "--limit", "1", "--results-root", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", argv)
    assert reproduce.main() == 0
    sweep, table = calls
    assert sweep[1:4] == ["-m", "aecg_bench.run", "experiment=aecg_table1"]
    assert {"model=local", "rehearsal=true", "protocol.limit=2", "experiment_name=aecg_table1-rehearsal"} <= set(sweep)
    assert "benchmark=pddl,fever_react_offline,scienceworld_aecg,mbpp_plus_aecg" in sweep
    assert table[1:] == ["scripts/make_table1.py", str(tmp_path / "aecg_table1-rehearsal")]
    out = capsys.readouterr().out
    assert "REHEARSAL of aecg_table1's paper preset" in out and "offline equivalent: FEVER ReAct" in out
    assert (tmp_path / ".rehearsal-data" / "mmtb" / "fixture.blob").exists()
    makefile = (REPO / "Makefile").read_text()
    assert "$(if $(LIMIT),--limit $(LIMIT))" in makefile.split("REPRODUCE_ARGS =")[1].split("\n\n")[0]
    assert "$(if $(LIMIT),--limit $(LIMIT))" in makefile.split("\nreproduce-edv:")[1].split("\n\n")[0]


def _run(experiment: str, memory: str, records: list[dict], *, epochs: int = 1, n_ctx: int | None = 2048) -> object:
    from aecg_bench.results_format import Run

    models = {"m": {"model": "x", "max_output_tokens": 192, "options": {"n_ctx": n_ctx} if n_ctx else {}}}
    config = {"experiment_name": experiment, "memory": {"name": memory, "label": f"{memory}_e{epochs}"}}
    config["protocol"] = {"build_epochs": epochs}
    header = {
        "labels": {"experiment": experiment, "benchmark": "b", "framework": "f", "memory": memory, "seed": 0},
        "identity": {"config": config},
        "models": models,
    }
    return Run(path=Path("."), header=header, records=records)


def _usage(**roles: tuple[int, int, int]) -> dict:
    return {"by_role": {r: {"calls": c, "input_tokens": i, "output_tokens": o} for r, (c, i, o) in roles.items()}}


def test_sample_rows_split_usage_into_groups_price_each_role_and_keep_maintenance_apart():
    rec = {
        "phase": "build",
        "epoch": 1,
        "sample_id": "s1",
        "steps": 5,
        "step_limit": 9,
        "maintain_round": 1,
        "usage": _usage(
            planner=(3, 3000, 30),
            critic=(1, 1000, 10),
            user_simulator=(2, 1000, 20),
            distiller=(3, 3000, 300),
            verifier=(1, 500, 7),
        ),
        "maintain_usage": _usage(distiller=(1, 1000, 100)),
    }
    prices = {"agent": (1.0, 10.0), "user": (2.0, 20.0), "memory": (3.0, 30.0)}
    throughput = cm.Throughput(overhead_s=1.0, prompt_tps=1000.0, output_tps=10.0)
    cut_short = rec | {"status": "infra_error", "sample_id": "s2"}
    rows = cm.sample_rows(
        [_run("edv_t-rehearsal", "edv", [rec, cut_short])], lambda r: prices[cm.role_group(r)], throughput, "-rehearsal"
    )
    (row,) = rows.to_dict("records")
    assert (row["experiment"], row["memory"], row["phase"], row["epoch"], row["maintained"]) == (
        "edv_t",
        "edv",
        "build",
        1,
        True,
    )
    assert (row["steps"], row["step_limit"], row["window"]) == (5, 9, 2048 - 192)
    got = {g: tuple(row[f"{g}_{q}"] for q in ("calls", "input_tokens", "output_tokens")) for g in cm.GROUPS}
    expected_groups = {
        "agent": (4, 4000, 40),
        "user": (2, 1000, 20),
        "memory": (3, 2500, 207),
        "maintenance": (1, 1000, 100),
    }
    assert got == expected_groups
    exact = pytest.approx  # relative 1e-12: a dollar figure off by one part in a million is wrong
    assert row["agent_dollars"] == exact((4000 * 1.0 + 40 * 10.0) / 1e6, rel=1e-12)
    assert row["user_dollars"] == exact((1000 * 2.0 + 20 * 20.0) / 1e6, rel=1e-12)
    assert row["memory_dollars"] == exact((2500 * 3.0 + 207 * 30.0) / 1e6, rel=1e-12)
    assert row["maintenance_dollars"] == exact((1000 * 3.0 + 100 * 30.0) / 1e6, rel=1e-12)
    assert row["agent_seconds"] == exact(4 + 4 + 4) and row["memory_seconds"] == exact(3 + 2.5 + 20.7)
    # the same build epoch and sample of a longer build is the same calls; an eval sample is not
    longer = cm.sample_rows([_run("edv_t", "edv", [rec], epochs=4, n_ctx=None)], lambda r: (0, 0), throughput, "")
    assert longer.iloc[0]["share"] == row["share"] and longer.iloc[0]["window"] == float("inf")
    evals = cm.sample_rows(
        [_run("edv_t", "edv", [rec | {"phase": "eval"}], epochs=4)], lambda r: (0, 0), throughput, ""
    )
    epoch0 = cm.sample_rows([_run("edv_t", "edv", [rec | {"epoch": 0}])], lambda r: (0, 0), throughput, "")
    assert epoch0.iloc[0]["share"] != row["share"]  # another build epoch: other calls
    assert evals.iloc[0]["share"] != row["share"]
    measured = cm.measured(rows).iloc[0]
    assert (measured["calls"], measured["input_tokens"], measured["output_tokens"]) == (10, 8500, 367)


def test_estimate_counts_seeds_epochs_and_prices_a_repeated_stream_once():
    def row(seed: int, epoch: int, share: str, memory: str = "edv", calls: float = 2.0) -> dict:
        r = {"experiment": "e", "benchmark": "b", "framework": "f", "memory": memory, "phase": "build"}
        r |= {"seed": seed, "epoch": epoch, "share": share, "maintained": False, "steps": 2, "step_limit": 4}
        r |= {f"{g}_{q}": 0.0 for g in cm.GROUPS for q in cm.QUANTITIES}
        return r | {"agent_calls": calls, "memory_calls": 1.0, "window": 100.0, "agent_input_tokens": 90.0 * calls}

    first = [row(s, e, f"{e}") for s in (0, 1) for e in (0, 1)]  # 2 seeds x 2 build epochs
    again = [row(0, 0, "0", memory="aaa"), row(0, 1, "x", memory="aaa")]  # repeats epoch 0; sorts first
    est = cm.estimate(pd.DataFrame(first + again), lambda e, b, p: 10).set_index(["memory", "epoch"])
    assert est.loc[("edv", 1), "samples"] == 10 * 2 and est.loc[("edv", 1), "measured_samples"] == 2  # per seed
    assert est.loc[("edv", 0), "expected_calls"] == 20 * 3.0 and est.loc[("edv", 0), "high_agent_calls"] == 20 * 4.0
    assert (est.loc[("edv", 0), "steps"], est.loc[("edv", 0), "step_limit"]) == (2.0, 4.0)
    assert est.loc[("aaa", 0), "shared_with"] == "e/b/f/edv/build/0" and est.loc[("aaa", 0), "expected_calls"] == 0
    assert est.loc[("aaa", 0), "high_dollars"] == 0 and est.loc[("aaa", 1), "expected_calls"] == 10 * 3.0
    assert est.loc[("edv", 0), "shared_with"] == "" and est.loc[("aaa", 1), "shared_with"] == ""  # first run pays
    assert est["at_window"].all() and est.loc[("edv", 0), "memory_side"] == "measured"
    assert cm.estimate(pd.DataFrame(first), lambda e, b, p: 10, seeds=3).iloc[0]["samples"] == 10 * 3
    assert cm.estimate(pd.DataFrame(), lambda e, b, p: 10).empty


def test_sample_rows_keep_an_unsuffixed_experiment_skip_cut_records_and_price_rounds_by_role():
    rec = {
        "phase": "eval",
        "epoch": 0,
        "sample_id": "s1",
        "steps": 3,
        "maintain_round": 1,
        "usage": _usage(replay=(1, 100, 10), distiller=(2, 200, 20)),
        "maintain_usage": _usage(replay=(1, 100, 10)),
    }
    prices = {"replay": (1.0, 2.0), "distiller": (3.0, 4.0)}
    cut = rec | {"status": "infra_error", "sample_id": "s0"}
    runs = [_run("edv_t", "edv", [cut, rec]), _run("edv_t-rehearsal", "edv", [rec | {"sample_id": "s2"}])]
    rows = cm.sample_rows(runs, lambda role: prices[role], cm.Throughput(), "-rehearsal")
    assert list(rows["experiment"]) == ["edv_t", "edv_t"] and list(rows["seed"]) == [0, 0]
    assert rows.iloc[0]["step_limit"] == 3  # a record from before step_limit: the steps it took
    assert rows.iloc[0]["maintenance_dollars"] == pytest.approx((100 * 1.0 + 10 * 2.0) / 1e6, rel=1e-12)
    assert rows.iloc[0]["memory_calls"] == 2 and rows.iloc[0]["maintenance_calls"] == 1
    assert rows.iloc[0]["share"] != rows.iloc[1]["share"]  # another sample: other calls
    plain = cm.sample_rows([_run("edv_t-rehearsal", "edv", [rec])], lambda role: prices[role], cm.Throughput(), "")
    older = {k: v for k, v in rec.items() if k != "maintain_usage"}  # written before rounds were kept apart
    old = cm.sample_rows([_run("edv_t", "edv", [older])], lambda role: prices[role], cm.Throughput(), "").iloc[0]
    assert (old["memory_calls"], old["maintenance_calls"]) == (3, 0)  # replay and distiller, no round apart
    assert list(plain["experiment"]) == ["edv_t-rehearsal"]
    assert cm.prompt_window({"models": {"m": {"max_tokens": 100, "options": {"n_ctx": 2048}}}}) == 1948


def test_per_sample_ranges_at_their_edges():
    def row(steps: int, limit: int, **values: float) -> dict:
        r = {c: "x" for c in cm.CELL} | {"epoch": 0, "seed": 0, "share": str(steps), "maintained": False}
        r |= {"steps": steps, "step_limit": limit} | {f"{g}_{q}": 0.0 for g in cm.GROUPS for q in cm.QUANTITIES}
        return r | values

    # 0 steps counts as 1; more steps than the recorded limit never shrinks the high; 1 step is its own low
    cell = pd.DataFrame(
        [
            row(0, 4, agent_calls=2.0, memory_calls=1.0, memory_input_tokens=100.0),
            row(5, 4, agent_calls=5.0, memory_calls=3.0, memory_input_tokens=300.0),
            row(1, 1, agent_calls=1.0, memory_calls=2.0, memory_input_tokens=200.0),
        ]
    )
    f = cm.per_sample(cell, maintain_every=10)
    assert f["high"]["agent_calls"] == (2.0 * 4 + 5.0 + 1.0) / 3
    assert f["low"]["agent_calls"] == (2.0 + 5.0 * 2.5 / 5 + 1.0) / 3
    assert (f["low"]["memory_calls"], f["expected"]["memory_calls"], f["high"]["memory_calls"]) == (1.0, 2.0, 3.0)
    assert f["low"]["memory_input_tokens"] == 100.0 and f["high"]["memory_input_tokens"] == 400.0  # 100 x 4 steps
    assert f["expected"]["maintenance_calls"] == 0.0  # no round measured


def test_estimate_labels_paper_counts_and_borrowing_at_their_edges():
    def row(memory: str, framework: str = "f", bench: str = "b", phase: str = "eval", **values: float) -> dict:
        r = {"experiment": "e", "benchmark": bench, "framework": framework, "memory": memory, "phase": phase}
        r |= {"epoch": 0, "seed": 0, "share": memory + framework + bench + phase, "maintained": False}
        r |= {"steps": 2, "step_limit": 2} | {f"{g}_{q}": 0.0 for g in cm.GROUPS for q in cm.QUANTITIES}
        return r | {"agent_calls": 1.0} | values

    rows = [
        row("no_memory", memory_calls=1.0),  # an LLM label judge on the memory side of a no-memory row
        row("m", maintenance_calls=1.0) | {"maintained": True},  # calls only in maintenance rounds
        row("m", bench="c", memory_calls=1.0),
        row("m", bench="c", framework="g", memory_calls=3.0),
        row("m", bench="b", phase="build", memory_calls=5.0),  # another phase: not borrowed into eval
        row("m", bench="z", framework="other", agent_calls=9.0),  # another benchmark: not an agent source
    ]
    grid = {"e": [("b", "g", "no_memory", "eval"), ("c", "h", "m", "eval")], "other": [("b", "f", "m", "eval")]}

    def counts(experiment: str, bench: str, phase: str) -> int:
        return {"b": 10, "c": 100, "z": 1}[bench] * (2 if phase == "build" else 1) * (experiment == "e")

    est = cm.estimate(pd.DataFrame(rows), counts, grid=grid).set_index(["benchmark", "framework", "memory", "phase"])
    assert est.loc[("b", "f", "no_memory", "eval"), "memory_side"] == "none (no memory)"
    assert est.loc[("b", "f", "m", "eval"), "memory_side"] == "measured"  # maintenance counts
    assert est.loc[("b", "f", "m", "build"), "samples"] == 20 and est.loc[("c", "f", "m", "eval"), "samples"] == 100
    left = est.loc[("b", "g", "no_memory", "eval")]
    assert left["expected_memory_calls"] == 0  # never borrows a no-memory judge
    assert left["at_window"] is not None and not left["at_window"]  # nothing measured, nothing cut
    assert not est.loc[("b", "f", "m", "eval"), "at_window"]  # rows without a window were not cut
    assert left["expected_agent_calls"] == 10 * 1.0 and (left["steps"], left["step_limit"]) == (2.0, 2.0)
    left = est.loc[("c", "h", "m", "eval")]
    assert left["expected_memory_calls"] == pytest.approx(100 * (0.0 + 1.0 + 3.0) / 3)  # every eval cell of m
    assert left["memory_side"] == "other cells of the method"
    assert left["expected_agent_calls"] == 100 * 1.0  # benchmark c's cells, not z's
    assert ("b", "f", "m", "eval") in est.index and len(est[est["experiment"] == "other"]) == 0  # other: no source

    def built(memory: str, agent: float, mem: float) -> list[dict]:
        return [row(memory, phase="build", agent_calls=agent, memory_calls=mem), row(memory, agent_calls=1.0)]

    labels = {
        m: cm.estimate(pd.DataFrame(built(m, agent, mem)), counts).set_index("phase").loc["eval", "memory_side"]
        for m, agent, mem in (("one_memory_call", 0.0, 1.0), ("one_probe", 1.0, 0.0), ("idle", 0.0, 0.0))
    }
    assert labels == {
        "one_memory_call": "none in this phase",
        "one_probe": "none in this phase",
        "idle": "none measured",
    }
