"""Expected outputs and reference times: the canonical solution run once per task, cached on disk.

As EvalPlus's `get_groundtruth`: the code `prompt + canonical_solution` is
called on every base and plus input (each input a fresh copy), its outputs are
the expected outputs (reduced to `output is not None` for the "not None"
tasks) and the time of each call is the reference from which the candidate's
per-input time limits are scaled. Differences: the canonical code runs in the
sandbox too (same interpreter setup as the candidates, PYTHONHASHSEED fixed),
and the reference time is the call's CPU time rather than wall time, so a busy
machine does not inflate it.

Running all 378 canonical solutions takes minutes, so each task's result is
written to `<cache_dir>/groundtruth-<data sha256[:16]>-v<GT_VERSION>/<task>.json`
(atomically: concurrent runs may race, the last identical write wins) and
reused by every later run on that data file.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aecg_bench.benchmarks.mbpp_plus.data import Problem
from aecg_bench.benchmarks.mbpp_plus.oracle import OUTPUT_NOT_NONE_TASKS
from aecg_bench.errors import InfraError
from aecg_bench.sandbox import Limits, codec
from aecg_bench.sandbox.functions import run_calls
from aecg_bench.sandbox.limits import MiB

GT_VERSION = "1"  # bump when the way expected outputs or times are computed changes
REFERENCE_CPU_LIMIT_S = 30.0  # per input; a canonical call is never expected to come close
REFERENCE_WALL_LIMIT_S = 600.0
REFERENCE_LIMITS = Limits(
    wall_seconds=REFERENCE_WALL_LIMIT_S,
    cpu_seconds=int(REFERENCE_WALL_LIMIT_S),
    memory_bytes=4096 * MiB,
    max_output_bytes=512 * MiB,
)


@dataclass(frozen=True)
class Expected:
    """One test set (base or plus) of one task."""

    outputs: list[Any]
    seconds: list[float]  # reference CPU time of each canonical call
    errors: list[str]  # "" where the canonical call returned; else why it did not

    def to_json(self) -> dict[str, Any]:
        return {"outputs": [codec.encode(o) for o in self.outputs], "seconds": self.seconds, "errors": self.errors}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Expected:
        return cls([codec.decode(o) for o in raw["outputs"]], list(raw["seconds"]), list(raw["errors"]))


@dataclass(frozen=True)
class GroundTruth:
    base: Expected
    plus: Expected


def compute_expected(problem: Problem, inputs: list[list[Any]], limits: Limits = REFERENCE_LIMITS) -> Expected:
    """Run the canonical solution on `inputs` in the sandbox (no guard, generous limits)."""
    report = run_calls(
        problem.prompt + problem.canonical_solution,
        problem.entry_point,
        inputs,
        [REFERENCE_CPU_LIMIT_S] * len(inputs),
        limits,
        guard=False,
    )
    box = report.sandbox
    if box is None or box.error or not report.loaded or len(report.outcomes) != len(inputs):
        why = (box.error if box else "") or report.load_error or report.protocol_error or _ended(box)
        raise InfraError(f"canonical solution of {problem.task_id} did not run to the end: {why}")
    not_none = problem.entry_point in OUTPUT_NOT_NONE_TASKS
    outputs = [(o.value is not None if not_none else o.value) if o.ok else None for o in report.outcomes]
    return Expected(
        outputs=outputs,
        seconds=[o.cpu_seconds for o in report.outcomes],
        errors=[o.error if not o.ok else "" for o in report.outcomes],
    )


def _ended(box: Any) -> str:
    if box is None:
        return "no sandbox result"
    if box.timed_out:
        return f"wall limit of {REFERENCE_WALL_LIMIT_S:.0f}s reached"
    return f"exit code {box.exit_code}, signal {box.signal}, stderr {box.stderr[-300:]!r}"


class GroundTruthStore:
    """Expected outputs per task: memory, then disk, then computed (and written to disk)."""

    def __init__(self, cache_dir: Path | None, data_sha256: str) -> None:
        self.dir = cache_dir / f"groundtruth-{data_sha256[:16]}-v{GT_VERSION}" if cache_dir else None
        self.data_sha256 = data_sha256
        self._memo: dict[str, GroundTruth] = {}
        self._lock = threading.Lock()

    def _path(self, task_id: str) -> Path | None:
        return self.dir / f"{task_id.replace('/', '_')}.json" if self.dir else None

    def get(self, problem: Problem) -> GroundTruth:
        with self._lock:
            if problem.task_id in self._memo:
                return self._memo[problem.task_id]
        truth = self._load(problem)
        if truth is None:
            truth = GroundTruth(
                base=compute_expected(problem, problem.base_inputs),
                plus=compute_expected(problem, problem.plus_inputs),
            )
            self._save(problem.task_id, truth)
        with self._lock:
            self._memo[problem.task_id] = truth
        return truth

    def _load(self, problem: Problem) -> GroundTruth | None:
        """The cached entry, if it is for this data file and this task's input sets (else recomputed)."""
        task_id = problem.task_id
        path = self._path(task_id)
        if path is None or not path.exists():
            return None
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("data_sha256") != self.data_sha256 or raw.get("task_id") != task_id:
                return None
            truth = GroundTruth(Expected.from_json(raw["base"]), Expected.from_json(raw["plus"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged cache entry is recomputed, never trusted
        sizes = [(len(e.outputs), len(e.seconds), len(e.errors)) for e in (truth.base, truth.plus)]
        if sizes != [(len(inputs),) * 3 for inputs in (problem.base_inputs, problem.plus_inputs)]:
            return None  # written for other input sets (e.g. Mbpp/793's plus set before it was left empty)
        return truth

    def _save(self, task_id: str, truth: GroundTruth) -> None:
        path = self._path(task_id)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "task_id": task_id,
            "data_sha256": self.data_sha256,
            "version": GT_VERSION,
            "base": truth.base.to_json(),
            "plus": truth.plus.to_json(),
        }
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as tmp:
            json.dump(record, tmp, allow_nan=False)
        os.replace(tmp.name, path)
