"""The benchmark: AgentBoard's 90 ScienceWorld tasks on the real simulator.

Source: AgentBoard (Ma et al., 2024, arXiv 2401.13178), `data/scienceworld/test.jsonl`
(goal, subgoals, difficulty, `additional_info.{env_name, var}`) and its
ScienceWorld environment and task runner; the simulator is ScienceWorld
(Wang et al., 2022) from the `scienceworld` 1.2.3 wheel (Java).

Setup reproduced from AgentBoard: simplifications `selfWateringFlowerPots,
openContainers, openDoors, noElectricalAction` (no teleport), 30 steps, the
task's `goal` text as the instruction, subgoal-matching progress and success
(`subgoals.py`), the `check valid actions` meta-action (`env.py`).
Deviations are listed in docs/benchmarks/scienceworld.md.

Parameters: `max_steps` (30, AgentBoard's `max_num_steps`), `simplifications`,
the JVM's `heap_mb` (512) and `jvm_options`, `call_timeout_s` per simulator
call (a hung JVM is killed and the sample becomes `infra_error`),
`start_timeout_s`, `max_idle` warm JVMs kept between samples, `exclude` (task
ids to leave out), `download` (fetch the data file when missing).
"""

from __future__ import annotations

import json
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import Field

from aecg_bench.benchmarks.data import DataFile, fetch, sha256_of
from aecg_bench.benchmarks.scienceworld.env import ScienceWorldEnvironment
from aecg_bench.benchmarks.scienceworld.pool import SimulatorPool
from aecg_bench.benchmarks.scienceworld.prompt import ACTION_GRAMMAR, ACTION_HINT
from aecg_bench.benchmarks.scienceworld.simulator import DETERMINISTIC_JVM_OPTIONS, JvmSettings, Simulator
from aecg_bench.benchmarks.scienceworld.subgoals import compile_subgoals
from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.types import Sample, Task

TEST_FILE = DataFile(
    relpath="test.jsonl",
    sha256="ed58212de963cd3c3479e87a25c5d91e2d2decd4bbc3a39bb75283892d186ce1",
    url="https://huggingface.co/datasets/hkust-nlp/agentboard/resolve/main/data/scienceworld/test.jsonl",
    source="HF dataset hkust-nlp/agentboard, data/scienceworld/test.jsonl (git blob 035e0fec)",
)
AGENTBOARD_SIMPLIFICATIONS = "selfWateringFlowerPots,openContainers,openDoors,noElectricalAction"


class ScienceWorldParams(Params):
    max_steps: int = Field(30, ge=1, description="AgentBoard's max_num_steps")
    simplifications: str = Field(AGENTBOARD_SIMPLIFICATIONS, description="comma-separated ScienceWorld simplifications")
    heap_mb: int = Field(512, ge=64, description="JVM heap cap (-Xmx)")
    jvm_options: tuple[str, ...] = Field(DETERMINISTIC_JVM_OPTIONS, description="JVM flags besides -Xmx")
    call_timeout_s: float = Field(60.0, gt=0, description="bound on one simulator call; beyond it the JVM is killed")
    start_timeout_s: float = Field(60.0, gt=0)
    max_idle: int = Field(1, ge=0, description="warm JVMs kept between samples")
    exclude: tuple[str, ...] = Field((), description="task ids to leave out")
    download: bool = True


class ScienceWorldBenchmark(Benchmark):
    name = "scienceworld"
    version = "1"
    Params = ScienceWorldParams

    def __init__(self, params: dict[str, Any] | Params | None = None, *, data_dir: Path | None = None) -> None:
        super().__init__(params, data_dir=data_dir)
        self._pool: SimulatorPool | None = None

    # -- data ---------------------------------------------------------------

    def data_hashes(self) -> dict[str, str]:
        return {TEST_FILE.relpath: TEST_FILE.sha256}

    def samples(self, split: str = "test") -> list[Sample]:
        if split != "test":
            raise ConfigError(f"scienceworld has no split {split!r}; valid splits: test")
        path = fetch(self.data_dir, TEST_FILE, download=self.params.download)
        lines = path.read_text("utf-8").splitlines()
        samples = [self._sample(path, i, line) for i, line in enumerate(lines) if line.strip()]
        by_id = {s.id: s for s in samples}
        unknown = sorted(set(self.params.exclude) - set(by_id))
        if unknown:
            raise ConfigError(f"scienceworld exclude names unknown task ids {unknown}; ids look like {samples[0].id!r}")
        return [s for s in samples if s.id not in self.params.exclude]

    def _sample(self, path: Path, index: int, line: str) -> Sample:
        try:
            row = json.loads(line)
            env_name, var = str(row["additional_info"]["env_name"]), int(row["additional_info"]["var"])
            goal, subgoals, difficulty = str(row["goal"]), list(row["subgoals"]), str(row["difficulty"])
            compile_subgoals(subgoals)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: line {index + 1} is not an AgentBoard ScienceWorld task ({exc})") from None
        task = Task(
            id=f"{env_name}_{var}",  # AgentBoard's key for a task
            benchmark=self.name,
            instruction=goal,
            mode="steps",
            task_type=env_name,
            action_hint=ACTION_HINT,
            action_grammar=ACTION_GRAMMAR,
            max_steps=self.params.max_steps,
            metadata={"difficulty": difficulty, "env_name": env_name, "variation": var, "index": index},
        )
        return Sample(task=task, gold={"env_name": env_name, "var": var, "subgoals": subgoals})

    # -- simulator ----------------------------------------------------------

    def jvm_settings(self) -> JvmSettings:
        p = self.params
        return JvmSettings(
            heap_mb=p.heap_mb,
            options=tuple(p.jvm_options),
            call_timeout_s=p.call_timeout_s,
            start_timeout_s=p.start_timeout_s,
        )

    @property
    def pool(self) -> SimulatorPool:
        """The JVMs shared by every environment of this benchmark (started on first use)."""
        if self._pool is None:
            settings = self.jvm_settings()
            self._pool = SimulatorPool(lambda: Simulator(settings), max_idle=self.params.max_idle)
        return self._pool

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        return ScienceWorldEnvironment(sample.gold, self.pool, self.params.simplifications)

    def gold_action_sequence(self, sample: Sample) -> list[str]:
        """The simulator's own gold path for a task (for verification scripts and tests, never agents)."""
        sim = self.pool.acquire()
        try:
            sim.load(sample.gold["env_name"], int(sample.gold["var"]), self.params.simplifications, gold_path=True)
            return sim.gold_actions()
        finally:
            self.pool.release(sim)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

    def describe_backends(self) -> dict[str, Any]:
        from scienceworld.constants import JAR_PATH

        settings = self.jvm_settings()
        return {
            "simulator": "scienceworld",
            "scienceworld_version": metadata.version("scienceworld"),
            "jar_sha256": sha256_of(Path(JAR_PATH)),
            "java": _java_version(settings),
            "jvm": {"heap_mb": settings.heap_mb, "options": list(settings.options)},
            "simplifications": self.params.simplifications,
        }


def _java_version(settings: JvmSettings) -> str | None:
    """First line of `java -version` (recorded in run.json), None if Java is missing."""
    try:
        java = settings.command("")[0]
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (ConfigError, OSError, subprocess.TimeoutExpired):
        return None
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[0] if lines else None
