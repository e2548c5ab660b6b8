"""What the run viewer shows, read from a results folder as the runner wrote it (docs/infra/viewer.md).

Pure readers over files: every function takes the results root and a run's id (its path relative to
the root) and returns plain JSON-able dicts. Nothing here writes, and nothing assumes a run has
finished: a run in progress shows what it has recorded. A file that cannot be read (a garbled line,
a missing snapshot or trajectory) becomes an entry in `problems`, never an exception, so the page
says what it could not read.

Reads are memoised by (path, size, mtime), so a paper-sized folder (hundreds of runs, tens of
thousands of samples) costs one parse per changed file.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from aecg_bench.results_format import RUN_JSON, SAMPLES, find_runs, size_label, snapshot_files

TRAJECTORIES = "trajectories"
AUDIT = Path("memory") / "audit.jsonl"
# Audit keys that name the memory item an event is about, across methods.
ITEM_KEYS = ("memory", "memory_id", "skill", "item", "id", "child", "parent", "new", "old", "insight", "card")
RECORD_FIELDS = (
    "position",
    "attempt",
    "sample_id",
    "phase",
    "epoch",
    "task_type",
    "status",
    "success",
    "value",
    "steps",
    "decisions",
    "recalled_memory_ids",
    "seconds",
    "error",
)


class _Memo:
    """Parsed files keyed by (path, parser) and stamped with (size, mtime_ns): a file is parsed again
    only when it changed. Parsers are module-level functions, so each has one key per file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[str, Callable[[Path], Any]], tuple[tuple[int, int], Any]] = {}

    def get(self, path: Path, parse: Callable[[Path], Any]) -> Any:
        try:
            st = path.stat()
        except OSError:
            return parse(path)
        stamp = (st.st_size, st.st_mtime_ns)
        key = (str(path), parse)
        with self._lock:
            hit = self._items.get(key)
        if hit and hit[0] == stamp:
            return hit[1]
        value = parse(path)
        with self._lock:
            self._items[key] = (stamp, value)
        return value


MEMO = _Memo()


def _jsonl(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every readable line, and one problem per line that is not a JSON object (a torn last line of a
    run in progress is not a problem)."""
    if not path.exists():
        return [], []
    rows, problems = [], []
    lines = path.read_bytes().split(b"\n")
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
            if isinstance(obj, dict):
                rows.append(obj)
                continue
        except ValueError:
            pass
        if i < len(lines):  # the last element has no newline: a write in progress
            problems.append(f"{path.name} line {i} is not a JSON record (skipped)")
    return rows, problems


def _json(path: Path) -> tuple[Any, str | None]:
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        return json.loads(raw), None
    except FileNotFoundError:
        return None, f"{path.name} is missing"
    except (OSError, ValueError, EOFError) as exc:
        return None, f"{path.name} cannot be read ({type(exc).__name__})"


def run_path(root: Path, run_id: str) -> Path:
    """The run folder for an id, refusing ids that leave the results root ("." when the root is a run)."""
    base, path = root.resolve(), (root / run_id).resolve()
    if (path != base and base not in path.parents) or not (path / RUN_JSON).exists():
        raise KeyError(run_id)
    return path


def _latest(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    rows, problems = _jsonl(path)
    latest: dict[int, dict[str, Any]] = {}
    for rec in rows:
        pos = rec.get("position")
        if not isinstance(pos, int):
            problems.append(f"{path.name}: a record without a position (skipped)")
            continue
        if pos not in latest or rec.get("attempt", 0) >= latest[pos].get("attempt", 0):
            latest[pos] = rec
    return [latest[p] for p in sorted(latest)], problems


def latest_records(run_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The last attempt of every stream position, in stream order (of equal attempts, the later line)."""
    return MEMO.get(run_dir / SAMPLES, _latest)


def _header(run_dir: Path) -> tuple[dict[str, Any], str | None]:
    value, problem = MEMO.get(run_dir / RUN_JSON, _json)
    if problem or isinstance(value, dict):
        return value or {}, problem
    return {}, f"{RUN_JSON} is not a JSON object"


def _preset(header: dict[str, Any]) -> str:
    protocol = header.get("protocol")
    return size_label(protocol) if isinstance(protocol, dict) else "?"


FINAL = ("complete", "incomplete", "failed", "interrupted")


def run_summary(root: Path, run_dir: Path) -> dict[str, Any]:
    """One row of the runs list: labels, status, completeness, cost. A finished run's header has its
    counts; a run in progress (or a header without them) is counted from its records."""
    header, problem = _header(run_dir)
    labels = header.get("labels") or {}
    status = header.get("status", "unreadable" if problem else "?")
    counts, ev = header.get("counts") or {}, header.get("eval") or {}
    problems: list[str] = []
    if status in FINAL and "recorded" in counts and "success_rate" in ev:
        done, rate, cost = counts["recorded"], ev["success_rate"], header.get("cost")
    else:
        records, problems = latest_records(run_dir)
        scored = [r for r in records if r.get("phase") == "eval" and r.get("success") is not None]
        done = len(records)
        rate = (sum(bool(r["success"]) for r in scored) / len(scored)) if scored else None
        cost = sum(float(((r.get("usage") or {}).get("total") or {}).get("cost") or 0.0) for r in records)
    return {
        "id": str(run_dir.relative_to(root)),
        **{k: labels.get(k) for k in ("experiment", "benchmark", "framework", "memory", "model", "seed")},
        "preset": _preset(header),
        "status": status,
        "n_items": header.get("n_items"),
        "done": done,
        "success_rate": rate,
        "cost": cost,
        "problems": ([f"run.json: {problem}"] if problem else []) + problems,
    }


def runs(root: Path) -> list[dict[str, Any]]:
    """Every run under the root (a folder holding run.json), in path order."""
    return [run_summary(root, d) for d in find_runs(root)]


def audit_events(run_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    return MEMO.get(run_dir / AUDIT, _jsonl)


def _item_ids(event: dict[str, Any]) -> Iterator[str]:
    for key in ITEM_KEYS:
        value = event.get(key)
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, str))


def timeline(run_dir: Path) -> dict[str, Any]:
    """Memory over the stream: per position, the method's stats and the audit events by kind."""
    records, problems = latest_records(run_dir)
    events, audit_problems = audit_events(run_dir)
    by_position: dict[int, Counter[str]] = {}
    for e in events:
        pos = e.get("position")
        if isinstance(pos, int):
            by_position.setdefault(pos, Counter())[str(e.get("event", "?"))] += 1
    kinds = sorted({k for c in by_position.values() for k in c})
    stats_keys = sorted({k for r in records for k in (r.get("memory_stats") or {})})
    rows = [
        {
            "position": r["position"],
            "sample_id": r.get("sample_id"),
            "success": r.get("success"),
            "stats": r.get("memory_stats") or {},
            "events": dict(by_position.get(r["position"], {})),
        }
        for r in records
    ]
    return {
        "rows": rows,
        "event_kinds": kinds,
        "stats_keys": stats_keys,
        "totals": dict(Counter(str(e.get("event", "?")) for e in events)),
        "problems": problems + audit_problems,
    }


def _snapshot_state(run_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The memory state of the latest snapshot (plain or gzipped; not the .tmp of a snapshot being written,
    nor a .damaged one the runner set aside)."""
    snaps = snapshot_files(run_dir / "memory")
    if not snaps:
        return None, "no memory snapshot yet"
    latest = snaps[-1][1]
    value, problem = MEMO.get(latest, _json)
    if problem:
        return None, problem
    state = value.get("state") if isinstance(value, dict) else None
    if not isinstance(state, dict):
        return None, f"{latest.name} holds no memory state"
    return state.get("memory"), None


def _find_in_state(state: Any, item_id: str) -> dict[str, Any] | None:
    """The object in a memory state whose `id` is item_id (AECG's skills and memories, ...)."""
    stack = [state]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("id") == item_id:
                return node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def _trajectory(run_dir: Path, record: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    pos, attempt = record["position"], record.get("attempt", 1)
    for name in (f"{pos:06d}-a{attempt}.json.gz", f"{pos:06d}-a{attempt}.json"):
        path = run_dir / TRAJECTORIES / name
        if path.exists():
            return MEMO.get(path, _json)
    return None, f"trajectory of position {pos} (attempt {attempt}) is missing"


def _origins(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for e in MEMO.get(path, _jsonl)[0]:
        for item_id in _item_ids(e):
            out.setdefault(item_id, e)
    return out


def item_origins(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Memory item id -> the audit event that first named it (its creation: position, sample, text)."""
    return MEMO.get(run_dir / AUDIT, _origins)


def sample(root: Path, run_id: str, position: int) -> dict[str, Any]:
    """A sample: its record, every rollout's decisions and steps, and what memory put in each prompt."""
    run_dir = run_path(root, run_id)
    records, problems = latest_records(run_dir)
    record = next((r for r in records if r["position"] == position), None)
    if record is None:
        raise KeyError(position)
    traj, problem = _trajectory(run_dir, record)
    problems = [*problems, *([problem] if problem else [])]
    origins = item_origins(run_dir)
    recalled: dict[str, Any] = {}
    for rollout in (traj or {}).get("rollouts", []):
        recalled.update(rollout.get("recalled_items") or {})
    items = {}
    for item_id in record.get("recalled_memory_ids") or []:
        origin = origins.get(item_id, {})
        items[item_id] = {
            "id": item_id,
            "text": (recalled.get(item_id) or {}).get("text") or origin.get("text"),
            "kind": (recalled.get(item_id) or {}).get("kind"),
            "created_by": _created_by(origin),
        }
    return {
        "run": run_id,
        "record": {k: record.get(k) for k in RECORD_FIELDS}
        | {"metrics": record.get("metrics"), "usage": record.get("usage")},
        "rollouts": (traj or {}).get("rollouts", []),
        "items": items,
        "problems": problems,
    }


def _created_by(origin: dict[str, Any]) -> dict[str, Any] | None:
    if not origin:
        return None
    return {"event": origin.get("event"), "position": origin.get("position"), "sample_id": origin.get("sample_id")}


def memory_item(root: Path, run_id: str, item_id: str) -> dict[str, Any]:
    """A memory item: where it came from, every audit event about it, the samples that recalled it,
    and its latest state in the snapshot (AECG's skill with its beliefs, ...)."""
    run_dir = run_path(root, run_id)
    events, problems = audit_events(run_dir)
    about = [e for e in events if item_id in set(_item_ids(e))]
    records, record_problems = latest_records(run_dir)
    used_by = [
        {"position": r["position"], "sample_id": r.get("sample_id"), "success": r.get("success")}
        for r in records
        if item_id in (r.get("recalled_memory_ids") or [])
    ]
    state, snap_problem = _snapshot_state(run_dir)
    found = _find_in_state(state, item_id)
    origin = about[0] if about else None
    return {
        "run": run_id,
        "id": item_id,
        "created_by": _created_by(origin or {}),
        "text": next((e["text"] for e in about if isinstance(e.get("text"), str)), None),
        "events": about,
        "used_by": used_by,
        "state": found,
        "problems": problems + record_problems + ([snap_problem] if snap_problem else []),
    }


def skills(root: Path, run_id: str) -> dict[str, Any]:
    """AECG's skills in the latest snapshot: scope, status, uses, fast and slow reliability (Beta means)."""
    run_dir = run_path(root, run_id)
    state, problem = _snapshot_state(run_dir)
    store = (state or {}).get("store") or {}
    rows = []
    for skill in store.get("skills") or []:
        belief = skill.get("belief") or {}
        rows.append(
            {
                "id": skill.get("id"),
                "level": skill.get("level"),
                "status": skill.get("status"),
                "uses": skill.get("uses"),
                "version": skill.get("version"),
                "parent": skill.get("parent"),
                "reviewed_at": skill.get("reviewed_at"),
                "fast": _beta_mean(belief.get("fast")),
                "slow": _beta_mean(belief.get("slow")),
                "name": ((skill.get("content") or {}).get("name")),
            }
        )
    return {"run": run_id, "skills": rows, "problems": [problem] if problem else []}


def _beta_mean(params: Any) -> float | None:
    if not isinstance(params, dict):
        return None
    a, b = params.get("alpha"), params.get("beta")
    return round(a / (a + b), 4) if isinstance(a, int | float) and isinstance(b, int | float) and a + b else None


AUDIT_LIMIT = 500  # events a page shows unless asked for more


def audit(root: Path, run_id: str, event: str, limit: int) -> dict[str, Any]:
    """A run's audit log, or one kind of event ("" for all): every method's stores, retrievals, reviews,
    repairs, distillations, verdicts and routings as it logged them (at most `limit`, in order)."""
    events, problems = audit_events(run_path(root, run_id))
    chosen = [e for e in events if not event or e.get("event") == event]
    return {"run": run_id, "event": event, "total": len(chosen), "events": chosen[:limit], "problems": problems}


def run_detail(root: Path, run_id: str) -> dict[str, Any]:
    """A run's header facts, its samples (one line each) and its memory timeline."""
    run_dir = run_path(root, run_id)
    header, problem = _header(run_dir)
    records, problems = latest_records(run_dir)
    samples = [
        {
            "position": r["position"],
            "sample_id": r.get("sample_id"),
            "phase": r.get("phase"),
            "status": r.get("status"),
            "success": r.get("success"),
            "value": r.get("value"),
            "steps": r.get("steps"),
            "n_recalled": len(r.get("recalled_memory_ids") or []),
            "seconds": r.get("seconds"),
        }
        for r in records
    ]
    return {
        "summary": run_summary(root, run_dir),
        "header": {k: header.get(k) for k in ("labels", "protocol", "roles", "usage", "eval", "counts", "error")},
        "samples": samples,
        "timeline": timeline(run_dir),
        "has_skills": bool(((_snapshot_state(run_dir)[0] or {}).get("store") or {}).get("skills")),
        "problems": ([f"run.json: {problem}"] if problem else []) + problems,
    }


def compare(root: Path, run_a: str, run_b: str) -> dict[str, Any]:
    """Two runs on the same samples: which flipped, and what memory each recalled there."""
    recs = {}
    problems: list[str] = []
    for key, run_id in (("a", run_a), ("b", run_b)):
        records, p = latest_records(run_path(root, run_id))
        recs[key] = {(r.get("phase"), r.get("sample_id")): r for r in records}
        problems += p
    rows = []
    for key in [k for k in recs["a"] if k in recs["b"]]:
        a, b = recs["a"][key], recs["b"][key]
        flip = "" if a.get("success") == b.get("success") else ("gained" if b.get("success") else "lost")
        rows.append(
            {
                "phase": key[0],
                "sample_id": key[1],
                "a": {"position": a["position"], "success": a.get("success"), "recalled": a.get("recalled_memory_ids")},
                "b": {"position": b["position"], "success": b.get("success"), "recalled": b.get("recalled_memory_ids")},
                "flip": flip,
            }
        )
    only = len(recs["a"]) + len(recs["b"]) - 2 * len(rows)
    return {
        "a": run_a,
        "b": run_b,
        "rows": rows,
        "flipped": {"gained": sum(r["flip"] == "gained" for r in rows), "lost": sum(r["flip"] == "lost" for r in rows)},
        "unpaired": only,
        "problems": problems,
    }
