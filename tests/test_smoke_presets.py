"""The smoke-preset script reads what runs recorded, and every smoke preset stays offline and small.

No timing is asserted: the figures are the script's output, checked here only for what they count.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
import yaml
from conftest import REPO

from aecg_bench.run import run_from_config

SCRIPT = REPO / "scripts" / "perf" / "smoke_presets.py"


def load_script():
    spec = importlib.util.spec_from_file_location("smoke_presets", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["smoke_presets"] = module  # dataclasses resolve annotations through it
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_collect_counts_samples_calls_tokens_and_maintenance(make_config, tmp_path):
    script = load_script()
    raw = make_config(
        "experiment_name=speedcheck",
        "benchmark=toy",
        "benchmark.params.size=3",
        "memory=recorder",
        "protocol.maintain_every=1",
    )
    final = run_from_config(raw)
    st = script.collect([tmp_path / "results" / "speedcheck"])
    assert st.runs == 1 and st.complete == 1 and st.samples == 3
    assert st.calls == final["usage"]["total"]["calls"] > 0
    assert st.input_tokens == final["usage"]["total"]["input_tokens"] > 0
    assert st.maintained_runs == 1 and "actor" in st.roles  # the single agent's decision role
    assert st.span_s is not None and st.span_s >= 0
    text = "\n".join(script.report(script.EXPERIMENTS[0], ["x"], st, None))
    assert "3 samples" in text and "maintenance in 1/1 runs" in text
    assert script.collect([tmp_path / "missing"]).runs == 0


def test_collect_reads_audit_events_per_memory_and_survives_a_torn_line(tmp_path):
    script = load_script()
    run = tmp_path / "exp" / "a" / "run"
    (run / "memory").mkdir(parents=True)
    (run / "run.json").write_text('{"status": "running", "started_at": 100.0, "labels": {"memory": "aecg"}}')
    (run / "samples.jsonl").write_text(
        '{"started_at": 101.0, "seconds": 9.0, "maintain_round": null, "usage": {"total": {"calls": 2}}}\n{"torn'
    )
    (run / "memory" / "audit.jsonl").write_text('{"event": "review_round"}\n{"event": "observe"}\n')
    st = script.collect([tmp_path / "exp"])
    assert st.samples == 1 and st.calls == 2 and st.maintained_runs == 0
    assert st.span_s == pytest.approx(10.0)
    assert st.events["aecg"] == {"review_round": 1, "observe": 1}


def test_verdict_against_the_target():
    script = load_script()
    assert script.verdict(599.0, 10) == "OK"
    assert script.verdict(601.0, 10) == "OVER TARGET"
    assert script.verdict(None, 10) == "no runs"
    assert script.verdict(0.5, 10, runs=0) == "no runs"  # a sweep that failed at once is not within target


def test_discovery_finds_this_branchs_smoke_configs_and_names_their_results(tmp_path):
    script = load_script()
    found = dict((e.name, c) for e, c in script.discover())
    assert found["table1"] == ["aecg_table1_smoke"] and found["table2"] == ["aecg_table2_smoke"]
    assert script.result_names("aecg_table1_smoke") == ["aecg_table1-smoke"]
    (tmp_path / "aecg_rq2_scope_smoke.yaml").write_text(
        "experiment_name: rq2-smoke\nmechanism: {warmup_name: warm-smoke}\n"
    )
    (tmp_path / "aecg_rq2_scope.yaml").write_text("experiment_name: rq2\n")  # not a smoke config
    (tmp_path / "edv_table1.yaml").write_text("experiment_name: edv_table1\n")
    (tmp_path / "edv_online.yaml").write_text("experiment_name: edv_online\n")  # not in EDV's plan
    found = dict((e.name, c) for e, c in script.discover(tmp_path))
    assert found["mechanisms"] == ["aecg_rq2_scope_smoke"] and found["table1"] == []
    assert found["edv"] == ["edv_table1"]
    assert script.result_names("aecg_rq2_scope_smoke", tmp_path) == ["rq2-smoke", "warm-smoke"]
    # EDV runs what `make reproduce-edv` runs: the plan's smoke overrides, and writes where they say
    edv = next(e for e in script.EXPERIMENTS if e.name == "edv")
    args = script.smoke_args(edv, "edv_table1")
    assert {"preset=edv_smoke", "benchmark=toy_tools", "seed=0"} <= set(args)
    assert script.result_names("edv_table1", tmp_path, args) == ["edv_table1-smoke"]
    assert "protocol.build_epochs=1,2" in script.smoke_args(edv, "edv_fig4_epochs")  # not the paper's 1-4
    found = dict((e.name, c) for e, c in script.discover())
    assert {"edv_table1", "edv_table5", "edv_contamination", "edv_fig4_epochs"} <= set(found["edv"])


def _smoke_configs() -> list[str]:
    """Experiment configs built on the embedded-model smoke preset (conf/preset/smoke.yaml)."""
    out = []
    for path in sorted((REPO / "conf" / "experiment").glob("*.yaml")):
        defaults = (yaml.safe_load(path.read_text()) or {}).get("defaults") or []
        if "/preset/smoke" in defaults:
            out.append(path.stem)
    return out


def test_the_paper_tables_have_embedded_model_smoke_configs():
    assert {"aecg_table1_smoke", "aecg_table2_smoke"} <= set(_smoke_configs())


@pytest.mark.parametrize("config", _smoke_configs())
def test_every_smoke_preset_is_offline_small_and_reaches_every_path(make_config, config):
    """A smoke preset runs with no key and no network, on a bounded grid: the embedded model, a
    sample limit, a step cap and memory maintenance within the samples it runs; two samples so the
    second recalls the first's memories; enough steps for each part of a split AgentNet task."""
    raw = make_config(f"experiment={config}")
    labels = {spec["model"].split("/")[0] for spec in raw["model"]["models"].values()}
    assert labels == {"aecg-local"}, labels
    proto = raw["protocol"]
    assert proto["limit"] is not None and 2 <= proto["limit"] <= 4
    agentnet = yaml.safe_load((REPO / "conf" / "framework" / "agentnet.yaml").read_text())["params"]
    assert agentnet["split"] and proto["max_steps"] is not None and 3 <= proto["max_steps"] <= 8
    assert proto["maintain_every"] <= proto["limit"]  # at least one maintenance round per run
    for spec in raw["model"]["models"].values():  # the caps that make a grid take minutes (docs/infra/speed.md)
        assert spec.get("max_output_tokens") and spec["max_output_tokens"] <= 96
        assert spec["options"]["n_ctx"] <= 1024
    text = yaml.safe_load((REPO / "conf" / "experiment" / f"{config}.yaml").read_text())
    assert "smoke" in str(text.get("experiment_name", ""))  # never mixes with the paper preset's results


def test_sweeps_read_the_shared_data_as_make_does(tmp_path, monkeypatch):
    """Run directly (not through make), the script still points the runs at ../shared/data, so they stay offline."""
    script = load_script()
    monkeypatch.delenv("AECG_DATA_ROOT", raising=False)
    assert script.data_root_env(tmp_path) == {"AECG_DATA_ROOT": str(tmp_path.resolve())}
    assert script.data_root_env(tmp_path / "missing") == {}
    monkeypatch.setenv("AECG_DATA_ROOT", "/elsewhere")
    assert script.data_root_env(tmp_path) == {}  # the user's setting wins


def test_each_experiment_is_timed_on_its_own_fresh_cache(monkeypatch, capsys):
    """Without --results-root each experiment gets its own root: Table 2 is not timed on Table 1's response cache."""
    script = load_script()
    roots: list = []
    monkeypatch.setattr(script, "run_sweep", lambda exp, config, root, jobs, extra: roots.append(root) or 1.0)
    monkeypatch.setattr(sys, "argv", ["smoke_presets.py", "--only", "table1,table2"])
    assert script.main() == 0
    assert len(roots) == 2 and roots[0] != roots[1] and roots[0].parent == roots[1].parent
    assert "table1" in capsys.readouterr().out
