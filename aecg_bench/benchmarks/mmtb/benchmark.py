"""Multi-Mission Tool Bench (Yu et al., 2025; github.com/yupeijei1997/MMTB), as its `bench_test` evaluates it.

Each entry holds up to four related missions (single tool, multi tool, chat,
clarification). Every mission is one sample, in entry order, so missions are
revealed one after another; a mission's context is the golden dialogue of the
entry's earlier missions and the mission's own opening turns (the original's
`contain_context=True`, `remove_role=True`). The environment walks MMTB's
decision tree (`graph.py`): golden observations come back for calls that follow
a golden path, the golden user reply for a clarification turn, and the mission
ends at the first departure or at the answer. The argument check
(`arguments.py`) then decides success; `metrics.py` has the per-mission
numbers and EDV Table 3's summary.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from aecg_bench.benchmarks.mmtb import data
from aecg_bench.benchmarks.mmtb.arguments import ArgumentCheckError, mission_arguments_ok
from aecg_bench.benchmarks.mmtb.graph import Walk
from aecg_bench.benchmarks.mmtb.metrics import MULTI_KINDS, TYPE_CODES, accomplished_steps, multi_tool_kind
from aecg_bench.benchmarks.mmtb.schemas import checked, empty_parameters, uniform
from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.types import Action, Observation, Sample, Score, Task, ToolSpec

SPLITS = ("test", "train", "heldout")
HINT = (
    "Call tools when the request needs them (several independent calls may go in one step); if a required "
    "parameter is missing, ask the user for it in a message; otherwise, or once the tool results are in, answer "
    "the user in a message."
)
_ROLE_PREFIXES = {"en": ("ai", "ai agent", "user", "ai agent assistant"), "zh": ("用户", "AI Agent助手", "AI Agent")}
_WEEKDAYS = {
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "zh": ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日"),
}


def split_missions(messages: list[Any]) -> list[list[dict[str, Any]]]:
    """The original's `split_messages_by_equal`: missions are separated by '=====' strings."""
    out: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, str) and "=====" in m:
            out.append(current)
            current = []
        else:
            current.append(m)
    if current:
        out.append(current)
    return out


def strip_role(content: str, language: str) -> str:
    """`remove_role`: drop a leading 'User:' / 'AI Agent:' style speaker tag."""
    colon = content.find(":" if language == "en" else "：")
    head = content[:colon]
    if colon != -1 and (head.lower() if language == "en" else head) in _ROLE_PREFIXES[language]:
        return content[colon + 1 :]
    return content


def current_date(env_info: str, language: str) -> str:
    """The system line the original's handles add: 'Current Date:<time> <weekday>'."""
    raw = env_info.split("星期")[0].strip().replace("当前时间：", "").replace("环境：", "")
    raw = raw.replace("Current Time：", "").replace("Current Time:", "").strip()
    with contextlib.suppress(ValueError):
        raw += " " + _WEEKDAYS[language][datetime.strptime(raw, "%Y-%m-%d %H:%M:%S").weekday()]
    return ("Current Date:" if language == "en" else "当前日期：") + raw


def _fields(item: dict[str, Any], language: str) -> tuple[list, list, list, list]:
    if language == "en":
        return item["english_task"], item["english_answer_list"], item["english_messages"], item["english_tools"]
    return item["task"], item["answer_list"], item["messages"], item["tools"]


def item_id(item: dict[str, Any]) -> str:
    return item["id"] if isinstance(item["id"], str) else "".join(item["id"])


def in_train(iid: str, fraction: float) -> bool:
    """Entries (never single missions) go to train by a hash of their id, so splits never share an entry."""
    return int(hashlib.sha256(iid.encode()).hexdigest()[:8], 16) / 16**8 < fraction


class MmtbParams(Params):
    language: Literal["en", "zh"] = Field("en", description="MMTB reports the English version")
    size: int | None = Field(None, ge=1, description="entries, from offset; None = all")
    offset: int = Field(0, ge=0)
    train_fraction: float = Field(0.5, gt=0, lt=1, description="share of entries in the train split (build protocols)")
    download: bool = True


class MmtbBenchmark(Benchmark):
    name = "mmtb"
    version = "2"  # 2: tools sent as the original converts them, non-JSON arguments an error
    Params = MmtbParams

    def splits(self) -> list[str]:
        return list(SPLITS)

    def data_hashes(self) -> dict[str, str]:
        return {data.FILE + " (git blob sha1)": data.BLOB_SHA1}

    def samples(self, split: str = "test") -> list[Sample]:
        if split not in SPLITS:
            raise ConfigError(f"benchmark 'mmtb' has no split {split!r}; valid splits: {', '.join(SPLITS)}")
        items = data.read_items(data.fetch(self.data_dir, download=self.params.download))
        end = None if self.params.size is None else self.params.offset + self.params.size
        out: list[Sample] = []
        for n, item in enumerate(items[self.params.offset : end]):
            try:
                iid = item_id(item)
                if split == "test" or in_train(iid, self.params.train_fraction) == (split == "train"):
                    out += self.missions(item, split)
            except (KeyError, IndexError, TypeError, AttributeError) as exc:
                where = f"entry {n + self.params.offset}"
                raise DataError(f"MMTB {where}: not in the Multi-Mission-Tool-Bench schema ({exc!r})") from None
        return out

    def missions(self, item: dict[str, Any], split: str = "test") -> list[Sample]:
        lang = self.params.language
        tasks, answers, messages, tools = _fields(item, lang)
        dialogues = split_missions(messages)
        env = item.get("env_info", "")
        envs = [env] * len(tasks) if isinstance(env, str) else list(env)
        specs = tuple(_tool_spec(uniform(t)["function"]) for t in tools)
        iid = item_id(item)
        turn_type = list(item.get("turn_type", []))
        out = []
        for idx, (task_id, text, answer_list, env_info) in enumerate(
            zip(item["task_ids"], tasks, answers, envs, strict=False)
        ):
            history = [m for d in dialogues[:idx] for m in d] + dialogues[idx][: task_id + 1]
            context = [{"role": m["role"], "content": strip_role(m["content"], lang)} for m in history]
            code = item["type"][idx]
            kind = multi_tool_kind(answer_list)
            task = Task(
                id=f"{iid}:{idx}",
                benchmark=self.name,
                instruction=current_date(str(env_info), lang),
                mode="conversation",
                task_type=TYPE_CODES.get(code, code),
                action_hint=HINT,
                tools=specs,
                parallel_tool_calls=True,  # a golden step may be several calls at once (Opt.Path)
                max_steps=len(answer_list) + 1,
                metadata={
                    "entry": iid,
                    "mission": idx,
                    "mission_type": TYPE_CODES.get(code, code),
                    "multi_tool": MULTI_KINDS.get(kind or "", ""),
                    "true_multi_turn": _true_turn(turn_type[idx]) if idx < len(turn_type) else False,
                },
            )
            gold = {
                "context": context,
                "task": text,
                "answer_list": answer_list,
                "tools": [checked(t) for t in tools],
                "type": code,
            }
            out.append(Sample(task=task, gold=gold, split=split))
        return out

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        return MmtbEnv(sample.gold)


def _tool_spec(function: dict[str, Any]) -> ToolSpec:
    """A tool as the original's API handles send it (`schemas.uniform`); no parameters means an empty object."""
    parameters = function.get("parameters") or empty_parameters()
    return ToolSpec(function["name"], function.get("description", ""), parameters)


def _true_turn(flag: Any) -> bool:
    """`request_pipeline.py` reads a string flag as true only when it is 真 ("true"); 假 is false."""
    return flag if isinstance(flag, bool) else flag == "真"


def render_context(context: list[dict[str, Any]]) -> str:
    """The golden dialogue so far, as the opening user turn of the conversation."""
    if len(context) == 1:
        return context[0]["content"].strip()
    lines = [f"{'User' if m['role'] == 'user' else 'Assistant'}: {m['content'].strip()}" for m in context]
    return "Conversation so far:\n" + "\n".join(lines)


class MmtbEnv(Environment):
    def __init__(self, gold: dict[str, Any]) -> None:
        self.gold = gold
        self.reset()

    def reset(self) -> Observation:
        self.walk = Walk(self.gold["answer_list"])
        self.predicted: list[dict[str, Any]] = []  # the original's predict_result
        self.calls: list[dict[str, Any]] = []
        return Observation(render_context(self.gold["context"]))

    def step(self, action: Action) -> Observation:
        if self.walk.label is not None:
            return Observation("The mission is over.", done=True, valid=False)
        if action.kind == "tool" and action.tool_calls:
            calls = [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in action.tool_calls]
            self.predicted.append({"content": action.text or None, "tool_calls": calls})
            self.calls += calls
            nodes = self.walk.tool_step([c["name"] for c in calls])
            if nodes is None:
                return Observation("The mission is over.", done=True)
            # golden observations in name order, attached to the calls in the order they came (as the original)
            results = [
                {"id": c["id"], "name": c["name"], "ok": True, "content": _as_text(n.get("observation"))}
                for c, n in zip(calls, nodes, strict=False)
            ]
            return Observation("\n".join(r["content"] for r in results), info={"tool_results": results})
        text = action.text.strip()
        self.predicted.append({"content": text or None, "tool_calls": None})
        if not text:
            self.walk.label = "error"
            return Observation("The mission is over.", done=True, valid=False)
        node = self.walk.text_step()
        if node is None or self.walk.label == "correct":
            return Observation("The mission is over.", done=True)
        return Observation(str(node.get("user_input") or ""))

    def outcome(self) -> dict[str, Any]:
        """The original's labels for this mission: action-level, argument-level, optimal, progress."""
        action_correct = self.walk.label == "correct"
        success, bad_arguments = action_correct, False
        if action_correct:
            try:
                success = mission_arguments_ok(self.gold["answer_list"], self.calls, self.gold["tools"])
                bad_arguments = not success
            except ArgumentCheckError:
                action_correct = success = False
        n = len(self.gold["answer_list"])
        return {
            "action_correct": action_correct,
            "success": success,
            "optimal": self.walk.optimal,
            "progress_steps": accomplished_steps(success, self.predicted, n, bad_arguments),
            "progress_total": n,
        }

    def score(self) -> Score:
        o = self.outcome()
        kind = MULTI_KINDS.get(multi_tool_kind(self.gold["answer_list"]) or "", "")
        code = TYPE_CODES.get(self.gold["type"], "")
        metrics = {
            "success": float(o["success"]),
            "action_correct": float(o["action_correct"]),
            "optimal": float(o["optimal"]),
            "progress_steps": float(o["progress_steps"]),
            "progress_total": float(o["progress_total"]),
            **{f"is_{t}": float(t == code) for t in TYPE_CODES.values()},
            **{f"is_{k}": float(k == kind) for k in MULTI_KINDS.values()},
        }
        return Score(success=o["success"], value=float(o["success"]), metrics=metrics)


def _as_text(observation: Any) -> str:
    return observation if isinstance(observation, str) else json.dumps(observation, ensure_ascii=False)
