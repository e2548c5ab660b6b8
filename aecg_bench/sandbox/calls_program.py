"""Sandbox program: define a function from source, call it on each input, stream the outcomes.

Runs as `__main__` inside the sandbox (never imported by the project); its
helper module `sandbox_codec` is `aecg_bench/sandbox/codec.py` shipped as
source. Stdin is one JSON job: code, entry point, encoded inputs (each a list
of positional arguments), per-input CPU-time limits and whether to apply the
EvalPlus-style guard. Stdout carries one JSON line per event:

    {"loaded": true} | {"loaded": false, "error": ...}   after executing the code
    {"i": n, "ok": true, "value": <encoded>, "cpu": s, "wall": s}
    {"i": n, "ok": false, "error": ..., "timeout": bool, "cpu": s, "wall": s}
    {"done": true}
    {"fatal": ...}   if the harness itself fails (stderr is /dev/null)

Outputs are never compared here: the parent compares them with expected
values this process never sees. The code's own prints go to /dev/null (fds 1
and 2 are redirected after a private duplicate of stdout is kept for the
events), and reading stdin raises, as under EvalPlus's `swallow_io`.

Per-input limits count the process's CPU time (ITIMER_PROF), so a verdict does
not depend on how busy the machine is; the parent's wall deadline catches
code that sleeps or blocks. The reported "cpu" is the calling thread's CPU
time (CLOCK_THREAD_CPUTIME_ID): the process clock only advances in scheduler
ticks while a CPU timer is armed, too coarse for sub-millisecond calls.
"""

import builtins
import faulthandler
import hashlib
import io
import json
import marshal
import os
import signal
import sys
import tempfile
import time

import sandbox_codec as codec

# What EvalPlus's reliability_guard disables before running a candidate (the
# memory part is enforced by the sandbox's rlimits instead).
_GUARDED_OS = (
    *("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty"),
    *("killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod", "chown"),
    *("chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir"),
)
_GUARDED_MODULES = ("ipdb", "joblib", "resource", "psutil", "tkinter")
INLINE_BYTES = 16 * 1024 * 1024  # larger plain-typed outputs travel as a digest


class _TimeLimit(BaseException):
    """Raised by the CPU timer; a BaseException so `except Exception` in the code cannot swallow it."""


class _NoInput(io.TextIOBase):
    def read(self, *args, **kwargs):
        raise OSError("stdin is not available to the solution")

    readline = read

    def readable(self):
        return False


def _on_timer(signum, frame):
    raise _TimeLimit()


def _guard():
    # EvalPlus calls its guard inside `create_tempdir()` (evalplus/eval/__init__.py `unsafe_execute`), whose
    # `tempfile.TemporaryDirectory()` has already located and cached the temp directory; locating it needs
    # `os.getcwd`/`os.unlink`, which the guard disables. Resolve it first, so `tempfile` works as there.
    tempfile.gettempdir()
    faulthandler.disable()
    builtins.exit = builtins.quit = builtins.help = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in _GUARDED_OS:
        if hasattr(os, name):
            setattr(os, name, None)
    builtins.open = None
    import shutil
    import subprocess

    shutil.rmtree = shutil.move = shutil.chown = None
    subprocess.Popen = None
    for name in _GUARDED_MODULES:
        sys.modules[name] = None


def _describe(exc):
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable>"
    return f"{type(exc).__name__}: {text}"[:300]


def _call(fn, args, limit):
    """(ok, value, error, timed_out) of one call under a CPU-time limit."""
    try:
        signal.setitimer(signal.ITIMER_PROF, limit)
        try:
            return True, fn(*args), "", False
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
    except _TimeLimit:
        return False, None, f"CPU time limit of {limit:.3g}s exceeded", True
    except BaseException as exc:
        return False, None, _describe(exc), False


def _encode_output(value):
    """The value for the channel; a `Digest` when it is plain builtin data too large to ship.

    marshal (format 2: no back-references, so equal values give equal bytes)
    accepts only exact builtin types and is fast, so it both measures the value
    and, for a large one, yields the bytes to hash. Types it refuses (numpy,
    subclasses, objects) go through the codec, bounded by the output cap.
    """
    try:
        blob = marshal.dumps(value, 2)
    except ValueError:
        return codec.encode(value)
    if len(blob) > INLINE_BYTES:
        return codec.encode(codec.Digest(hashlib.sha256(blob).hexdigest(), len(blob)))
    return codec.encode(value)


def main(job, emit):
    inputs = [codec.decode(args) for args in job["inputs"]]
    limits = job["time_limits"]
    if job["guard"]:
        _guard()
    signal.signal(signal.SIGPROF, _on_timer)
    namespace = {}
    ok, _, error, _ = _call(lambda: exec(job["code"], namespace), (), job["load_seconds"])
    fn = namespace.get(job["entry_point"]) if ok else None
    if not callable(fn):
        emit({"loaded": False, "error": error or f"{job['entry_point']!r} is not defined by the code"})
        return
    emit({"loaded": True})
    for i, args in enumerate(inputs):
        cpu0, wall0 = time.thread_time(), time.perf_counter()
        ok, value, error, timed_out = _call(fn, args, limits[i])
        record = {"i": i, "ok": ok, "cpu": time.thread_time() - cpu0, "wall": time.perf_counter() - wall0}
        if ok:
            try:
                record["value"] = _encode_output(value)
            except BaseException as exc:  # a hostile __eq__/__repr__ or a cyclic structure
                record.update(ok=False, error=f"output could not be encoded: {_describe(exc)}")
        else:
            record.update(error=error, timeout=timed_out)
        emit(record)
    emit({"done": True})


def _channel():
    """A private copy of stdout for the events; fds 0-2 then point at /dev/null."""
    channel = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)

    def emit(record):
        channel.write(json.dumps(record, separators=(",", ":")) + "\n")
        channel.flush()

    return emit


_job = json.loads(sys.stdin.buffer.read())
_emit = _channel()
sys.stdin, sys.stdout = _NoInput(), open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
sys.stderr = sys.stdout
try:
    main(_job, _emit)
except BaseException as exc:  # the harness itself failed (e.g. MemoryError): say so, do not vanish
    _emit({"fatal": _describe(exc)})
    sys.exit(1)
