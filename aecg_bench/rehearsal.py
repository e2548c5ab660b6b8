"""A rehearsal: a paper preset's exact configuration on LIMIT samples per cell, with any model, offline.

`make reproduce-table1 PRESET=paper LIMIT=1 MODEL=local` (also table2, mechanisms, edv) runs the
experiment's own sweep (benchmarks and modes, step budgets, prompts, windows, memory-side roles,
protocols, epochs, seeds) and changes only:

- `protocol.limit`: the first LIMIT samples of every split (AECG's experiments at least 2: with one,
  nothing is ever recalled, so AECG's memory side would never call its model);
- the model (default the embedded `local`; EDV: the embedded pool);
- memory maintenance after every sample, so every phase of a run (a one-task warm-up included)
  measures a round; the dry run prices rounds at the preset's cadence;
- an offline equivalent wherever the paper preset needs the network: FEVER ReAct searches a page
  store built from the shared FEVER claims (`fever_react_offline`: the same Search/Lookup/Finish
  code); Mind2Web and MMTB read the tests' schema-faithful fixtures instead of the hub's files.

Its runs carry `rehearsal: true` (part of their identity) and an `-rehearsal` experiment name, so
their results never pool with a paper run's. What a rehearsal is for: running every code path of
the paid run before paying (`code_paths`), and calibrating the cost model
(aecg_bench/analysis/cost_model.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from aecg_bench.benchmarks.data import data_root

CONF = Path(__file__).resolve().parents[1] / "conf"
SUFFIX = "-rehearsal"
# paper benchmark config -> its offline equivalent (same code path, local data)
OFFLINE_BENCHMARKS = {"fever_react": "fever_react_offline"}
PAGES = "rehearsal_pages.jsonl"  # inside <rehearsal data root>/fever (conf/benchmark/fever_react_offline.yaml)
FEVER_CLAIMS = 100  # the claims G-Memory (and the paper preset) evaluates: their evidence pages make the store
# Model names that are configs (conf/model/*.yaml) rather than litellm ids.
MODEL_CONFIGS = ("local", "embedded_server", "server", "mock")
NOTES = {
    "fever_react": "FEVER ReAct searches a local page store built from the shared FEVER dev claims (their evidence "
    "page titles, the claims citing each as its text) instead of live Wikipedia: the same Search/Lookup/Finish code.",
    "mind2web": "Mind2Web reads the tests' schema-faithful fixture (2 tasks) instead of the hub's 1.4 GB download.",
    "mmtb": "MMTB reads the tests' fixture (3 entries: its 2, and a copy of the first in the train half) "
    "instead of the authors' file.",
    "second_sample": "AECG's cells run 2 samples: its memory-side calls (attribution judges over recalled items, "
    "skill abstraction from evidence) need an earlier sample to recall, as the smoke preset's limit of 2 does.",
    "maintain": "Memory maintenance runs after every sample (the paper preset: every 10) so every phase of every run "
    "measures a round; the dry run prices rounds at the paper's cadence.",
}


def sweep_params(experiment: str) -> dict[str, str]:
    """The sweep dimensions an experiment config declares (hydra.sweeper.params), as written."""
    from omegaconf import OmegaConf

    path = CONF / "experiment" / f"{experiment}.yaml"
    raw = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    params = (((raw or {}).get("hydra") or {}).get("sweeper") or {}).get("params") or {}
    return {str(k): str(v) for k, v in params.items()}


def component_label(group: str, name: str) -> str:
    """The results-folder label a config of `group` gives its runs: its `label`, else its `name`,
    else its parent's (conf/benchmark/fever_react.yaml -> fever)."""
    from omegaconf import OmegaConf

    raw = OmegaConf.to_container(OmegaConf.load(CONF / group / f"{name}.yaml"), resolve=False) or {}
    if raw.get("label") or raw.get("name"):
        return str(raw.get("label") or raw["name"])
    parents = [d for d in raw.get("defaults") or [] if isinstance(d, str) and d != "_self_"]
    return component_label(group, parents[0]) if parents else name


def paper_grid(experiment: str) -> list[tuple[str, str, str, str]]:
    """(benchmark, framework, memory, phase) labels of every cell of an online AECG table's paper
    preset (its sweep's product), for pricing cells a rehearsal left out; [] for other experiments."""
    if not experiment.startswith("aecg_table"):
        return []
    params = sweep_params(experiment)
    if not {"framework", "benchmark", "memory"} <= set(params):
        return []

    def labels(group: str) -> list[str]:
        return [component_label(group, v.strip()) for v in params[group].split(",") if v.strip()]

    return [(b, f, m, "eval") for b in labels("benchmark") for f in labels("framework") for m in labels("memory")]


def model_override(model: str | None) -> list[str]:
    """A config name (local, embedded_server, server) selects conf/model/<name>.yaml; default local."""
    name = model or "local"
    if name not in MODEL_CONFIGS:
        return []  # a litellm id: the caller's pair overrides name it
    return [f"model={name}"]


def rehearsal_overrides(experiment: str, *, limit: int, data_dir: Path) -> tuple[list[str], list[str]]:
    """Hydra overrides that turn `experiment`'s paper preset into its rehearsal, and one note per
    offline substitute it uses (what the runs do differently from the paid run)."""
    params = sweep_params(experiment)
    notes = []
    if experiment.startswith("aecg_") and limit < 2:
        limit = 2
        notes.append(NOTES["second_sample"])
    notes.append(NOTES["maintain"])
    overrides = [
        f"experiment_name={experiment}{SUFFIX}",
        f"protocol.limit={limit}",
        "protocol.maintain_every=1",
        "rehearsal=true",
        f"runtime.data_root={data_dir}",
    ]
    benches = [b.strip() for b in params.get("benchmark", "").split(",") if b.strip()]
    if benches:  # on the command line, so the config check sees the benchmark the overrides below need
        overrides.append(f"benchmark={','.join(OFFLINE_BENCHMARKS.get(b, b) for b in benches)}")
    if any(b in OFFLINE_BENCHMARKS for b in benches):
        notes.append(NOTES["fever_react"])
    if any(b.startswith("mind2web") for b in benches):
        overrides.append("benchmark.params.download=false")
        notes.append(NOTES["mind2web"])
    if benches == ["mmtb"]:
        blob = (data_dir / "mmtb" / "fixture.blob").read_text().strip() if (data_dir / "mmtb").exists() else ""
        overrides += ["benchmark.params.download=false", f"benchmark.params.blob_sha1={blob}"]
        notes.append(NOTES["mmtb"])
    return overrides, notes


def fever_pages(claims_file: Path, n_claims: int = FEVER_CLAIMS) -> list[dict[str, str]]:
    """A page store for the first `n_claims` FEVER claims: one page per evidence title, its text the
    claims that cite it. Not Wikipedia's text (the shared data has none): it exercises ReAct's
    Search (a page or similar titles) and Lookup (sentences with a keyword); its scores mean nothing."""
    pages: dict[str, list[str]] = {}
    for line in claims_file.read_text(encoding="utf-8").splitlines()[:n_claims]:
        row = json.loads(line)
        for group in row.get("evidence") or []:
            for ev in group:
                title = ev[2] if len(ev) > 2 else None
                if title:
                    sentences = pages.setdefault(title, [])
                    claim = row["claim"].rstrip(".") + "."
                    if claim not in sentences:
                        sentences.append(claim)
    return [{"title": title, "text": " ".join(sentences)} for title, sentences in sorted(pages.items())]


def prepare_data(
    dest: Path,
    *,
    source: Path | None = None,
    mind2web: Callable[[Path], Any] | None = None,
    mmtb: Callable[[Path], str] | None = None,
) -> Path:
    """The rehearsal's data root: links to the real data (`source`, default the configured data
    root), FEVER's claims beside the page store built from them, and the fixtures that `mind2web`
    (writes <dest>/mind2web) and `mmtb` (writes <dest>/mmtb, returns its git blob id) lay out."""
    source = source or data_root()
    dest.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        for entry in source.iterdir():
            link = dest / entry.name
            if entry.name in ("fever", "mind2web", "mmtb") or link.exists() or link.is_symlink():
                continue
            link.symlink_to(entry.resolve())
    claims = source / "fever" / "paper_dev.jsonl"
    if claims.is_file():
        fever = dest / "fever"
        fever.mkdir(exist_ok=True)
        if not (fever / "paper_dev.jsonl").exists():
            (fever / "paper_dev.jsonl").symlink_to(claims.resolve())
        rows = fever_pages(claims)
        _write_if_changed(fever / PAGES, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    if mind2web is not None and not (dest / "mind2web").exists():
        mind2web(dest)
    if mmtb is not None and not (dest / "mmtb" / "fixture.blob").exists():
        blob = mmtb(dest)
        (dest / "mmtb" / "fixture.blob").write_text(blob + "\n")
    return dest


def _write_if_changed(path: Path, text: str) -> None:
    """Rewrite only on change: the store's hash is part of a run's identity, and an untouched file
    keeps every finished rehearsal run resumable."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


REACT_ACTION = re.compile(r"\b(Search|Lookup)\[")


def code_paths(roots: Iterable[Path]) -> dict[str, bool]:
    """Which of the paper presets' costly code paths a rehearsal's records show were run.

    From the sample records (calls by role, steps, phases) and, for FEVER, the stored trajectories:
    ReAct actions on FEVER; an episode beyond 3 steps (the smoke cap); memory-side calls for every
    memory method that ran (for EDV's Router: its construction probes); tau2's user simulator; EDV's
    construction (Distill and Verify), the Judge's adjudication and the Router's probes."""
    from aecg_bench.analysis.cost_model import NO_MEMORY, role_group
    from aecg_bench.results_format import read_runs
    from aecg_bench.runner.records import RunDir

    seen: dict[str, bool] = {}
    memories: dict[str, bool] = {}

    def mark(name: str, value: bool) -> None:
        seen[name] = seen.get(name, False) or value

    for root in roots:
        for run in read_runs(root):
            labels = run.header["labels"]
            bench, memory = str(labels["benchmark"]), str(labels["memory"])
            name = memory.split("_epochs")[0].split("_top")[0]
            for rec in run.records:
                roles = {r: u["calls"] for r, u in (rec.get("usage") or {}).get("by_role", {}).items()}
                mark("steps_beyond_3", rec.get("steps", 0) > 3)
                memory_side = sum(n for r, n in roles.items() if role_group(r) == "memory")
                built = rec["phase"] == "build" and sum(roles.values()) > 0
                if name not in NO_MEMORY:
                    memories[name] = memories.get(name, False) or memory_side > 0 or built
                if bench.startswith("tau2"):
                    mark("tau2_user_simulator", roles.get("user_simulator", 0) > 0)
                if name == "edv":
                    mark("edv_construction", roles.get("distiller", 0) > 0 and roles.get("verifier", 0) > 0)
                if name == "judge":
                    mark("judge_adjudication", roles.get("adjudicator", 0) > 0)
                if name == "router":
                    mark("router_probes", built and roles.get("executor", 0) > 0)
                if bench == "fever" and rec.get("steps", 0) > 0 and not seen.get("fever_react_actions"):
                    traj = RunDir(run.path).read_trajectory(rec["position"], rec["attempt"])
                    mark("fever_react_actions", bool(REACT_ACTION.search(json.dumps(traj))))
    seen.update({f"memory_side:{m}": ok for m, ok in sorted(memories.items())})
    return seen
