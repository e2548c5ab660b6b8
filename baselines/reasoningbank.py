"""`reasoningbank`: ReasoningBank (Ouyang et al., 2025, "ReasoningBank: Scaling Agent
Self-Evolving with Reasoning Memory", arXiv 2509.25140; code:
github.com/google-research/reasoning-bank, WebArena/induce_memory.py, memory_management.py,
prompts/memory_instruction.py). EDV's single-agent memory baseline.

What is stored: after each task, one entry: the task query, its label and at
most three memory items, each with a Title, a one-sentence Description and a
1-3 sentence Content, distilled by the LLM from the trajectory. Successful
and failed trajectories get separate extraction prompts (why it succeeded ->
generalisable insights; why it failed -> lessons and preventive strategies);
both forbid task-specific strings. Consolidation is plain addition, as in the
paper.

When and how it is recalled: the current task's query is embedded and the
`top_k` entries whose source queries are most similar (cosine) are selected;
all items of those entries are returned. Entries induced from the task being
solved are never returned (guard: same task id), so a second epoch over a
split, a rollout of the same task or an injected copy cannot hand a task its
own distilled answer.

How it learns from outcomes: the label decides which extraction prompt runs.
The label is the runner's `Outcome`, from the source the `label_source` param
names (default `llm_judge`, the paper's setting; `environment` is the
`reasoningbank_gt` variant; `protocol` defers to protocol.label_source): with
`llm_judge` it comes from the runner's LLM judge, whose prompt is ReasoningBank's strict
one ("a false success is more harmful than a false failure"); with
`environment` it is the benchmark's verdict (the paper's ground-truth
setting). A method-level judge would duplicate that path, so there is none;
the label source is recorded with every entry. Unlabelled episodes
(`label_source=none`) are skipped with an audit event.

For EDV: one instance per backbone model is one run per model config;
`add_external` inserts externally constructed entries (the contamination study
injects wrong-but-coherent experiences through it, marked with their origin),
and `item_count` gives the memory volume the injected fraction refers to.

Retrieval key (`retrieval_key`): the official code embeds the task query,
which on WebArena is the task's whole content. In a conversation (tau2) every
task of a domain has the same instruction, which would give every task the same
entries, so by default a conversation is keyed by its opening observation (the
user's first message) when stored and the current observation when recalled,
followed by the instruction (`aecg_bench.types.task_text`); other tasks by
their instruction. `instruction` keys every task by its instruction alone.

Hyperparameters (defaults and sources):
- top_k 1: paper (k=1 is best; more memories hurt) and run.py (`n=1`).
- max_recalled_items None: run.py appends every item of the `select_memory`
  entries (memory_management.py ranks entries, not items), so there is no
  item cap. EDV's Figure 5 counts retrieved memories in items for both
  methods: a cap of k keeps the first k items, best entry first and each
  entry's items in stored order (our choice; the original has no cap).
- max_items 3: extraction prompts ("at most 3 memory items").
- extract_temperature 0.7: induce_memory.py.

Deviations:
- The official retrieval embeds the query with an instruction prefix
  (Gemini/Qwen instruction-aware embeddings); the harness embedder (MiniLM or
  lexical) has no instruction mode, so the plain query is embedded.
- Prompts are worded for agent tasks in general instead of web navigation.
- The official code keeps the raw extraction text; here it is parsed into
  items, and a reply with no parsable item is skipped with an audit event.
- The extraction call carries the output format as a GBNF grammar
  (`items_grammar`: 1 to max_items items, Title <= 60, Description <= 120,
  Content <= 240 characters): a decoding aid that grammar-capable models (the
  embedded one) follow and other providers drop, so API runs are unchanged.
  Without it SmolLM2-135M wrote no parsable item in 48 of 48 extractions
  (docs/benchmarks/procedures.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from aecg_bench.contracts import MemoryMethod, MemoryServices, Params
from aecg_bench.types import Episode, MemoryItem, RecallQuery
from baselines.index import RetrievalKey, VectorIndex, embedder_of, task_key
from baselines.llm_calls import ask, skip
from baselines.trajectory_text import models_used, one_line, render_trajectory

_COMMON = """
## Important notes
  - You can extract *at most {max_items}* memory items from the trajectory.
  - Do not repeat similar or overlapping items.
  - Do not mention specific entities, queries, identifiers or string contents; focus on insights that generalise.

## Output format
Follow this Markdown format exactly, once per item:

# Memory Item i
## Title <a short title for the memory item>
## Description <a one-sentence summary of the memory item>
## Content <1-3 sentences stating the insight>
"""
SUCCESS_SYSTEM = (
    "You are an expert in agent tasks. You are given a task query and the trajectory of an agent that "
    "**successfully accomplished the task**.\n\n## Guidelines\nExtract and summarise useful insights as memory "
    "items, so that they help with similar tasks in the future. First think about why the trajectory succeeded, "
    "then summarise the insights." + _COMMON
)
FAILURE_SYSTEM = (
    "You are an expert in agent tasks. You are given a task query and the trajectory of an agent that "
    "**attempted the task but failed**.\n\n## Guidelines\nExtract and summarise useful insights as memory items, "
    "so that they help with similar tasks in the future. First reflect on why the trajectory failed, then "
    "summarise the lessons learned or the strategies that would prevent the failure." + _COMMON
)
EXTRACT_USER = "**Query:** {query}\n\n**Trajectory:**\n{trajectory}"


def items_grammar(max_items: int) -> str:
    """The Markdown format the extraction prompt asks for, as GBNF (1 to `max_items` items, each line bounded):
    a decoding aid that grammar-capable models (the embedded one) follow and other providers drop. Without it
    SmolLM2-135M wrote no parsable item in 48 of 48 extractions (docs/benchmarks/procedures.md)."""
    optional = " ".join(["item"] * 1 + ["item?"] * (max_items - 1))
    return (
        f"root ::= {optional}\n"
        'item ::= "# Memory Item " [1-9] "\\n## Title " line60 "\\n## Description " line120 '
        '"\\n## Content " line240 "\\n\\n"\n'
        "line60 ::= [^\\n#]{1,60}\nline120 ::= [^\\n#]{1,120}\nline240 ::= [^\\n#]{1,240}"
    )


_ITEM_SPLIT = re.compile(r"^\s*#\s*Memory\s+Item\b[^\n]*$", re.I | re.M)
_FIELD = re.compile(r"^(#{1,3})?[\s*]*(title|description|content)\b[\s*]*(:)?[\s*]*(.*)$", re.I)


def _field(line: str) -> tuple[str, str] | None:
    """("title", text) for "## Title text", "## Title: text" or "**Title:** text"; a line that merely
    starts with one of the words is not a field."""
    m = _FIELD.match(line.strip())
    if not m or not (m.group(1) or m.group(3)):
        return None
    return m.group(2).lower(), m.group(4).strip()


@dataclass(frozen=True)
class ReasoningItem:
    """One memory item in ReasoningBank's schema."""

    title: str
    description: str
    content: str

    def render(self) -> str:
        return f"{self.title}: {self.description} {self.content}".strip()


class ReasoningBankParams(Params):
    top_k: int = Field(1, ge=0, description="entries (source tasks) recalled per query; paper: 1")
    max_recalled_items: int | None = Field(
        None, ge=0, description="cap on items recalled per query, best entry first; None = all (paper)"
    )
    max_items: int = Field(3, ge=1, description="items kept per trajectory; paper: at most 3")
    exclude_same_task: bool = Field(True, description="never recall entries induced from the task being solved")
    min_similarity: float | None = Field(None, description="drop entries below this cosine (none in the paper)")
    extract_temperature: float = Field(0.7, ge=0, description="induce_memory.py")
    extract_max_tokens: int = Field(768, ge=64)
    max_trajectory_chars: int = Field(6000, ge=200)
    retrieval_key: RetrievalKey = Field(
        "instruction+observation",
        description="what is embedded: the task's instruction and its opening (stored) / current (recalled) observation",
    )
    label_source: Literal["llm_judge", "environment", "protocol"] = Field(
        "llm_judge",
        description="llm_judge (paper: self-judged, no ground truth) | environment (w/ GT) | protocol's label_source",
    )


class ReasoningBank(MemoryMethod):
    name = "reasoningbank"
    version = "1"
    pure_recall = True  # recall only reads the bank (runner/concurrent.py)
    Params = ReasoningBankParams
    params: ReasoningBankParams

    def label_source(self, protocol_default: str) -> str:
        return protocol_default if self.params.label_source == "protocol" else self.params.label_source

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        self.entries: dict[str, dict[str, Any]] = {}
        self.next_id = 0
        self._index: VectorIndex | None = None

    @property
    def index(self) -> VectorIndex:
        if self._index is None:
            self._index = VectorIndex(embedder_of(self.services))
            self._index.add_many(list(self.entries), [e["query"] for e in self.entries.values()])
        return self._index

    # -- recall ----------------------------------------------------------------

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        task_id = query.task.id

        def allowed(eid: str) -> bool:
            return not (self.params.exclude_same_task and self.entries[eid]["task_id"] == task_id)

        text = task_key(query.task, query.context, self.params.retrieval_key)
        hits = self.index.search(text, self.params.top_k, allow=allowed, min_score=self.params.min_similarity)
        cap = self.params.max_recalled_items
        out = []
        for eid, score in hits:
            e = self.entries[eid]
            for i, it in enumerate(e["items"]):
                if cap is not None and len(out) >= cap:
                    break
                out.append(
                    MemoryItem(
                        id=f"{eid}-{i}",
                        text=ReasoningItem(**it).render(),
                        level=query.level,
                        kind="reasoning",
                        score=score,
                        metadata={"entry": eid, "source_task": e["task_id"], "success": e["success"]},
                    )
                )
        return out

    # -- learning --------------------------------------------------------------

    def observe(self, episode: Episode) -> None:
        items = self.extract(episode)
        if items:
            self.insert_induced(episode, items)

    def extract(self, episode: Episode) -> list[ReasoningItem] | None:
        """The memory items the LLM distils from a labelled episode (None, audited, if none)."""
        outcome = episode.outcome
        if outcome.success is None:
            self.audit.record("skip", purpose="extract", reason="no_label", task=episode.task.id)
            return None
        reply = ask(
            self,
            system=(SUCCESS_SYSTEM if outcome.success else FAILURE_SYSTEM).format(max_items=self.params.max_items),
            user=EXTRACT_USER.format(
                query=episode.task.instruction,
                trajectory=render_trajectory(episode.trajectory, max_chars=self.params.max_trajectory_chars),
            ),
            purpose="extract",
            max_tokens=self.params.extract_max_tokens,
            temperature=self.params.extract_temperature,
            grammar=items_grammar(self.params.max_items),
        )
        items = parse_items(reply)[: self.params.max_items]
        if not items:
            skip(self, "extract", reply, task=episode.task.id)
            return None
        return items

    def stored_key(self, episode: Episode) -> str:
        """The retrieval key an entry from this episode is filed under."""
        return task_key(episode.task, episode.trajectory.initial_observation, self.params.retrieval_key)

    def insert_induced(self, episode: Episode, items: list[ReasoningItem]) -> str:
        return self._insert(
            query=self.stored_key(episode),
            items=items,
            task_id=episode.task.id,
            success=bool(episode.outcome.success),
            origin="induced",
            label_source=episode.outcome.source,
            models=models_used(episode.trajectory),
        )

    def add_external(
        self,
        query: str,
        items: Sequence[ReasoningItem],
        *,
        origin: str = "external",
        task_id: str = "",
        success: bool = True,
    ) -> str:
        """Insert an externally constructed entry (EDV's contamination hook); returns its id.

        `origin` marks it in the state and the audit log, so analyses can tell
        injected experience from induced experience.
        """
        if not items:
            raise ValueError("add_external needs at least one item")
        return self._insert(
            query=query,
            items=list(items),
            task_id=task_id,
            success=success,
            origin=origin,
            label_source="external",
            models=[],
        )

    def _insert(
        self,
        *,
        query: str,
        items: list[ReasoningItem],
        task_id: str,
        success: bool,
        origin: str,
        label_source: str,
        models: list[str],
    ) -> str:
        index = self.index
        eid = f"rb-{self.next_id}"
        self.next_id += 1
        self.entries[eid] = {
            "id": eid,
            "query": query,
            "task_id": task_id,
            "success": success,
            "origin": origin,
            "label_source": label_source,
            "models": models,
            "items": [{"title": i.title, "description": i.description, "content": i.content} for i in items],
        }
        index.add(eid, query)
        self.audit.record(
            "admit",
            memory_id=eid,
            task=task_id,
            success=success,
            origin=origin,
            label_source=label_source,
            titles=[i.title for i in items],
        )
        return eid

    def item_count(self) -> int:
        return sum(len(e["items"]) for e in self.entries.values())

    # -- state -----------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "next_id": self.next_id,
            "entries": [{**e, "items": [dict(i) for i in e["items"]]} for e in self.entries.values()],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.next_id = int(state["next_id"])
        self.entries = {e["id"]: {**e, "items": [dict(i) for i in e["items"]]} for e in state["entries"]}
        self._index = None

    def stats(self) -> dict[str, float]:
        return {"entries": float(len(self.entries)), "items": float(self.item_count())}


def parse_items(reply: str | None) -> list[ReasoningItem]:
    """Items of a '# Memory Item i / ## Title / ## Description / ## Content' reply.

    Tolerates 'Title:' lines, bold markers and fences; an item without a title
    or a content is dropped.
    """
    if not reply:
        return []
    text = reply.replace("```markdown", "").replace("```", "")
    blocks = _ITEM_SPLIT.split(text)
    items = []
    for block in blocks[1:] if len(blocks) > 1 else blocks:
        fields: dict[str, list[str]] = {}
        current: str | None = None
        for line in block.splitlines():
            found = _field(line)
            if found:
                current, first = found
                fields[current] = [first]
            elif current is not None and line.strip():
                fields[current].append(line)
        title, desc, content = (one_line(" ".join(fields.get(k, []))) for k in ("title", "description", "content"))
        if title and content:
            items.append(ReasoningItem(title=title, description=desc, content=content))
    return items
