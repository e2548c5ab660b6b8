"""Call a function defined by untrusted code on a list of inputs, inside the sandbox.

`run_calls(code, entry_point, inputs, time_limits, limits)` ships
`calls_program.py` (and the codec it needs) into the sandbox and returns each
input's outcome: the decoded output, or the error / time-out. Comparing
outputs with expected values is the caller's job and happens here, in the
parent, as the outcomes stream in; the caller's `on_outcome` can stop the run
early (EvalPlus stops at the first failing input by default).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aecg_bench.sandbox import codec
from aecg_bench.sandbox.limits import Limits
from aecg_bench.sandbox.runner import SandboxResult, run_python

_HERE = Path(__file__).resolve().parent
PROGRAM = (_HERE / "calls_program.py").read_text(encoding="utf-8")
MODULES = {"sandbox_codec": (_HERE / "codec.py").read_text(encoding="utf-8")}


@dataclass(frozen=True)
class CallOutcome:
    index: int
    ok: bool
    value: Any = None  # the decoded return value when ok
    error: str = ""
    timed_out: bool = False  # the per-input CPU limit was hit
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0


@dataclass
class CallReport:
    """Outcomes in input order (possibly fewer than inputs if the run ended early)."""

    outcomes: list[CallOutcome] = field(default_factory=list)
    loaded: bool = False  # the code ran and defined a callable entry point
    load_error: str = ""
    finished: bool = False  # every input was called and the program ended normally
    sandbox: SandboxResult | None = None
    protocol_error: str = ""  # the harness failed, or a line was not a valid event


def run_calls(
    code: str,
    entry_point: str,
    inputs: Sequence[Sequence[Any]],
    time_limits: Sequence[float],
    limits: Limits,
    *,
    guard: bool = True,
    load_seconds: float = 10.0,
    on_outcome: Callable[[CallOutcome], bool] | None = None,
) -> CallReport:
    """Run `entry_point(*args)` for each args in `inputs`; `on_outcome` returning True stops the run."""
    if len(time_limits) != len(inputs):
        raise ValueError(f"{len(inputs)} inputs but {len(time_limits)} time limits")
    job = {
        "code": code,
        "entry_point": entry_point,
        "inputs": [codec.encode(list(args)) for args in inputs],
        "time_limits": [float(t) for t in time_limits],
        "guard": guard,
        "load_seconds": float(load_seconds),
    }
    report = CallReport()

    def on_line(line: str) -> bool:
        try:
            event = json.loads(line)
            if "loaded" in event:
                report.loaded, report.load_error = bool(event["loaded"]), str(event.get("error", ""))
                return not report.loaded
            if event.get("done"):
                report.finished = len(report.outcomes) == len(inputs)
                return False
            if "fatal" in event:
                report.protocol_error = f"the sandboxed harness failed: {event['fatal']}"
                return True
            outcome = CallOutcome(
                index=int(event["i"]),
                ok=bool(event["ok"]),
                value=codec.decode(event["value"]) if event["ok"] else None,
                error=str(event.get("error", "")),
                timed_out=bool(event.get("timeout", False)),
                cpu_seconds=float(event["cpu"]),
                wall_seconds=float(event["wall"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            report.protocol_error = f"unexpected line from the sandbox ({exc}): {line[:200]!r}"
            return True
        if outcome.index != len(report.outcomes):
            report.protocol_error = f"outcome for input {outcome.index} arrived out of order"
            return True
        report.outcomes.append(outcome)
        return bool(on_outcome and on_outcome(outcome))

    report.sandbox = run_python(
        PROGRAM, stdin=json.dumps(job).encode(), limits=limits, modules=MODULES, on_line=on_line
    )
    report.finished = report.finished and report.sandbox.exit_code == 0 and not report.sandbox.stopped
    return report
