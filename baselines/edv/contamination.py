"""`reasoningbank_contaminated`: ReasoningBank with injected wrong-but-coherent experience
(EDV paper, arXiv 2606.24428, sec. 5.4: "inject erroneous yet internally coherent experiences
(e.g., incorrect payment rules) accounting for 10% of the total memory volume").

It is ReasoningBank unchanged, plus one step at every `observe`: while the
injected items are less than `fraction` of all stored items, one injected
entry is added through ReasoningBank's `add_external` (origin
"contamination", so analyses can tell injected from induced entries). The
check uses the memory as it was before the observed task's own entry, so the
injected share trails by at most one entry; at most one injection per task
keeps it bounded, and the share stays at about `fraction` throughout
construction, in both protocols.

Where the wrong experience comes from (`source`):
- `llm` (default): the newest induced entry's items are rewritten by an LLM
  call (role `contaminator`) into fluent, specific, confident items that state
  a wrong rule for the same situation (reversed conditions, the action that
  failed recommended, wrong tool arguments). The injected entry is filed under
  the same task query, so it is retrieved for the same tasks as the original.
- `file`: items from a JSONL file (one {"title", "description", "content"} per
  line), taken in order and cycled, filed under the observed task's query;
  for hand-written rules like the paper's payment rules.

Hyperparameters: fraction 0.1 (sec. 5.4); everything else is ReasoningBank's.
Deviation: the paper does not say how its wrong experiences were written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from aecg_bench.contracts import MemoryServices
from aecg_bench.errors import ConfigError
from aecg_bench.types import Episode
from baselines.llm_calls import ask, skip
from baselines.reasoningbank import ReasoningBank, ReasoningBankParams, ReasoningItem, parse_items

ORIGIN = "contamination"

CORRUPT_SYSTEM = """You are preparing a robustness test of an agent's memory. You are given memory items \
(Title, Description, Content) that an agent learned on a task. Rewrite each item so that it stays fluent, \
specific, confident and consistent with itself, but states a rule that is WRONG for this kind of task: \
reverse a condition, recommend the action that failed, or name a wrong argument or order of steps. Keep the \
same format and do not mention that anything is wrong.

Output format, once per item:
# Memory Item i
## Title <title>
## Description <one sentence>
## Content <1-3 sentences>"""


class ContaminationParams(ReasoningBankParams):
    fraction: float = Field(0.1, ge=0.0, lt=1.0, description="injected share of stored items (paper: 10%)")
    source: Literal["llm", "file"] = Field("llm", description="llm: corrupt induced items | file: JSONL items")
    items_file: str | None = Field(None, description="source=file: JSONL of {title, description, content}")
    corrupt_temperature: float = Field(0.7, ge=0)


class ContaminatedReasoningBank(ReasoningBank):
    name = "reasoningbank_contaminated"
    version = "1"
    Params = ContaminationParams
    params: ContaminationParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        self._file_items: list[ReasoningItem] = []
        if self.params.source == "file":
            self._file_items = load_items(self.params.items_file)

    def observe(self, episode: Episode) -> None:
        """ReasoningBank's observe, plus one injection when the injected share is below `fraction`.

        The injection is decided and written (its LLM call included) before ReasoningBank's
        own extraction changes anything, and stored after it, so a provider failure anywhere
        leaves the memory as it was."""
        planned = self._plan_injection(episode)
        super().observe(episode)
        if planned is not None:
            self._inject(*planned)

    def _plan_injection(self, episode: Episode) -> tuple[str, list[ReasoningItem], str | None] | None:
        if self.injected_items() >= self.params.fraction * self.item_count() or not self.item_count():
            return None
        if self.params.source == "file":
            start = self.injected_items() % len(self._file_items)
            items = (self._file_items[start:] + self._file_items[:start])[: self.params.max_items]
            return episode.task.instruction, items, None
        source = [e for e in self.entries.values() if e["origin"] != ORIGIN][-1]
        original = "\n\n".join(
            f"# Memory Item {i + 1}\n## Title {it['title']}\n## Description {it['description']}\n"
            f"## Content {it['content']}"
            for i, it in enumerate(source["items"])
        )
        reply = ask(
            self,
            system=CORRUPT_SYSTEM,
            user=f"**Task:** {source['query']}\n\n{original}",
            purpose="contaminate",
            role="contaminator",
            max_tokens=self.params.extract_max_tokens,
            temperature=self.params.corrupt_temperature,
        )
        items = parse_items(reply)[: self.params.max_items]
        if not items:
            skip(self, "contaminate", reply, task=episode.task.id)
            return None
        return source["query"], items, source["id"]

    def _inject(self, query: str, items: list[ReasoningItem], source_entry: str | None) -> None:
        n = sum(e["origin"] == ORIGIN for e in self.entries.values())
        eid = self.add_external(query, items, origin=ORIGIN, task_id=f"{ORIGIN}-{n}")
        self.entries[eid]["source_entry"] = source_entry

    def injected_items(self) -> int:
        return sum(len(e["items"]) for e in self.entries.values() if e["origin"] == ORIGIN)

    def stats(self) -> dict[str, float]:
        return {**super().stats(), "injected_items": float(self.injected_items())}


def load_items(path: str | None) -> list[ReasoningItem]:
    """Items of a JSONL file; a clear error for a missing file or a bad line."""
    if not path:
        raise ConfigError(
            "reasoningbank_contaminated: source=file needs items_file (JSONL of title/description/content)"
        )
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"reasoningbank_contaminated: items_file {file} does not exist")
    items = []
    for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            items.append(ReasoningItem(str(row["title"]), str(row.get("description", "")), str(row["content"])))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ConfigError(f"reasoningbank_contaminated: {file} line {n} is not a memory item ({exc})") from None
    if not items:
        raise ConfigError(f"reasoningbank_contaminated: {file} holds no items")
    return items
