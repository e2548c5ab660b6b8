"""Parent side of the sandbox: start a program in isolation, feed it, bound it, kill it.

`run_python(source, ...)` starts `bootstrap.py` in a new session (so the whole
process group can be killed), writes the config header and the program's
stdin, and reads stdout, stderr and the bootstrap's report with one selector
loop until the program ends or a bound is hit: the wall-clock deadline, the
stdout byte cap, or the caller's `on_line` asking to stop (used to stop at the
first failing test). Then the group is killed with SIGKILL; in the namespace
modes that also ends every process the program started (init dies, the pid
namespace goes with it); in `rlimits` mode with a fresh uid, every process of
that uid is killed as well, so a program that escaped the group by `setsid()`
does not survive.

Each run gets its own random uid (as root), its own namespaces and its own
work directory, so runs share nothing and give the same results serially or in
parallel (threads may call `run_python` concurrently).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aecg_bench.sandbox.limits import Limits

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")
UID_BASE = 1_500_000_000  # fresh uids are drawn from [UID_BASE, UID_BASE + UID_SPAN)
UID_SPAN = 500_000_000
_KILL_GRACE_S = 5.0


@dataclass
class SandboxResult:
    """What happened in one run. `ok` = the program ran to its own end with exit code 0."""

    exit_code: int | None = None  # None when killed by a signal
    signal: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    timed_out: bool = False  # wall deadline reached (the group was killed)
    output_exceeded: bool = False  # stdout cap reached (the group was killed)
    stopped: bool = False  # the caller's on_line asked to stop (the group was killed)
    wall_seconds: float = 0.0
    isolation: dict[str, Any] = field(default_factory=dict)
    error: str = ""  # the sandbox itself failed (setup, strict isolation unavailable)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not (self.timed_out or self.output_exceeded or self.stopped or self.error)


def resolve_mode(limits: Limits) -> str:
    if limits.mode != "auto":
        return limits.mode
    return "root" if os.geteuid() == 0 else "userns"


def _interpreter_dirs() -> list[str]:
    """Directories the child interpreter reads after the privilege drop."""
    dirs = {sys.base_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    return sorted(d for d in dirs if d)


def _child_env(limits: Limits) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if limits.hash_seed is not None:
        env["PYTHONHASHSEED"] = str(limits.hash_seed)
    return env


def run_python(
    source: str,
    *,
    stdin: bytes = b"",
    limits: Limits | None = None,
    modules: dict[str, str] | None = None,
    on_line: Callable[[str], bool] | None = None,
) -> SandboxResult:
    """Run Python `source` as `__main__` in the sandbox.

    `modules` maps module names to source text installed in `sys.modules`
    before the program starts (the project itself is not importable inside).
    `on_line` sees each complete stdout line as it arrives (stdout is then
    not kept in the result); returning True stops the run (marked `stopped`).
    """
    limits = limits or Limits()
    mode = resolve_mode(limits)
    uid = UID_BASE + secrets.randbelow(UID_SPAN) if os.geteuid() == 0 else None
    workdir = tempfile.mkdtemp(prefix="aecg-sandbox-")
    report_r, report_w = os.pipe()
    config = {
        "mode": mode,
        "strict": limits.strict,
        "uid": uid,
        "parent_uid": os.getuid(),
        "limits": limits.to_dict(),
        "source": source,
        "modules": modules or {},
        "report_fd": report_w,
        "host_workdir": workdir,
        "expose": _interpreter_dirs(),
    }
    blob = json.dumps(config).encode()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-s", "-P", "-B", str(BOOTSTRAP)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(report_w,),
            start_new_session=True,
            env=_child_env(limits),
            cwd="/",
        )
    except OSError as exc:
        os.close(report_r)
        os.close(report_w)
        shutil.rmtree(workdir, ignore_errors=True)
        return SandboxResult(error=f"could not start the sandbox: {exc}")
    os.close(report_w)
    result = SandboxResult()
    try:
        _pump(proc, b"%d\n" % len(blob) + blob + stdin, report_r, limits, start + limits.wall_seconds, on_line, result)
    finally:
        _kill(proc, uid if result.isolation.get("mode") == "rlimits" else None)
        os.close(report_r)
        shutil.rmtree(workdir, ignore_errors=True)
    result.wall_seconds = time.monotonic() - start
    if result.exit_code is None and result.signal is None and proc.returncode is not None:
        # no exit report (rlimits mode, where the bootstrap is the program, or a killed run)
        result.exit_code, result.signal = (proc.returncode, None) if proc.returncode >= 0 else (None, -proc.returncode)
    return result


def _pump(
    proc: subprocess.Popen,
    feed: bytes,
    report_fd: int,
    limits: Limits,
    deadline: float,
    on_line: Callable[[str], bool] | None,
    result: SandboxResult,
) -> None:
    """One selector loop over stdin (write), stdout, stderr and the report pipe."""
    assert proc.stdin and proc.stdout and proc.stderr
    sel = selectors.DefaultSelector()
    os.set_blocking(proc.stdin.fileno(), False)
    sel.register(proc.stdin, selectors.EVENT_WRITE, "stdin")
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    sel.register(report_fd, selectors.EVENT_READ, "report")
    out, err, report, pending = bytearray(), bytearray(), bytearray(), b""
    offset = out_bytes = 0
    while sel.get_map():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            result.timed_out = True
            break
        for key, _ in sel.select(timeout=min(remaining, 0.5)):
            if key.data == "stdin":
                try:
                    offset += os.write(key.fd, feed[offset : offset + 65536])
                except (BrokenPipeError, BlockingIOError) as exc:
                    if isinstance(exc, BlockingIOError):
                        continue
                    offset = len(feed)
                if offset >= len(feed):
                    sel.unregister(key.fileobj)
                    proc.stdin.close()
                continue
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            if key.data == "stdout":
                out_bytes += len(chunk)
                if out_bytes > limits.max_output_bytes:
                    result.output_exceeded = True
                    break
                if on_line is None:
                    out += chunk
                else:
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    if any(on_line(line.decode("utf-8", "replace")) for line in lines):
                        result.stopped = True
                        break
            elif key.data == "stderr":
                if len(err) < limits.max_stderr_bytes:
                    err += chunk[: limits.max_stderr_bytes - len(err)]
            else:
                report += chunk
        if result.output_exceeded or result.stopped:
            break
        if proc.poll() is not None and not _readable(sel):
            break  # program gone and its pipes drained (or held open by an escaped process)
    sel.close()
    report += _drain(report_fd)  # a run stopped early may not have had its report read yet
    result.stdout, result.stderr = bytes(out), bytes(err)
    _read_report(report, result)


def _drain(fd: int) -> bytes:
    """What a pipe holds right now, without waiting for more."""
    os.set_blocking(fd, False)
    data = bytearray()
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 65536):
            data += chunk
    return bytes(data)


def _readable(sel: selectors.BaseSelector) -> bool:
    """Whether any output pipe still has data (or EOF) waiting right now."""
    return any(key.data != "stdin" for key, _ in sel.select(timeout=0.05))


def _read_report(raw: bytearray, result: SandboxResult) -> None:
    for line in bytes(raw).decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "isolation" in record:
            result.isolation = record["isolation"]
        if "exit" in record:
            code = int(record["exit"])
            result.exit_code, result.signal = (code, None) if code >= 0 else (None, -code)
        if "error" in record:
            result.error = str(record["error"])


def _kill(proc: subprocess.Popen, sweep_uid: int | None) -> None:
    """SIGKILL the process group (and, when known, every process of the run's uid); reap."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if sweep_uid is not None:  # kill(-1) as that uid reaches exactly its processes
        subprocess.run(["kill", "-s", "KILL", "--", "-1"], user=sweep_uid, check=False, capture_output=True)
    try:
        proc.wait(timeout=_KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=_KILL_GRACE_S)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
