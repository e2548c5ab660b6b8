"""`procedures`: operate devices whose unlock procedure is arbitrary but recurs, so only experience helps.

A test instrument built for this harness (not a paper's benchmark; docs/benchmarks/procedures.md).
A seeded generator draws a world of device *families*. Each family has a keypad
of `controls` codes and a secret procedure: `length` codes to enter in order. A task asks to unlock one device of a family; the task text names the
family, the operator's team, a location and a serial number, and the action
hint lists the keypad's codes in a per-task order. Nothing in the text says
which codes work, so an agent without memory succeeds with probability
(1/controls)^length (a wrong code locks the device and ends the task). An agent shown a relevant
past success (a trajectory, an insight, a skill) can copy it.

Structure the memory mechanisms act on, each a parameter:
- scoped families: their procedure differs by the operator's team, so an
  experience of the same device under another team misleads;
- drift: after `drift_at` of the test stream, `drift_fraction` of the families
  (drawn among the common ones unless `drift_among="all"`) get a new procedure,
  unannounced, so stale experience fails;
- rare families: recur `rare_weight` times as often as the others;
- poisoned experience: `poisoned_items` writes coherent but wrong procedures
  (items for ReasoningBank's contamination study, EDV sec. 5.4).

The world, its streams and the generator's parameters are hashed into run.json
(`data_hashes`); the chance rate is in `backends`.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any, Literal

from pydantic import Field

from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.llm.providers import Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.types import Action, Observation, Sample, Score, Task

# Keypad codes, not named controls: SmolLM2-135M picks named controls ("press blue") by its own
# preference whatever its prompt shows, and copies three-digit codes from recalled experience
# (docs/benchmarks/procedures.md, "Why codes").
CONTROLS = tuple(f"enter {n}" for n in (317, 582, 649, 205, 873, 431, 768, 196, 524, 940, 263, 857))
MAKERS = ("Kestrel", "Vesta", "Orion", "Talon", "Juniper", "Cobalt", "Meridian", "Quartz", "Falcon", "Nimbus")
DEVICES = ("valve", "safe", "console", "hatch", "terminal", "locker", "gate", "pump")
TEAMS = ("day shift", "night shift", "maintenance", "security")
HINT = "Actions: enter one code of the keypad per step: "
LOCATIONS = ("north wing", "south wing", "basement", "roof", "lab 2", "dock", "annex", "control room")


class ProceduresParams(Params):
    size: int = Field(48, ge=1, le=10_000, description="tasks in the test stream")
    train_size: int = Field(24, ge=0, le=10_000, description="tasks in the train split (build protocols)")
    generator_seed: int = Field(0, ge=0, description="seed of the world (families, procedures) and its streams")
    families: int = Field(4, ge=1, le=len(MAKERS) * len(DEVICES))
    controls: int = Field(3, ge=2, le=len(CONTROLS), description="codes on a keypad (valid actions per step)")
    length: int = Field(2, ge=1, le=6, description="steps of a procedure")
    teams: int = Field(2, ge=1, le=len(TEAMS), description="operator teams named in the tasks")
    scoped_fraction: float = Field(0.25, ge=0, le=1, description="share of families whose procedure depends on team")
    rare_fraction: float = Field(0.25, ge=0, le=1, description="share of families that recur rarely")
    rare_weight: float = Field(0.25, gt=0, le=1, description="how often a rare family recurs, relative to the others")
    drift_at: float = Field(0.5, ge=0, le=1, description="share of the test stream after which drift applies")
    drift_fraction: float = Field(0.25, ge=0, le=1, description="share of families whose procedure changes at drift")
    drift_among: Literal["common", "all"] = Field(
        "common",
        description="which families may drift: 'common' (not rare) so that drift has tasks after its point to act on; "
        "'all' draws among every family (a rare family recurs too seldom to exercise drift)",
    )


@dataclass(frozen=True)
class Family:
    """One kind of device: its panel, its procedure per team (one entry unless scoped), and after drift."""

    name: str
    panel: tuple[str, ...]
    procedures: dict[str, tuple[str, ...]]  # team -> procedure ("*" when the family is not scoped)
    drifted: dict[str, tuple[str, ...]]  # team -> procedure after the drift point (empty: no drift)
    rare: bool

    @property
    def scoped(self) -> bool:
        return "*" not in self.procedures

    def procedure(self, team: str, after_drift: bool) -> tuple[str, ...]:
        table = self.drifted if after_drift and self.drifted else self.procedures
        return table["*"] if "*" in table else table[team]


def _pick(rng: random.Random, n: int, fraction: float) -> set[int]:
    """`round(fraction * n)` of the indices 0..n-1, drawn with `rng`."""
    return set(rng.sample(range(n), round(fraction * n)))


def make_world(p: ProceduresParams) -> list[Family]:
    """The families of a world: a pure function of the generator's parameters."""
    rng = random.Random(f"procedures:world:{p.generator_seed}")
    names = rng.sample([f"{m} {d}" for m in MAKERS for d in DEVICES], p.families)
    teams = TEAMS[: p.teams]
    scoped = _pick(rng, p.families, p.scoped_fraction)
    rare = _pick(rng, p.families, p.rare_fraction)
    # drifting families: round(drift_fraction * families), drawn among the common ones by default (a rare family
    # recurs ~`rare_weight` as often, so after the drift point it has too few tasks for stale experience to fail
    # and be repaired); capped at the pool's size
    pool = [i for i in range(p.families) if p.drift_among == "all" or i not in rare]
    drifts = set(rng.sample(pool, min(len(pool), round(p.drift_fraction * p.families))))
    out = []
    for i, name in enumerate(names):
        panel = tuple(rng.sample(CONTROLS, p.controls))

        def draw(avoid: tuple[str, ...] | None = None, panel: tuple[str, ...] = panel) -> tuple[str, ...]:
            while True:  # a drifted procedure always differs from the one it replaces
                proc = tuple(rng.choice(panel) for _ in range(p.length))
                if proc != avoid:
                    return proc

        keys = teams if i in scoped else ("*",)
        procedures: dict[str, tuple[str, ...]] = {}
        for key in keys:  # a scoped family's teams never share a procedure
            proc = draw()
            while proc in procedures.values():
                proc = draw()
            procedures[key] = proc
        drifted = {k: draw(avoid=v) for k, v in procedures.items()} if i in drifts else {}
        out.append(Family(name, panel, procedures, drifted, i in rare))
    return out


def chance_rate(p: ProceduresParams) -> float:
    """Success rate of an agent that enters a valid code, uniformly at random, at each step."""
    return (1 / p.controls) ** p.length


class ProceduresBenchmark(Benchmark):
    name = "procedures"
    version = "2"  # 2: drifting families drawn among the common ones (`drift_among`)
    Params = ProceduresParams
    params: ProceduresParams

    def splits(self) -> list[str]:
        return ["train", "test"]

    @cached_property
    def world(self) -> list[Family]:
        return make_world(self.params)

    def samples(self, split: str = "test") -> list[Sample]:
        if split not in self.splits():
            raise ValueError(f"procedures has no split {split!r}; valid choices: train, test")
        p = self.params
        n = p.size if split == "test" else p.train_size
        rng = random.Random(f"procedures:{split}:{p.generator_seed}")
        weights = [p.rare_weight if f.rare else 1.0 for f in self.world]
        teams = TEAMS[: p.teams]
        out = []
        for i in range(n):
            fam = rng.choices(self.world, weights)[0]
            team, where, serial = rng.choice(teams), rng.choice(LOCATIONS), rng.randrange(1000, 10000)
            order = rng.sample(fam.panel, len(fam.panel))
            after = split == "test" and i >= p.drift_at * n and bool(fam.drifted)
            task = Task(
                id=f"{split}-{i}",
                benchmark=self.name,
                instruction=f"Unlock the {fam.name} in the {where} (serial {serial}). You work on the {team} team.",
                mode="steps",
                task_type=fam.name.lower().replace(" ", "_"),
                action_hint=HINT + " | ".join(order),
                action_grammar="root ::= " + " | ".join(f'"{c}"' for c in order),
                max_steps=p.length,
                metadata={"team": team},
            )
            gold = {
                "device": fam.name,
                "panel": order,
                "procedure": list(fam.procedure(team, after)),
                "scoped": fam.scoped,
                "rare": fam.rare,
                "drifted": after,
            }
            out.append(Sample(task=task, gold=gold, split=split))
        return out

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        g = sample.gold
        return ProceduresEnv(g["device"], tuple(g["panel"]), tuple(g["procedure"]), _flags(g))

    def data_hashes(self) -> dict[str, str]:
        """The generated world and both streams (with the generator's parameters) as one sha256."""
        blob = {
            "generator": self.params.model_dump(),
            "world": [asdict(f) for f in self.world],
            "streams": {
                s: [[x.task.instruction, x.task.action_hint, x.gold] for x in self.samples(s)] for s in self.splits()
            },
        }
        digest = hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()
        return {f"generated:procedures-v{self.version}": digest}

    def describe_backends(self) -> dict[str, Any]:
        return {"procedures": {"chance_rate": chance_rate(self.params), "families": [f.name for f in self.world]}}


def _flags(gold: dict[str, Any]) -> dict[str, float]:
    return {k: float(bool(gold[k])) for k in ("scoped", "rare", "drifted")}


class ProceduresEnv(Environment):
    """One device: each correct code advances the procedure; a wrong one locks the device."""

    def __init__(self, device: str, panel: tuple[str, ...], procedure: tuple[str, ...], flags: dict[str, float]):
        self.device, self.panel, self.procedure, self.flags = device, panel, procedure, flags
        self.reset()

    def reset(self) -> Observation:
        self.done, self.unlocked, self.progress, self.invalid = False, False, 0, 0
        return Observation(f"The {self.device} is locked. Step 1 of {len(self.procedure)}.")

    def step(self, action: Action) -> Observation:
        if self.done:
            return Observation(f"The {self.device} does not respond any more.", done=True, valid=False)
        cmd = " ".join(action.text.lower().split()).rstrip(".")
        if cmd not in self.panel:
            self.invalid += 1
            return Observation(
                f"Invalid action {action.text!r}. The keypad takes: {', '.join(self.panel)}.", valid=False
            )
        if cmd != self.procedure[self.progress]:
            self.done = True
            return Observation(f"Buzz: wrong code. The {self.device} locks itself.", done=True)
        self.progress += 1
        if self.progress == len(self.procedure):
            self.done = self.unlocked = True
            return Observation(f"Click: the {self.device} unlocks.", reward=1.0, done=True)
        return Observation(f"Click: accepted. Step {self.progress + 1} of {len(self.procedure)}.")

    def score(self) -> Score:
        return Score(
            success=self.unlocked,
            value=self.progress / len(self.procedure),
            metrics={
                "correct_steps": float(self.progress),
                "invalid_actions": float(self.invalid),
                **self.flags,
            },
        )


def poisoned_items(p: ProceduresParams) -> list[dict[str, str]]:
    """Coherent but wrong experience for every family (and team of a scoped family), ReasoningBank's
    item shape: the procedure is a seeded draw from the family's panel that differs from the true one
    before and after drift. For EDV's contamination study (`reasoningbank_contaminated.items_file`)."""
    rng = random.Random(f"procedures:poison:{p.generator_seed}")
    items = []
    for fam in make_world(p):
        for team, proc in fam.procedures.items():
            true = {proc, fam.drifted.get(team, proc)}
            wrong = proc
            while wrong in true:
                wrong = tuple(rng.choice(fam.panel) for _ in range(p.length))
            who = "" if team == "*" else f" on the {team} team"
            items.append(
                {
                    "title": f"Unlocking the {fam.name}",
                    "description": f"The sequence that unlocks the {fam.name}{who}.",
                    "content": f"To unlock the {fam.name}{who}, enter these codes in this order: {' ; '.join(wrong)}.",
                }
            )
    return items


# ---------------------------------------------------------------------------
# Mock policy (tests): a copier, so that memory helps exactly as much as it carries the procedure.

_TASK = re.compile(r"Unlock the (.+?) in the ")
_HINT = re.compile(re.escape(HINT) + r"(.+)")
_STEP = re.compile(r"Step (\d+) of \d+\.")


def mock_copier(request: Request, spec: ModelSpec) -> str:
    """Copies the procedure from recalled experience that names this device; guesses otherwise.

    From the prompt's task brief it reads the device and the panel; the controls that other lines
    naming the device mention, in order of appearance, are the procedure it follows (the k-th for
    step k, k read from the latest "Step k of n"). With none, it picks a control by a hash of the
    prompt (uniform, the same on every rerun): the chance baseline.
    """
    text = "\n".join(str(m.get("content") or "") for m in request.messages)
    hints, tasks = _HINT.findall(text), _TASK.findall(text)
    if not hints or not tasks:
        return "stop"
    device, panel = tasks[-1], [c.strip() for c in hints[-1].split("|")]
    steps = _STEP.findall(text)
    step = int(steps[-1]) if steps else 1
    remembered: list[str] = []
    for line in text.splitlines():
        if device in line and not line.startswith(("Task:", "The ")):
            hits = sorted((m.start(), c) for c in panel for m in re.finditer(re.escape(c), line))
            remembered += [c for _, c in hits]
    if len(remembered) >= step:
        return remembered[step - 1]
    digest = hashlib.sha256(text.encode()).digest()
    return panel[int.from_bytes(digest[:4], "big") % len(panel)]
