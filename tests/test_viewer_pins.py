"""Pins of the run viewer's readers and server (issue 33) on hand-built results folders: every field each
view returns, which record of a retried position it shows, how each kind of damaged file is named, when a
memoised file is read again, and what the HTTP API answers (status, one-line error, headers) for each route.
The real mock-model runs are read in tests/test_viewer.py; these folders are small enough to state every
expected value."""

from __future__ import annotations

import gzip
import json
import os
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from aecg_bench.view import data, server
from aecg_bench.view.server import STATIC, serve

RUN = "exp/toy/aecg"
OTHER = "exp/toy/no_memory"

HEADER = {
    "status": "complete",
    "labels": {
        "experiment": "exp",
        "benchmark": "toy",
        "framework": "autogen",
        "memory": "aecg",
        "model": "mock",
        "seed": 1,
        "preset": "ignored",
    },
    "protocol": {"limit": 4, "max_steps": None, "mode": "online"},
    "n_items": 4,
    "counts": {"recorded": 30},  # a finished run's header is trusted: these differ from the records on purpose
    "eval": {"success_rate": 0.9},
    "cost": 2.5,
    "roles": {"planner": "mock"},
    "usage": {"total": {"calls": 7}},
    "error": "",
    "identity": "not shown",
}

R0 = {
    "position": 0,
    "attempt": 1,
    "sample_id": "t0",
    "phase": "build",
    "epoch": 0,
    "task_type": "right",
    "status": "ok",
    "success": True,
    "value": 1.0,
    "steps": 2,
    "decisions": 3,
    "recalled_memory_ids": [],
    "seconds": 0.5,
    "error": "",
    "metrics": {"distance": 0.0},
    "usage": {"total": {"cost": 0.25}},
    "memory_stats": {"memories": 1},
    "seed": 99,
}
R1_FIRST = {
    "position": 1,
    "attempt": 1,
    "sample_id": "t1",
    "phase": "eval",
    "status": "error",
    "success": None,
    "error": "boom",
    "recalled_memory_ids": ["m1"],
    "usage": {"total": {"cost": 4.0}},
}
R1 = {
    "position": 1,
    "attempt": 2,
    "sample_id": "t1",
    "phase": "eval",
    "epoch": 0,
    "task_type": "left",
    "status": "ok",
    "success": False,
    "value": 0.0,
    "steps": 4,
    "decisions": 5,
    "recalled_memory_ids": ["m1", "s1.v1"],
    "seconds": 1.5,
    "error": "",
    "metrics": {"distance": 2.0},
    "usage": {"total": {"cost": 0.5}},
    "memory_stats": {"memories": 1, "skills": 1},
}
R2 = {
    "position": 2,
    "attempt": 1,
    "sample_id": "t2",
    "phase": "eval",
    "status": "ok",
    "success": True,
    "value": 1.0,
    "steps": 1,
    "recalled_memory_ids": ["m1"],
    "usage": {"total": {"cost": None}},
}
R3 = {
    "position": 3,
    "attempt": 1,
    "sample_id": "t3",
    "phase": "eval",
    "status": "error",
    "success": None,
    "error": "model unreachable",
    "usage": {"by_model": {}},
}
RECORDS_IN_FILE = [R0, R2, R1_FIRST, R3, R1]  # a retried position's attempts are appended, out of stream order

A1 = {"event": "memory_created", "position": 0, "sample_id": "t0", "memory": "m1", "text": "move right works"}
A2 = {"event": "skill_promoted", "position": 0, "sample_id": "t0", "skill": "s1.v1", "parent": "m1"}
A3 = {"event": "retrieve", "position": 1, "sample_id": "t1", "item": ["m1", "s1.v1", 7]}
A4 = {"event": "review", "position": 2, "sample_id": "t2", "skill": "s1.v1", "text": "reviewed as sound"}
A5 = {"event": "maintain"}  # between samples: no position
A6 = {"position": 2, "card": "c9"}  # no event kind
A7 = {"event": "store", "position": "3", "memory": "m2"}  # a position that is not a number
AUDIT = [A1, A2, A3, A4, A5, A6, A7]

SKILL_1 = {
    "id": "s1.v1",
    "level": "team",
    "status": "active",
    "uses": 4,
    "version": 1,
    "parent": None,
    "reviewed_at": 2,
    "belief": {"fast": {"alpha": 3, "beta": 1}, "slow": {"alpha": 1.0, "beta": 2.0}},
    "content": {"name": "right routine", "procedure": ["move right"]},
}
SKILL_2 = {"id": "s2.v2", "level": "agent", "status": "probation", "uses": 0, "version": 2, "parent": "s2.v1"}
SKILL_3 = {
    "id": "s3.v1",
    "belief": {"fast": {"alpha": 0, "beta": 0}, "slow": {"alpha": "1", "beta": 1}},
    "content": {},
}
STATE = {"store": {"skills": [SKILL_1, SKILL_2, SKILL_3], "memories": [{"id": "m1", "text": "move right works"}]}}


def _lines(path: Path, rows: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _snapshot(run: Path, n: int, memory: object) -> None:
    path = run / "memory" / f"snapshot-{n:06d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"records_seq": n, "audit_seq": 1, "state": {"memory": memory, "framework": {}}}))


def _trajectory(run: Path, name: str, doc: dict) -> None:
    path = run / "trajectories" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)


ROLLOUTS_1 = [
    {"episode": {"decisions": 2}, "recalled_items": {"m1": {"text": "move right works (as shown)", "kind": "memory"}}},
    {"episode": {"decisions": 3}, "recalled_items": {"s1.v1": {"text": "the right routine", "kind": "skill"}}},
]


def make_run(root: Path, rel: str = RUN, header: dict | None = None) -> Path:
    """The AECG-like run: four positions (one retried), an audit log, snapshots, trajectories."""
    run = root / rel
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps(HEADER if header is None else header))
    _lines(run / "samples.jsonl", RECORDS_IN_FILE)
    _lines(run / "memory" / "audit.jsonl", AUDIT)
    _snapshot(run, 1, {"store": {}})
    _snapshot(run, 2, {"store": {"skills": [{**SKILL_1, "uses": 1}]}})
    _snapshot(run, 4, STATE)
    (run / "memory" / "snapshot-000004.json.damaged").write_text("{}")  # set aside by the runner: not read
    (run / "memory" / "snapshot-000004.json.tmp").write_text("{half")  # a snapshot being written: not read
    _trajectory(run, "000000-a1.json.gz", {"rollouts": [{"episode": {"from": "gz"}}]})
    _trajectory(run, "000000-a1.json", {"rollouts": [{"episode": {"from": "plain"}}]})
    _trajectory(run, "000001-a1.json.gz", {"rollouts": [{"episode": {"from": "first attempt"}}]})
    _trajectory(run, "000001-a2.json.gz", {"format": 2, "rollouts": ROLLOUTS_1})
    _trajectory(run, "000002-a1.json", {"rollouts": [{"episode": {"decisions": 1}}]})
    return run


def make_other(root: Path) -> Path:
    """A No-Memory run over the same samples: t1 gained, t2 lost, t0 in another phase, t3 unscored in both."""
    run = root / OTHER
    run.mkdir(parents=True)
    header = {**HEADER, "labels": {**HEADER["labels"], "memory": "no_memory"}}
    (run / "run.json").write_text(json.dumps(header))
    base = {"attempt": 1, "phase": "eval", "status": "ok"}
    _lines(
        run / "samples.jsonl",
        [
            {**base, "position": 0, "sample_id": "t0", "success": True},
            {**base, "position": 1, "sample_id": "t1", "success": True, "recalled_memory_ids": []},
            {**base, "position": 2, "sample_id": "t2", "success": False},
            {**base, "position": 3, "sample_id": "t3", "success": None},
            {**base, "position": 4, "sample_id": "t4", "success": True},
        ],
    )
    return run


@pytest.fixture
def root(tmp_path: Path) -> Path:
    out = tmp_path / "results"
    make_run(out)
    make_other(out)
    return out


# --- the runs list --------------------------------------------------------------------------------

LABELS = {"experiment": "exp", "benchmark": "toy", "framework": "autogen", "memory": "aecg", "model": "mock", "seed": 1}


def test_a_finished_runs_row_is_its_header(root):
    assert data.run_summary(root, root / RUN) == {
        "id": RUN,
        **LABELS,
        "preset": "limit=4",
        "status": "complete",
        "n_items": 4,
        "done": 30,
        "success_rate": 0.9,
        "cost": 2.5,
        "problems": [],
    }
    assert [r["id"] for r in data.runs(root)] == [RUN, OTHER]  # path order


@pytest.mark.parametrize("status", ["complete", "incomplete", "failed", "interrupted"])
def test_every_final_status_is_read_from_the_header(root, status):
    (root / RUN / "run.json").write_text(json.dumps({**HEADER, "status": status}))
    row = data.run_summary(root, root / RUN)
    assert (row["status"], row["done"], row["success_rate"], row["cost"]) == (status, 30, 0.9, 2.5)


COUNTED = {"done": 4, "success_rate": 0.5, "cost": 0.75}  # eval records with an outcome: t1 lost, t2 won


@pytest.mark.parametrize(
    "change",
    [
        {"status": "running"},
        {"counts": {"items": 4}},  # a final header without its counts ...
        {"eval": {"n": 3}},  # ... or without its success rate
    ],
)
def test_a_run_in_progress_or_a_header_without_its_counts_is_counted_from_the_records(root, change):
    (root / RUN / "run.json").write_text(json.dumps({**HEADER, **change}))
    row = data.run_summary(root, root / RUN)
    assert {k: row[k] for k in COUNTED} == COUNTED and row["problems"] == []


def test_a_run_with_no_scored_sample_has_no_rate_and_its_record_problems_are_listed(tmp_path):
    run = tmp_path / "r"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"status": "running", "labels": {"memory": "aecg"}}))
    (run / "samples.jsonl").write_text(json.dumps({**R3, "usage": {"total": {"cost": 0.5}}}) + "\n[1, 2]\n")
    row = data.run_summary(tmp_path, run)
    assert row == {
        "id": "r",
        "experiment": None,
        "benchmark": None,
        "framework": None,
        "memory": "aecg",
        "model": None,
        "seed": None,
        "preset": "?",  # a header without its protocol
        "status": "running",
        "n_items": None,
        "done": 1,
        "success_rate": None,
        "cost": 0.5,
        "problems": ["samples.jsonl line 2 is not a JSON record (skipped)"],
    }


def test_a_header_without_status_or_that_is_no_object_says_so(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "run.json").write_text(json.dumps({"protocol": {}}))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "run.json").write_text("[1]")
    a, b = data.runs(tmp_path)
    assert (a["status"], a["preset"], a["done"], a["success_rate"], a["cost"], a["problems"]) == (
        "?",
        "full",
        0,
        None,
        0,
        [],
    )
    assert (b["status"], b["problems"]) == ("unreadable", ["run.json: run.json is not a JSON object"])


def test_a_results_root_that_is_itself_a_run_opens(tmp_path):
    run = make_run(tmp_path, "one")
    assert [r["id"] for r in data.runs(run)] == ["."]
    assert data.run_detail(run, ".")["summary"]["id"] == "."


def test_run_ids_outside_the_root_or_without_run_json_are_unknown(root, tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "run.json").write_text("{}")
    (root / "exp" / "empty").mkdir()
    for bad in ("../outside", "exp/empty", "exp/missing", str(tmp_path / "outside")):
        with pytest.raises(KeyError) as err:
            data.run_detail(root, bad)
        assert err.value.args == (bad,)


# --- a run's page ---------------------------------------------------------------------------------

TIMELINE = {
    "rows": [
        {
            "position": 0,
            "sample_id": "t0",
            "success": True,
            "stats": {"memories": 1},
            "events": {"memory_created": 1, "skill_promoted": 1},
        },
        {
            "position": 1,
            "sample_id": "t1",
            "success": False,
            "stats": {"memories": 1, "skills": 1},
            "events": {"retrieve": 1},
        },
        {"position": 2, "sample_id": "t2", "success": True, "stats": {}, "events": {"review": 1, "?": 1}},
        {"position": 3, "sample_id": "t3", "success": None, "stats": {}, "events": {}},
    ],
    "event_kinds": ["?", "memory_created", "retrieve", "review", "skill_promoted"],
    "stats_keys": ["memories", "skills"],
    "totals": {
        "memory_created": 1,
        "skill_promoted": 1,
        "retrieve": 1,
        "review": 1,
        "maintain": 1,
        "?": 1,
        "store": 1,
    },
    "problems": [],
}


def test_the_timeline_counts_events_per_position_and_every_kind_in_total(root):
    assert data.timeline(root / RUN) == TIMELINE


def test_a_runs_page_has_its_header_samples_timeline_and_whether_it_has_skills(root):
    detail = data.run_detail(root, RUN)
    assert detail == {
        "summary": data.run_summary(root, root / RUN),
        "header": {k: HEADER[k] for k in ("labels", "protocol", "roles", "usage", "eval", "counts", "error")},
        "samples": [
            {
                "position": 0,
                "sample_id": "t0",
                "phase": "build",
                "status": "ok",
                "success": True,
                "value": 1.0,
                "steps": 2,
                "n_recalled": 0,
                "seconds": 0.5,
            },
            {
                "position": 1,
                "sample_id": "t1",
                "phase": "eval",
                "status": "ok",
                "success": False,
                "value": 0.0,
                "steps": 4,
                "n_recalled": 2,
                "seconds": 1.5,
            },
            {
                "position": 2,
                "sample_id": "t2",
                "phase": "eval",
                "status": "ok",
                "success": True,
                "value": 1.0,
                "steps": 1,
                "n_recalled": 1,
                "seconds": None,
            },
            {
                "position": 3,
                "sample_id": "t3",
                "phase": "eval",
                "status": "error",
                "success": None,
                "value": None,
                "steps": None,
                "n_recalled": 0,
                "seconds": None,
            },
        ],
        "timeline": TIMELINE,
        "has_skills": True,
        "problems": [],
    }
    assert data.run_detail(root, OTHER)["has_skills"] is False  # no snapshot
    _snapshot(root / OTHER, 1, {"store": {"skills": []}})
    assert data.run_detail(root, OTHER)["has_skills"] is False


def test_a_runs_page_names_an_unreadable_header_and_garbled_records(root):
    run = root / RUN
    (run / "run.json").write_text("{oops")
    with (run / "samples.jsonl").open("a") as f:
        f.write("{garbled\n")
    detail = data.run_detail(root, RUN)
    assert detail["header"] == dict.fromkeys(("labels", "protocol", "roles", "usage", "eval", "counts", "error"))
    assert detail["problems"] == [
        "run.json: run.json cannot be read (JSONDecodeError)",
        "samples.jsonl line 6 is not a JSON record (skipped)",
    ]
    assert detail["summary"]["status"] == "unreadable" and len(detail["samples"]) == 4


# --- records --------------------------------------------------------------------------------------


def test_the_latest_attempt_of_each_position_in_stream_order(root):
    records, problems = data.latest_records(root / RUN)
    assert records == [R0, R1, R2, R3] and problems == []


def test_of_equal_attempts_the_later_line_wins_and_a_missing_attempt_counts_as_none_made(tmp_path):
    _lines(
        tmp_path / "samples.jsonl",
        [
            {"position": 0, "attempt": 1, "v": "a1"},
            {"position": 0, "v": "no attempt"},  # older than any attempt
            {"position": 1, "v": "first"},
            {"position": 1, "v": "second"},  # neither has an attempt: the later line
            {"position": 2, "attempt": 2, "v": "first"},
            {"position": 2, "attempt": 2, "v": "second"},
        ],
    )
    records, _ = data.latest_records(tmp_path)
    assert [r["v"] for r in records] == ["a1", "second", "second"]


def test_records_without_a_position_and_lines_that_are_no_object_are_named(tmp_path):
    (tmp_path / "samples.jsonl").write_text(
        "\n".join(
            [
                json.dumps({"position": 0}),
                "",  # blank lines are not problems
                "   ",
                json.dumps({"position": "1"}),
                json.dumps({"sample_id": "x"}),
                "{garbled",
                "42",
                json.dumps({"position": 2}),
                '{"position": 3, "sample',  # the torn last line of a run being written: not a problem
            ]
        )
    )
    records, problems = data.latest_records(tmp_path)
    assert [r["position"] for r in records] == [0, 2]
    assert problems == [
        "samples.jsonl line 6 is not a JSON record (skipped)",
        "samples.jsonl line 7 is not a JSON record (skipped)",
        "samples.jsonl: a record without a position (skipped)",
        "samples.jsonl: a record without a position (skipped)",
    ]
    assert data.latest_records(tmp_path / "nothing") == ([], [])


def test_a_garbled_last_line_that_ends_is_a_problem(tmp_path):
    (tmp_path / "samples.jsonl").write_text(json.dumps({"position": 0}) + "\n{torn\n")
    assert data.latest_records(tmp_path)[1] == ["samples.jsonl line 2 is not a JSON record (skipped)"]


# --- the memo -------------------------------------------------------------------------------------


def test_the_memo_parses_a_file_once_until_it_changes(tmp_path):
    memo = data._Memo()
    seen: list[str] = []

    def parse(path: Path) -> str:
        seen.append(path.read_text())
        return seen[-1]

    def other(path: Path) -> str:
        return "other:" + path.read_text()

    f = tmp_path / "f.txt"
    f.write_text("one")
    assert memo.get(f, parse) == "one" and memo.get(f, parse) == "one" and seen == ["one"]
    assert memo.get(f, other) == "other:one"  # another parser of the same file: its own entry
    f.write_text("two")  # the same size: a new mtime
    stamp = f.stat().st_mtime_ns + 10**9
    os.utime(f, ns=(stamp, stamp))
    assert memo.get(f, parse) == "two"
    f.write_text("three")  # a new size, the same mtime
    os.utime(f, ns=(stamp, stamp))
    assert memo.get(f, parse) == "three" and seen == ["one", "two", "three"]
    twin = tmp_path / "twin.txt"  # another file of the same size and mtime: its own entry
    twin.write_text("THREE")
    os.utime(twin, ns=(stamp, stamp))
    assert memo.get(twin, parse) == "THREE" and memo.get(f, parse) == "three"
    missing = tmp_path / "missing"

    def exists(path: Path) -> bool:
        return path.exists()

    assert memo.get(missing, exists) is False  # a file that is not there is not stamped, so not cached
    missing.write_text("now")
    assert memo.get(missing, exists) is True


def test_a_run_in_progress_shows_new_records_and_events_on_the_next_read(root):
    run = root / RUN
    assert len(data.run_detail(root, RUN)["samples"]) == 4
    assert "m9" not in data.item_origins(run)
    with (run / "samples.jsonl").open("a") as f:
        f.write(json.dumps({**R2, "position": 4, "sample_id": "t4"}) + "\n")
    with (run / "memory" / "audit.jsonl").open("a") as f:
        f.write(json.dumps({"event": "memory_created", "position": 4, "memory": "m9"}) + "\n")
    assert [s["position"] for s in data.run_detail(root, RUN)["samples"]] == [0, 1, 2, 3, 4]
    assert data.item_origins(run)["m9"]["position"] == 4
    assert data.audit(root, RUN, "", 100)["total"] == len(AUDIT) + 1


# --- a sample -------------------------------------------------------------------------------------

RECORD_1 = {k: v for k, v in R1.items() if k != "memory_stats"}  # the view shows the record, not the counts
CREATED_M1 = {"event": "memory_created", "position": 0, "sample_id": "t0"}
CREATED_S1 = {"event": "skill_promoted", "position": 0, "sample_id": "t0"}


def test_a_sample_shows_its_latest_attempt_its_rollouts_and_each_recalled_item_with_its_origin(root):
    assert data.sample(root, RUN, 1) == {
        "run": RUN,
        "record": RECORD_1,
        "rollouts": ROLLOUTS_1,
        "items": {
            "m1": {"id": "m1", "text": "move right works (as shown)", "kind": "memory", "created_by": CREATED_M1},
            "s1.v1": {"id": "s1.v1", "text": "the right routine", "kind": "skill", "created_by": CREATED_S1},
        },
        "problems": [],
    }


def test_an_item_the_trajectory_does_not_show_takes_its_text_from_the_event_that_created_it(root):
    view = data.sample(root, RUN, 2)  # a plain-JSON trajectory without recalled_items (format 1)
    assert view["rollouts"] == [{"episode": {"decisions": 1}}]
    assert view["items"] == {"m1": {"id": "m1", "text": "move right works", "kind": None, "created_by": CREATED_M1}}
    _lines(root / RUN / "memory" / "audit.jsonl", [])
    assert data.sample(root, RUN, 2)["items"]["m1"] == {"id": "m1", "text": None, "kind": None, "created_by": None}


def test_a_gzipped_trajectory_is_read_before_a_plain_one(root):
    assert data.sample(root, RUN, 0)["rollouts"] == [{"episode": {"from": "gz"}}]
    (root / RUN / "trajectories" / "000000-a1.json.gz").unlink()
    assert data.sample(root, RUN, 0)["rollouts"] == [{"episode": {"from": "plain"}}]


def test_a_record_without_an_attempt_reads_the_first_attempts_trajectory(tmp_path):
    run = make_run(tmp_path)
    _lines(run / "samples.jsonl", [{"position": 1, "sample_id": "t1"}])
    assert data.sample(tmp_path, RUN, 1)["rollouts"] == [{"episode": {"from": "first attempt"}}]


def test_a_missing_or_damaged_trajectory_is_named_and_the_record_still_shown(root):
    view = data.sample(root, RUN, 3)
    assert (view["rollouts"], view["items"], view["problems"]) == (
        [],
        {},
        ["trajectory of position 3 (attempt 1) is missing"],
    )
    assert view["record"]["error"] == "model unreachable"
    traj = root / RUN / "trajectories" / "000001-a2.json.gz"
    for raw, why in (
        (gzip.compress(b'{"rollouts": ')[:-8], "EOFError"),  # a truncated gzip stream
        (b"not gzip at all", "BadGzipFile"),
        (gzip.compress(b"{broken"), "JSONDecodeError"),
    ):
        traj.write_bytes(raw)
        view = data.sample(root, RUN, 1)
        assert view["problems"] == [f"000001-a2.json.gz cannot be read ({why})"], why
        assert view["rollouts"] == [] and view["items"]["m1"]["text"] == "move right works"


def test_a_garbled_samples_line_is_named_on_the_sample_page(root):
    with (root / RUN / "samples.jsonl").open("a") as f:
        f.write("{garbled\n")
    assert data.sample(root, RUN, 1)["problems"] == ["samples.jsonl line 6 is not a JSON record (skipped)"]


def test_an_unknown_position_or_run_is_not_found(root):
    with pytest.raises(KeyError) as err:
        data.sample(root, RUN, 7)
    assert err.value.args == (7,)
    with pytest.raises(KeyError):
        data.sample(root, "exp/nothing", 1)


def test_a_file_that_vanished_between_listing_and_reading_is_named(tmp_path):
    assert data._json(tmp_path / "gone.json") == (None, "gone.json is missing")


# --- memory items, skills, the audit log ----------------------------------------------------------


def test_a_memory_item_has_its_origin_every_event_about_it_who_recalled_it_and_its_latest_state(root):
    assert data.memory_item(root, RUN, "s1.v1") == {
        "run": RUN,
        "id": "s1.v1",
        "created_by": CREATED_S1,
        "text": "reviewed as sound",  # the first event about it that carries a text
        "events": [A2, A3, A4],
        "used_by": [{"position": 1, "sample_id": "t1", "success": False}],
        "state": SKILL_1,  # from the latest snapshot, not the older one or the set-aside one
        "problems": [],
    }
    m1 = data.memory_item(root, RUN, "m1")
    assert (m1["created_by"], m1["text"], m1["events"]) == (CREATED_M1, "move right works", [A1, A2, A3])
    assert m1["used_by"] == [
        {"position": 1, "sample_id": "t1", "success": False},
        {"position": 2, "sample_id": "t2", "success": True},
    ]
    assert m1["state"] == {"id": "m1", "text": "move right works"}


def test_an_item_nobody_named_is_shown_empty_and_a_missing_snapshot_is_named(root):
    empty = {"created_by": None, "text": None, "events": [], "used_by": [], "state": None}
    item = data.memory_item(root, RUN, "zz")
    assert {k: item[k] for k in empty} == empty and item["problems"] == []
    item = data.memory_item(root, OTHER, "m1")
    assert {k: item[k] for k in empty} == empty and item["problems"] == ["no memory snapshot yet"]


def test_every_key_an_audit_event_names_an_item_by_is_read(tmp_path):
    run = make_run(tmp_path)
    events = [{"event": f"e-{key}", "position": i, key: f"x-{key}"} for i, key in enumerate(data.ITEM_KEYS)]
    _lines(run / "memory" / "audit.jsonl", events)
    for event, key in zip(events, data.ITEM_KEYS, strict=True):
        item = data.memory_item(tmp_path, RUN, f"x-{key}")
        assert item["events"] == [event] and item["created_by"]["event"] == f"e-{key}", key
    assert set(data.item_origins(run)) == {f"x-{key}" for key in data.ITEM_KEYS}


def test_skills_show_scope_status_uses_and_the_means_of_their_beliefs(root):
    assert data.skills(root, RUN) == {
        "run": RUN,
        "skills": [
            {
                "id": "s1.v1",
                "level": "team",
                "status": "active",
                "uses": 4,
                "version": 1,
                "parent": None,
                "reviewed_at": 2,
                "fast": 0.75,
                "slow": 0.3333,
                "name": "right routine",
            },
            {
                "id": "s2.v2",
                "level": "agent",
                "status": "probation",
                "uses": 0,
                "version": 2,
                "parent": "s2.v1",
                "reviewed_at": None,
                "fast": None,
                "slow": None,
                "name": None,
            },
            {
                "id": "s3.v1",
                "level": None,
                "status": None,
                "uses": None,
                "version": None,
                "parent": None,
                "reviewed_at": None,
                "fast": None,  # alpha + beta = 0
                "slow": None,  # a belief that is not a number
                "name": None,
            },
        ],
        "problems": [],
    }


@pytest.mark.parametrize(
    ("params", "mean"),
    [
        ({"alpha": 1, "beta": 2}, 0.3333),
        ({"alpha": 2.0, "beta": 1.0}, 0.6667),
        ({"alpha": 0, "beta": 5}, 0.0),
        ({"alpha": 2, "beta": 2}, 0.5),
        ({"alpha": 0, "beta": 0}, None),
        ({"alpha": "1", "beta": 1}, None),
        ({"alpha": 1, "beta": None}, None),
        ({"alpha": 1}, None),
        ([1, 1], None),
        (None, None),
    ],
)
def test_a_beta_belief_mean(params, mean):
    assert data._beta_mean(params) == mean


def test_skills_of_a_run_without_a_readable_snapshot_name_why(root):
    assert data.skills(root, OTHER) == {"run": OTHER, "skills": [], "problems": ["no memory snapshot yet"]}
    snap = root / RUN / "memory" / "snapshot-000004.json"
    snap.write_text("{half")
    assert data.skills(root, RUN)["problems"] == ["snapshot-000004.json cannot be read (JSONDecodeError)"]
    assert data.memory_item(root, RUN, "s1.v1")["problems"] == ["snapshot-000004.json cannot be read (JSONDecodeError)"]
    for doc in ([1], {"records_seq": 4}, {"state": []}):
        snap.write_text(json.dumps(doc))
        assert data.skills(root, RUN) == {
            "run": RUN,
            "skills": [],
            "problems": ["snapshot-000004.json holds no memory state"],
        }, doc
    _snapshot(root / RUN, 4, None)  # a method without memory state: nothing to show, nothing wrong
    assert data.skills(root, RUN) == {"run": RUN, "skills": [], "problems": []}


def test_the_audit_log_filtered_by_kind_and_limited(root):
    assert data.audit(root, RUN, "", 100) == {"run": RUN, "event": "", "total": 7, "events": AUDIT, "problems": []}
    assert data.audit(root, RUN, "review", 100) == {
        "run": RUN,
        "event": "review",
        "total": 1,
        "events": [A4],
        "problems": [],
    }
    assert data.audit(root, RUN, "", 2) == {"run": RUN, "event": "", "total": 7, "events": [A1, A2], "problems": []}
    with (root / RUN / "memory" / "audit.jsonl").open("a") as f:
        f.write("{garbled\n")
    assert data.audit(root, RUN, "", 0)["problems"] == ["audit.jsonl line 8 is not a JSON record (skipped)"]
    assert data.timeline(root / RUN)["problems"] == ["audit.jsonl line 8 is not a JSON record (skipped)"]
    assert data.memory_item(root, RUN, "m1")["problems"] == ["audit.jsonl line 8 is not a JSON record (skipped)"]


# --- two runs -------------------------------------------------------------------------------------


def test_two_runs_are_paired_by_phase_and_sample_and_their_flips_counted(root):
    assert data.compare(root, RUN, OTHER) == {
        "a": RUN,
        "b": OTHER,
        "rows": [
            {
                "phase": "eval",
                "sample_id": "t1",
                "a": {"position": 1, "success": False, "recalled": ["m1", "s1.v1"]},
                "b": {"position": 1, "success": True, "recalled": []},
                "flip": "gained",
            },
            {
                "phase": "eval",
                "sample_id": "t2",
                "a": {"position": 2, "success": True, "recalled": ["m1"]},
                "b": {"position": 2, "success": False, "recalled": None},
                "flip": "lost",
            },
            {
                "phase": "eval",
                "sample_id": "t3",
                "a": {"position": 3, "success": None, "recalled": None},
                "b": {"position": 3, "success": None, "recalled": None},
                "flip": "",
            },
        ],
        "flipped": {"gained": 1, "lost": 1},
        "unpaired": 3,  # build t0 in A; eval t0 and t4 in B
        "problems": [],
    }
    assert data.compare(root, OTHER, RUN)["flipped"] == {"gained": 1, "lost": 1}


def test_a_comparison_names_either_runs_unreadable_lines(root):
    for rel in (RUN, OTHER):
        with (root / rel / "samples.jsonl").open("a") as f:
            f.write("{garbled\n")
    assert data.compare(root, RUN, OTHER)["problems"] == [
        "samples.jsonl line 6 is not a JSON record (skipped)",
        "samples.jsonl line 6 is not a JSON record (skipped)",
    ]
    with pytest.raises(KeyError):
        data.compare(root, RUN, "exp/nothing")


# --- the server -----------------------------------------------------------------------------------


@pytest.fixture
def site(root):
    report = root / "report"
    report.mkdir()
    (report / "index.html").write_text("<p>the report</p>")
    (report / "a table.html").write_text("<p>a table</p>")
    (report / "data.unknownext").write_bytes(b"\x00\x01")
    (report / "figures").mkdir()
    srv = serve(root, 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _get(url: str) -> tuple[int, dict, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as res:
            return res.status, dict(res.headers), res.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def _api(base: str, route: str, **params: object) -> tuple[int, object]:
    code, headers, body = _get(f"{base}/api/{route}?{urlencode(params)}")
    assert headers["Content-Type"] == "application/json" and headers["Cache-Control"] == "no-store"
    assert headers["Content-Length"] == str(len(body))
    return code, json.loads(body)


def _same(value: object) -> object:
    return json.loads(json.dumps(value))


def test_each_api_route_answers_what_its_reader_returns(site, root):
    assert _api(site, "runs") == (200, {"root": str(root), "runs": _same(data.runs(root))})
    assert _api(site, "run", id=RUN) == (200, _same(data.run_detail(root, RUN)))
    assert _api(site, "sample", run=RUN, pos=1) == (200, _same(data.sample(root, RUN, 1)))
    assert _api(site, "item", run=RUN, id="s1.v1") == (200, _same(data.memory_item(root, RUN, "s1.v1")))
    assert _api(site, "skills", run=RUN) == (200, _same(data.skills(root, RUN)))
    assert _api(site, "audit", run=RUN) == (200, _same(data.audit(root, RUN, "", 500)))
    assert _api(site, "audit", run=RUN, event="review", limit=0) == (200, _same(data.audit(root, RUN, "review", 0)))
    assert _api(site, "compare", a=RUN, b=OTHER) == (200, _same(data.compare(root, RUN, OTHER)))


def test_the_audit_route_shows_at_most_500_events_unless_asked(site, root):
    _lines(root / RUN / "memory" / "audit.jsonl", [{"event": "e", "n": i} for i in range(502)])
    code, body = _api(site, "audit", run=RUN)
    assert (code, body["total"], len(body["events"]), body["events"][-1]["n"]) == (200, 502, 500, 499)
    assert len(_api(site, "audit", run=RUN, limit=501)[1]["events"]) == 501


def test_unknown_runs_and_samples_are_404_bad_parameters_400_with_one_line(site):
    assert _api(site, "run", id="exp/nothing") == (404, {"error": "not found: exp/nothing"})
    assert _api(site, "sample", run=RUN, pos=9) == (404, {"error": "not found: 9"})
    assert _api(site, "item", run="../..", id="m1") == (404, {"error": "not found: ../.."})
    assert _api(site, "compare", a=RUN, b="x") == (404, {"error": "not found: x"})
    assert _api(site, "run") == (400, {"error": "the request lacks its 'id' parameter"})
    assert _api(site, "compare", a=RUN) == (400, {"error": "the request lacks its 'b' parameter"})
    assert _api(site, "sample", run=RUN, pos="one") == (
        400,
        {"error": "invalid literal for int() with base 10: 'one'"},
    )


def test_a_failing_reader_is_a_500_with_one_line_on_the_page_and_the_console(site, monkeypatch, capsys):
    def broken(root: Path) -> None:
        raise RuntimeError("disk\nfailed")

    monkeypatch.setattr(data, "runs", broken)
    assert _api(site, "runs") == (500, {"error": "RuntimeError: disk failed"})
    assert capsys.readouterr().err == "viewer: /api/runs?: RuntimeError: disk failed\n"

    def nameless(root: Path) -> None:
        raise KeyError

    monkeypatch.setattr(data, "runs", nameless)
    assert _api(site, "runs") == (404, {"error": "not found: "})


def test_the_page_its_scripts_and_the_report_are_served_as_files(site):
    index = (STATIC / "index.html").read_bytes()
    for path in ("/", "/index.html"):
        code, headers, body = _get(site + path)
        assert (code, headers["Content-Type"], body) == (200, "text/html", index)
        assert headers["Content-Length"] == str(len(index)) and headers["Server"].startswith("aecg-bench-viewer")
    code, headers, body = _get(f"{site}/static/app.js")
    assert (code, body) == (200, (STATIC / "app.js").read_bytes()) and "javascript" in headers["Content-Type"]
    assert _get(f"{site}/report/")[2] == b"<p>the report</p>"
    code, headers, body = _get(f"{site}/report/{quote('a table.html')}")
    assert (code, body) == (200, b"<p>a table</p>")
    code, headers, body = _get(f"{site}/report/data.unknownext")
    assert (code, headers["Content-Type"], body) == (200, "application/octet-stream", b"\x00\x01")


@pytest.mark.parametrize(
    "path",
    ["/static/", "/static/nothing.js", "/static/..%2Fdata.py", "/report/figures", "/report/..%2Frun.json", "/report/x"],
)
def test_no_file_outside_the_page_or_report_folders_and_no_folder_is_served(site, path):
    code, _, body = _get(site + path)
    assert (code, json.loads(body)) == (404, {"error": "no such file"})


def test_an_unknown_page_is_a_404_naming_it(site):
    code, _, body = _get(f"{site}/nothing/here")
    assert (code, json.loads(body)) == (404, {"error": "no page /nothing/here"})


def test_the_server_binds_loopback_and_does_not_wait_for_open_connections_on_exit(root):
    srv = serve(root, 0)
    try:
        assert srv.server_address[0] == "127.0.0.1" and srv.daemon_threads is True
    finally:
        srv.server_close()
    assert server._inside(STATIC, "") is None and server._inside(STATIC, "app.js") == STATIC / "app.js"


def test_an_event_kind_that_is_not_a_string_is_counted_by_its_text(tmp_path):
    run = make_run(tmp_path)
    _lines(run / "memory" / "audit.jsonl", [{"event": 3, "position": 0}, {"event": "3", "position": 0}, A1])
    tl = data.timeline(run)
    assert tl["rows"][0]["events"] == {"3": 2, "memory_created": 1}
    assert (tl["event_kinds"], tl["totals"]) == (["3", "memory_created"], {"3": 2, "memory_created": 1})
