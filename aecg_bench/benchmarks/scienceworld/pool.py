"""A benchmark-level pool of ScienceWorld JVMs, so samples reuse a warm simulator.

Starting a JVM and loading the jar costs about a second and 200+ MiB; a run
of 90 tasks reuses one process. An environment leases a simulator at reset
and hands it back at close. A simulator that failed (crash, hang) was killed
by its own error path and is dropped on return, so the next lease starts a
fresh JVM: that is the restart. `close()` (from `Benchmark.close()`) shuts
down every process the pool started, leased or idle.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from aecg_bench.benchmarks.scienceworld.simulator import Simulator


class SimulatorPool:
    def __init__(self, factory: Callable[[], Simulator], max_idle: int = 1) -> None:
        self._factory = factory
        self._max_idle = max_idle
        self._idle: list[Simulator] = []
        self._live: list[Simulator] = []
        self._lock = threading.Lock()
        self.launches = 0
        self.discarded = 0  # simulators dropped because they had failed

    def acquire(self) -> Simulator:
        """A warm idle simulator, or a newly started one."""
        found: Simulator | None = None
        stale: list[Simulator] = []
        with self._lock:
            while self._idle and found is None:
                sim = self._idle.pop()
                if _healthy(sim):
                    found = sim
                else:
                    self._drop(sim)
                    stale.append(sim)
        for sim in stale:
            sim.kill()
        if found is not None:
            return found
        sim = self._factory()
        with self._lock:
            self.launches += 1
            self._live.append(sim)
        return sim

    def release(self, sim: Simulator) -> None:
        """Take a simulator back: keep it warm if healthy and there is room, else shut it down."""
        with self._lock:
            if _healthy(sim) and len(self._idle) < self._max_idle:
                self._idle.append(sim)
                return
            self._drop(sim)
        sim.close()

    def _drop(self, sim: Simulator) -> None:
        if not _healthy(sim):
            self.discarded += 1
        if sim in self._live:
            self._live.remove(sim)

    def close(self) -> None:
        with self._lock:
            sims, self._live, self._idle = self._live, [], []
        for sim in sims:
            sim.close()

    @property
    def live(self) -> int:
        return len(self._live)


def _healthy(sim: Simulator) -> bool:
    return sim.alive and sim.process.poll() is None
