"""Mind2Web (Deng et al., NeurIPS 2023) in MindAct's offline multiple-choice setting, as EDV runs it.

Each task is one sample; each of its annotated steps is one environment step.
A step shows the task, the previous actions (the gold ones: the ground-truth
action is executed whatever was predicted, MindAct's offline evaluation) and the
top-k candidates of the MindAct ranker plus "A. None of the above", each as the
first n tokens of its cleaned-HTML rendering (EDV App. D.2: k=10, n=20). The
agent answers with a letter and, for an element, the operation
(CLICK | TYPE <value> | SELECT <value>). Metrics: `metrics.py`.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from aecg_bench.benchmarks.mind2web import dom, files
from aecg_bench.benchmarks.mind2web.metrics import StepScore, score_step, target_operation, task_metrics
from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.types import Action, Observation, Sample, Score, Task

INSTRUCTION = "Complete the following task on a website, one action at a time.\nTask: {task}"
HINT = (
    "Reply with the letter of your choice. For an element also give the operation: "
    "'<letter> CLICK', '<letter> TYPE <text>' or '<letter> SELECT <option>'. Reply 'A' for None of the above."
)
# MindAct's `postprocess_action_llm` (src/action_prediction/metric.py): the first "Answer: <A-F>" anywhere in
# the reply, the first "Action: <op>" and the first line after "Value: ". Letters past F are read only when they
# stand alone ("Answer: G", not "Answer: Great"): EDV's 11 choices need them, MindAct's groups of 5 did not.
_ANSWER = re.compile(r"Answer: ([A-F]|[G-Z](?![A-Za-z]))")
_ACTION = re.compile(r"Action: (CLICK|SELECT|TYPE)")
_VALUE = re.compile(r"Value: (.*)$", re.M)
# our one-line form, on the reply's first non-empty line: "<letter>[.] [<op>[:] [<value>]]"
_ONE_LINE = re.compile(r"([A-Z])\.?(?:\s+(CLICK|SELECT|TYPE):?(?:\s+(.*))?)?")


def grammar(n_choices: int) -> str:
    letters = " | ".join(f'"{chr(66 + i)}"' for i in range(n_choices)) or '"B"'
    return "\n".join(
        [
            'root ::= "A" | letter " CLICK" | letter " TYPE " value | letter " SELECT " value',
            f"letter ::= {letters}",
            r"value ::= [^\n]+",
        ]
    )


def parse_answer(text: str) -> tuple[str | None, str]:
    """(letter, 'OP value') of a reply; letter None when there is none (MindAct then reads 'A').

    A reply holding MindAct's "Answer: X" is read as MindAct reads it, wherever the answer stands (after
    reasoning too); otherwise its first non-empty line must be the one-line form `HINT` asks for, or a bare
    letter followed by MindAct's `Action:` / `Value:` lines. Either way a value is one line, as MindAct's
    `Value: (.*)$` reads it."""
    text = text.strip()
    answer = _ANSWER.search(text)
    if answer:
        return answer.group(1), _operation(text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    m = _ONE_LINE.fullmatch(lines[0]) if lines else None
    if not m:
        return None, " "
    if m.group(2) is None:  # a bare letter: MindAct's Action:/Value: lines may follow (its fine-tuned form)
        return m.group(1), _operation(text)
    return m.group(1), m.group(2) + " " + (m.group(3) or "").strip()


def _operation(text: str) -> str:
    """MindAct's 'OP value' from `Action: <op>` and the first line after `Value: `, wherever they stand."""
    op, value = _ACTION.search(text), _VALUE.search(text)
    return (op.group(1) if op else "") + " " + (value.group(1).strip() if value else "")


class Mind2WebParams(Params):
    split: Literal["test_task", "test_website", "test_domain"] = Field(
        "test_task", description="which test set the run's 'test' split is (cross-task, -website, -domain)"
    )
    top_k: int = Field(
        10, ge=1, le=25, description="ranker candidates shown per step (EDV: 10; MindAct: 50 in rounds of 5)"
    )
    description_tokens: int = Field(
        20, ge=1, description="tokens of each candidate's HTML rendering (EDV: 20; MindAct: 10)"
    )
    previous_k: int = Field(5, ge=0, description="previous actions shown (MindAct's previous_k)")
    keep_html_brackets: bool = Field(True, description="render candidates as HTML (MindAct's LLM prompts) or (tag ...)")
    size: int | None = Field(None, ge=1, description="tasks per split, from offset; None = all")
    offset: int = Field(0, ge=0)
    download: bool = True
    revision: str = Field(
        files.REVISION, pattern=r"^[0-9a-f]{40}$", description="hub commit of osunlp/Mind2Web (pinned: a full sha)"
    )


class Mind2WebBenchmark(Benchmark):
    name = "mind2web"
    version = "2"  # 2: replies read as MindAct reads them, ids 0..n, the pinned hub commit
    Params = Mind2WebParams

    def __init__(self, params: dict | Params | None = None, *, data_dir: Path | None = None) -> None:
        super().__init__(params, data_dir=data_dir)
        self._ranks: dict[str, dict[str, int]] | None = None

    def splits(self) -> list[str]:
        return ["train", "test"]

    def _root(self) -> Path:
        return files.ensure(self.data_dir, download=self.params.download, revision=self.params.revision)

    def data_hashes(self) -> dict[str, str]:
        return dict(files.manifest(self._root())["files"])

    def samples(self, split: str = "test") -> list[Sample]:
        if split not in self.splits():
            raise ConfigError(
                f"benchmark 'mind2web' has no split {split!r}; valid splits: train, test "
                "(params.split picks the test set: test_task, test_website or test_domain)"
            )
        root = self._root()
        if self._ranks is None:
            self._ranks = files.load_ranks(root)
        tasks = files.iter_tasks(root, "train" if split == "train" else self.params.split)
        end = None if self.params.size is None else self.params.offset + self.params.size
        # each raw task (with two copies of its pages per step) is dropped once its sample is built
        return [self._sample(t, split) for t in itertools.islice(tasks, self.params.offset, end)]

    def _sample(self, raw: dict[str, Any], split: str) -> Sample:
        assert self._ranks is not None
        p = self.params
        steps = []
        for action in raw["actions"]:
            sid = f"{raw['annotation_id']}_{action['action_uid']}"
            if sid not in self._ranks:
                raise DataError(f"{files.SCORES} has no ranks for step {sid}; the score file and the tasks differ")
            ranks = self._ranks[sid]

            def top(cands: list[dict[str, Any]], ranks: dict[str, int] = ranks) -> list[str]:
                return [c["backend_node_id"] for c in cands if ranks.get(c["backend_node_id"], 10**9) < p.top_k]

            pos, neg = top(action["pos_candidates"]), top(action["neg_candidates"])
            try:
                choices = dom.describe_candidates(
                    action["cleaned_html"], pos + neg, p.description_tokens, p.keep_html_brackets
                )
            except dom.etree.XMLSyntaxError as exc:
                raise DataError(f"Mind2Web step {sid}: its cleaned_html does not parse ({exc})") from None
            op = action["operation"]
            steps.append(
                {
                    "pos": pos,
                    "choices": choices,
                    "label": target_operation(op["op"], op["value"]),
                    "op": op["op"],
                    "value": op["value"],
                }
            )
        task = Task(
            id=str(raw["annotation_id"]),
            benchmark=self.name,
            instruction=INSTRUCTION.format(task=raw["confirmed_task"]),
            mode="steps",
            task_type=str(raw.get("domain", "")),
            action_hint=HINT,
            action_grammar=grammar(p.top_k),
            reads_whole_reply=True,
            max_steps=len(steps),
            metadata={k: raw.get(k, "") for k in ("website", "domain", "subdomain")},
        )
        gold = {"task": raw["confirmed_task"], "action_reprs": list(raw["action_reprs"]), "steps": steps}
        return Sample(task=task, gold=gold, split=split)

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        return Mind2WebEnv(sample.gold, self.params.previous_k)


class Mind2WebEnv(Environment):
    """One task's steps; every reply is scored against the step it answers, then the gold action is taken."""

    def __init__(self, gold: dict[str, Any], previous_k: int = 5) -> None:
        self.gold = gold
        self.previous_k = previous_k
        self.reset()

    def reset(self) -> Observation:
        self.index = 0
        self.scores: list[StepScore] = []
        return Observation(self._prompt())

    def _prompt(self) -> str:
        step = self.gold["steps"][self.index]
        previous = self.gold["action_reprs"][: self.index][-self.previous_k :] if self.previous_k else []
        lines = [f"Task: {self.gold['task']}", "Previous actions:", *(previous or ["None"])]
        lines.append(
            "What should be the next action? Please select from the following choices "
            "(If the correct action is not in the page above, please select A. 'None of the above'):\n"
        )
        lines.append("A. None of the above")
        lines += [f"{chr(66 + i)}. {desc}" for i, (_, desc) in enumerate(step["choices"])]
        return "\n".join(lines)

    def step(self, action: Action) -> Observation:
        if self.index >= len(self.gold["steps"]):
            return Observation("The task is over.", done=True, valid=False)
        step = self.gold["steps"][self.index]
        letter, operation = parse_answer(action.text)
        chosen = ord(letter) - 66 if letter and letter != "A" else -1
        valid = letter is not None and chosen < len(step["choices"])
        pred = step["choices"][chosen][0] if valid and chosen >= 0 else None
        score = score_step(pred, operation, step["pos"], step["label"])
        self.scores.append(score)
        self.index += 1
        done = self.index >= len(self.gold["steps"])
        text = "The task is over." if done else self._prompt()
        info = {"step_success": score.success}
        return Observation(text, reward=score.success, done=done, valid=valid, info=info)

    def score(self) -> Score:
        n = len(self.gold["steps"])
        missing = StepScore(0.0, 0.0, 0.0, 0.0)
        steps = [*self.scores, *([missing] * (n - len(self.scores)))]
        # unanswered steps still carry their recall cap
        bounds = [float(bool(s["pos"])) for s in self.gold["steps"]]
        steps = [StepScore(s.element, s.f1, s.success, b) for s, b in zip(steps, bounds, strict=True)]
        m = task_metrics(steps)
        m["steps_answered"] = float(len(self.scores))
        return Score(success=m["task_success"] == 1.0, value=m["step_success"], metrics=m)
