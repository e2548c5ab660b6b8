"""FEVER 1.0 fact verification (paper_dev), in the setups G-Memory evaluates.

Claims come from `fever/paper_dev.jsonl` (9,999 claims; G-Memory uses the
first 100: the default `size=100, offset=0`). The label is one of SUPPORTS,
REFUTES, NOT ENOUGH INFO.

Modes:
- `claim_only`: one answer per claim, no tools (the agent sees only the claim);
  the answer must be one label after ReAct's `normalize_answer` (`normalize_label`:
  'supports.' and 'Finish[supports]' name SUPPORTS; 'refuted', 'The answer is SUPPORTS' and the
  hedge 'SUPPORTS or REFUTES' name none and score 0).
- `react`: ReAct's Wikipedia environment (Yao et al., 2023; ysymyth/ReAct
  `wikienv.py` + `wrappers.FeverWrapper`), the setup of G-Memory's FEVER runs. Actions
  `Search[entity]`, `Lookup[keyword]`, `Finish[label]`; observations as ReAct's:
  the first five sentences of a found page, "Could not find X. Similar: [...]."
  otherwise, "(Result i / n) sentence" for lookups, "No more results." when
  they run out, "Invalid action: ..." for anything else. Reward 1 iff the
  finished answer equals the label after ReAct's `normalize_answer` (lower
  case, no punctuation or articles, single spaces). Step limit 12 by default.
  The search backend is a parameter (`local` JSONL page store or live
  `wikipedia`; see `fever_search`), every answer goes through a persistent
  cache so a run replays exactly, and the backend is recorded in run.json.

Deviations from ReAct: action names are matched case-insensitively (ReAct
lower-cases only the first letter); the final observation is "Episode finished."
without ReAct's "reward = r", so the label never enters a trajectory that a
memory method reads (it would leak the gold verdict under an LLM-judge label
source); ReAct's `think[...]` action is not offered (the frameworks reason in
their own turns).
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from aecg_bench.benchmarks.data import DataFile, fetch, sha256_of
from aecg_bench.benchmarks.fever_search import CachedSearch, LocalPages, SearchBackend, WikipediaAPI
from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.types import Action, Observation, Sample, Score, Task

PAPER_DEV = DataFile(
    relpath="paper_dev.jsonl",
    sha256="41158707810008747946bf23471e82df53e77a513524b9e3ec1c2e674ef5ef8c",
    url="https://fever.ai/download/fever/paper_dev.jsonl",
    source="https://fever.ai/dataset/fever.html (paper_dev.jsonl) or HF fever/fever v1.0 paper_dev",
)
LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
ANSWER_GRAMMAR = 'root ::= "SUPPORTS" | "REFUTES" | "NOT ENOUGH INFO"'
REACT_GRAMMAR = "\n".join(
    [
        'root ::= "Search[" arg "]" | "Lookup[" arg "]" | "Finish[" label "]"',
        r"arg ::= [^\n\[\]]{1,80}",
        'label ::= "SUPPORTS" | "REFUTES" | "NOT ENOUGH INFO"',
    ]
)
REACT_INSTRUCTION = (
    "Determine whether the claim is supported or refuted by evidence from Wikipedia, or whether there is not "
    "enough information.\nClaim: {claim}\n"
    "Actions: Search[entity] looks the entity up on Wikipedia and shows the first sentences of its page if it "
    "exists, or else similar page titles. Lookup[keyword] shows the next sentence containing the keyword in the "
    "current page. Finish[answer] ends the task with SUPPORTS, REFUTES or NOT ENOUGH INFO."
)
REACT_HINT = (
    "Reply with exactly one action: Search[entity], Lookup[keyword] or Finish[SUPPORTS|REFUTES|NOT ENOUGH INFO]."
)
_REACT_ACTION = re.compile(r"(search|lookup|finish)\[(.*)\]", re.I | re.S)


def normalize_label(text: str) -> str | None:
    """The label an answer names, scored as ReAct / G-Memory do: the whole answer (or its bracketed part,
    'Finish[supports]') must equal one label after `normalize_answer`; a hedge ('SUPPORTS or REFUTES'), a
    sentence or a variant spelling ('refuted') names none."""
    inner = re.search(r"\[(.*?)\]", text)
    answer = normalize_answer(inner.group(1) if inner else text)
    return next((label for label in LABELS if normalize_answer(label) == answer), None)


def normalize_answer(text: str) -> str:
    """ReAct's answer normalisation: lower case, strip punctuation and articles, collapse spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


class FeverParams(Params):
    mode: Literal["claim_only", "react"] = "claim_only"
    size: int = Field(100, ge=1, description="claims, from `offset` (G-Memory: the first 100)")
    offset: int = Field(0, ge=0)
    download: bool = True
    search: Literal["none", "local", "wikipedia"] = Field("none", description="react mode's search backend")
    pages_path: str | None = Field(None, description="local page store (JSONL of {title, text}); relative = data dir")
    wikipedia_api: str = "https://en.wikipedia.org/w/api.php"
    tool_cache: Literal["read_write", "read_only", "off"] = Field("read_write", description="search answer cache")
    max_steps: int = Field(12, ge=1, description="react mode's step limit")

    @model_validator(mode="after")
    def _consistent(self) -> FeverParams:
        if self.mode == "react" and self.search == "none":
            raise ValueError("mode 'react' needs a search backend: search=local (with pages_path) or search=wikipedia")
        if self.mode == "claim_only" and self.search != "none":
            raise ValueError(f"mode 'claim_only' uses no tools; set mode=react to use search={self.search!r}")
        if self.search == "local" and not self.pages_path:
            raise ValueError("search=local needs pages_path (a JSONL file of {'title', 'text'} pages)")
        return self


class FeverBenchmark(Benchmark):
    name = "fever"
    version = "3"  # 3: claim-only answers scored by normalised exact match (issue 17)
    Params = FeverParams

    def __init__(self, params: dict | Params | None = None, *, data_dir: Path | None = None) -> None:
        super().__init__(params, data_dir=data_dir)
        self._backend: SearchBackend | None = None

    def _rows(self) -> list[dict]:
        path = fetch(self.data_dir, PAPER_DEV, download=self.params.download)
        rows = []
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                rows.append({"id": row["id"], "claim": row["claim"], "label": row["label"]})
            except (json.JSONDecodeError, KeyError) as exc:
                raise DataError(f"{path}: line {i + 1} is not a FEVER record ({exc})") from None
        return rows

    def pages_file(self) -> Path:
        raw = Path(str(self.params.pages_path)).expanduser()
        path = raw if raw.is_absolute() or self.data_dir is None else self.data_dir / raw
        if not path.is_file():
            raise DataError(
                f"FEVER page store {path} not found; search=local needs a JSONL file with one "
                '{"title": ..., "text": ...} page per line (e.g. built from the FEVER wiki-pages dump), '
                "or use search=wikipedia when online"
            )
        return path

    def backend(self) -> SearchBackend:
        if self._backend is None:
            if self.params.search == "local":
                path = self.pages_file()
                self._backend = LocalPages(path, sha256_of(path))
            elif self.params.search == "wikipedia":
                self._backend = WikipediaAPI(self.params.wikipedia_api)
            else:
                raise ConfigError("fever: claim_only mode has no search backend")
        return self._backend

    def data_hashes(self) -> dict[str, str]:
        hashes = {PAPER_DEV.relpath: PAPER_DEV.sha256}
        if self.params.search == "local":
            hashes["pages:" + self.pages_file().name] = sha256_of(self.pages_file())
        return hashes

    def samples(self, split: str = "test") -> list[Sample]:
        rows = self._rows()[self.params.offset : self.params.offset + self.params.size]
        return [Sample(task=self._task(row), gold={"label": row["label"]}, split=split) for row in rows]

    def _task(self, row: dict) -> Task:
        if self.params.mode == "react":
            return Task(
                id=str(row["id"]),
                benchmark=self.name,
                instruction=REACT_INSTRUCTION.format(claim=row["claim"]),
                mode="steps",
                task_type="fact_verification",
                action_hint=REACT_HINT,
                action_grammar=REACT_GRAMMAR,
                max_steps=self.params.max_steps,
                metadata={"claim": row["claim"]},
            )
        return Task(
            id=str(row["id"]),
            benchmark=self.name,
            instruction=f"Claim: {row['claim']}\nDoes the evidence support or refute the claim, "
            "or is there not enough information?",
            mode="answer",
            task_type="fact_verification",
            action_hint="Answer with exactly one of: SUPPORTS, REFUTES, NOT ENOUGH INFO.",
            action_grammar=ANSWER_GRAMMAR,
            max_steps=1,
        )

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        if self.params.mode == "claim_only":
            return ClaimOnlyEnv(sample.gold["label"])
        cache = None if ctx.cache_dir is None else Path(ctx.cache_dir) / "fever_search.sqlite"
        search = CachedSearch(self.backend(), cache, self.params.tool_cache)
        return ReActWikiEnv(sample.task.metadata["claim"], sample.gold["label"], search)

    def describe_backends(self) -> dict[str, str]:
        if self.params.search == "local":
            path = self.pages_file()
            return {
                "search": "local",
                "pages": str(path),
                "pages_sha256": sha256_of(path),
                "tool_cache": self.params.tool_cache,
            }
        if self.params.search == "wikipedia":
            return {"search": "wikipedia", "api": self.params.wikipedia_api, "tool_cache": self.params.tool_cache}
        return {"search": "none (claim_only)"}


class ClaimOnlyEnv(Environment):
    def __init__(self, gold: str) -> None:
        self.gold = gold
        self.answer: str | None = None

    def reset(self) -> Observation:
        self.answer = None
        return Observation("Give your verdict on the claim.")

    def step(self, action: Action) -> Observation:
        label = normalize_label(action.text)
        self.answer = label
        if label is None:
            return Observation(
                f"Invalid answer {action.text[:100]!r}; expected one of {', '.join(LABELS)}.", done=True, valid=False
            )
        return Observation(f"Answer recorded: {label}.", reward=float(label == self.gold), done=True)

    def score(self) -> Score:
        correct = self.answer == self.gold
        return Score(success=correct, value=float(correct), metrics={"answered": float(self.answer is not None)})


def sentences(page: str) -> list[str]:
    """ReAct's sentence split: non-empty paragraphs, split on '. ', each ending with '.'."""
    out: list[str] = []
    for paragraph in (p.strip() for p in page.split("\n")):
        if paragraph:
            out += [s.strip() + "." for s in paragraph.split(". ") if s.strip()]
    return out


class ReActWikiEnv(Environment):
    """ReAct's Wikipedia environment for one claim."""

    def __init__(self, claim: str, gold: str, search: CachedSearch) -> None:
        self.claim = claim
        self.gold = gold
        self.search = search
        self.reset()

    def reset(self) -> Observation:
        self.page: str | None = None
        self.lookup_keyword: str | None = None
        self.lookup_hits: list[str] = []
        self.lookup_next = 0
        self.answer: str | None = None
        self.steps = 0
        self.searches = 0
        self.invalid = 0
        return Observation(f"Claim: {self.claim}")

    def step(self, action: Action) -> Observation:
        if self.answer is not None:
            return Observation("Episode finished.", done=True, valid=False)
        self.steps += 1
        text = action.text.strip()
        match = _REACT_ACTION.fullmatch(text)
        if match is None:
            self.invalid += 1
            return Observation(f"Invalid action: {text}", valid=False)
        kind, arg = match.group(1).lower(), match.group(2)
        if kind == "search":
            return Observation(self._search(arg))
        if kind == "lookup":
            return Observation(self._lookup(arg))
        self.answer = arg
        correct = self.correct
        return Observation("Episode finished.", reward=float(correct), done=True, info={"answer": arg})

    def _search(self, entity: str) -> str:
        self.searches += 1
        result = self.search.search(entity)
        if result.page is None:
            return f"Could not find {entity}. Similar: {result.similar[:5]}."
        self.page = result.page
        self.lookup_keyword, self.lookup_hits, self.lookup_next = None, [], 0
        return " ".join(sentences(self.page)[:5])

    def _lookup(self, keyword: str) -> str:
        if keyword != self.lookup_keyword:
            self.lookup_keyword = keyword
            page_sentences = sentences(self.page) if self.page is not None else []
            self.lookup_hits = [s for s in page_sentences if keyword.lower() in s.lower()]
            self.lookup_next = 0
        if self.lookup_next >= len(self.lookup_hits):
            return "No more results."
        self.lookup_next += 1
        return f"(Result {self.lookup_next} / {len(self.lookup_hits)}) {self.lookup_hits[self.lookup_next - 1]}"

    @property
    def correct(self) -> bool:
        return self.answer is not None and normalize_answer(self.answer) == normalize_answer(self.gold)

    def score(self) -> Score:
        return Score(
            success=self.correct,
            value=float(self.correct),
            metrics={
                "answered": float(self.answer is not None),
                "steps": float(self.steps),
                "searches": float(self.searches),
                "invalid_actions": float(self.invalid),
            },
        )

    def close(self) -> None:
        self.search.close()
