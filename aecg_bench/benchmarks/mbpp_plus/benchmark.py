"""The MBPP-Plus benchmark and its one-answer environment."""

from __future__ import annotations

from dataclasses import asdict
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import Field

from aecg_bench.benchmarks.mbpp_plus.data import MBPP_PLUS, Problem, load_problems
from aecg_bench.benchmarks.mbpp_plus.evaluate import RunResult, Settings, check
from aecg_bench.benchmarks.mbpp_plus.extract import sanitize
from aecg_bench.benchmarks.mbpp_plus.groundtruth import GroundTruthStore
from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.errors import ConfigError
from aecg_bench.sandbox import Limits, run_python
from aecg_bench.sandbox.limits import MiB
from aecg_bench.types import Action, Observation, Sample, Score, Task

INSTRUCTION_PREFIX = (
    "Please provide a self-contained Python script that solves the following problem in a markdown code block:"
)
DEFAULT_CACHE = Path("~/.cache/aecg_bench/env/mbpp_plus")


class MbppPlusParams(Params):
    size: int | None = Field(None, ge=1, description="number of tasks (None: all 378)")
    offset: int = Field(0, ge=0, description="index of the first task, in file order")
    min_time_limit: float = Field(1.0, gt=0, description="EvalPlus v0.3.1 DEFAULT_MIN_TIME_LIMIT (s)")
    gt_time_limit_factor: float = Field(4.0, gt=0, description="EvalPlus DEFAULT_GT_TIME_LIMIT_FACTOR")
    max_run_seconds: float = Field(60.0, gt=0, description="EvalPlus EVALPLUS_TIMEOUT_PER_TASK (s)")
    fast_check: bool = Field(True, description="stop a test run at its first failing input (EvalPlus default)")
    memory_mb: int = Field(4096, ge=64, description="RLIMIT_AS of the solution (EvalPlus: 4 GiB)")
    max_processes: int = Field(32, ge=4, description="RLIMIT_NPROC of the solution's fresh uid")
    show_first_test: bool = Field(True, description="append MBPP's first test to the prompt (as EvalPlus)")
    sandbox_mode: str = Field("auto", pattern="^(auto|root|userns|rlimits)$")
    strict_isolation: bool = Field(False, description="fail (infra error) rather than run without namespaces")
    download: bool = True


def problem_text(problem: Problem, show_first_test: bool) -> str:
    """The task as EvalPlus shows it: the description, then MBPP's first test, in a docstring."""
    description = problem.prompt.strip().strip("'\"").strip()
    test = f"\n{problem.first_test}" if show_first_test and problem.first_test else ""
    return f'"""\n{description}{test}\n"""'


class MbppPlusBenchmark(Benchmark):
    name = "mbpp_plus"
    version = "2"  # 2: tempfile works under the guard; Mbpp/793's empty plus set is run empty (issue 17)
    Params = MbppPlusParams

    def __init__(self, params: dict[str, Any] | Params | None = None, *, data_dir: Path | None = None) -> None:
        super().__init__(params, data_dir=data_dir)
        self._stores: dict[Path, GroundTruthStore] = {}  # one per cache dir, shared by the envs

    @cached_property
    def problems(self) -> dict[str, Problem]:
        return {p.task_id: p for p in load_problems(self.data_dir, download=self.params.download)}

    @cached_property
    def settings(self) -> Settings:
        p = self.params
        return Settings(
            min_time_limit=p.min_time_limit,
            gt_time_limit_factor=p.gt_time_limit_factor,
            max_run_seconds=p.max_run_seconds,
            fast_check=p.fast_check,
            memory_bytes=p.memory_mb * MiB,
            max_processes=p.max_processes,
            mode=p.sandbox_mode,
            strict_isolation=p.strict_isolation,
        )

    def data_hashes(self) -> dict[str, str]:
        return {MBPP_PLUS.relpath: MBPP_PLUS.sha256}

    def samples(self, split: str = "test") -> list[Sample]:
        if split != "test":
            raise ConfigError(f"benchmark 'mbpp_plus' has no split {split!r}; valid splits: test")
        chosen = list(self.problems.values())[self.params.offset :]
        if self.params.size is not None:
            chosen = chosen[: self.params.size]
        return [self._sample(p, split) for p in chosen]

    def _sample(self, problem: Problem, split: str) -> Sample:
        task = Task(
            id=problem.task_id,
            benchmark=self.name,
            instruction=f"{INSTRUCTION_PREFIX}\n```\n{problem_text(problem, self.params.show_first_test)}\n```",
            mode="answer",
            task_type="python_function",
            action_hint=f"Reply with one markdown Python code block that defines the function `{problem.entry_point}`.",
            max_steps=1,
            metadata={"entry_point": problem.entry_point},
        )
        return Sample(task=task, gold={"task_id": problem.task_id}, split=split)

    def _store(self, cache_dir: Path | None) -> GroundTruthStore:
        root = (cache_dir or DEFAULT_CACHE).expanduser()
        if root not in self._stores:
            self._stores[root] = GroundTruthStore(root, MBPP_PLUS.sha256)
        return self._stores[root]

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        problem = self.problems[sample.gold["task_id"]]
        return MbppPlusEnv(problem, self._store(ctx.cache_dir), self.settings)

    def describe_backends(self) -> dict[str, Any]:
        probe = run_python("pass", limits=Limits(wall_seconds=30, mode=self.settings.mode))  # type: ignore[arg-type]
        facts = {k: v for k, v in probe.isolation.items() if k != "uid"}  # the uid is fresh per run
        return {"sandbox": facts or {"error": probe.error or "no isolation report"}}


class MbppPlusEnv(Environment):
    """One answer: the solution code. The score needs no further interaction."""

    def __init__(self, problem: Problem, store: GroundTruthStore, settings: Settings) -> None:
        self.problem = problem
        self.store = store
        self.settings = settings
        self.solution: str | None = None
        self.base: RunResult | None = None
        self.plus: RunResult | None = None

    def reset(self) -> Observation:
        self.solution = self.base = self.plus = None
        return Observation(f"Write the Python function `{self.problem.entry_point}`; it is run against hidden tests.")

    def step(self, action: Action) -> Observation:
        p = self.problem
        self.solution = sanitize(action.text, p.entry_point)
        if not self.solution.strip():
            self.base = RunResult("fail", len(p.base_inputs), 0, len(p.base_inputs), "no Python code in the answer")
            self.plus = RunResult("fail", len(p.plus_inputs), 0, len(p.plus_inputs), "no Python code in the answer")
            return Observation("No Python code found in the answer.", done=True, valid=False)
        truth = self.store.get(p)
        self.base = check(self.solution, p, p.base_inputs, truth.base, self.settings)
        self.plus = check(self.solution, p, p.plus_inputs, truth.plus, self.settings)
        success = self.base.passed and self.plus.passed
        return Observation(
            "Solution recorded.",
            reward=float(success),
            done=True,
            info={"solution": self.solution, "base": asdict(self.base), "plus": asdict(self.plus)},
        )

    def score(self) -> Score:
        base, plus = self.base, self.plus
        if base is None or plus is None:
            return Score(success=False, value=0.0, metrics={"answered": 0.0, "base_pass": 0.0, "plus_pass": 0.0})
        success = base.passed and plus.passed
        return Score(
            success=success,
            value=float(success),
            metrics={
                "answered": float(bool(self.solution and self.solution.strip())),
                "base_pass": float(base.passed),
                "plus_pass": float(plus.passed),
                "base_tests": float(base.tests),
                "base_run": float(base.run),
                "base_failed": float(base.failed),
                "plus_tests": float(plus.tests),
                "plus_run": float(plus.run),
                "plus_failed": float(plus.failed),
                "timeout": float("timeout" in (base.status, plus.status)),
            },
        )
