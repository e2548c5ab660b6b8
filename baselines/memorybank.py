"""`memorybank`: MemoryBank (Zhong et al., AAAI 2024, "MemoryBank: Enhancing Large Language
Models with Long-Term Memory"; code: github.com/zhongwanjun/MemoryBank-SiliconFriend), as the
multi-agent memory papers adapt it to task solving (G-Memory's `MemoryBankMASMemory`,
github.com/bingreeky/GMemory, mas/memory/mas_memory/memorybank.py).

What is stored: one memory per finished task: an LLM summary of the task's
trajectory ("a description of the task resolution trajectory", at most six
sentences on one line, G-Memory's MemoryBank prompt), the task text, the
outcome label and a short trajectory excerpt. Each memory carries a strength
S (initially 1) and the time of its last recall.

When and how it is recalled: at every recall the task text is embedded and
the `top_k` most similar memories (cosine over the summaries) are returned,
whatever their outcome; the text says how the task ended. Recall has no side
effect: reinforcement is applied when the task's episode is observed, from the
memory ids the trajectory actually recalled, so the state depends only on
observed episodes and a resumed run ends in exactly the same state.

How it learns and forgets (Ebbinghaus curve, MemoryBank sec. 3.3): time is
counted in observed tasks. A memory recalled during a task gets S += 1 and its
clock reset (t = 0). After every observed task, each memory's retention is
R = exp(-t / S), t = (tasks since last recall) / `time_unit_tasks`, and the
memory is forgotten when R falls below its draw u. Draws are seeded hashes of
(run seed, memory id), so forgetting is deterministic and independent of the
order memories are visited: with `forgetting: threshold` (default) each memory
has one u, so its survival probability at time t is exactly R(t), the curve
itself; `forgetting: resample` draws a fresh u at every pass as SiliconFriend's
loader does (`random.random() < retention` on every load), which compounds to a
survival of prod R.

Hyperparameters (defaults and sources):
- initial_strength 1, strength_increment 1: MemoryBank paper ("S is initialised
  to 1 ... when a memory is recalled S increases by 1 and t is reset to 0") and
  SiliconFriend's current memory_bank/memory_retrieval/forget_memory.py
  (`memory_strength` starts at 1, `+= 1` per recall, no cap). Its first version
  (commit 0cc7111) kept three memory levels, S = 1, 2, 3: `max_strength: 3`.
- time_unit_tasks 5: SiliconFriend's forgetting curve divides the elapsed time
  by 5 (forget_memory.py, `math.exp(-t / 5*S)`, t in days; see Deviations);
  here t counts tasks, 5 tasks to the unit.
- top_k 2: SiliconFriend retrieves top-k chunks (k=6 over conversation
  turns); task-level memories are far longer, and the G-Memory adaptation
  injects one success and one failure, so 2 memories without a label filter.
- summary_temperature 0.1: G-Memory's MemoryBank summary call.

Deviations:
- The forgetting formula is R = exp(-t / S) with t in units of 5 tasks, i.e.
  exp(-tasks / (5 S)). SiliconFriend's current forget_memory.py (since commit
  3869efc; its first version had exp(-t / S)) computes `math.exp(-t / 5*S)`,
  which by operator precedence is exp(-(t / 5) * S): stronger memories decay
  faster, against the curve and against its own docstring ("The higher the
  memory strength, the slower the rate of forgetting"). That bug is not
  reproduced. G-Memory's port (mas/memory/mas_memory/memorybank.py) has no
  strength: its MemoryForgetter drops the current task's older steps once
  `math.exp(-time_interval / 5 * scale)` (scale always 1) falls below 0.3 when
  it summarises a trajectory, which is not the cross-task forgetting ported here.
- SiliconFriend's first version also dropped memories older than 30 days
  outright (`total_date`); its current one has no cutoff, and with t in task
  units exp(-t / S) is negligible long before that, so there is none here.
- MemoryBank's daily event summaries and user portrait (dialogue features)
  have no counterpart in task solving and are left out, as in G-Memory's port.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field

from aecg_bench.contracts import MemoryMethod, MemoryServices, Params
from aecg_bench.types import Episode, MemoryItem, RecallQuery, task_text
from baselines.index import VectorIndex, embedder_of
from baselines.llm_calls import ask, skip, stable_uniform
from baselines.trajectory_text import clip, one_line, render_trajectory

SUMMARY_SYSTEM = (
    "You write a description of how an agent team went about a task, from its trajectory.\n"
    "1) Summarise the trajectory in no more than six sentences.\n"
    "2) Reply with a single line of text and nothing else."
)
SUMMARY_USER = (
    "For example, for a trajectory in which an agent searched a kitchen, found an egg on the third "
    "countertop, heated it in the microwave and put it on the dining table, you would write:\n"
    "The trajectory is about finding an egg, heating it with a microwave and placing it on the "
    "dining table after checking the fridge and several countertops.\n\n"
    "Task: {task}\n\nTrajectory:\n{trajectory}"
)
_PREFIX_WORDS = ("summary:", "description:", "then you would write:")


class MemoryBankParams(Params):
    top_k: int = Field(2, ge=0, description="memories recalled per query")
    initial_strength: float = Field(1.0, gt=0, description="S of a new memory (paper: 1)")
    strength_increment: float = Field(1.0, ge=0, description="S += this on each recall (paper: 1)")
    max_strength: float | None = Field(
        None, gt=0, description="cap on S (SiliconFriend's first version: 3 levels); none"
    )
    time_unit_tasks: float = Field(5.0, gt=0, description="tasks per unit of t (SiliconFriend's /5)")
    forgetting: Literal["threshold", "resample"] = Field(
        "threshold", description="one seeded draw per memory (survival = R) or a new draw per pass"
    )
    summary_temperature: float = Field(0.1, ge=0)
    summary_max_tokens: int = Field(256, ge=16)
    max_trajectory_chars: int = Field(6000, ge=200, description="trajectory text shown to the summariser")
    excerpt_chars: int = Field(500, ge=0, description="trajectory excerpt kept in a recalled memory")


class MemoryBank(MemoryMethod):
    name = "memorybank"
    version = "1"
    pure_recall = True  # recall only reads the store (runner/concurrent.py)
    Params = MemoryBankParams
    params: MemoryBankParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        self.clock = 0
        self.next_id = 0
        self.memories: dict[str, dict[str, Any]] = {}
        self._index: VectorIndex | None = None

    # -- recall ----------------------------------------------------------------

    @property
    def index(self) -> VectorIndex:
        if self._index is None:
            self._index = VectorIndex(embedder_of(self.services))
            self._index.add_many(list(self.memories), [m["summary"] for m in self.memories.values()])
        return self._index

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        hits = self.index.search(task_text(query.task, query.context), self.params.top_k)
        return [self._item(self.memories[mid], score, query) for mid, score in hits]

    def _item(self, m: dict[str, Any], score: float, query: RecallQuery) -> MemoryItem:
        outcome = {True: "succeeded", False: "failed", None: "ended (outcome unknown)"}[m["success"]]
        text = f"An earlier task ({one_line(m['instruction'], 200)}) {outcome}. What happened: {m['summary']}"
        if m["excerpt"]:
            text += f"\nEnd of its trajectory:\n{m['excerpt']}"
        return MemoryItem(
            id=m["id"],
            text=text,
            level=query.level,
            kind="episode",
            score=score,
            metadata={"source_task": m["task_id"], "success": m["success"], "strength": m["strength"]},
        )

    # -- learning --------------------------------------------------------------

    def observe(self, episode: Episode) -> None:
        traj = episode.trajectory
        reply = ask(
            self,
            system=SUMMARY_SYSTEM,
            user=SUMMARY_USER.format(
                task=episode.task.instruction,
                trajectory=render_trajectory(traj, max_chars=self.params.max_trajectory_chars),
            ),
            purpose="summary",
            max_tokens=self.params.summary_max_tokens,
            temperature=self.params.summary_temperature,
        )
        summary = _clean_summary(reply)
        self.clock += 1
        self._reinforce(traj.recalled_memory_ids(), episode.task.id)
        if summary:
            self._admit(episode, summary)
        else:
            skip(self, "summary", reply, task=episode.task.id)
        self._forget()

    def _reinforce(self, recalled: list[str], task_id: str) -> None:
        cap = self.params.max_strength
        for mid in recalled:
            m = self.memories.get(mid)
            if m is None:
                continue
            strength = m["strength"] + self.params.strength_increment
            m["strength"] = min(strength, cap) if cap is not None else strength
            m["last_recall"] = self.clock
            self.audit.record("reinforce", memory_id=mid, task=task_id, strength=m["strength"])

    def _admit(self, episode: Episode, summary: str) -> None:
        index = self.index  # built before the new memory exists, so it is embedded once
        mid = f"mb-{self.next_id}"
        self.next_id += 1
        tail = render_trajectory(episode.trajectory, max_chars=10**9, with_agents=False)
        m = {
            "id": mid,
            "task_id": episode.task.id,
            "instruction": episode.task.instruction,
            "summary": summary,
            "success": episode.outcome.success,
            "excerpt": tail[-self.params.excerpt_chars :].lstrip() if self.params.excerpt_chars else "",
            "strength": self.params.initial_strength,
            "created": self.clock,
            "last_recall": self.clock,
        }
        self.memories[mid] = m
        index.add(mid, summary)
        self.audit.record("admit", memory_id=mid, task=episode.task.id, success=m["success"], summary=summary[:300])

    def retention(self, m: dict[str, Any]) -> float:
        """R = exp(-t / S), t in units of `time_unit_tasks` tasks since the last recall."""
        t = (self.clock - m["last_recall"]) / self.params.time_unit_tasks
        return math.exp(-t / m["strength"])

    def _draw(self, mid: str) -> float:
        if self.params.forgetting == "threshold":
            return stable_uniform(self.services.seed, self.name, mid)
        return stable_uniform(self.services.seed, self.name, mid, self.clock)

    def _forget(self) -> None:
        gone = []
        for mid, m in self.memories.items():
            r = self.retention(m)
            if r < self._draw(mid):
                gone.append(mid)
                self.audit.record(
                    "forget", memory_id=mid, retention=round(r, 6), strength=m["strength"], clock=self.clock
                )
        for mid in gone:
            del self.memories[mid]
        self.index.remove(gone)

    # -- state -----------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"clock": self.clock, "next_id": self.next_id, "memories": [dict(m) for m in self.memories.values()]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.clock = int(state["clock"])
        self.next_id = int(state["next_id"])
        self.memories = {m["id"]: dict(m) for m in state["memories"]}
        self._index = None

    def stats(self) -> dict[str, float]:
        return {"memories": float(len(self.memories))}


def _clean_summary(reply: str | None) -> str:
    """The summary on one line, minus echoed prefixes; empty when nothing usable is left."""
    if not reply:
        return ""
    text = one_line(reply)
    lowered = text.lower()
    for prefix in _PREFIX_WORDS:
        if lowered.startswith(prefix):
            text = text[len(prefix) :].strip()
            lowered = text.lower()
    return clip(text, 1200) if len(text) >= 10 else ""
