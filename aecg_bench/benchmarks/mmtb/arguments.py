"""MMTB's argument check (`bench_test/analysis_result.py`: `check_single_arguments`,
`check_arguments`, `check_every_function_arguments`), our own code with the same rules.

A mission whose tool names followed a golden path is then checked argument by
argument: each predicted call is paired greedily with the best-scoring unpaired
golden call of the same name, and the mission keeps its success only if every
pair scores at least 0.7. A call's score is the mean over its predicted
arguments: exact (case- and whitespace-insensitive for strings) values score 1;
numbers and booleans that differ score 0; other strings score their ROUGE-L F1
(rouge-score, on jieba tokens, as the original); arrays and objects score the
mean of their elements; an argument not in the tool's schema scores 0, one not
in the golden call scores 1 only if its value appears in the parameter's
description. Where the original raises (unparseable arguments, a predicted call
with no arguments where the golden one has some, a tool without `parameters` or
`properties`, unequal call counts), `ArgumentCheckError` says so: the mission is then wrong.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from aecg_bench.types import UNPARSED_ARGUMENTS

THRESHOLD = 0.7  # analysis_result.py: a pair scoring below 0.7 fails the mission
SKIP = ("prepare_to_answer", "ask_user_for_required_parameters")
_COORDS = re.compile(r"^\d+\.\d+,\d+\.\d+$")


class ArgumentCheckError(Exception):
    """The original evaluator raises here; the mission counts as an error."""


class _JiebaTokenizer:
    def tokenize(self, text: str) -> list[str]:
        import jieba

        return list(jieba.cut(text))


@lru_cache(maxsize=1)
def _scorer() -> Any:
    import jieba
    from rouge_score import rouge_scorer

    jieba.setLogLevel(60)  # its dictionary-loading chatter is not ours to print
    return rouge_scorer.RougeScorer(["rougeL"], tokenizer=_JiebaTokenizer())


def rouge_l(pred: str, gold: str) -> float:
    return float(_scorer().score(pred, gold)["rougeL"].fmeasure)


def _described(value: Any, schema: dict[str, Any]) -> float:
    description = str(schema.get("description", "")).lower()
    if str(value).lower() in description:
        return 1.0
    return 1.0 if str(value).lower() == "none" and "null" in description else 0.0


def value_score(pred: Any, gold: Any, schema: dict[str, Any]) -> float:
    """`check_single_arguments`: how well one predicted value matches the golden one."""
    pred = float(pred) if type(pred) is int else pred
    gold = float(gold) if type(gold) is int else gold
    if type(pred) is not type(gold):
        return 0.0
    if pred == gold:
        return 1.0
    if isinstance(pred, str) and (
        pred.lower() == gold.lower() or "".join(pred.split()).lower() == "".join(gold.split()).lower()
    ):
        return 1.0
    if isinstance(pred, dict):
        item_type = (
            schema.get("items") if "items" in schema else schema.get("properties") if "properties" in schema else schema
        )
        if isinstance(item_type, dict) and "properties" in item_type:
            item_type = item_type["properties"]
        if not isinstance(item_type, dict):
            raise ArgumentCheckError(f"object schema {schema!r} has no properties")
        scores = []
        for key in pred:
            if key not in item_type:
                return 0.0
            scores.append(
                _described(pred[key], item_type[key])
                if key not in gold
                else value_score(pred[key], gold[key], item_type[key])
            )
        if not scores:
            return 1.0 if not gold else 0.0
        return sum(scores) / len(scores)
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind is None:
        raise ArgumentCheckError(f"schema {schema!r} has no type")
    if kind in ("integer", "boolean", "float", "number"):
        return 0.0
    if kind == "string":
        if not isinstance(pred, str):
            raise ArgumentCheckError(f"{pred!r} is not a string")
        if _COORDS.match(pred) and _COORDS.match(gold):
            return 1.0
        return rouge_l(pred, gold)
    if kind == "array":
        if not isinstance(pred, list):
            raise ArgumentCheckError(f"{pred!r} is not an array")
        a = sorted(pred, key=lambda x: json.dumps(x, sort_keys=True))
        b = sorted(gold, key=lambda x: json.dumps(x, sort_keys=True))
        if len(a) != len(b):
            return 0.0
        items = schema.get("items", {"type": "string"})
        if "properties" in items:
            items = items["properties"]
        scores = [value_score(x, y, items) for x, y in zip(a, b, strict=True)]
        return sum(scores) / len(scores)
    raise ArgumentCheckError(f"unknown parameter type {kind!r}")


def call_score(pred_args: Any, gold_args: dict[str, Any], tool: dict[str, Any]) -> float:
    """`check_arguments`: the mean score of a predicted call's arguments against one golden call."""
    if isinstance(pred_args, dict) and set(pred_args) == {UNPARSED_ARGUMENTS}:
        pred_args = pred_args[UNPARSED_ARGUMENTS]  # the model's raw text: the original json.loads it
    if isinstance(pred_args, str):
        try:
            pred_args = json.loads(pred_args)
        except json.JSONDecodeError as exc:
            raise ArgumentCheckError(f"arguments are not JSON: {pred_args[:80]!r}") from exc
    if not isinstance(pred_args, dict):
        raise ArgumentCheckError(f"arguments are not an object: {pred_args!r}")
    params = tool["function"].get("parameters")
    if not isinstance(params, dict):
        raise ArgumentCheckError(f"tool {tool['function']['name']} has no parameters")
    if any(p not in pred_args for p in params.get("required", [])):
        return 0.0
    if not pred_args and not gold_args:
        return 1.0
    if "properties" not in params:
        raise ArgumentCheckError(f"tool {tool['function']['name']} has no properties")
    props = params["properties"]
    scores = []
    for name, value in pred_args.items():
        if name not in props:
            scores.append(0.0)
        elif name in gold_args:
            scores.append(value_score(value, gold_args[name], props[name]))
        else:
            scores.append(_described(value, props[name]))
    if not scores:
        raise ArgumentCheckError("no predicted arguments against a golden call with arguments")
    return sum(scores) / len(scores)


def _checked_score(pred_args: Any, gold_args: Any, tool: dict[str, Any]) -> float:
    """`call_score`, with the failures a malformed schema or golden call causes (a property schema that is
    no object, golden arguments that are no object, ...) made an `ArgumentCheckError`: the original's
    `main2` catches every exception of the check and labels the mission an error."""
    try:
        return call_score(pred_args, gold_args, tool)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError, ZeroDivisionError) as exc:
        raise ArgumentCheckError(f"the check cannot read this call ({type(exc).__name__}: {exc})") from exc


def mission_arguments_ok(
    answer_list: list[dict[str, Any]], calls: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> bool:
    """`check_every_function_arguments(type_='flag')`: every predicted call pairs with a golden one at >= 0.7.

    `calls` are the mission's predicted calls in order, each {"name", "arguments"}."""
    by_tool = {t["function"]["name"]: t for t in tools}
    gold: dict[str, list[dict[str, Any]]] = {}
    for node in answer_list:
        if node["action"]["name"] not in SKIP:
            gold.setdefault(node["action"]["name"], []).append(node["action"])
    pred: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        pred.setdefault(call["name"], []).append(call)
    if len(pred) != len(gold):
        raise ArgumentCheckError("predicted and golden calls name different numbers of tools")
    ok = True
    for name, predicted in pred.items():
        if name not in gold or len(predicted) != len(gold[name]) or name not in by_tool:
            raise ArgumentCheckError(f"calls of {name} do not pair with the golden ones")
        paired: list[int] = []
        for call in predicted:
            best, best_id = -1.0, -1
            for i, answer in enumerate(gold[name]):
                if i in paired:
                    continue
                s = _checked_score(call.get("arguments", {}), answer.get("arguments", {}), by_tool[name])
                if s > best:
                    best, best_id = s, i
            ok = ok and best >= THRESHOLD
            paired.append(best_id)
    return ok
