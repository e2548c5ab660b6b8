"""The conformance kit: what the runner relies on from a memory method, benchmark or framework,
checked through real runs (docs/extending.md).

A plugin author runs it with pytest:

    from aecg_bench.testing import conformance

    @pytest.mark.parametrize("check", conformance.MEMORY_CHECKS, ids=conformance.check_id)
    def test_conformance(check, tmp_path):
        check(tmp_path, memory="recency_window")

Each check composes the real Hydra config (so the component's shipped config is used), runs it
through the real runner on a short stream with the scripted `mock` model, and raises
`ConformanceError` (an AssertionError) with one sentence saying what the runner would get wrong.
By default a memory method runs on `toy` under `autogen` (three decision levels), a benchmark
under `single` with No-Memory, a framework on `toy` with the `recorder` memory.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any
from unittest import mock

from aecg_bench import registry
from aecg_bench.errors import ConfigError

# Record fields that must not depend on how a run was executed (timing, attempts, cache hits do).
STABLE_FIELDS = (
    "position",
    "sample_id",
    "phase",
    "status",
    "success",
    "value",
    "metrics",
    "steps",
    "recalled_memory_ids",
    "memory_stats",
    "label",
    "decisions",
    "decisions_by",
)
DEFAULTS = {"memory": "no_memory", "benchmark": "toy", "framework": "single"}
STREAM = ["benchmark.params.size=10", "protocol.maintain_every=3", "protocol.snapshot_every=4"]
MOCK_ERRORS = "+model.models.mock.options.error_rate=0.3"  # toy's oracle errs: successes and failures


class ConformanceError(AssertionError):
    """A component breaks a behaviour the runner relies on."""


Check = Callable[..., None]


def check_id(check: Check) -> str:
    return check.__name__


# ---------------------------------------------------------------------------
# Running a configuration


def compose(
    tmp_path: Path,
    *,
    memory: str | None = None,
    benchmark: str | None = None,
    framework: str | None = None,
    overrides: tuple[str, ...] | list[str] = (),
    data_root: Path | None = None,
    name: str = "conformance",
) -> dict[str, Any]:
    """The composed config of one run, as the CLI would compose it (plugins' configs included)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from aecg_bench.run import CONF_DIR

    picks = {
        "memory": memory or DEFAULTS["memory"],
        "benchmark": benchmark or DEFAULTS["benchmark"],
        "framework": framework or DEFAULTS["framework"],
        "model": "mock",
    }
    given = {o.split("=", 1)[0] for o in overrides}
    base = [
        *(f"{group}={choice}" for group, choice in picks.items() if group not in given),
        f"runtime.results_root={tmp_path / 'results'}",
        "runtime.progress=false",
        "runtime.fsync=false",
        "embedder.backend=lexical",
        f"experiment_name={name}",
    ]
    if data_root is not None:
        base.append(f"runtime.data_root={data_root}")
    if picks["benchmark"] == "toy":
        base += STREAM
        if "model" not in given:
            base.append(MOCK_ERRORS)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=[*base, *overrides])
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    return raw


def run(raw: dict[str, Any], *, crash_after: int | None = None) -> dict[str, Any]:
    """Run a composed config in this process: its records, final memory and framework state and audit.
    `crash_after=k` kills the run (as a signal would) once k samples have been recorded."""
    import aecg_bench.runner.batch as batch
    from aecg_bench.runner.build import build
    from aecg_bench.runner.config import parse_run_config
    from aecg_bench.runner.records import RunDir

    plan, services, audit = build(parse_run_config(raw))
    real = batch._run_item
    done = {"n": 0}

    def dying(*args: Any, **kwargs: Any) -> Any:
        if crash_after is not None and done["n"] >= crash_after:
            raise KeyboardInterrupt
        done["n"] += 1
        return real(*args, **kwargs)

    with mock.patch.object(batch, "_run_item", dying):
        final = batch.run_plan(plan, services, audit)
    rd = RunDir(plan.run_dir)
    return {
        "final": final,
        "records": stable_records(rd.records()),
        "memory": _jsonable(services.memory.state_dict()),
        "framework": _jsonable(services.framework.state_dict()),
        "audit": [json.loads(line) for line in rd.audit_file.read_text().splitlines()]
        if rd.audit_file.exists()
        else [],
        "services": services,
    }


def stable_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The latest record of each position, reduced to the fields that do not depend on execution."""
    from aecg_bench.runner.records import latest_by_position

    latest = latest_by_position(records)
    return [{k: latest[p].get(k) for k in STABLE_FIELDS} for p in sorted(latest)]


def _jsonable(state: Any) -> Any:
    try:
        return json.loads(json.dumps(state, sort_keys=True))
    except (TypeError, ValueError) as exc:
        raise ConformanceError(
            f"state_dict() is not JSON-serialisable ({exc}); the runner snapshots it as JSON"
        ) from None


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if type(a) is not type(b):
        return f"{path or 'the value'}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return f"{path}.{key}: present in only one"
            if a[key] != b[key]:
                return _first_difference(a[key], b[key], f"{path}.{key}")
    if isinstance(a, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path or 'the value'}: {str(a)[:120]!r} vs {str(b)[:120]!r}"


def _expect_equal(what: str, a: Any, b: Any, why: str) -> None:
    if a != b:
        raise ConformanceError(f"{what} differ ({_first_difference(a, b)}): {why}")


def _one_line_config_error(owner: str, build_it: Callable[[], Any]) -> None:
    try:
        build_it()
    except ConfigError as exc:
        if "\n" in str(exc).strip():
            raise ConformanceError(f"{owner}: a bad parameter gives a multi-line error: {str(exc)[:200]!r}") from None
        if "no_such_parameter" not in str(exc):
            raise ConformanceError(f"{owner}: the error for a bad parameter does not name it: {exc}") from None
        return
    except Exception as exc:  # any other exception is the failure checked
        raise ConformanceError(
            f"{owner}: a bad parameter raised {type(exc).__name__} instead of one ConfigError line; "
            "subclass aecg_bench.contracts.Params for the component's Params"
        ) from None
    raise ConformanceError(
        f"{owner}: an unknown parameter was accepted silently; its Params must subclass aecg_bench.contracts.Params "
        "(extra keys forbidden), so a typo in a config fails"
    )


# ---------------------------------------------------------------------------
# Guards: gold data and model calls


class GoldTouched(ConformanceError):
    pass


class _GuardedGold(dict):
    """A sample's gold that notes who reads it: only the benchmark's own environment may."""

    allowed: tuple[str, ...] = ()
    owner: str = ""

    def _check(self) -> None:
        frame = sys._getframe(2)
        while frame is not None:  # innermost first: the environment reading its own gold is fine
            module = frame.f_globals.get("__name__", "")
            if module.startswith(self.allowed):
                return
            if module.startswith(self.owner):
                raise GoldTouched(
                    f"{self.owner} read a sample's gold data ({frame.f_code.co_filename}:{frame.f_lineno}); memory "
                    "methods and frameworks learn only from episodes, whose labels the protocol's label source decides"
                )
            frame = frame.f_back

    def __getitem__(self, key: Any) -> Any:
        self._check()
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._check()
        return super().get(key, default)

    def __iter__(self) -> Iterator[Any]:
        self._check()
        return super().__iter__()


@contextmanager
def gold_guard(benchmark_name: str, component_module: str) -> Iterator[None]:
    """Every sample the benchmark hands out (to the runner, or to anyone else who builds it) carries
    guarded gold: a read from `component_module`'s package fails the check."""
    from aecg_bench.types import Sample

    cls = registry.resolve("benchmark", benchmark_name)
    real = cls.samples
    owner, bench_package = _package_of(component_module), _package_of(cls.__module__)
    if bench_package.startswith(owner) or owner.startswith(bench_package):
        raise ConformanceError(f"cannot tell {component_module} from the benchmark's own code ({cls.__module__})")

    def guarded(self: Any, split: str = "test") -> list[Sample]:
        out = []
        for sample in real(self, split):
            gold = _GuardedGold(sample.gold)
            gold.allowed, gold.owner = (bench_package, "aecg_bench.runner"), owner
            out.append(Sample(task=sample.task, gold=gold, split=sample.split))
        return out

    with mock.patch.object(cls, "samples", guarded):
        yield


def _package_of(module: str) -> str:
    """The package a module belongs to (`baselines.edv.method` -> `baselines.edv`); a top-level module is its own."""
    head, _, _ = module.rpartition(".")
    return head or module


@contextmanager
def no_model_calls_outside_the_client() -> Iterator[list[str]]:
    """litellm's entry points fail while a mock-model run is checked: the mock model never reaches
    litellm, so any call there came from the component itself, bypassing usage, cost, cache and limits."""
    bypasses: list[str] = []
    try:
        import litellm
    except ImportError:  # pragma: no cover - litellm is a dependency
        yield bypasses
        return

    def refuse(name: str) -> Callable[..., Any]:
        def _refuse(*args: Any, **kwargs: Any) -> Any:
            bypasses.append(name)
            raise ConformanceError(f"litellm.{name} called directly; make every model call through services.llm")

        return _refuse

    names = [
        n for n in ("completion", "acompletion", "text_completion", "embedding", "aembedding") if hasattr(litellm, n)
    ]
    with ExitStack() as stack:
        for name in names:
            stack.enter_context(mock.patch.object(litellm, name, refuse(name)))
        yield bypasses


# ---------------------------------------------------------------------------
# Memory methods


def memory_params_are_validated(tmp_path: Path, *, memory: str, **_: Any) -> None:
    """A typo in the method's params is one ConfigError line naming it."""
    from aecg_bench.audit import AuditLog
    from aecg_bench.contracts import MemoryServices

    cls = registry.resolve("memory", memory)
    services = MemoryServices(llm=None, embedder=None, audit=AuditLog(tmp_path / "audit.jsonl"))
    _one_line_config_error(f"memory {memory!r}", lambda: cls({"no_such_parameter": 1}, services=services))


def memory_state_round_trips(tmp_path: Path, *, memory: str, **kw: Any) -> None:
    """state_dict() -> JSON -> load_state_dict() in a fresh instance gives the same state and recall."""
    from aecg_bench.types import LEVELS, RecallQuery

    raw = compose(tmp_path, memory=memory, **_run_kw(kw, framework="autogen"))
    ran = run(raw)
    services = ran["services"]
    state = ran["memory"]
    fresh = _rebuild_memory(raw)
    fresh.load_state_dict(copy.deepcopy(state))
    _expect_equal(
        "the restored state and the saved one",
        _jsonable(fresh.state_dict()),
        state,
        "load_state_dict(state_dict()) must restore everything (the runner resumes from it)",
    )
    _expect_equal(
        "stats() of the restored and the original memory",
        fresh.stats(),
        services.memory.stats(),
        "state the method keeps outside state_dict() is lost on resume",
    )
    tasks = [s.task for s in services.benchmark.samples("test")][:3]
    for task in tasks:
        for level in LEVELS:
            query = RecallQuery(task=task, level=level, agent="executor", role="executor", context=task.instruction)
            _expect_equal(
                f"recall({task.id}, {level}) of the restored and the original memory",
                [_item(i) for i in fresh.recall(query)],
                [_item(i) for i in services.memory.recall(query)],
                "a restored memory must recall what the original would",
            )


def memory_resume_after_kill(tmp_path: Path, *, memory: str, **kw: Any) -> None:
    """A run killed mid-stream and rerun ends with the records, memory and audit of an uninterrupted run."""
    clean, resumed = _clean_and_killed_then_resumed(tmp_path, memory=memory, **_run_kw(kw, framework="autogen"))
    why = "resume restores the last snapshot and replays the samples after it; the state must round-trip exactly"
    _expect_equal("records of the resumed and the uninterrupted run", resumed["records"], clean["records"], why)
    _expect_equal("final memory of the resumed and the uninterrupted run", resumed["memory"], clean["memory"], why)
    _expect_equal("audit logs of the resumed and the uninterrupted run", _audit(resumed), _audit(clean), why)


def memory_is_deterministic(tmp_path: Path, *, memory: str, **kw: Any) -> None:
    """Two runs with one seed give the same records, memory and audit (randomness from services.seed only)."""
    a = run(compose(tmp_path / "a", memory=memory, **_run_kw(kw, framework="autogen")))
    with _scrambled_global_random():
        b = run(compose(tmp_path / "b", memory=memory, **_run_kw(kw, framework="autogen")))
    why = "draw randomness from a random.Random seeded from services.seed, never the global generator"
    _expect_equal("records of two runs with one seed", b["records"], a["records"], why)
    _expect_equal("final memories of two runs with one seed", b["memory"], a["memory"], why)
    _expect_equal("audit logs of two runs with one seed", _audit(b), _audit(a), why)


def memory_reads_no_gold(tmp_path: Path, *, memory: str, **kw: Any) -> None:
    """The method never reads a sample's gold data, and it runs without labels (label_source=none)."""
    cls = registry.resolve("memory", memory)
    overrides = [*kw.pop("overrides", ()), "protocol.label_source=none"]
    raw = compose(tmp_path, memory=memory, **_run_kw({**kw, "overrides": overrides}, framework="autogen"))
    with gold_guard(raw["benchmark"]["name"], cls.__module__):
        ran = run(raw)
    _no_crash(ran, f"memory {memory!r} with label_source=none")


def memory_calls_go_through_the_client(tmp_path: Path, *, memory: str, **kw: Any) -> None:
    """Every model call goes through services.llm, so it is accounted, cached, rate-limited and budgeted."""
    with no_model_calls_outside_the_client():
        ran = run(compose(tmp_path, memory=memory, **_run_kw(kw, framework="autogen")))
    _no_crash(ran, f"memory {memory!r}")


MEMORY_CHECKS: list[Check] = [
    memory_params_are_validated,
    memory_state_round_trips,
    memory_resume_after_kill,
    memory_is_deterministic,
    memory_reads_no_gold,
    memory_calls_go_through_the_client,
]


# ---------------------------------------------------------------------------
# Benchmarks


def benchmark_params_are_validated(tmp_path: Path, *, benchmark: str, data_root: Path | None = None, **_: Any) -> None:
    """A typo in the benchmark's params is one ConfigError line naming it."""
    cls = registry.resolve("benchmark", benchmark)
    _one_line_config_error(f"benchmark {benchmark!r}", lambda: cls({"no_such_parameter": 1}, data_dir=tmp_path))


def benchmark_samples_are_stable(tmp_path: Path, *, benchmark: str, data_root: Path | None = None, **kw: Any) -> None:
    """Two builds give the same ordered samples, unique ids, JSON-round-tripping tasks and data hashes."""
    from aecg_bench.types import task_from_dict, to_jsonable

    first, second = _benchmark(benchmark, data_root, kw), _benchmark(benchmark, data_root, kw)
    for split in first.splits():
        a, b = first.samples(split), second.samples(split)
        _expect_equal(
            f"the {split} samples of two builds",
            [to_jsonable(s) for s in a],
            [to_jsonable(s) for s in b],
            "the order and content of a split are part of a run's identity",
        )
        ids = [s.id for s in a]
        if len(set(ids)) != len(ids):
            raise ConformanceError(f"{split} split has repeated sample ids; records and resume key on them")
        for s in a:
            if task_from_dict(json.loads(json.dumps(to_jsonable(s.task)))) != s.task:
                raise ConformanceError(f"task {s.id} does not round-trip through JSON; trajectories store it")
    _expect_equal("data hashes of two builds", second.data_hashes(), first.data_hashes(), "run.json pins them")


def benchmark_env_survives_bad_actions(
    tmp_path: Path, *, benchmark: str, data_root: Path | None = None, **kw: Any
) -> None:
    """reset/step/score/close work; a malformed action is an Observation (valid=False), never an exception."""
    from aecg_bench.contracts import EnvContext
    from aecg_bench.types import Observation, Score

    bench = _benchmark(benchmark, data_root, kw)
    samples = bench.samples("test")[:2]
    if not samples:
        raise ConformanceError("the test split is empty")
    llm = _mock_llm(tmp_path, benchmark, data_root, kw)  # for environments with a simulated user
    for sample in samples:
        env = bench.make_env(sample, EnvContext(llm=llm, seed=0, cache_dir=tmp_path / "env"))
        try:
            first = env.reset()
            if not isinstance(first, Observation):
                raise ConformanceError(f"reset() returned {type(first).__name__}, not an Observation")
            for action in _garbage_actions(sample.task.mode):
                try:
                    obs = env.step(action)
                except Exception as exc:  # what the check is about
                    raise ConformanceError(
                        f"step({action.kind} {action.text or action.tool_calls!r}) raised {type(exc).__name__}: {exc}; "
                        "an unparsable action must come back as Observation(valid=False)"
                    ) from None
                if not isinstance(obs, Observation):
                    raise ConformanceError(f"step() returned {type(obs).__name__}, not an Observation")
                if obs.done:
                    break
            score = env.score()
            if not isinstance(score, Score) or not 0.0 <= float(score.value) <= 1.0:
                raise ConformanceError(f"score() must be a Score with value in [0, 1], got {score!r}")
        finally:
            env.close()
    bench.close()


def benchmark_runs_end_to_end(tmp_path: Path, *, benchmark: str, data_root: Path | None = None, **kw: Any) -> None:
    """Through the runner with the mock model: every sample recorded, no infra error, the same twice."""
    overrides = [*kw.get("overrides", ()), "protocol.limit=3"]
    a = run(compose(tmp_path / "a", benchmark=benchmark, data_root=data_root, overrides=overrides))
    b = run(compose(tmp_path / "b", benchmark=benchmark, data_root=data_root, overrides=overrides))
    _no_crash(a, f"benchmark {benchmark!r}")
    _expect_equal("records of two runs with one seed", b["records"], a["records"], "environments must be seeded")


BENCHMARK_CHECKS: list[Check] = [
    benchmark_params_are_validated,
    benchmark_samples_are_stable,
    benchmark_env_survives_bad_actions,
    benchmark_runs_end_to_end,
]


# ---------------------------------------------------------------------------
# Frameworks


def framework_params_are_validated(tmp_path: Path, *, framework: str, **_: Any) -> None:
    """A typo in the framework's params is one ConfigError line naming it."""
    cls = registry.resolve("framework", framework)
    _one_line_config_error(f"framework {framework!r}", lambda: cls({"no_such_parameter": 1}))


def framework_records_decisions_and_recalls(tmp_path: Path, *, framework: str, **kw: Any) -> None:
    """Every LLM decision is in the decision graph with a level, an agent and a role, and memory is asked
    through recall() (the recorder memory sees each query)."""
    from aecg_bench.types import LEVELS

    ran = run(compose(tmp_path, framework=framework, memory="recorder", **_run_kw(kw)))
    _no_crash(ran, f"framework {framework!r}")
    if not any(r["decisions"] for r in ran["records"]):
        raise ConformanceError("no sample recorded a decision; add a DecisionNode per LLM call to the trajectory")
    levels = {level for r in ran["records"] for level in (r["decisions_by"] or {}).get("level", {})}
    if not levels <= set(LEVELS):
        raise ConformanceError(f"decision levels {sorted(levels - set(LEVELS))} are not team/event/agent")
    recalls = [c for c in ran["memory"].get("calls", []) if c.get("op") == "recall"]
    if not recalls:
        raise ConformanceError("memory.recall() was never called; frameworks must ask memory before decisions")


def framework_resume_after_kill(tmp_path: Path, *, framework: str, **kw: Any) -> None:
    """A killed and rerun stream equals an uninterrupted one (cross-task state round-trips). The framework
    learns on every item here (`protocol.framework_learning=all`; by default only build and warm-up items
    teach a framework), so a state that does not round-trip shows."""
    run_kw = _run_kw(kw)
    run_kw["overrides"] = (*run_kw.get("overrides", ()), "protocol.framework_learning=all")
    clean, resumed = _clean_and_killed_then_resumed(tmp_path, framework=framework, memory="recorder", **run_kw)
    why = "a framework that adapts across tasks must round-trip its state_dict and learn only in observe()"
    _expect_equal("records of the resumed and the uninterrupted run", resumed["records"], clean["records"], why)
    _expect_equal("framework state after resume", resumed["framework"], clean["framework"], why)


def framework_is_deterministic(tmp_path: Path, *, framework: str, **kw: Any) -> None:
    """Two runs with one seed give the same records (randomness from the context's seeded rng only)."""
    a = run(compose(tmp_path / "a", framework=framework, memory="recorder", **_run_kw(kw)))
    with _scrambled_global_random():
        b = run(compose(tmp_path / "b", framework=framework, memory="recorder", **_run_kw(kw)))
    why = "draw randomness from AgentContext.rng, never the global generator"
    _expect_equal("records of two runs with one seed", b["records"], a["records"], why)


def framework_reads_no_gold(tmp_path: Path, *, framework: str, **kw: Any) -> None:
    """The framework never reads a sample's gold data."""
    cls = registry.resolve("framework", framework)
    raw = compose(tmp_path, framework=framework, memory="recorder", **_run_kw(kw))
    with gold_guard(raw["benchmark"]["name"], cls.__module__), no_model_calls_outside_the_client():
        _no_crash(run(raw), f"framework {framework!r}")


FRAMEWORK_CHECKS: list[Check] = [
    framework_params_are_validated,
    framework_records_decisions_and_recalls,
    framework_resume_after_kill,
    framework_is_deterministic,
    framework_reads_no_gold,
]


# ---------------------------------------------------------------------------
# Helpers


def _run_kw(kw: dict[str, Any], **defaults: Any) -> dict[str, Any]:
    out = {k: v for k, v in kw.items() if k in ("benchmark", "framework", "overrides", "data_root")}
    for key, value in defaults.items():
        out.setdefault(key, value)
    return out


def _clean_and_killed_then_resumed(tmp_path: Path, **compose_kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """An uninterrupted run, and the same run killed past its middle (not on a snapshot boundary, so
    resume replays samples after the snapshot) then rerun."""
    clean = run(compose(tmp_path / "clean", **compose_kw))
    killed = compose(tmp_path / "killed", **compose_kw)
    with suppress(KeyboardInterrupt):
        run(killed, crash_after=len(clean["records"]) // 2 + 1)
    return clean, run(killed)


def _rebuild_memory(raw: dict[str, Any]) -> Any:
    from aecg_bench.runner.build import build
    from aecg_bench.runner.config import parse_run_config

    _, services, _ = build(parse_run_config(raw))
    return services.memory


def _benchmark(name: str, data_root: Path | None, kw: dict[str, Any]) -> Any:
    from aecg_bench.runner.build import data_root as resolve_data_root

    raw = compose(Path("/nonexistent-results"), benchmark=name, data_root=data_root, overrides=kw.get("overrides", ()))
    cls = registry.resolve("benchmark", name)
    return cls(raw["benchmark"]["params"], data_dir=resolve_data_root(raw["runtime"]["data_root"]) / name)


def _mock_llm(tmp_path: Path, benchmark: str, data_root: Path | None, kw: dict[str, Any]) -> Any:
    from aecg_bench.runner.build import build_llm
    from aecg_bench.runner.config import parse_run_config

    raw = compose(tmp_path, benchmark=benchmark, data_root=data_root, overrides=kw.get("overrides", ()))
    return build_llm(parse_run_config(raw), tmp_path / ".cache")


def _item(item: Any) -> dict[str, Any]:
    from aecg_bench.types import to_jsonable

    return to_jsonable(item)


def _audit(ran: dict[str, Any]) -> list[dict[str, Any]]:
    """Audit events without their wall-clock fields."""
    return [{k: v for k, v in e.items() if k not in ("ts", "time", "wall")} for e in ran["audit"]]


def _no_crash(ran: dict[str, Any], what: str) -> None:
    final = ran["final"]
    if final.get("status") != "complete":
        raise ConformanceError(f"{what}: the run ended {final.get('status')!r}: {final.get('error', '')}")
    infra = final.get("failures", {}).get("infra_error", 0)
    if infra:
        raise ConformanceError(f"{what}: {infra} sample(s) ended infra_error; see the run's samples.jsonl")


def _garbage_actions(mode: str) -> list[Any]:
    from aecg_bench.types import Action, ToolCall

    if mode == "conversation":
        return [Action("message", "xyzzy ###"), Action("tool", tool_calls=(ToolCall("no_such_tool", {"x": 1}, "c0"),))]
    if mode == "answer":
        return [Action("answer", "xyzzy ###")]
    return [Action("command", "xyzzy ###"), Action("command", "")]


@contextmanager
def _scrambled_global_random() -> Iterator[None]:
    """The global generator in another state: a component that draws from it gives another run."""
    state = random.getstate()
    random.seed(f"conformance:{sys.hexversion}")
    for _ in range(7):
        random.random()
    try:
        yield
    finally:
        random.setstate(state)


__all__ = ["BENCHMARK_CHECKS", "FRAMEWORK_CHECKS", "MEMORY_CHECKS", "ConformanceError", "check_id", "compose", "run"]
