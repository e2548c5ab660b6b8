"""`toy_tools`: a tool-use conversation with a scripted user, several missions and a
choice among candidates. A first-class test benchmark, not a paper's.

It shows that the contracts carry the shapes of the EDV benchmarks:
- tau2-bench: tools that read and write a small database, a simulated user who
  reveals information only when asked, success judged on the final database;
- MMTB: several missions per sample, the next revealed when the last is done;
- Mind2Web: picking one element among listed candidates.

The user is a deterministic script (no LLM), so tests are exact. The
`toy_tools_oracle` mock policy solves it from the conversation alone.
"""

from __future__ import annotations

import copy
import json
import random
import re
from typing import Any

from pydantic import Field

from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.llm.mock import route_reply
from aecg_bench.llm.providers import ProviderResult, Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.types import Action, Observation, Sample, Score, Task, ToolCall, ToolSpec

STOP = "###STOP###"
NAMES = ("ana", "ben", "chen", "dara", "eli", "fay", "gus", "hana")
ITEMS = ("red mug", "blue mug", "green mug", "desk lamp", "notebook", "pen set")

TOOLS = (
    ToolSpec(
        "find_orders",
        "List a customer's orders with their status.",
        {"type": "object", "properties": {"customer": {"type": "string"}}, "required": ["customer"]},
    ),
    ToolSpec(
        "cancel_order",
        "Cancel a pending order.",
        {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    ),
    ToolSpec(
        "select_candidate",
        "Choose one of the listed candidates by its letter.",
        {"type": "object", "properties": {"option": {"type": "string"}}, "required": ["option"]},
    ),
)


class ToyToolsParams(Params):
    size: int = Field(8, ge=1, le=10_000)
    missions: int = Field(2, ge=1, le=2, description="1 = cancel only; 2 = cancel then choose")
    max_steps: int = Field(14, ge=1)
    train_size: int = Field(4, ge=0)


class ToyToolsBenchmark(Benchmark):
    name = "toy_tools"
    version = "1"
    Params = ToyToolsParams

    def splits(self) -> list[str]:
        return ["train", "test"]

    def samples(self, split: str = "test") -> list[Sample]:
        n = self.params.size if split == "test" else self.params.train_size
        rng = random.Random(f"toy_tools:{split}")
        out = []
        for i in range(n):
            name = NAMES[i % len(NAMES)]
            items = rng.sample(ITEMS, 3)
            orders = {
                f"O{i}{k}": {"item": item, "status": "pending" if k == 1 else "shipped", "customer": name}
                for k, item in enumerate(items)
            }
            options = rng.sample(ITEMS, 3)
            liked = rng.randrange(3)
            task = Task(
                id=f"{split}-{i}",
                benchmark=self.name,
                instruction="Help the customer with each of their requests, following the shop policy: "
                "verify the customer's name before looking up orders; only pending orders can be cancelled.",
                mode="conversation",
                task_type="cancel+choose" if self.params.missions == 2 else "cancel",
                tools=TOOLS,
                max_steps=self.params.max_steps,
            )
            gold = {
                "name": name,
                "orders": orders,
                "cancel": next(oid for oid, o in orders.items() if o["status"] == "pending"),
                "options": options,
                "liked": "ABC"[liked],
                "missions": self.params.missions,
            }
            out.append(Sample(task=task, gold=gold, split=split))
        return out

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        return ToyToolsEnv(sample.gold)


class ToyToolsEnv(Environment):
    def __init__(self, gold: dict[str, Any]) -> None:
        self.gold = gold
        self.reset()

    def reset(self) -> Observation:
        self.db = copy.deepcopy(self.gold["orders"])
        self.mission = 0
        self.selected: str | None = None
        self.name_given = False
        self.tool_errors = 0
        self.done = False
        return Observation(self._request())

    def _request(self) -> str:
        if self.mission == 0:
            return "Hi, I would like to cancel my pending order."
        opts = " ".join(f"[{letter}] {item}" for letter, item in zip("ABC", self.gold["options"], strict=True))
        liked = self.gold["options"]["ABC".index(self.gold["liked"])]
        return f"One more thing: please pick the item I want to reorder. Candidates: {opts}. I want the {liked}."

    def _mission_done(self, k: int) -> bool:
        if k == 0:
            return self.db[self.gold["cancel"]]["status"] == "cancelled"
        return self.selected == self.gold["liked"]

    def step(self, action: Action) -> Observation:
        if self.done:
            return Observation("The conversation has ended.", done=True, valid=False)
        if action.kind == "tool":
            results = [self._call(c) for c in action.tool_calls]
            ok = all(r["ok"] for r in results)
            text = "\n".join(r["content"] for r in results)
            return Observation(text, valid=ok, info={"tool_results": results})
        if action.kind != "message":
            return Observation("Please talk to me or use a tool.", valid=False)
        return self._user_reply(action.text)

    def _user_reply(self, text: str) -> Observation:
        lowered = text.lower()
        if self._mission_done(self.mission):
            self.mission += 1
            if self.mission >= self.gold["missions"]:
                self.done = True
                return Observation(f"Thanks, that's all. {STOP}", done=True)
            return Observation(self._request())
        if "name" in lowered and not self.name_given:
            self.name_given = True
            return Observation(f"My name is {self.gold['name']}.")
        return Observation("Could you please take care of my request?")

    def _call(self, call: ToolCall) -> dict[str, Any]:
        args = call.arguments
        if call.name == "find_orders":
            customer = str(args.get("customer", "")).strip().lower()
            found = {
                oid: {"item": o["item"], "status": o["status"]}
                for oid, o in self.db.items()
                if o["customer"] == customer
            }
            ok = bool(found) and self.name_given
            content = json.dumps(found if ok else {"error": "unknown customer"}, sort_keys=True)
        elif call.name == "cancel_order":
            order = self.db.get(str(args.get("order_id", "")))
            ok = order is not None and order["status"] == "pending"
            if ok:
                order["status"] = "cancelled"
            content = json.dumps({"status": "cancelled"} if ok else {"error": "cannot cancel that order"})
        elif call.name == "select_candidate":
            option = str(args.get("option", "")).strip().upper()[:1]
            ok = self.mission == 1 and option in "ABC" and option != ""
            if ok:
                self.selected = option
            content = json.dumps({"selected": option} if ok else {"error": "no such candidate"})
        else:
            ok, content = False, json.dumps({"error": f"unknown tool {call.name!r}"})
        self.tool_errors += int(not ok)
        return {"id": call.id, "name": call.name, "ok": ok, "content": content}

    def score(self) -> Score:
        done = [self._mission_done(k) for k in range(self.gold["missions"])]
        collateral = any(
            o["status"] != self.gold["orders"][oid]["status"]
            for oid, o in self.db.items()
            if oid != self.gold["cancel"]
        )
        success = all(done) and not collateral
        return Score(
            success=success,
            value=sum(done) / len(done),
            metrics={
                "missions_done": float(sum(done)),
                "tool_errors": float(self.tool_errors),
                "collateral_changes": float(collateral),
            },
        )


_NAME = re.compile(r"My name is (\w+)\.")
_CHOICE = re.compile(r"Candidates: (.*)\. I want the ([\w ]+)\.")


def mock_oracle(request: Request, spec: ModelSpec) -> str | ProviderResult:
    """Mock policy that solves toy_tools from the conversation alone (an AgentNet router keeps the task)."""
    route = route_reply(request)
    if route is not None:
        return route
    msgs = request.messages
    users = [m for m in msgs if m.get("role") == "user"]
    last_user = str(users[-1]["content"]) if users else ""
    tool_results = [str(m.get("content", "")) for m in msgs if m.get("role") == "tool"]
    choice = _CHOICE.search(last_user)
    if choice:
        cands = dict(re.findall(r"\[([ABC])\] ([\w ]+?)(?= \[|$)", choice.group(1)))
        letter = next((k for k, v in cands.items() if v == choice.group(2)), "A")
        since = _turns_after(msgs, users[-1])
        if any(m.get("role") == "tool" for m in since):
            return "I have selected it for you."
        return json.dumps({"tool": "select_candidate", "arguments": {"option": letter}})
    if any('"status": "cancelled"' in r for r in tool_results):
        return "Your pending order is cancelled."
    orders = next((json.loads(r) for r in reversed(tool_results) if r.startswith("{") and "item" in r), None)
    if orders:
        pending = next(oid for oid, o in orders.items() if o["status"] == "pending")
        return json.dumps({"tool": "cancel_order", "arguments": {"order_id": pending}})
    name = next((m.group(1) for u in users if (m := _NAME.search(str(u["content"])))), None)
    if name:
        return json.dumps({"tool": "find_orders", "arguments": {"customer": name}})
    return "Could you tell me your name, please?"


def _turns_after(msgs: list[dict[str, Any]], turn: dict[str, Any]) -> list[dict[str, Any]]:
    idx = max(i for i, m in enumerate(msgs) if m is turn)
    return msgs[idx + 1 :]
