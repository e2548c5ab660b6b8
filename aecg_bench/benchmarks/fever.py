"""FEVER 1.0 fact verification (paper_dev), in the setup G-Memory evaluates.

Claims come from `fever/paper_dev.jsonl` (9,999 claims; G-Memory uses the
first 100: the default `size=100, offset=0`). The label is one of SUPPORTS,
REFUTES, NOT ENOUGH INFO; reward 1 for an exact match after normalisation.

Modes:
- `claim_only`: one answer per claim, no tools (the agent sees only the claim).
"""

from __future__ import annotations

import json
import re

from pydantic import Field

from aecg_bench.benchmarks.data import DataFile, fetch
from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.errors import DataError
from aecg_bench.types import Action, Observation, Sample, Score, Task

PAPER_DEV = DataFile(
    relpath="paper_dev.jsonl",
    sha256="41158707810008747946bf23471e82df53e77a513524b9e3ec1c2e674ef5ef8c",
    url="https://fever.ai/download/fever/paper_dev.jsonl",
    source="https://fever.ai/dataset/fever.html (paper_dev.jsonl) or HF fever/fever v1.0 paper_dev",
)
LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
_ALIASES = {
    "NOT ENOUGH INFORMATION": "NOT ENOUGH INFO",
    "NEI": "NOT ENOUGH INFO",
    "SUPPORT": "SUPPORTS",
    "SUPPORTED": "SUPPORTS",
    "REFUTE": "REFUTES",
    "REFUTED": "REFUTES",
}
ANSWER_GRAMMAR = 'root ::= "SUPPORTS" | "REFUTES" | "NOT ENOUGH INFO"'


def normalize_label(text: str) -> str | None:
    """The label named by an answer ('Finish[supports]', 'refutes.', ...), or None."""
    inner = re.search(r"\[(.*?)\]", text)
    raw = inner.group(1) if inner else text
    cleaned = " ".join(re.sub(r"[^A-Za-z ]", " ", raw).upper().split())
    cleaned = _ALIASES.get(cleaned, cleaned)
    if cleaned in LABELS:
        return cleaned
    for label in LABELS:  # 'The answer is SUPPORTS' -> SUPPORTS
        if re.search(rf"\b{label}\b", cleaned):
            return label
    return None


class FeverParams(Params):
    mode: str = Field("claim_only", pattern="^(claim_only)$")
    size: int = Field(100, ge=1)
    offset: int = Field(0, ge=0)
    download: bool = True


class FeverBenchmark(Benchmark):
    name = "fever"
    version = "1"
    Params = FeverParams

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

    def data_hashes(self) -> dict[str, str]:
        return {PAPER_DEV.relpath: PAPER_DEV.sha256}

    def samples(self, split: str = "test") -> list[Sample]:
        rows = self._rows()[self.params.offset : self.params.offset + self.params.size]
        return [
            Sample(
                task=Task(
                    id=str(row["id"]),
                    benchmark=self.name,
                    instruction=f"Claim: {row['claim']}\nDoes the evidence support or refute the claim, "
                    "or is there not enough information?",
                    mode="answer",
                    task_type="fact_verification",
                    action_hint="Answer with exactly one of: SUPPORTS, REFUTES, NOT ENOUGH INFO.",
                    action_grammar=ANSWER_GRAMMAR,
                    max_steps=1,
                ),
                gold={"label": row["label"]},
                split=split,
            )
            for row in rows
        ]

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        return ClaimOnlyEnv(sample.gold["label"])

    def describe_backends(self) -> dict[str, str]:
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
