"""Mind2Web's offline metrics, as MindAct's evaluator computes them.

Source: OSU-NLP-Group/Mind2Web, `src/action_prediction/metric.py`
(`ActionEvaluatorMultiChoice.calculate_f1`, `evaluate_dataset_llm`).
Per step: the positive candidates are those the ranker put in the top k; a step
with none scores 0 on every metric (the recall cap), and so does a step whose
final answer is "None of the above". Otherwise element accuracy = the chosen
element is a positive; operation F1 = token-set F1 of "OP value" against the
target; step success = element right and F1 exactly 1. Tasks: the macro
average over steps of each task, then over tasks; task success = no failed step
(MindAct's `error_ratio[0]`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


def operation_f1(pred: str, label: str) -> float:
    """Token-set F1 of two operation strings (whitespace tokens, no other normalisation)."""
    p, g = set(pred.strip().split()), set(label.strip().split())
    if not p and not g:
        return 1.0
    if not p or not g:
        return 0.0
    tp = len(p & g)
    if tp == 0:
        return 0.0
    precision, recall = tp / len(p), tp / len(g)
    return 2 * precision * recall / (precision + recall)


def target_operation(op: str, value: str) -> str:
    """The gold operation string as MindAct's evaluator reads it: its target text (`format_input_multichoice`:
    `Action: <op>`, then `Value: <value>` unless a CLICK) goes through `postprocess_action`, which keeps the
    value's first line only; an op outside CLICK/SELECT/TYPE reads as none."""
    action = op if op in ("CLICK", "SELECT", "TYPE") else ""
    first_line = "" if op == "CLICK" else value.partition("\n")[0].strip()
    return f"{action} {first_line}".strip()


@dataclass(frozen=True)
class StepScore:
    element: float
    f1: float
    success: float
    gold_in_top_k: float  # the recall cap: could this step be solved at all


def score_step(pred_id: str | None, pred_operation: str, pos_ids: Iterable[str], label_operation: str) -> StepScore:
    """One step's metrics; `pos_ids` are the positives among the top-k candidates, `pred_id`
    None means "None of the above" (or no usable answer)."""
    pos = set(pos_ids)
    if not pos:
        return StepScore(0.0, 0.0, 0.0, 0.0)
    if pred_id is None:
        return StepScore(0.0, 0.0, 0.0, 1.0)
    element = float(pred_id in pos)
    f1 = operation_f1(pred_operation, label_operation)
    return StepScore(element, f1, float(element == 1.0 and f1 == 1.0), 1.0)


def task_metrics(steps: Sequence[StepScore]) -> dict[str, float]:
    """Macro (per-task) averages of one task's steps, its success and its upper bounds."""
    n = len(steps)
    if n == 0:
        raise ValueError("a Mind2Web task has at least one step")
    return {
        "element_acc": sum(s.element for s in steps) / n,
        "action_f1": sum(s.f1 for s in steps) / n,
        "step_success": sum(s.success for s in steps) / n,
        "task_success": float(all(s.success == 1.0 for s in steps)),
        "upper_bound_step": sum(s.gold_in_top_k for s in steps) / n,
        "upper_bound_task": float(all(s.gold_in_top_k == 1.0 for s in steps)),
    }


def split_metrics(tasks: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The split's numbers as EDV's Table 2 reports them: means over tasks of `task_metrics`."""
    if not tasks:
        return {}
    keys = tasks[0].keys()
    return {k: sum(t[k] for t in tasks) / len(tasks) for k in keys}
