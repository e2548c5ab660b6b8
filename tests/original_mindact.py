"""MindAct's reading and scoring of one multiple-choice reply, re-implemented for the agreement test.

Written from reading OSU-NLP-Group/Mind2Web at commit 1b7c32322d91f164e38d3e59211f9dc574d90a47 (the
upstream history, as mirrored by github.com/ScottLinnn/Mind2Web):

- `src/action_prediction/metric.py`: `ActionEvaluatorMultiChoice.postprocess_action_llm` (how an LLM's
  reply is read), `postprocess_action` (how the target text is read), `calculate_f1`, and the per-step
  scoring of `evaluate_dataset_llm` (element in the positives, F1 against the target action, step success
  when both are 1; "A" or a letter past the choices leaves no prediction, scored 0);
- `src/action_prediction/dataloader.py`: `format_input_multichoice`'s target text
  (`"<letter>.\\nAction: <op>\\n"` plus `"Value: <value>"` unless the op is CLICK).

One round of the evaluator with all the choices at once (the tournament of groups of five is the documented
choice the agreement test leaves out). Not the project's code: a second reading kept apart from it.
"""

from __future__ import annotations

import re


def postprocess_action_llm(text: str) -> tuple[str, str]:
    text = text.strip()
    found = re.search(r"Answer: (A|B|C|D|E|F)", text)
    selected = found.group(1) if found is not None else "A"
    action = re.search(r"Action: (CLICK|SELECT|TYPE)", text)
    action_text = action.group(1) if action is not None else ""
    value = re.search(r"Value: (.*)$", text, re.MULTILINE)
    value_text = value.group(1) if value is not None else ""
    return selected, action_text.strip() + " " + value_text.strip()


def postprocess_action(text: str) -> tuple[str, str]:
    text = text.strip()
    selected = text[0]
    action = re.search(r"Action: (CLICK|SELECT|TYPE)", text)
    action_text = action.group(1) if action is not None else ""
    value = re.search(r"Value: (.*)$", text, re.MULTILINE)
    value_text = value.group(1) if value is not None else ""
    return selected, action_text.strip() + " " + value_text.strip()


def calculate_f1(pred: str, label: str) -> float:
    p, g = set(pred.strip().split()), set(label.strip().split())
    if len(p) == 0 and len(g) == 0:
        return 1
    if len(p) == 0 or len(g) == 0:
        return 0
    tp = len(p & g)
    fp, fn = len(p - g), len(g - p)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    if precision == 0 or recall == 0:
        return 0
    return 2 * precision * recall / (precision + recall)


def target_text(op: str, value: str) -> str:
    """`format_input_multichoice`'s target when the gold is the first choice (`pos_ids[:1]`)."""
    out = "B.\n" + f"Action: {op}\n"
    if op != "CLICK":
        out += f"Value: {value}"
    return out


def score_reply(reply: str, choice_ids: list[str], pos_ids: list[str], op: str, value: str) -> tuple[float, ...]:
    """(element accuracy, action F1, step success) of one reply to one step."""
    if not pos_ids:
        return 0.0, 0.0, 0.0
    _, target_action = postprocess_action(target_text(op, value))
    element, action = postprocess_action_llm(reply)
    prediction = None
    if element[0] != "A":
        index = ord(element[0]) - ord("B")
        if index < len(choice_ids):  # the original's `choices[index]` raises IndexError past the end
            prediction = (choice_ids[index], action)
    if prediction is None:
        return 0.0, 0.0, 0.0
    element_acc = 1.0 if prediction[0] in pos_ids else 0.0
    f1 = float(calculate_f1(prediction[1], target_action))
    return element_acc, f1, 1.0 if (f1 == 1 and element_acc == 1) else 0.0
