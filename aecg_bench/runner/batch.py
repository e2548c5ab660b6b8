"""Run a whole stream: resume, execute in order, record, snapshot, summarise.

Resume is exact for everything that was flushed: the records file is the log
of what the memory method saw, so a resumed run restores the newest memory
snapshot and replays the memory-side effect of every later record (its
rollouts come from the stored trajectories; memory-side LLM calls hit the
cache) before continuing with the first item not done. A kill -9 at any point
loses at most the items in flight (one, or where samples are independent up to
2 x the concurrency: runner/concurrent.py), which are then run again. Records
are always committed in stream order.

One deviation is inherent: an item that failed with an infra error is redone
after the items that followed it, so its memory context includes them.

Only the process holding the run's lock writes anything, and it records how
the run ended: `complete`/`incomplete`, `failed` (with a one-line `error`) when
an error stops it, `interrupted` on Ctrl-C or SIGTERM, when the process exits
from inside the run (submitit requeues a job that reached its time limit by
`sys.exit` from its signal handler), or when its model's endpoint stays down
past the outage window.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from aecg_bench.audit import AuditLog
from aecg_bench.errors import (
    AecgBenchError,
    BudgetExceededError,
    ProviderOutage,
    RunRefused,
    RunStateError,
    io_error,
    one_line,
)
from aecg_bench.llm.usage import UsageMeter
from aecg_bench.results_format import TRAJECTORY_FORMAT
from aecg_bench.runner import concurrent
from aecg_bench.runner.build import RunPlan, environment_facts, load_start_state
from aecg_bench.runner.execute import (
    ItemResult,
    ReplayRollout,
    Services,
    StreamItem,
    apply_item,
    execute_item,
    is_fatal,
    learns,
    rollouts_from_json,
    rollouts_to_json,
)
from aecg_bench.runner.identity import Redactor, config_diff, derive_seed
from aecg_bench.runner.progress import Progress
from aecg_bench.runner.records import RESERVE_BYTES, RunDir, Snapshot, done_positions, latest_by_position
from aecg_bench.runner.snapshots import Cadence, boundary_seqs
from aecg_bench.runner.tracking import Tracker
from aecg_bench.types import DecisionNode, Status

log = logging.getLogger("aecg_bench.run")


def item_seed(plan: RunPlan, item: StreamItem) -> int:
    return derive_seed(plan.config.seed, plan.config.benchmark.name, item.sample.id, item.phase, item.epoch)


def run_plan(
    plan: RunPlan, services: Services, audit: AuditLog, *, on_locked: Callable[[], None] | None = None
) -> dict[str, Any]:
    """Execute (or resume) a run; returns the final run.json header.

    `on_locked` runs once the lock is held (the caller's logging goes to the run's files only
    then). Any error after the header is ours is recorded in run.json before it propagates.
    """
    cfg = plan.config
    redact = Redactor(cfg.key_envs())
    rd = RunDir(plan.run_dir, fsync=cfg.runtime.fsync, redactor=redact, fsync_interval_s=cfg.runtime.fsync_interval_s)
    audit.redact = redact.deep
    try:
        rd.create()
        if on_locked is not None:
            on_locked()
        if not rd.reserved:
            raise _no_room(rd, plan)
        header = _open_header(rd, plan)
        try:
            return _execute(plan, services, audit, rd, redact, header)
        except KeyboardInterrupt:
            _record_end(rd, header, "interrupted", "stopped by a signal (Ctrl-C or SIGTERM); rerun to resume")
            raise
        except SystemExit as exc:  # submitit's handler of a job's time-limit signal exits from inside the run
            _record_end(rd, header, "interrupted", f"the process exited (exit code {exc.code}); rerun to resume")
            raise
        except AecgBenchError as exc:
            # a budget stop is not a failure (a rerun with a larger budget continues), nor is an outage
            _record_end(rd, header, end_status(exc), one_line(exc))
            raise
        except OSError as exc:
            error = io_error(exc)
            _record_end(rd, header, "failed", str(error))
            raise error from None
        except Exception as exc:  # a bug: the run is still not 'running'
            _record_end(rd, header, "failed", one_line(f"{type(exc).__name__}: {exc}"))
            raise
    except OSError as exc:  # before the header was ours: nothing recorded
        raise io_error(exc) from None
    finally:
        audit.close()
        services.benchmark.close()
        rd.release()


def end_status(exc: AecgBenchError) -> str:
    """How a run that stopped on one of the harness's errors is recorded."""
    if isinstance(exc, RunRefused):
        return "refused"
    if isinstance(exc, BudgetExceededError):
        return "stopped"
    return "interrupted" if isinstance(exc, ProviderOutage) else "failed"


def _no_room(rd: RunDir, plan: RunPlan) -> RunStateError:
    """Too little disk to reserve room for the final status: the run does not start; `failed` is
    recorded if a small write still fits (a resumed run keeps its header, with this error)."""
    error = RunStateError(
        f"less than {RESERVE_BYTES >> 10} KiB free for {rd.path}: too little to record how a run ends; "
        "free disk space, then rerun the same command"
    )
    try:
        header = rd.read_header() or plan.header
    except RunStateError:  # damaged: left as it is
        return error
    _record_end(rd, header, "failed", str(error))
    return error


def _record_end(rd: RunDir, header: dict[str, Any], status: str, error: str) -> None:
    """Best effort: the run's outcome in run.json (a full disk uses the reserve)."""
    try:
        rd.write_final_header({**header, "status": status, "error": error, **end_session(header, time.time())})
    except OSError as exc:
        log.error("could not record status %r in %s: %s", status, rd.run_json, exc)


def _execute(
    plan: RunPlan, services: Services, audit: AuditLog, rd: RunDir, redact: Redactor, header: dict[str, Any]
) -> dict[str, Any]:
    cfg = plan.config
    records = rd.records()
    header["sessions"] = [*closed_sessions(header["sessions"][:-1], records), header["sessions"][-1]]
    restored = _restore_state(rd, plan, services, audit, records)
    boundaries = {it.position for it in plan.stream if _phase_ends(plan, it)}
    cadence = Cadence(cfg.protocol.snapshot_every, cfg.runtime.snapshot_bytes_per_record)
    cadence.pinned = boundary_seqs((r["position"] for r in records), boundaries)
    if restored is not None:
        cadence.taken(restored.records_seq, restored.nbytes)
    done = done_positions(records)
    attempts = Counter(r["position"] for r in records)
    todo = [it for it in plan.stream if it.position not in done]
    log.info("run %s: %d items, %d done, %d to run", plan.run_dir, len(plan.stream), len(done), len(todo))
    if records and todo and services.llm.cache.mode == "off":
        log.warning(
            "resuming %s with the LLM cache off: memory-side calls replayed from the stored records are "
            "re-sampled, so the rebuilt memory may differ from the one the earlier items saw "
            "(runtime.cache.mode=read_write keeps resumes exact)",
            plan.run_dir,
        )
    if header.get("resumes"):
        resume = header["resumes"][-1]
        resume["done"] = len(done)
        log.info("resuming %s: found it %s, %d of %d items done", rd.path, resume["found"], len(done), len(plan.stream))
    tracker = Tracker(cfg, header, plan.run_dir, redact)
    progress = Progress(
        total=len(plan.stream),
        done=len(done),
        enabled=cfg.runtime.progress,
        desc=f"{cfg.benchmark.tag}/{cfg.framework.tag}/{cfg.memory.tag} s{cfg.seed}",
    )
    progress.seed_from(latest_by_position(records).values())
    n_records = len(records)
    width = concurrent.width(services, cfg.runtime.concurrent_samples)
    header["sample_concurrency"] = concurrent.describe(plan.stream, services, width)
    rd.write_header(header)
    try:
        for together, group in concurrent.segments(todo, services):
            if together and width > 1 and len(group) > 1:
                executed = _run_together(plan, services, group, width)
            else:
                executed = ((item, None) for item in group)
            for item, done_ahead in executed:
                attempt = attempts[item.position] + 1
                record = _run_item(plan, services, audit, rd, item, attempt, redact, done_ahead)
                n_records += 1
                if item.position in boundaries:
                    cadence.pinned.add(n_records)
                if cadence.due(n_records) or item.position in boundaries:
                    _snapshot(rd, services, audit, cadence, n_records, cfg.runtime.snapshot_keep)
                progress.update(record)
                tracker.log(record)
        if todo and cadence.last_seq != n_records:
            _snapshot(rd, services, audit, cadence, n_records, cfg.runtime.snapshot_keep)
        final = summarise(rd, plan, header)
    except BaseException:
        tracker.abort()
        raise
    finally:
        progress.close()
    tracker.finish(final)
    return final


def _open_header(rd: RunDir, plan: RunPlan) -> dict[str, Any]:
    """Claim the run: a new header, or the existing one marked running again. A refusal (other
    configuration) or a damaged run.json raises before anything is written."""
    existing = rd.read_header()
    now = time.time()
    if existing is None:
        header = {**plan.header, "started_at": now, "sessions": [[now, None]]}
        rd.write_header(header)
        return header
    if existing["identity"].get("hash") != plan.header["identity"]["hash"]:
        diff = config_diff(existing["identity"], plan.header["identity"])
        if not plan.config.runtime.allow_config_change:
            raise RunRefused(
                f"{rd.path} holds a run with a different configuration; rerun with "
                f"runtime.allow_config_change=true to continue it anyway, or change experiment_name.\n{diff}"
            )
        log.warning("continuing %s under a changed configuration:\n%s", rd.path, diff)
        existing.setdefault("config_changes", []).append({"at": time.time(), "diff": diff})
    existing.setdefault("resumes", []).append(
        {"at": time.time(), "git_commit": environment_facts()["git_commit"], "found": existing.get("status")}
    )
    existing.pop("error", None)
    existing["status"] = "running"
    # runs from before spans were recorded have one: started_at to finished_at
    earlier = existing.get("sessions") or [[existing["started_at"], existing.get("finished_at")]]
    existing["sessions"] = [*earlier, [now, None]]
    rd.write_header(existing)
    return existing


def closed_sessions(sessions: list[list[Any]], records: list[dict[str, Any]]) -> list[list[float]]:
    """Earlier active spans [start, end], each closed: a span a kill -9 left open ends at its last
    record's end (the work it kept), or where it started."""
    out = []
    for start, end in sessions:
        if end is None:
            ends = [r["started_at"] + r.get("seconds", 0.0) for r in records if r.get("started_at", 0) >= start]
            end = max([start, *ends])
        out.append([start, end])
    return out


def end_session(header: dict[str, Any], now: float) -> dict[str, Any]:
    """finished_at, the spans with the current one closed at `now`, and `active_seconds`: their sum, the
    run's duration however often it was paused and resumed (finished_at - started_at spans the pauses)."""
    sessions = [list(s) for s in header.get("sessions") or [[header.get("started_at", now), None]]]
    if sessions[-1][1] is None:
        sessions[-1][1] = now
    return {"finished_at": now, "sessions": sessions, "active_seconds": round(sum(e - s for s, e in sessions), 3)}


def _snapshot(rd: RunDir, services: Services, audit: AuditLog, cadence: Cadence, n_records: int, keep: int) -> None:
    """Write a snapshot after `n_records` records, then delete the ones no longer kept (runner/snapshots.py)."""
    snap = rd.write_snapshot(n_records, audit.seq, _state(services))
    cadence.taken(n_records, snap.nbytes)
    rd.prune_snapshots(keep, cadence.pinned)


def _state(services: Services) -> dict[str, Any]:
    """What a snapshot holds: the memory's state and the framework's cross-task state."""
    return {"memory": services.memory.state_dict(), "framework": services.framework.state_dict()}


def _restore_state(
    rd: RunDir, plan: RunPlan, services: Services, audit: AuditLog, records: list[dict[str, Any]]
) -> Snapshot | None:
    """Newest snapshot, then the state-changing part of every later record, in record order; returns
    the snapshot restored (None: replayed from the start).

    Records that ended in an infra error are not replayed: they are redone. A snapshot that
    cannot be read or loaded is moved aside and the previous one (or the start) is used.
    """
    snap = _load_snapshot(rd, services, len(records))
    start = 0
    if snap is not None:
        start = snap.records_seq
    moved = audit.set_aside_damaged()
    if moved:
        log.warning("set %d damaged line(s) of %s aside in %s.damaged", moved, audit.path, audit.path)
    audit.truncate_to(snap.audit_seq if snap is not None else 0)
    if snap is None:
        start_state = plan.config.protocol.start_state
        if start_state is not None:  # warmup_snapshot protocol: every variant starts from the same state
            state = load_start_state(start_state)
            services.memory.load_state_dict(state["memory"])
            services.framework.load_state_dict(state["framework"])
    by_position = {it.position: it for it in plan.stream}
    replayed = 0
    for rec in records[start:]:
        item = by_position.get(rec["position"])
        if item is None:
            continue
        if rec["status"] != Status.INFRA_ERROR:
            stored = rollouts_from_json(rd.read_trajectory(rec["position"], rec["attempt"])["rollouts"])
            _bind_memory_llm(services, audit, item, rec["seed"], UsageMeter())
            replay = ReplayRollout(services.memory, stored)
            apply_item(services.memory, services.framework, item, replay, services.protocol)
            replayed += 1
        if rec.get("maintain_round") is not None:
            services.memory.maintain(rec["maintain_round"])
    audit.discard_cut()  # the replay has recorded the cut events again
    if replayed:
        log.info(
            "replayed the state-changing part of %d records after snapshot %s",
            replayed,
            snap.path.name if snap else "none",
        )
    return snap


def _load_snapshot(rd: RunDir, services: Services, n_records: int) -> Snapshot | None:
    """Load the newest usable snapshot into memory and framework; None means replay from the start."""
    initial = _state(services)  # a fresh build's state, to undo a half-loaded bad snapshot
    for path in rd.snapshots(n_records):
        try:
            snap = rd.read_snapshot(path)
            services.memory.load_state_dict(snap.state["memory"])
            services.framework.load_state_dict(snap.state["framework"])
            return snap
        except (RunStateError, KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            services.memory.load_state_dict(initial["memory"])
            services.framework.load_state_dict(initial["framework"])
            dest = rd.set_aside(path)
            log.warning("%s cannot be loaded (%s); moved to %s, falling back", path, one_line(exc, 200), dest.name)
    return None


def _bind_memory_llm(services: Services, audit: AuditLog, item: StreamItem, seed: int, meter: UsageMeter) -> None:
    """Memory-side calls of this item: its seed (so cache keys replay) and its usage meter."""
    services.memory.services.llm = services.llm.with_context(seed=seed, meter=meter, scope="memory")
    audit.context = {"position": item.position, "sample_id": item.sample.id, "phase": item.phase}


def _run_item(
    plan: RunPlan,
    services: Services,
    audit: AuditLog,
    rd: RunDir,
    item: StreamItem,
    attempt: int,
    redact: Redactor,
    ahead: concurrent.Executed | None = None,
) -> dict[str, Any]:
    """Run one item (or take the result a worker ran ahead: `_run_together`) and commit it."""
    seed = item_seed(plan, item)
    meter = UsageMeter() if ahead is None else ahead.meter
    _bind_memory_llm(services, audit, item, seed, meter)
    if ahead is None:
        started = time.time()
        result = execute_item(services, item, seed, services.llm.with_context(seed=seed, meter=meter))
    else:
        started, result = ahead.started, ahead.result
        for event in ahead.events:  # where a sequential run would have recorded them
            audit.record(**event)
    return _commit(plan, services, rd, item, attempt, seed, result, meter, started, redact)


def _run_together(
    plan: RunPlan, services: Services, items: list[StreamItem], width: int
) -> Iterator[tuple[StreamItem, concurrent.Executed]]:
    """Independent items (runner/concurrent.py) run `width` at once; handed back in stream order."""
    frozen = json.dumps(_state(services))

    def run(worker: Services, item: StreamItem) -> concurrent.Executed:
        context = {"position": item.position, "sample_id": item.sample.id, "phase": item.phase}
        return concurrent.execute_on(worker, services, item, item_seed(plan, item), context)

    return iter(concurrent.Ahead(items, width, lambda: concurrent.replica(plan.config, services, frozen), run))


def _commit(
    plan: RunPlan,
    services: Services,
    rd: RunDir,
    item: StreamItem,
    attempt: int,
    seed: int,
    result: ItemResult,
    meter: UsageMeter,
    started: float,
    redact: Redactor,
) -> dict[str, Any]:
    """After an item ran: maintenance when due, then its trajectory, then its record (the commit point)."""
    maintain_round, maintain_error = None, ""
    maintain_meter = UsageMeter()  # a round's calls, also in the item's usage: the cost model prices rounds apart
    every = plan.config.protocol.maintain_every
    if result.status != Status.INFRA_ERROR and learns(item, services.protocol) and (item.position + 1) % every == 0:
        maintain_round = (item.position + 1) // every
        memory_llm = services.memory.services.llm
        services.memory.services.llm = memory_llm.with_context(meter=maintain_meter)
        try:
            services.memory.maintain(maintain_round)
        except Exception as exc:  # a failed consolidation must not lose the sample
            if is_fatal(exc):
                raise
            maintain_round, maintain_error = None, f"maintain failed: {type(exc).__name__}: {exc}"
            log.warning("%s", maintain_error)
        finally:
            services.memory.services.llm = memory_llm
    rd.write_trajectory(
        item.position, attempt, {"format": TRAJECTORY_FORMAT, "rollouts": rollouts_to_json(result.rollouts)}
    )
    record = redact.deep(
        {
            **make_record(item, attempt, seed, result, meter, services, started, maintain_round, maintain_error),
            "maintain_usage": maintain_meter.to_dict(),
        }
    )
    rd.append_record(record)
    return record


def make_record(
    item: StreamItem,
    attempt: int,
    seed: int,
    result: ItemResult,
    meter: UsageMeter,
    services: Services,
    started: float,
    maintain_round: int | None,
    maintain_error: str,
) -> dict[str, Any]:
    score = result.final[1] if result.final else None
    traj = result.final[0].trajectory if result.final else None
    outcome = result.final[0].outcome if result.final else None
    return {
        "position": item.position,
        "attempt": attempt,
        "sample_id": item.sample.id,
        "phase": item.phase,
        "epoch": item.epoch,
        "task_type": item.sample.task.task_type,
        "difficulty": item.sample.task.metadata.get("difficulty"),
        "seed": seed,
        "status": str(result.status),
        "success": None if score is None else bool(score.success),
        "value": None if score is None else float(score.value),
        "metrics": {} if score is None else dict(score.metrics),
        "label": None if outcome is None else {"success": outcome.success, "source": outcome.source},
        "error": result.error[:4000],
        "steps": len(traj.steps) if traj else 0,
        "step_limit": min(c for c in (item.sample.task.max_steps, services.protocol.max_steps) if c),
        "invalid_actions": traj.invalid_actions if traj else 0,
        "decisions": len(traj.decisions) if traj else 0,
        "decisions_by": decision_counts(traj.decisions if traj else []),
        "recalled_memory_ids": traj.recalled_memory_ids() if traj else [],
        "n_rollouts": len(result.rollouts),
        "learned": result.learned,
        "maintain_round": maintain_round,
        "maintain_error": maintain_error,
        "usage": meter.to_dict(),
        "memory_stats": services.memory.stats(),
        "started_at": started,
        "seconds": round(result.seconds, 4),
    }


def decision_counts(decisions: Sequence[DecisionNode]) -> dict[str, dict[str, int]]:
    """How many of a trajectory's decisions each level, agent and role made (AECG's scope results
    depend on how many decisions each coordination level makes)."""
    return {key: dict(Counter(getattr(d, key) for d in decisions)) for key in ("level", "agent", "role")}


def decision_shares(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Decisions per level, agent and role summed over records, with each one's share of the total."""
    totals: dict[str, Counter[str]] = {key: Counter() for key in ("level", "agent", "role")}
    for r in records:
        for key, counts in r.get("decisions_by", {}).items():
            totals.setdefault(key, Counter()).update(counts)
    n = sum(totals["level"].values())
    out: dict[str, Any] = {"total": n}
    for key, counts in totals.items():
        out[f"by_{key}"] = dict(sorted(counts.items()))
        out[f"share_by_{key}"] = {k: round(v / n, 4) for k, v in sorted(counts.items())} if n else {}
    return out


def _phase_ends(plan: RunPlan, item: StreamItem) -> bool:
    """The item ends the stream, a protocol phase or a build epoch: a snapshot is taken and kept."""
    nxt = item.position + 1
    return nxt >= len(plan.stream) or (plan.stream[nxt].phase, plan.stream[nxt].epoch) != (item.phase, item.epoch)


def summarise(rd: RunDir, plan: RunPlan, header: dict[str, Any]) -> dict[str, Any]:
    """Final counts, usage and cost from the latest record of each position."""
    latest = latest_by_position(rd.records())
    statuses = Counter(r["status"] for r in latest.values())
    evals = [r for r in latest.values() if r["phase"] == "eval"]
    total = UsageMeter()
    for r in latest.values():
        total.load_state_dict([{"role": role, "model": "-", **row} for role, row in r["usage"]["by_role"].items()])
    totals = total.total()
    missing = len(plan.stream) - len(latest)
    complete = missing == 0 and statuses.get(Status.INFRA_ERROR, 0) == 0
    ok_evals = [r for r in evals if r["status"] != Status.INFRA_ERROR]
    final = {
        **header,
        "status": "complete" if complete else "incomplete",
        **end_session(header, time.time()),
        "counts": {"items": len(plan.stream), "recorded": len(latest), "missing": missing, **statuses},
        "eval": {
            "n": len(evals),
            "scored": len(ok_evals),
            "success_rate": (sum(bool(r["success"]) for r in ok_evals) / len(ok_evals)) if ok_evals else None,
            "mean_value": (sum(r["value"] or 0.0 for r in ok_evals) / len(ok_evals)) if ok_evals else None,
        },
        "usage": {"total": totals, "by_role": total.by_role()},
        "decisions": decision_shares(list(latest.values())),
        "cost": totals["cost"],
        "cache_hit_rate": (totals["cache_hits"] / totals["calls"]) if totals["calls"] else None,
        "failures": {
            "infra_error": statuses.get(Status.INFRA_ERROR, 0),
            "model_error": statuses.get(Status.MODEL_ERROR, 0),
            "limit_exceeded": statuses.get(Status.LIMIT_EXCEEDED, 0),
            "provider_errors": totals["errors"],
            "retries": totals["retries"],
        },
    }
    rd.write_final_header(final)
    return final
