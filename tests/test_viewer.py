"""The run viewer (issue 33): what it reads from real runs (AECG and No-Memory under AutoGen with the
scripted mock model), how it shows a damaged or partial folder, and (slow, headless Chromium) the page
itself: run -> sample -> memory item -> the sample that created it, two runs compared, screenshots."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from conftest import REPO, compose
from filelock import FileLock

from aecg_bench.run import run_from_config
from aecg_bench.view import data
from aecg_bench.view.server import serve

AECG = "v/toy/autogen/aecg/mock_aecg/seed=0"
NOMEM = "v/toy/autogen/no_memory/mock_aecg/seed=0"


def _runner_code_hash() -> str:
    """What the fixture runs depend on: everything but the viewer itself (a mutation campaign mutates it)."""
    digest = hashlib.sha256()
    for top in ("aecg_bench", "baselines", "frameworks", "conf"):
        for path in sorted((REPO / top).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".yaml") and "view" not in path.relative_to(REPO).parts[:2]:
                digest.update(str(path.relative_to(REPO)).encode() + path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Two real runs on the same samples: AECG (stores skills and memories, recalls them) and No-Memory.
    Made once per version of the code they run (kept in the temp folder): the viewer's tests only read them."""
    cache = Path(tempfile.gettempdir()) / f"aecg-viewer-fixture-{_runner_code_hash()}"
    with FileLock(str(cache) + ".lock"):
        if not (cache / "done").exists():
            shutil.rmtree(cache, ignore_errors=True)
            for memory in ("aecg", "no_memory"):
                raw = compose(
                    [
                        "experiment_name=v",
                        f"memory={memory}",
                        "framework=autogen",
                        "model=mock_aecg",
                        "benchmark.params.size=8",
                    ],
                    cache / "results",
                )
                assert run_from_config(raw)["status"] == "complete"
            (cache / "done").touch()
    root = tmp_path_factory.mktemp("viewer") / "results"
    shutil.copytree(cache / "results", root)
    return root


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def _audit(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "memory" / "audit.jsonl").read_text().splitlines()]


# --- what it reads ------------------------------------------------------------------------------


def test_the_runs_list_has_each_run_with_labels_status_and_completeness(results):
    runs = {r["id"]: r for r in data.runs(results)}
    assert set(runs) == {AECG, NOMEM}
    a = runs[AECG]
    assert (a["framework"], a["benchmark"], a["memory"], a["model"], a["seed"]) == (
        "autogen",
        "toy",
        "aecg",
        "mock_aecg",
        0,
    )
    assert (a["status"], a["done"], a["n_items"], a["preset"]) == ("complete", 8, 8, "full")
    header = json.loads((results / AECG / "run.json").read_text())
    assert a["success_rate"] == header["eval"]["success_rate"] and a["problems"] == []


def test_a_sample_shows_the_memory_text_each_decision_saw_and_the_sample_that_created_it(results):
    records = _records(results / AECG)
    pos = next(r["position"] for r in records if r["recalled_memory_ids"])
    view = data.sample(results, AECG, pos)
    recalled = records[pos]["recalled_memory_ids"]
    assert list(view["items"]) == recalled
    created = {}
    for e in _audit(results / AECG):
        for key in data.ITEM_KEYS:
            if isinstance(e.get(key), str):
                created.setdefault(e[key], e)
    for item_id, item in view["items"].items():
        assert item["text"], item_id  # the text the agents were shown, from the trajectory (format 2)
        assert item["created_by"]["position"] == created[item_id]["position"] < pos
    decisions = view["rollouts"][0]["episode"]["trajectory"]["decisions"]
    assert {d["level"] for d in decisions} == {"team", "event", "agent"}
    shown = {m for d in decisions for m in d["recalled_memory_ids"]}
    assert shown == set(recalled)


def test_a_memory_item_links_its_origin_its_events_and_the_samples_that_recalled_it(results):
    records = _records(results / AECG)
    item_id = next(m for r in records for m in r["recalled_memory_ids"] if m.startswith("s"))  # an AECG skill
    item = data.memory_item(results, AECG, item_id)
    assert [u["position"] for u in item["used_by"]] == [
        r["position"] for r in records if item_id in r["recalled_memory_ids"]
    ]
    assert item["events"] and item["created_by"]["position"] == item["events"][0]["position"]
    assert item["state"]["id"] == item_id and "belief" in item["state"]  # its beliefs from the snapshot
    skills = {s["id"]: s for s in data.skills(results, AECG)["skills"]}
    assert 0 < skills[item_id]["fast"] < 1 and 0 < skills[item_id]["slow"] < 1


def test_the_timeline_counts_each_samples_audit_events_and_memory_stats(results):
    tl = data.timeline(results / AECG)
    events = _audit(results / AECG)
    assert sum(sum(r["events"].values()) for r in tl["rows"]) == sum("position" in e for e in events)
    assert "memories" in tl["stats_keys"] and len(tl["rows"]) == 8


def test_two_runs_compared_sample_by_sample(results):
    view = data.compare(results, NOMEM, AECG)
    a = {r["sample_id"]: r["success"] for r in _records(results / NOMEM)}
    b = {r["sample_id"]: r["success"] for r in _records(results / AECG)}
    gained = sum(b[k] and not a[k] for k in a)
    lost = sum(a[k] and not b[k] for k in a)
    assert view["flipped"] == {"gained": gained, "lost": lost} and len(view["rows"]) == 8
    assert all(r["b"]["recalled"] is not None for r in view["rows"])


# --- damaged and partial folders ------------------------------------------------------------------


def _copy(results: Path, tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(results, root)
    return root


def test_a_garbled_line_a_missing_trajectory_and_snapshot_are_named_not_raised(results, tmp_path):
    root = _copy(results, tmp_path)
    run = root / AECG
    lines = (run / "samples.jsonl").read_text().splitlines()
    lines.insert(3, "{garbled")
    (run / "samples.jsonl").write_text("\n".join(lines) + "\n")
    (run / "trajectories" / "000002-a1.json.gz").unlink()
    for snap in (run / "memory").glob("snapshot-*"):
        snap.unlink()
    detail = data.run_detail(root, AECG)
    assert len(detail["samples"]) == 8 and any("line 4 is not a JSON record" in p for p in detail["problems"])
    sample = data.sample(root, AECG, 2)
    assert sample["rollouts"] == [] and any("trajectory of position 2" in p for p in sample["problems"])
    assert data.skills(root, AECG)["problems"] == ["no memory snapshot yet"]


def test_a_run_in_progress_shows_what_it_recorded(results, tmp_path):
    root = _copy(results, tmp_path)
    run = root / AECG
    header = json.loads((run / "run.json").read_text())
    header["status"] = "running"
    for key in ("counts", "eval"):
        header.pop(key)
    (run / "run.json").write_text(json.dumps(header))
    lines = (run / "samples.jsonl").read_text().splitlines()
    (run / "samples.jsonl").write_text("\n".join(lines[:5]) + "\n" + lines[5][:40])  # a record being written
    summary = next(r for r in data.runs(root) if r["id"] == AECG)
    assert (summary["status"], summary["done"], summary["problems"]) == ("running", 5, [])


def test_an_unreadable_run_json_is_listed_with_its_problem(results, tmp_path):
    root = _copy(results, tmp_path)
    (root / AECG / "run.json").write_text("{not json")
    summary = next(r for r in data.runs(root) if r["id"] == AECG)
    assert summary["status"] == "unreadable" and summary["problems"] == [
        "run.json: run.json cannot be read (JSONDecodeError)"
    ]


@pytest.fixture
def server(results):
    srv = serve(results, port=0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_api_answers_bad_requests_with_one_line_and_never_leaves_the_root(server):
    assert _get(f"{server}/api/runs")[0] == 200
    code, body = _get(f"{server}/api/run?id={quote('../../etc')}")
    assert code == 404 and body == {"error": "not found: ../../etc"}
    code, body = _get(f"{server}/api/sample?{urlencode({'run': AECG, 'pos': 'x'})}")
    assert code == 400 and "\n" not in body["error"]
    code, body = _get(f"{server}/api/sample?{urlencode({'run': AECG, 'pos': 99})}")
    assert code == 404
    assert _get(f"{server}/static/..%2F..%2F..%2Fetc%2Fpasswd")[0] == 404


# --- the page in a real browser (slow) ----------------------------------------------------------

ARTIFACTS = Path(os.environ.get("AECG_CI_ARTEFACTS", REPO / "results" / "ci-artefacts")) / "viewer"


def _chromium() -> str | None:
    return next((p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None)


def _browser(browser: str, url: str, profile: Path, *extra: str) -> str:
    out = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,1000",
            "--virtual-time-budget=15000",
            f"--user-data-dir={profile}",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-1500:]
    return out.stdout


def _page(browser: str, url: str, tmp_path: Path, shot: str) -> str:
    """The page's DOM after its scripts ran, and a screenshot of it kept as an artefact."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _browser(browser, url, tmp_path / f"p-{shot}", f"--screenshot={ARTIFACTS / f'{shot}.png'}")
    return _browser(browser, url, tmp_path / f"d-{shot}", "--dump-dom")


def _hrefs(dom: str, route: str) -> list[str]:
    return [h.replace("&amp;", "&") for h in re.findall(rf'href="(#{route}\?[^"]+)"', dom)]


@pytest.mark.slow
def test_the_page_navigates_run_sample_item_and_back_to_its_origin_and_compares(results, server, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    runs = _page(browser, f"{server}/#runs", tmp_path, "runs")
    assert 'data-view="runs"' in runs and AECG in runs and NOMEM in runs
    run_link = next(h for h in _hrefs(runs, "run") if quote(AECG, safe="") in h or "aecg%2Fmock" in h)
    run_page = _page(browser, f"{server}/{run_link}", tmp_path, "run")
    assert 'data-view="run"' in run_page and 'id="skills"' in run_page and 'id="timeline"' in run_page
    records = _records(results / AECG)
    pos = next(r["position"] for r in records if r["recalled_memory_ids"])
    sample_link = next(h for h in _hrefs(run_page, "sample") if h.endswith(f"pos={pos}"))
    sample_page = _page(browser, f"{server}/{sample_link}", tmp_path, "sample")
    assert 'data-view="sample"' in sample_page
    item_id = records[pos]["recalled_memory_ids"][0]
    assert f'data-item="{item_id}"' in sample_page
    item_link = next(h for h in _hrefs(sample_page, "item") if h.endswith(f"id={quote(item_id)}"))
    item_page = _page(browser, f"{server}/{item_link}", tmp_path, "item")
    origin = data.memory_item(results, AECG, item_id)["created_by"]["position"]
    origin_link = (
        re.search(r'<p id="origin">.*?href="(#sample\?[^"]+)"', item_page, re.S).group(1).replace("&amp;", "&")
    )
    assert origin_link.endswith(f"pos={origin}")
    origin_page = _page(browser, f"{server}/{origin_link}", tmp_path, "origin")
    assert f"(position {origin})" in origin_page
    compare = _page(browser, f"{server}/#compare?{urlencode({'a': NOMEM, 'b': AECG})}", tmp_path, "compare")
    flips = data.compare(results, NOMEM, AECG)["flipped"]
    assert f"B gained {flips['gained']} and lost {flips['lost']} of 8 paired samples" in compare
    recalled = [m for r in data.compare(results, NOMEM, AECG)["rows"] for m in r["b"]["recalled"]]
    assert compare.count(">http://") == 0 and len(_hrefs(compare, "item")) == len(recalled)  # links, not their text


@pytest.mark.slow
def test_the_page_shows_the_mechanism_runs_and_a_damaged_run_without_a_stack_trace(tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    root = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(
        [
            os.sys.executable,
            "-m",
            "aecg_bench.mechanisms",
            "experiment=aecg_rq4_triage_smoke",
            f"runtime.results_root={root}",
        ],
        check=True,
        capture_output=True,
        cwd=REPO,
        env=env,
        timeout=900,
    )
    run_dirs = sorted(p.parent for p in root.rglob("run.json"))
    assert run_dirs
    first = run_dirs[0]
    traj = sorted((first / "trajectories").glob("*.json.gz"))[0]
    traj.write_bytes(gzip.compress(b"{broken"))
    srv = serve(root, port=0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        runs = _page(browser, f"{base}/#runs", tmp_path, "mechanism-runs")
        assert runs.count("data-run=") == len(run_dirs)
        rel = str(first.relative_to(root))
        pos = int(traj.name[:6])
        page = _page(browser, f"{base}/#sample?{urlencode({'run': rel, 'pos': pos})}", tmp_path, "damaged-sample")
        assert 'data-view="sample"' in page and "cannot be read" in page and "Traceback" not in page
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_audit_log_filters_by_event_kind(results):
    events = _audit(results / AECG)
    kind = events[-1]["event"]
    log = data.audit(results, AECG, kind, 500)
    assert log["total"] == sum(e["event"] == kind for e in events) and {e["event"] for e in log["events"]} == {kind}
    assert data.audit(results, AECG, "", limit=3)["events"] == events[:3]


def test_the_reports_table_cells_link_to_the_runs_behind_them_in_the_viewer(tmp_path):
    """Table 1's cells link to the viewer's run list filtered to that cell's runs (every seed), and the
    viewer serves the report at /report/ so the links resolve there."""
    from html import unescape
    from urllib.parse import parse_qsl

    from report_fixtures import write_grid

    from aecg_bench.analysis.site import write_report

    root = tmp_path / "results"
    write_grid(
        root,
        experiment="aecg_table1",
        frameworks=["autogen", "macnet"],
        benchmarks=["pddl", "fever"],
        memories=["no_memory", "aecg"],
        seeds=[0, 1, 2],
        n=4,
        rate=lambda fw, bench, mem: 0.5 if mem == "aecg" else 0.25,
    )
    page = write_report(root, root / "report", n_boot=50)["html"].read_text()
    links = [dict(parse_qsl(unescape(h))) for h in re.findall(r'<a href="/#runs\?([^"]+)">', page)]
    assert len(links) == 2 * (2 * 2 + 2)  # memories x (framework x benchmark cells + one Avg per framework)
    runs = data.runs(root)
    for where in links:
        behind = [r for r in runs if all(str(r[k]) == v for k, v in where.items())]
        expected = 3 if "benchmark" in where else 6  # three seeds; an Avg cell: both benchmarks
        assert len(behind) == expected, where
    srv = serve(root, port=0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.server_address[1]}/report/index.html", timeout=30) as res:
            assert b'href="/#runs?' in res.read()
    finally:
        srv.shutdown()
        srv.server_close()
