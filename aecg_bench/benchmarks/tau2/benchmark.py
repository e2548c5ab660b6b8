"""`tau2`: tau2-bench (sierra-research/tau2-bench, release 37199f36) scored as tau2 scores it.

One sample is one task of a domain (mock, airline, retail). The agent talks to an
LLM-simulated customer and calls the domain's tools on a fresh copy of the domain
DB; the reward is tau2's (see `evaluate.py`). Docs: docs/benchmarks/tau2.md.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from aecg_bench.benchmarks.data import DataFile, fetch
from aecg_bench.benchmarks.tau2 import user as usersim
from aecg_bench.benchmarks.tau2.airline import AirlineTools
from aecg_bench.benchmarks.tau2.evaluate import Call, evaluate, replay_gold
from aecg_bench.benchmarks.tau2.mock import MockTools
from aecg_bench.benchmarks.tau2.retail import RetailTools
from aecg_bench.benchmarks.tau2.tasks import Tau2Task
from aecg_bench.benchmarks.tau2.telecom import TelecomTools
from aecg_bench.benchmarks.tau2.telecom_user import TelecomUserTools
from aecg_bench.benchmarks.tau2.telecom_user import sync as telecom_sync
from aecg_bench.benchmarks.tau2.toolkit import Toolkit, deep_update
from aecg_bench.benchmarks.tau2.world import Sync, World
from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.errors import ConfigError, DataError, unknown_choice
from aecg_bench.types import Action, Observation, Sample, Score, Task, ToolCall

RELEASE = "37199f36"
_SOURCE = f"github.com/sierra-research/tau2-bench at {RELEASE}, data/tau2/"
PINS: dict[str, str] = {
    "domains/mock/db.json": "8661f80b4c693bb15ef2fe6781d24a5765240d61fc74387c770133953f9113ea",
    "domains/mock/policy.md": "50ccbefac7c9ba77ce54131d61cfc6882f74b88ace66771115f9d867ec098203",
    "domains/mock/tasks.json": "c3e3597b222ff5a2a7dd4af73dd782eafcd7eabc0f0345e053186b2cacf9159c",
    "domains/airline/db.json": "1af9fea6e03ca7ca15a22bb3fcaf3e351393e3fc9070b6777947da8996f7531b",
    "domains/airline/policy.md": "10dc0525421521208be39cee235bba84a16e2bcba9899eb93d92cd81d2f62fc4",
    "domains/airline/tasks.json": "40d692b3fca780f46b56d48b447fd8db79a653f216667b8ed7c1a88380544532",
    "domains/retail/db.json": "413a65160adbdb5fde0ffc0015c49b6d70250b10c18128de169b597af7766765",
    "domains/retail/policy.md": "2c9652afbce57d6e087768d37cda64d31c53d50b3e3225cfdb791bac66466467",
    "domains/retail/tasks.json": "76e1fa649a359bef2d2fd30eae834b99d261d84e2e5d364856f6632fdf778dfd",
    "domains/telecom/db.toml": "562d647ef9d7df8df91eafd8ee76036e707c8f9e32aaedc4a7fde06975aea2c0",
    "domains/telecom/user_db.toml": "4886107ea0c16f8e16d74bef91cfb557de61822afe9361f5a9b241806aea2e4c",
    "domains/telecom/main_policy.md": "95943844a0cf11fdf0e2842b483b81d9f9338aa53235712ed131db075d086ed7",
    "domains/telecom/tech_support_manual.md": "015a3ee49ec8c199c5e1a059c922081937b92cf3a5ea74fedbc4357816f389ba",
    "domains/telecom/tasks.json": "192a2c143b3b512c37c3775fdf6c5040c33717388620c38b140c731dc6153cd7",
    "domains/telecom/tasks_small.json": "c8ea6f75adc18a8ad363974292cbd26b6e8b0e348ec87d265a4188e0088a8f24",
    "user_simulator/simulation_guidelines.md": "05f4f48e5beefcb527d81fdee6271ce0e997fa4721e8d3ae4db0e820fb0a9013",
    "user_simulator/simulation_guidelines_tools.md": "7b0cdb574909a15bb16e75296eb7a0c6b371fbe385a1b23a2fc8ea3751ee4b3b",
}


@dataclass(frozen=True)
class Domain:
    """Where a domain's files are and which toolkits serve each side."""

    agent: type[Toolkit]
    db: str
    policy: tuple[str, ...]
    user: type[Toolkit] | None = None
    user_db: str | None = None
    sync: Sync | None = None


DOMAINS: dict[str, Domain] = {
    "mock": Domain(MockTools, "db.json", ("policy.md",)),
    "airline": Domain(AirlineTools, "db.json", ("policy.md",)),
    "retail": Domain(RetailTools, "db.json", ("policy.md",)),
    # tau2 telecom/environment.py get_environment(policy_type="manual"): main policy + tech support manual
    "telecom": Domain(
        TelecomTools,
        "db.toml",
        ("main_policy.md", "tech_support_manual.md"),
        TelecomUserTools,
        "user_db.toml",
        telecom_sync,
    ),
}
SPLITS = ("test", "train", "all")

# tau2 agent/llm_agent.py AGENT_INSTRUCTION and SYSTEM_PROMPT: the agent's standing instructions and the policy.
AGENT_INSTRUCTION = """You are a customer service agent that helps the user according to the <policy> provided below.
In each turn you can either:
- Send a message to the user.
- Make a tool call.
You cannot do both at the same time.

Try to be helpful and always follow the policy. Always make sure you generate valid JSON only."""


def agent_prompt(policy: str) -> str:
    return f"<instructions>\n{AGENT_INSTRUCTION}\n</instructions>\n<policy>\n{policy}\n</policy>"


class Tau2Params(Params):
    domain: Literal["mock", "airline", "retail", "telecom"] = "airline"
    task_set: Literal["default", "small"] = Field(
        "default", description="telecom only: tasks.json (114 tasks) or tasks_small.json (20)"
    )
    max_steps: int = Field(200, ge=1, description="tau2 DEFAULT_MAX_STEPS: messages of any kind before the run stops")
    max_errors: int | None = Field(
        None,
        ge=1,
        description="failed tool calls before the run stops; null (default) never stops, as tau2's orchestrator, "
        "which declares DEFAULT_MAX_ERRORS (10) but never counts an error",
    )
    user_temperature: float = Field(0.0, ge=0.0, description="tau2 DEFAULT_LLM_TEMPERATURE_USER")
    train_fraction: float = Field(0.5, ge=0.0, le=1.0, description="share of a domain's tasks in the train split")


def split_of(domain: str, task_id: str, train_fraction: float) -> str:
    """Deterministic task-level split: a task is `train` when its hash falls below the fraction."""
    digest = hashlib.sha256(f"tau2:{domain}:{task_id}".encode()).digest()
    return "train" if int.from_bytes(digest[:8], "big") / 2**64 < train_fraction else "test"


class Tau2Benchmark(Benchmark):
    name = "tau2"
    version = "2"
    Params = Tau2Params

    def __init__(self, params: dict[str, Any] | Params | None = None, *, data_dir: Path | None = None) -> None:
        super().__init__(params, data_dir=data_dir)
        self._gold_hashes: dict[str, tuple[str, str | None]] = {}

    @property
    def domain(self) -> str:
        return self.params.domain

    def _path(self, relpath: str) -> Path:
        return fetch(self.data_dir, DataFile(relpath, PINS[relpath], source=_SOURCE), download=False)

    @property
    def spec(self) -> Domain:
        return DOMAINS[self.domain]

    def _tasks_file(self) -> str:
        if self.params.task_set == "small" and self.domain != "telecom":
            raise ConfigError(f"task_set 'small' exists only for telecom, not {self.domain!r}")
        return "tasks_small.json" if self.params.task_set == "small" else "tasks.json"

    def _files(self) -> list[str]:
        spec = self.spec
        names = [spec.db, *spec.policy, self._tasks_file(), *([spec.user_db] if spec.user_db else [])]
        guidelines = "simulation_guidelines_tools.md" if spec.user else "simulation_guidelines.md"
        return [f"domains/{self.domain}/{n}" for n in names] + [f"user_simulator/{guidelines}"]

    def data_hashes(self) -> dict[str, str]:
        return {f: PINS[f] for f in self._files()}

    def splits(self) -> list[str]:
        return list(SPLITS)

    def _load(self, name: str) -> Any:
        path = self._path(f"domains/{self.domain}/{name}")
        return tomllib.loads(path.read_text()) if name.endswith(".toml") else json.loads(path.read_text())

    @cached_property
    def tasks(self) -> dict[str, Tau2Task]:
        raw = self._load(self._tasks_file())
        try:
            tasks = {t["id"]: Tau2Task.model_validate(t) for t in raw}
        except (KeyError, ValueError) as exc:
            raise DataError(f"tau2 {self.domain} {self._tasks_file()} does not parse: {exc}") from None
        judged = [
            t.id
            for t in tasks.values()
            if t.evaluation_criteria and "NL_ASSERTION" in t.evaluation_criteria.reward_basis
        ]
        if judged:
            raise DataError(f"tau2 tasks {judged[:3]} reward NL assertions, which this harness does not judge")
        return tasks

    @cached_property
    def raw_db(self) -> dict[str, Any]:
        return self._load(self.spec.db)

    @cached_property
    def raw_user_db(self) -> dict[str, Any] | None:
        return self._load(self.spec.user_db) if self.spec.user_db else None

    @cached_property
    def policy(self) -> str:
        texts = [self._path(f"domains/{self.domain}/{n}").read_text() for n in self.spec.policy]
        if len(texts) == 1:
            return texts[0]
        main, tech = texts
        return f"<main_policy>\n{main}\n</main_policy>\n<tech_support_policy>\n{tech}\n</tech_support_policy>"

    @cached_property
    def guidelines(self) -> str:
        return self._path(self._files()[-1]).read_text()

    @cached_property
    def user_tool_specs(self) -> list[dict[str, Any]] | None:
        """The user's phone tools in OpenAI shape (telecom), offered to the user simulator only."""
        if self.spec.user is None or self.raw_user_db is None:
            return None
        kit = self.spec.user(self.spec.user.DB.model_validate(self.raw_user_db))
        return [t.to_openai() for t in kit.specs()]

    def samples(self, split: str = "test") -> list[Sample]:
        if split not in SPLITS:
            raise unknown_choice("tau2 split", split, SPLITS)
        specs = self.spec.agent(self.spec.agent.DB.model_validate(self.raw_db)).specs()
        instruction = agent_prompt(self.policy)
        out = []
        for task_id in self.tasks:
            task_split = split_of(self.domain, task_id, self.params.train_fraction)
            if split != "all" and task_split != split:
                continue
            public = Task(
                id=f"{self.domain}:{task_id}",
                benchmark=self.name,
                instruction=instruction,
                mode="conversation",
                task_type=self.domain,
                tools=specs,
                max_steps=self.params.max_steps,
                metadata={"domain": self.domain, "tau2_task_id": task_id},
            )
            out.append(Sample(task=public, gold={"task_id": task_id}, split=split))
        return out

    def fresh_world(self, task: Tau2Task) -> World:
        """The environment as the task starts (tau2 Environment.set_state): default DBs, initialization
        data and actions, the tool calls of a prior message history, then a sync."""
        spec = self.spec
        agent = spec.agent(spec.agent.DB.model_validate(self.raw_db))
        user = spec.user(spec.user.DB.model_validate(self.raw_user_db)) if spec.user else None
        world = World(agent, user, spec.sync)
        state = task.initial_state
        if state is not None:
            data = state.initialization_data
            for side, update in (("assistant", data and data.agent_data), ("user", data and data.user_data)):
                if update:
                    kit = world.kit(side)
                    kit.db = deep_update(kit.db, update)
            for call in state.initialization_actions or []:
                world.run_function(call.env_type, call.func_name, call.arguments)
            for msg in state.message_history or []:
                for tc in msg.tool_calls or []:
                    world.call(tc["name"], tc.get("arguments") or {}, msg.requestor)
        world.sync()
        return world

    def gold_hashes(self, task: Tau2Task) -> tuple[str, str | None]:
        """Agent and user DB hashes after the gold actions (fixed per task, so computed once)."""
        if task.id not in self._gold_hashes:
            gold = replay_gold(task, lambda: self.fresh_world(task))
            self._gold_hashes[task.id] = (gold.db_hash(), gold.user_db_hash())
        return self._gold_hashes[task.id]

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        if ctx.llm is None:
            raise ConfigError("tau2 needs an LLM for the user simulator (role 'user_simulator')")
        return Tau2Env(self, self.tasks[sample.gold["task_id"]], ctx)

    def describe_backends(self) -> dict[str, Any]:
        return {"release": RELEASE, "domain": self.domain, "user_simulator_role": usersim.ROLE}


class Tau2Env(Environment):
    """One conversation: agent actions in, tool results or the simulated user's replies out."""

    def __init__(self, bench: Tau2Benchmark, task: Tau2Task, ctx: EnvContext) -> None:
        self.bench = bench
        self.task = task
        self.ctx = ctx

    def reset(self) -> Observation:
        p = self.bench.params
        self.world = self.bench.fresh_world(self.task)
        self.steps = 0
        self.errors = 0
        self.calls: list[Call] = []
        self.agent_texts: list[str] = []
        self.termination = ""
        self.user = usersim.UserSimulator(
            self.ctx.llm,  # type: ignore[arg-type]
            usersim.system_prompt(self.bench.guidelines, str(self.task.user_scenario)),
            temperature=p.user_temperature,
            tools=self.bench.user_tool_specs,
        )
        prior = self._prior_conversation()
        if not prior:
            return Observation(self._user_turn(usersim.FIRST_AGENT_MESSAGE), done=self.done)
        # A task that starts mid-conversation: the agent is shown the history as text.
        for who, text in prior[:-1]:
            self._remember(who, text)
        who, text = prior[-1]
        if who == "user":  # the user spoke last: the agent answers next
            self._remember(who, text)
            return Observation(self._render(prior[:-1]) + text)
        return Observation(self._render(prior) + self._user_turn(text), done=self.done)

    def _remember(self, who: str, text: str) -> None:
        if who == "agent":
            self.agent_texts.append(text)
            self.user.hear(text)
        else:
            self.user.said(text)

    def _prior_conversation(self) -> list[tuple[str, str]]:
        """Text turns of a task's message history (tau2 initial_state.message_history)."""
        history = (self.task.initial_state.message_history if self.task.initial_state else None) or []
        turns = []
        for msg in history:
            if msg.role in {"user", "assistant"} and msg.content and not msg.tool_calls:
                turns.append(("user" if msg.role == "user" else "agent", msg.content))
            for tc in msg.tool_calls or []:
                self.calls.append(Call(tc["name"], tc.get("arguments") or {}, msg.requestor))
        return turns

    @staticmethod
    def _render(turns: list[tuple[str, str]]) -> str:
        if not turns:
            return ""
        lines = [f"[{'you' if who == 'agent' else 'user'}] {text}" for who, text in turns]
        return "Conversation so far:\n" + "\n".join(lines) + "\n\n"

    @property
    def done(self) -> bool:
        return bool(self.termination)

    def _count_step(self) -> None:
        self.steps += 1
        if not self.termination and self.steps >= self.bench.params.max_steps:
            self.termination = "max_steps"

    def _run_calls(self, calls: tuple[ToolCall, ...], requestor: str) -> list[dict[str, Any]]:
        """Run tool calls for the agent or the user (tau2 get_response each), counting errors."""
        results = []
        for call in calls:
            res = self.world.call(call.name, dict(call.arguments), requestor)
            self.calls.append(Call(call.name, dict(call.arguments), requestor))
            self.errors += int(res.error)
            results.append({"id": call.id, "name": call.name, "ok": not res.error, "content": res.content})
        self._count_step()  # the tool results
        limit = self.bench.params.max_errors
        if not self.termination and limit is not None and self.errors >= limit:
            self.termination = "too_many_errors"
        return results

    def _user_turn(self, agent_text: str) -> str:
        """The agent's message reaches the user; the user may work its phone, then answers in text."""
        self.agent_texts.append(agent_text)
        self.user.hear(agent_text)
        while True:
            text, calls = self.user.speak()
            self._count_step()
            if not calls:
                if usersim.is_stop(text) and not self.termination:
                    self.termination = "user_stop"
                return text
            if self.termination:
                return text
            for call, result in zip(calls, self._run_calls(calls, "user"), strict=True):
                self.user.tool_result(call, result["content"])
            if self.termination:
                return text

    def step(self, action: Action) -> Observation:
        if self.done:
            return Observation("The conversation has ended.", done=True, valid=False)
        self._count_step()  # the agent's message
        if self.done:
            return Observation("", done=True)
        if action.kind == "tool" and action.tool_calls:
            if action.text.strip():  # text sent with tool calls: kept for COMMUNICATE, never shown to the user
                self.agent_texts.append(action.text)
            results = self._run_calls(action.tool_calls, "assistant")
            text = "\n".join(r["content"] for r in results)
            return Observation(
                text, done=self.done, valid=all(r["ok"] for r in results), info={"tool_results": results}
            )
        if action.kind in {"message", "answer"} and action.text.strip():
            reply = self._user_turn(action.text)
            return Observation(reply, done=self.done)
        return Observation("Send the user a message or call a tool.", valid=False)

    def score(self) -> Score:
        # A conversation the framework cut short (its own step cap) counts as tau2's max_steps.
        termination = self.termination or "max_steps"
        result = evaluate(
            self.task,
            final=self.world,
            gold_hashes=self.bench.gold_hashes(self.task),
            calls=self.calls,
            agent_texts=self.agent_texts,
            termination=termination,
        )
        metrics = {f"reward_{k.lower()}": v for k, v in result.components.items()}
        metrics.update(
            {
                "reward": result.reward,
                "steps": float(self.steps),
                "tool_errors": float(self.errors),
                "tool_calls": float(len(self.calls)),
                "user_tool_calls": float(sum(c.requestor == "user" for c in self.calls)),
                "user_stop": float(termination == "user_stop"),
                "premature": float(termination in ("max_steps", "too_many_errors")),
            }
        )
        for name in result.basis:
            metrics[f"basis_{name.lower()}"] = 1.0
        return Score(success=result.reward >= 1.0 - 1e-6, value=result.reward, metrics=metrics)
