"""One ScienceWorld simulator process: the wheel's jar in a JVM with a bounded heap, driven over py4j.

The `scienceworld` wheel's own `ScienceWorldEnv` starts its JVM with no heap
limit, no start-up bound and no call timeout, and computes every valid
action-object combination on each step. This module starts the same jar
(`scienceworld.constants.JAR_PATH`, entry point `PythonInterface`) itself, so

- the heap is capped (`-Xmx<heap_mb>m`, default 512 MiB) and identity hash
  codes are constant (`DETERMINISTIC_JVM_OPTIONS`), so a task behaves the same
  in a fresh or a reused JVM;
- start-up (the gateway port on stdout) is bounded by `start_timeout_s`;
- every call is bounded by `call_timeout_s` (py4j socket read timeout), so a
  hung JVM surfaces as an error instead of blocking the run;
- any failure (crash, timeout, Java exception) kills the process and raises
  `SimulatorError`, an `InfraError`: the runner records the sample as
  `infra_error` and redoes it on resume, and the pool starts a fresh JVM for
  the next sample.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aecg_bench.errors import ConfigError, InfraError

T = TypeVar("T")


class SimulatorError(InfraError):
    """The simulator process crashed, hung or failed a call; it has been killed."""


# Constant identity hash codes make the simulator's dynamics a function of (task, variation,
# commands) alone. With HotSpot's default (per-thread random) identity hashes, the iteration order of
# the simulator's identity-hashed collections, and so e.g. where animals wander or which object a gold
# path picks, depends on everything the JVM ran before: a reused JVM would make a task's observations
# depend on the sample order, and a resumed run would not replay. Cost: none measurable (interleaved
# A/B over 45 tasks: step median 10.6 vs 7.6 ms, valid-action listing 43 vs 51 ms, within noise).
DETERMINISTIC_JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:+UnlockExperimentalVMOptions", "-XX:hashCode=2")


@dataclass(frozen=True)
class JvmSettings:
    heap_mb: int = 512
    options: tuple[str, ...] = DETERMINISTIC_JVM_OPTIONS
    call_timeout_s: float = 60.0
    start_timeout_s: float = 60.0
    java: str | None = None  # None: $JAVA_HOME/bin/java, else `java` on PATH

    def command(self, classpath: str) -> list[str]:
        java = self.java or _default_java()
        return [java, f"-Xmx{self.heap_mb}m", *self.options, "-cp", classpath, "py4j.GatewayServer"]


def _default_java() -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not candidate or not os.path.exists(candidate):
        raise ConfigError("ScienceWorld needs a Java runtime (17 works): none on PATH and $JAVA_HOME is not set")
    return candidate


def _classpath() -> str:
    from py4j.java_gateway import find_jar_path
    from scienceworld.constants import JAR_PATH

    return os.pathsep.join([find_jar_path(), JAR_PATH])


class Simulator:
    """A live ScienceWorld JVM. Methods mirror the simulator's Python interface."""

    def __init__(self, settings: JvmSettings | None = None) -> None:
        from py4j.java_gateway import GatewayParameters, JavaGateway
        from scienceworld.constants import BASEPATH

        self.settings = settings or JvmSettings()
        self.alive = True
        self._gateway: Any = None
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; closed in kill()
        cmd = [*self.settings.command(_classpath()), "--die-on-broken-pipe", "0"]
        try:
            self.process = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, cwd=BASEPATH
            )
        except OSError as exc:
            self._stderr.close()
            raise ConfigError(f"cannot start the ScienceWorld JVM ({cmd[0]}): {exc}") from exc
        port = self._read_port()
        threading.Thread(target=_drain, args=(self.process.stdout,), daemon=True).start()
        self._gateway = JavaGateway(
            # No py4j memory management: every call below returns strings, so the JVM holds no per-call
            # objects, and no finalizer ever tries to reach a JVM that was killed (py4j would log a
            # traceback from inside the garbage collector for each one).
            gateway_parameters=GatewayParameters(
                port=port,
                auto_field=True,
                read_timeout=self.settings.call_timeout_s,
                eager_load=False,
                enable_memory_management=False,
            ),
            java_process=self.process,
        )
        self._server = self._call(lambda: self._gateway.jvm.scienceworld.runtime.pythonapi.PythonInterface())

    # -- process management -------------------------------------------------

    def _read_port(self) -> int:
        """The gateway's port, which py4j prints as the first stdout line; bounded by start_timeout_s."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + self.settings.start_timeout_s
        buf = b""
        while b"\n" not in buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                tail = self.stderr_tail()
                self.kill()
                raise SimulatorError(
                    f"ScienceWorld JVM gave no gateway port within {self.settings.start_timeout_s}s; stderr: {tail}"
                )
            ready, _, _ = select.select([fd], [], [], remaining)
            chunk = os.read(fd, 64) if ready else b""
            if ready and not chunk:  # the JVM refused to start: a bad option or Java, the same for every sample
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=10)
                tail = self.stderr_tail()
                self.kill()
                raise ConfigError(f"the ScienceWorld JVM exited at start-up ({' '.join(self.process.args)}): {tail}")
            buf += chunk
        try:
            return int(buf.split(b"\n", 1)[0])
        except ValueError:
            self.kill()
            raise ConfigError(f"the ScienceWorld JVM printed {buf[:200]!r} instead of a gateway port") from None

    @property
    def pid(self) -> int:
        return self.process.pid

    def rss_bytes(self) -> int | None:
        """Resident memory of the JVM process (Linux /proc), None where unavailable."""
        try:
            with open(f"/proc/{self.pid}/status", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def stderr_tail(self, limit: int = 400) -> str:
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode("utf-8", "replace").strip() or "(no stderr)"
        except (OSError, ValueError):
            return "(stderr unavailable)"

    def kill(self) -> None:
        """Stop the process at once (crashed or hung JVM); idempotent."""
        self.alive = False
        if self._gateway is not None:
            self._gateway._gateway_client.close()  # sockets only; never talks to a possibly hung JVM
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        if self.process.poll() is not None:  # pipes are at EOF, so the drain thread cannot hold stdout
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        self._stderr.close()

    def close(self) -> None:
        """Shut a healthy JVM down: closing its stdin ends it (--die-on-broken-pipe); bounded wait, then kill."""
        if self.process.poll() is None and self.process.stdin is not None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def _call(self, fn: Callable[[], T]) -> T:
        """Run one py4j call; any failure kills the JVM and becomes a SimulatorError."""
        from py4j.protocol import Py4JError

        if not self.alive:
            raise SimulatorError("ScienceWorld JVM is no longer running")
        start = time.monotonic()
        try:
            return fn()
        except (Py4JError, OSError) as exc:
            hung = time.monotonic() - start >= self.settings.call_timeout_s
            exit_code = self.process.poll()
            tail = self.stderr_tail()
            self.kill()
            if hung:
                why = f"no answer within {self.settings.call_timeout_s}s (hung)"
            elif exit_code is not None:
                why = f"JVM exited with code {exit_code}"
            else:
                why = f"{type(exc).__name__}: {str(exc)[:300]}"
            raise SimulatorError(f"ScienceWorld simulator failed: {why}; stderr: {tail}") from exc

    # -- the simulator's interface ------------------------------------------

    def load(self, task: str, variation: int, simplifications: str, gold_path: bool = False) -> None:
        self._call(lambda: self._server.load(task, variation, simplifications, gold_path))

    def reset(self) -> str:
        """Reset to the first move and return the `look around` text, as the wheel's reset does."""
        self._call(self._server.reset)
        return self.step("look around")[0]

    def step(self, command: str) -> tuple[str, int, bool]:
        """(observation, native score 0-100 or negative on failure, native completion)."""

        def run() -> tuple[str, int, bool]:
            text = self._server.step(command)
            return str(text), round(100 * self._server.getScore()), bool(self._server.getCompleted())

        return self._call(run)

    def inventory(self) -> str:
        return str(self._call(self._server.freeActionInventory))

    def action_templates(self) -> list[str]:
        """The action templates, sorted (the order of the simulator's `getPossibleActions`)."""
        rows = json.loads(self._call(self._server.getPossibleActionsWithIDs))
        return sorted(str(row["action_example"]) for row in rows)

    def valid_actions(self) -> list[str]:
        """Every valid action-object combination in the current state (tens of ms: used for grounding)."""
        data = json.loads(self._call(self._server.getValidActionObjectCombinationsJSON))
        return [str(row["action"]) for row in data["validActions"]]

    def gold_actions(self) -> list[str]:
        """The simulator's gold action path; only after `load(..., gold_path=True)`.

        The simulator returns it as a Java list, which stays referenced in the JVM (no py4j
        memory management): fine for verification scripts and tests, the only callers.
        """
        return [str(a) for a in self._call(self._server.getGoldActionSequence)]


def _drain(stream: Any) -> None:
    """Read the JVM's stdout until it closes, so a chatty simulator can never block on a full pipe."""
    try:
        while stream.read(65536):
            pass
    except (OSError, ValueError):
        pass
