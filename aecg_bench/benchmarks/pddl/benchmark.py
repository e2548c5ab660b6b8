"""`pddl`: AgentBoard's 60 PDDL problems (gripper 20, blockworld 10, barman 20, tyreworld 10).

Source: AgentBoard (Ma et al., 2024; hkust-nlp/AgentBoard), the setup AECG and
G-Memory evaluate on. Order and labels follow AgentBoard's `EvalPddl`: domains
in the order of `test.jsonl` (gripper, blockworld, barman, tyreworld), each
domain's problems in lexicographic file order (blockworld index 1 is
`problem10.pddl`), and row k of `test.jsonl` labels the k-th problem of that
sequence. The pairing is checked on load: each row's annotated subgoals must be
exactly the rendered goal atoms of its problem, so a label can never attach to
the wrong problem (G-Memory takes difficulty labels by running index while
iterating domains in its own configured order, which shifts them whenever that
order differs from the file's).

Environment: `env.PddlEnv` (AgentBoard's observations, meta-actions, messages
and metrics) over a STRIPS engine (`engine.World`) fed by a strict parser. One
normalisation, in `SIGNATURE_OVERRIDES`: tyreworld declares `(in ?x - container
?y - obj)` but uses `in` as (object, container) everywhere, so the declaration
is read as `(obj, container)`. Step limit 30 (`max_num_steps` in AgentBoard's
main evaluation config, which also fixes the domain order used here).

Hyperparameters: `domains` (subset, order kept), `max_steps` (30), `download`.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import Field, field_validator

from aecg_bench.benchmarks.data import fetch
from aecg_bench.benchmarks.pddl.engine import World
from aecg_bench.benchmarks.pddl.env import PddlEnv, meta_actions
from aecg_bench.benchmarks.pddl.files import ANNOTATIONS, PINS, data_file, problem_files
from aecg_bench.benchmarks.pddl.parser import ROOT_TYPE, Atom, Domain, parse_domain, parse_problem
from aecg_bench.benchmarks.pddl.text import render, render_atom, render_goal
from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.errors import DataError
from aecg_bench.types import Sample, Task

DOMAINS = ("gripper", "blockworld", "barman", "tyreworld")
SIGNATURE_OVERRIDES: dict[str, dict[str, tuple[str, ...]]] = {"tyreworld": {"in": ("obj", "container")}}
DESCRIPTIONS = {
    "gripper": "A robot with two grippers carries balls between rooms. It can move from room to room, pick up a "
    "ball in its current room with a free gripper, and drop a ball it carries into its current room.",
    "blockworld": "A robot arm rearranges blocks on a table. The arm holds at most one block. It can pick up a "
    "clear block from the table, put the block it holds down on the table, stack the block it holds on a clear "
    "block, and unstack a clear block from the block beneath it.",
    "barman": "You are a robot barman with two hands, working with drink dispensers, shot glasses and a shaker. "
    "Shot glasses are filled with ingredients from dispensers; two ingredients poured into the shaker and shaken "
    "make a cocktail, which is poured into a clean shot glass. A container must be held to be used, most actions "
    "need the other hand empty, and used containers must be cleaned before reuse.",
    "tyreworld": "Replace flat wheels with intact, inflated ones. The tools (wrench, jack, pump) and the spare "
    "wheels are in the boot, which must be opened first. A hub's nuts are loosened while it is on the ground, the "
    "hub is jacked up, the nuts undone, the wheel removed and another put on, the nuts done up, the hub jacked "
    "down and the nuts tightened.",
}


class PddlParams(Params):
    domains: list[str] = Field(default_factory=lambda: list(DOMAINS), description="subset of the four domains")
    max_steps: int = Field(30, ge=1, description="actions per problem, meta-actions included (AgentBoard: 30)")
    download: bool = Field(True, description="fetch missing domain/problem files from AgentBoard when online")

    @field_validator("domains")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        bad = [d for d in value if d not in DOMAINS]
        if bad or not value:
            raise ValueError(f"unknown or empty domains {bad or value}; valid: {', '.join(DOMAINS)}")
        return [d for d in DOMAINS if d in value]


class PddlBenchmark(Benchmark):
    name = "pddl"
    version = "1"
    Params = PddlParams

    def __init__(self, params: dict | Params | None = None, *, data_dir: Path | None = None) -> None:
        super().__init__(params, data_dir=data_dir)
        self._domains: dict[str, Domain] = {}
        self._worlds: dict[str, World] = {}

    def _path(self, relpath: str) -> Path:
        return fetch(self.data_dir, data_file(relpath), download=self.params.download)

    def domain(self, name: str) -> Domain:
        if name not in self._domains:
            rel = f"domains/{name}.pddl"
            text = self._path(rel).read_text(encoding="utf-8")
            self._domains[name] = parse_domain(text, rel, SIGNATURE_OVERRIDES.get(name))
        return self._domains[name]

    def world(self, domain: str, relpath: str) -> World:
        if relpath not in self._worlds:
            dom = self.domain(domain)
            self._worlds[relpath] = World(
                dom, parse_problem(self._path(relpath).read_text(encoding="utf-8"), dom, relpath)
            )
        return self._worlds[relpath]

    def _annotations(self) -> list[dict]:
        path = self._path(ANNOTATIONS)
        try:
            return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: not JSON lines ({exc})") from None

    def data_hashes(self) -> dict[str, str]:
        wanted = [ANNOTATIONS, *(f"domains/{d}.pddl" for d in self.params.domains)]
        wanted += [p for d in self.params.domains for p in problem_files(d)]
        return {p: PINS[p] for p in wanted}

    def samples(self, split: str = "test") -> list[Sample]:
        rows = self._annotations()
        problems = [(d, p) for d in DOMAINS for p in problem_files(d)]
        if len(rows) != len(problems):
            raise DataError(f"{ANNOTATIONS} has {len(rows)} rows for {len(problems)} problems")
        # row k labels the k-th problem of the full sequence, whatever subset is selected
        return [
            self._sample(domain, relpath, row, split)
            for (domain, relpath), row in zip(problems, rows, strict=True)
            if domain in self.params.domains
        ]

    def _sample(self, domain: str, relpath: str, row: dict, split: str) -> Sample:
        world = self.world(domain, relpath)
        subtask = row.get("additional_info", {}).get("subtask")
        goals = sorted(render_atom(a).strip() for a in world.goal)
        if subtask != domain or sorted(s.strip() for s in row.get("subgoals", [])) != goals:
            raise DataError(
                f"{ANNOTATIONS} row {row.get('id')} ({subtask}: {row.get('subgoals')}) does not describe {relpath} "
                f"(goals {goals}); the annotation file and the problems are out of order"
            )
        stem = Path(relpath).stem
        task = Task(
            id=f"{domain}-{stem}",
            benchmark=self.name,
            instruction=instruction(domain, self.domain(domain), world),
            mode="steps",
            task_type=domain,
            action_hint=action_hint(world),
            action_grammar=action_grammar(domain, world),
            max_steps=self.params.max_steps,
            metadata={"difficulty": row["difficulty"], "domain": domain, "problem": stem, "agentboard_id": row["id"]},
        )
        return Sample(task=task, gold={"domain": domain, "problem": relpath}, split=split)

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        return PddlEnv(self.world(sample.gold["domain"], sample.gold["problem"]), sample.gold["domain"])


def _phrases(atoms: tuple[Atom, ...], labels: dict[str, str]) -> str:
    """Lifted atoms in words with <placeholders>, '; '-joined (AgentBoard's wording, end dots dropped)."""
    return "; ".join(render(a[0], (labels.get(x, x) for x in a[1:])).strip().rstrip(".") for a in atoms) or "nothing"


def instruction(domain: str, dom: Domain, world: World) -> str:
    """Domain description, goal, and every action with what it needs and what it changes, in words."""
    lines = [DESCRIPTIONS[domain], render_goal(world.goal), "", "Actions (replace each <...> with an object name):"]
    for op in dom.operators.values():
        labels = {var: f"<{typ if typ != ROOT_TYPE else var[1:]}>" for var, typ in op.params}
        head = render(op.name, (labels[v] for v, _ in op.params)).strip().rstrip(".")
        lines.append(
            f"- {head}. Needs: {_phrases(op.pre, labels)}. Then true: {_phrases(op.add, labels)}. "
            f"No longer true: {_phrases(op.delete, labels)}."
        )
    metas = meta_actions(domain)
    lines.append(
        f'Meta-actions: "{metas[0]}" lists the actions you can take now'
        + (f'; "{metas[1]}" shows the whole current state.' if len(metas) > 1 else ".")
    )
    return "\n".join(lines)


def action_hint(world: World) -> str:
    example = world.actions[0]
    return (
        "Reply with exactly one action: its name followed by its objects in order "
        f'(e.g. "{" ".join([example.name, *example.args])}"), or "check valid actions".'
    )


def action_grammar(domain: str, world: World) -> str:
    """GBNF for one action in the canonical form `name obj ...` (or a meta-action), with typed objects."""
    rules: list[str] = []
    alternatives = [f'"{m}"' for m in meta_actions(domain)]
    type_rules: dict[str, str] = {}
    for i, op in enumerate(world.domain.operators.values()):
        parts = [f'"{op.name}"']
        for _, typ in op.params:
            if typ not in type_rules:
                type_rules[typ] = f"obj{len(type_rules)}"
                names = " | ".join(f'"{o}"' for o in world.objects_of(typ))
                rules.append(f"{type_rules[typ]} ::= {names}")
            parts.append(f'" " {type_rules[typ]}')
        rules.append(f"act{i} ::= {' '.join(parts)}")
        alternatives.append(f"act{i}")
    return "\n".join([f"root ::= {' | '.join(alternatives)}", *rules])
