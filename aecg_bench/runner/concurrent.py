"""Samples that the protocol makes independent run at once; their records are still written in order.

A sample's outcome may depend on earlier samples only through the memory
method's and the framework's state. Where neither can change, samples are
independent: the frozen test phase of `build_then_freeze` (EDV's test sets,
tau2 trials, re-scoring) under a method whose recall, solve and routing only
read its state (`MemoryMethod.pure_recall`), and every phase of a method that
keeps no state at all (`learns_nothing`: No-Memory), provided the framework
does not adapt across tasks (it does not override `Framework.observe`; AgentNet
does). Such consecutive items run on up to `width` worker threads (the models'
`max_concurrency`, or `runtime.concurrent_samples`); every model call still
passes the client's per-model limit and the shared rate limiter.

Each worker runs on its own replica of the memory method and framework, built
from the config and loaded with the frozen state, so per-call attributes (EDV's
acting solver) and the memory side's per-item LLM binding never cross between
samples; its audit events go to a per-item buffer. The caller commits results
in stream order: records, trajectories, audit events (renumbered as they are
appended), maintenance and snapshots are exactly a sequential run's. What a
kill -9 loses is what was in flight: at most `2 x width` items, run again on
resume. Online protocols with a learning memory stay sequential, and run.json
says which phases ran how wide and why (`sample_concurrency`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from aecg_bench import registry
from aecg_bench.audit import AuditLog
from aecg_bench.contracts import Framework, MemoryServices
from aecg_bench.llm.usage import UsageMeter
from aecg_bench.runner.config import RunConfig
from aecg_bench.runner.execute import ItemResult, Services, StreamItem, execute_item, learns


@dataclass
class Executed:
    """One item run on a worker, waiting to be committed."""

    result: ItemResult
    meter: UsageMeter
    started: float
    events: list[dict[str, Any]] = field(default_factory=list)  # its audit events, unnumbered


def width(services: Services, configured: int | None) -> int:
    """How many samples may be in flight: `runtime.concurrent_samples`, else the most calls any
    configured model allows at once."""
    if configured is not None:
        return configured
    return max((spec.max_concurrency for spec in services.llm.models.values()), default=1)


def adapts(framework: Framework) -> bool:
    return type(framework).observe is not Framework.observe


def independent(item: StreamItem, services: Services) -> bool:
    """Whether this item's outcome cannot depend on the items run before it (module doc)."""
    memory = type(services.memory)
    if adapts(services.framework) or not memory.pure_recall:
        return False
    return memory.learns_nothing or not learns(item, services.protocol)


def describe(stream: Sequence[StreamItem], services: Services, n: int) -> dict[str, Any]:
    """run.json's `sample_concurrency`: how many samples of each phase ran at once, and why not more."""
    phases: dict[str, int] = {}
    for item in stream:
        ok = independent(item, services)
        phases[item.phase] = min(phases.get(item.phase, n), n if ok else 1)
    memory, framework = services.memory, services.framework
    if n == 1:
        why = "one sample at a time: the models allow one call at a time (or runtime.concurrent_samples=1)"
    elif adapts(framework):
        why = f"sequential: framework {framework.name!r} adapts across tasks (observe)"
    elif not type(memory).pure_recall:
        why = f"sequential: memory {memory.name!r} does not declare that recall leaves its state unchanged"
    elif any(width == 1 for width in phases.values()):
        why = "phases that learn (online protocol, build) run one sample after another: memory learns from each"
    else:
        why = "every phase's samples are independent (memory frozen or absent)"
    return {"width": n, "phases": phases, "why": why}


def segments(items: Sequence[StreamItem], services: Services) -> Iterator[tuple[bool, list[StreamItem]]]:
    """Consecutive items grouped by whether they may run at once."""
    group: list[StreamItem] = []
    flag = False
    for item in items:
        ok = independent(item, services)
        if group and ok != flag:
            yield flag, group
            group = []
        flag = ok
        group.append(item)
    if group:
        yield flag, group


def replica(cfg: RunConfig, services: Services, state: str) -> Services:
    """A worker's own memory method and framework, built from the config and loaded with `state`
    (a frozen snapshot as JSON: each replica parses its own copy)."""
    main = services.memory.services
    memory = registry.build(
        "memory",
        cfg.memory.name,
        cfg.memory.params,
        services=MemoryServices(llm=main.llm, embedder=main.embedder, audit=AuditLog(), seed=main.seed),
    )
    framework = registry.build("framework", cfg.framework.name, cfg.framework.params)
    loaded = json.loads(state)
    memory.load_state_dict(loaded["memory"])
    framework.load_state_dict(loaded["framework"])
    return replace(services, memory=memory, framework=framework)


def execute_on(
    worker: Services, shared: Services, item: StreamItem, seed: int, audit_context: dict[str, Any]
) -> Executed:
    """Run one item on a worker's replica: its memory-side calls carry this item's seed and meter
    (as `batch._bind_memory_llm` does on the main memory), its audit events go to a buffer."""
    meter = UsageMeter()
    buffer = AuditLog()
    buffer.context = dict(audit_context)
    worker.memory.services.audit = buffer
    worker.memory.services.llm = shared.llm.with_context(seed=seed, meter=meter, scope="memory")
    started = time.time()
    result = execute_item(worker, item, seed, shared.llm.with_context(seed=seed, meter=meter))
    events = [
        {k: v for k, v in e.items() if k != "seq" and not (k in audit_context and v == audit_context[k])}
        for e in buffer.events
    ]
    return Executed(result, meter, started, events)


class Ahead:
    """Runs items on daemon worker threads, at most `window` beyond the one being committed, and hands
    the results back in the order given. A worker's exception is raised where its item is taken.
    Daemon threads: a Ctrl-C or a fatal error stops the run at once; samples still in flight finish
    on their own and are never committed."""

    def __init__(self, items: list[StreamItem], n: int, make_worker: Callable[[], Any], run: Callable[..., Executed]):
        self.items = items
        self.window = 2 * n
        self.make_worker = make_worker
        self.run = run
        self.done: dict[int, tuple[Executed | None, BaseException | None]] = {}
        self.cond = threading.Condition()
        self.next_submit = 0
        self.stopped = False
        self.queue: list[int] = []
        self.threads = [threading.Thread(target=self._work, daemon=True) for _ in range(min(n, len(items)))]
        for t in self.threads:
            t.start()

    def _work(self) -> None:
        worker = None
        while True:
            with self.cond:
                while not self.queue and not self.stopped:
                    self.cond.wait()
                if self.stopped:
                    return
                index = self.queue.pop(0)
            out: tuple[Executed | None, BaseException | None]
            try:
                if worker is None:
                    worker = self.make_worker()
                out = (self.run(worker, self.items[index]), None)
            except BaseException as exc:  # handed to the committing thread
                out = (None, exc)
            with self.cond:
                self.done[index] = out
                self.cond.notify_all()

    def __iter__(self) -> Iterator[tuple[StreamItem, Executed]]:
        try:
            for index, item in enumerate(self.items):
                with self.cond:
                    while self.next_submit < min(index + self.window, len(self.items)):
                        self.queue.append(self.next_submit)
                        self.next_submit += 1
                    self.cond.notify_all()
                    while index not in self.done:
                        self.cond.wait(timeout=1.0)
                    executed, error = self.done.pop(index)
                if error is not None:
                    raise error
                assert executed is not None
                yield item, executed
        finally:
            self.stop()

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.queue.clear()
            self.cond.notify_all()
