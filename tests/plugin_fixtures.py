"""Installed-package fixtures for the plugin tests: a distribution on sys.path made of a dist-info
folder (its entry points) and a package folder (modules and `conf/`), as pip would leave it."""

from __future__ import annotations

import textwrap
from pathlib import Path

GROUPS = {"memory": "aecg_bench.memory", "benchmark": "aecg_bench.benchmark", "framework": "aecg_bench.framework"}


def install_fake(
    site: Path,
    dist: str,
    package: str,
    *,
    entry_points: dict[str, dict[str, str]],
    modules: dict[str, str] | None = None,
    configs: dict[str, str] | None = None,
) -> Path:
    """Write `dist` (version 0.1) into `site`: entry_points = {kind: {name: "module:Class"}},
    modules = {relative module path: source}, configs = {"memory/x.yaml": text}."""
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = []
    for kind, names in entry_points.items():
        lines.append(f"[{GROUPS[kind]}]")
        lines += [f"{name} = {target}" for name, target in names.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    pkg = site / package
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    for rel, source in (modules or {}).items():
        (pkg / rel).write_text(textwrap.dedent(source))
    for rel, text in (configs or {}).items():
        path = pkg / "conf" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return site


# Memory methods, each with one defect the conformance kit must catch; `healthy` has none.
DEFECTIVE_MEMORY = '''
import random
from typing import Any

import pydantic

from aecg_bench.contracts import MemoryMethod, Params
from aecg_bench.types import MemoryItem


class Healthy(MemoryMethod):
    name = "healthy"
    version = "1"

    def __init__(self, params: Any = None, *, services: Any) -> None:
        super().__init__(params, services=services)
        self.notes: list[dict[str, Any]] = []
        self.uses = 0

    def recall(self, query):
        self.uses += 1
        picked = [n for n in self.notes if n["type"] == query.task.task_type][-2:]
        return [MemoryItem(id=n["id"], text=n["text"], level=query.level) for n in picked]

    def note_text(self, episode) -> str:
        return f"{episode.task.id}: {len(episode.trajectory.steps)} steps, success={episode.outcome.success}"

    def observe(self, episode) -> None:
        note = {"id": f"n{len(self.notes)}", "type": episode.task.task_type, "text": self.note_text(episode)}
        self.notes.append(note)
        self.audit.record("admit", memory_id=note["id"])

    def state_dict(self):
        return {"notes": [dict(n) for n in self.notes], "uses": self.uses}

    def load_state_dict(self, state) -> None:
        self.notes = [dict(n) for n in state["notes"]]
        self.uses = state["uses"]

    def stats(self):
        return {"notes": float(len(self.notes)), "uses": float(self.uses)}


class ForgetsInSnapshot(Healthy):
    """`uses` is not saved: a resumed run's memory_stats differ."""
    name = "forgets_in_snapshot"

    def state_dict(self):
        return {"notes": [dict(n) for n in self.notes], "uses": 0}


class GlobalRandom(Healthy):
    """Draws from the global generator instead of a seeded one."""
    name = "global_random"

    def observe(self, episode) -> None:
        if random.random() < 0.5:
            super().observe(episode)


class ReadsGold(Healthy):
    """Builds the benchmark itself and reads the gold target of the task it observed."""
    name = "reads_gold"

    def note_text(self, episode) -> str:
        from aecg_bench import registry

        bench = registry.build("benchmark", episode.task.benchmark, {"size": 10})
        gold = {s.id: s.gold for s in bench.samples("test")}[episode.task.id]
        return f"{episode.task.id}: the target is {gold['target']}"


class CallsLitellm(Healthy):
    """Calls the provider library itself: no usage, cost, cache or rate limit."""
    name = "calls_litellm"

    def note_text(self, episode) -> str:
        import litellm

        litellm.completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "summarise"}])
        return "never reached"


class LooseParams(pydantic.BaseModel):
    top_k: int = 2


class AcceptsTypos(Healthy):
    """Its Params do not forbid unknown keys: a typo in a config is silently ignored."""
    name = "accepts_typos"
    Params = LooseParams
'''

DEFECTIVE_BENCHMARK = """
import random
from typing import Any

import pydantic

from aecg_bench.contracts import Benchmark, Environment
from aecg_bench.types import Observation, Sample, Score, Task


class Env(Environment):
    def __init__(self, gold, strict: bool = False, noisy: bool = False) -> None:
        self.gold, self.strict, self.noisy, self.answer = gold, strict, noisy, None

    def reset(self):
        self.answer = None
        return Observation("Say the word.")

    def step(self, action):
        if self.strict and action.text != self.gold["word"]:
            raise ValueError(f"bad answer {action.text!r}")
        self.answer = action.text
        return Observation("noted", done=True)

    def score(self):
        ok = self.answer == self.gold["word"] or (self.noisy and random.random() < 0.5)
        return Score(success=ok, value=float(ok))


class Healthy(Benchmark):
    name = "healthy_bench"
    version = "1"
    strict = noisy = False

    def words(self) -> list[str]:
        return ["alpha", "beta", "gamma", "delta"]

    def samples(self, split: str = "test"):
        return [
            Sample(Task(id=f"{split}-{i}", benchmark=self.name, instruction="Say the word.", mode="answer",
                        task_type="say", max_steps=1), gold={"word": w}, split=split)
            for i, w in enumerate(self.words())
        ]

    def make_env(self, sample, ctx):
        return Env(sample.gold, self.strict, self.noisy)


class RaisesOnBadAction(Healthy):
    name = "raises_on_bad_action"
    strict = True


class UnseededSamples(Healthy):
    name = "unseeded_samples"

    def words(self) -> list[str]:
        return random.sample(["alpha", "beta", "gamma", "delta", "eps", "zeta"], 4)


class NoisyScore(Healthy):
    name = "noisy_score"
    noisy = True


class Loose(pydantic.BaseModel):
    size: int = 4


class AcceptsTyposBench(Healthy):
    name = "accepts_typos_bench"
    Params = Loose
"""

DEFECTIVE_FRAMEWORK = '''
import random

import pydantic

from aecg_bench.contracts import Framework
from aecg_bench.types import Action, DecisionNode
from frameworks.base import EnvLoop
from frameworks.single import SingleAgentFramework


class Healthy(SingleAgentFramework):
    name = "healthy_fw"
    version = "1"


class ActsWithoutDeciding(Framework):
    """Steps the environment without recording decisions or asking memory."""
    name = "acts_without_deciding"
    version = "1"

    def run(self, task, env, ctx):
        loop = EnvLoop(env, task, ctx.trajectory, ctx, None)
        loop.reset()
        while not loop.finished:
            loop.act(Action("command", "stop"), None)
        loop.close_out()
        return ctx.trajectory


class GlobalRandomFw(SingleAgentFramework):
    name = "global_random_fw"
    version = "1"

    def run(self, task, env, ctx):
        traj = super().run(task, env, ctx)
        traj.metadata["coin"] = random.random()
        if traj.metadata["coin"] < 0.5:
            traj.add_decision(DecisionNode(id="coin", agent="solver", role="actor", level="agent"))
        return traj


class PeeksAtGold(SingleAgentFramework):
    name = "peeks_at_gold"
    version = "1"

    def run(self, task, env, ctx):
        from aecg_bench import registry

        bench = registry.build("benchmark", task.benchmark, {"size": 10})
        ctx.trajectory.metadata["target"] = {s.id: s.gold for s in bench.samples("test")}[task.id]["target"]
        return super().run(task, env, ctx)


class ForgetsLearning(SingleAgentFramework):
    """Learns across tasks in observe() but does not save it: a resumed run differs."""
    name = "forgets_learning"
    version = "1"
    seen = 0

    def run(self, task, env, ctx):
        traj = super().run(task, env, ctx)
        if self.seen >= 5:  # what it learned changes how it acts
            traj.add_decision(DecisionNode(id="extra", agent="solver", role="actor", level="agent"))
        return traj

    def observe(self, episode) -> None:
        self.seen += 1


class Loose(pydantic.BaseModel):
    history_window: int = 8


class AcceptsTyposFw(Healthy):
    name = "accepts_typos_fw"
    Params = Loose
'''


def configs_for(kind: str, names: list[str], params: str = "{}") -> dict[str, str]:
    return {f"{kind}/{name}.yaml": f"name: {name}\nparams: {params}\n" for name in names}
