"""`tau2`: tau2-bench (sierra-research/tau2-bench, release 37199f36) scored as tau2 scores it.

One sample is one task of a domain (mock, airline, retail). The agent talks to an
LLM-simulated customer and calls the domain's tools on a fresh copy of the domain
DB; the reward is tau2's (see `evaluate.py`). Docs: docs/benchmarks/tau2.md.
"""

from __future__ import annotations

import hashlib
import json
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
from aecg_bench.benchmarks.tau2.toolkit import Toolkit, deep_update
from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.errors import ConfigError, DataError, unknown_choice
from aecg_bench.types import Action, Observation, Sample, Score, Task

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
    "user_simulator/simulation_guidelines.md": "05f4f48e5beefcb527d81fdee6271ce0e997fa4721e8d3ae4db0e820fb0a9013",
}
TOOLKITS: dict[str, type[Toolkit]] = {"mock": MockTools, "airline": AirlineTools, "retail": RetailTools}
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
    domain: Literal["mock", "airline", "retail"] = "airline"
    max_steps: int = Field(200, ge=1, description="tau2 DEFAULT_MAX_STEPS: messages of any kind before the run stops")
    max_errors: int = Field(10, ge=1, description="tau2 DEFAULT_MAX_ERRORS: failed tool calls before the run stops")
    user_temperature: float = Field(0.0, ge=0.0, description="tau2 DEFAULT_LLM_TEMPERATURE_USER")
    train_fraction: float = Field(0.5, ge=0.0, le=1.0, description="share of a domain's tasks in the train split")


def split_of(domain: str, task_id: str, train_fraction: float) -> str:
    """Deterministic task-level split: a task is `train` when its hash falls below the fraction."""
    digest = hashlib.sha256(f"tau2:{domain}:{task_id}".encode()).digest()
    return "train" if int.from_bytes(digest[:8], "big") / 2**64 < train_fraction else "test"


class Tau2Benchmark(Benchmark):
    name = "tau2"
    version = "1"
    Params = Tau2Params

    def __init__(self, params: dict[str, Any] | Params | None = None, *, data_dir: Path | None = None) -> None:
        super().__init__(params, data_dir=data_dir)
        self._gold_hashes: dict[str, str] = {}

    @property
    def domain(self) -> str:
        return self.params.domain

    def _path(self, relpath: str) -> Path:
        return fetch(self.data_dir, DataFile(relpath, PINS[relpath], source=_SOURCE), download=False)

    def _files(self) -> list[str]:
        names = ["db.json", "policy.md", "tasks.json"]
        return [f"domains/{self.domain}/{n}" for n in names] + ["user_simulator/simulation_guidelines.md"]

    def data_hashes(self) -> dict[str, str]:
        return {f: PINS[f] for f in self._files()}

    def splits(self) -> list[str]:
        return list(SPLITS)

    @cached_property
    def tasks(self) -> dict[str, Tau2Task]:
        raw = json.loads(self._path(f"domains/{self.domain}/tasks.json").read_text())
        try:
            return {t["id"]: Tau2Task.model_validate(t) for t in raw}
        except (KeyError, ValueError) as exc:
            raise DataError(f"tau2 {self.domain} tasks.json does not parse: {exc}") from None

    @cached_property
    def raw_db(self) -> dict[str, Any]:
        return json.loads(self._path(f"domains/{self.domain}/db.json").read_text())

    @cached_property
    def policy(self) -> str:
        return self._path(f"domains/{self.domain}/policy.md").read_text()

    @cached_property
    def guidelines(self) -> str:
        return self._path("user_simulator/simulation_guidelines.md").read_text()

    def samples(self, split: str = "test") -> list[Sample]:
        if split not in SPLITS:
            raise unknown_choice("tau2 split", split, SPLITS)
        specs = TOOLKITS[self.domain](TOOLKITS[self.domain].DB.model_validate(self.raw_db)).specs()
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

    def fresh_toolkit(self, task: Tau2Task) -> Toolkit:
        """The domain DB as the task starts: default data, initialization data and actions, prior tool calls."""
        kit_cls = TOOLKITS[self.domain]
        kit = kit_cls(kit_cls.DB.model_validate(self.raw_db))
        state = task.initial_state
        if state is None:
            return kit
        data = state.initialization_data
        if data is not None and data.user_data is not None:
            raise ConfigError(f"tau2 task {task.id}: user-side initial data needs the user's device (telecom)")
        if data is not None and data.agent_data is not None:
            kit.db = deep_update(kit.db, data.agent_data)
        for call in state.initialization_actions or []:
            if call.env_type != "assistant":
                raise ConfigError(f"tau2 task {task.id}: user-side initial action needs the user's device (telecom)")
            getattr(kit, call.func_name)(**call.arguments)
        for msg in state.message_history or []:
            for tc in msg.tool_calls or []:
                kit.call(tc["name"], tc.get("arguments") or {})
        return kit

    def gold_hash(self, task: Tau2Task) -> str:
        """Hash of the DB after the gold actions (fixed per task, so computed once)."""
        if task.id not in self._gold_hashes:
            self._gold_hashes[task.id] = replay_gold(task, lambda: self.fresh_toolkit(task)).db_hash()
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
        self.kit = self.bench.fresh_toolkit(self.task)
        self.steps = 0
        self.errors = 0
        self.calls: list[Call] = []
        self.agent_texts: list[str] = []
        self.termination = ""
        self.user = usersim.UserSimulator(
            self.ctx.llm,  # type: ignore[arg-type]
            usersim.system_prompt(self.bench.guidelines, str(self.task.user_scenario)),
            temperature=p.user_temperature,
            sample_index=self.ctx.seed,
        )
        prior = self._prior_conversation()
        if not prior:
            return Observation(self._user_turn(usersim.FIRST_AGENT_MESSAGE), done=self.done)
        # A task that starts mid-conversation: the agent is shown the history as text.
        if prior[-1][0] == "user":  # the user spoke last: the agent answers next
            self.user.turns = list(prior)
            self.agent_texts += [text for who, text in prior if who == "agent"]
            return Observation(self._render(prior[:-1]) + prior[-1][1])
        self.user.turns = list(prior[:-1])
        self.agent_texts += [text for who, text in prior[:-1] if who == "agent"]
        first = self._user_turn(prior[-1][1])
        return Observation(self._render(prior) + first, done=self.done)

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

    def _user_turn(self, agent_text: str) -> str:
        self.agent_texts.append(agent_text)
        text = self.user.reply(agent_text)
        self._count_step()
        if usersim.is_stop(text) and self.termination != "max_steps":
            self.termination = "user_stop"
        return text

    def step(self, action: Action) -> Observation:
        if self.done:
            return Observation("The conversation has ended.", done=True, valid=False)
        self._count_step()  # the agent's message
        if self.done:
            return Observation("", done=True)
        if action.kind == "tool" and action.tool_calls:
            results = []
            for call in action.tool_calls:
                res = self.kit.call(call.name, dict(call.arguments))
                self.calls.append(Call(call.name, dict(call.arguments)))
                self.errors += int(res.error)
                results.append({"id": call.id, "name": call.name, "ok": not res.error, "content": res.content})
            self._count_step()  # the tool results
            if not self.termination and self.errors >= self.bench.params.max_errors:
                self.termination = "too_many_errors"
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
            final=self.kit,
            gold_hash=self.bench.gold_hash(self.task),
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
                "user_stop": float(termination == "user_stop"),
                "premature": float(termination in ("max_steps", "too_many_errors")),
            }
        )
        for name in result.basis:
            metrics[f"basis_{name.lower()}"] = 1.0
        return Score(success=result.reward >= 1.0 - 1e-6, value=result.reward, metrics=metrics)
