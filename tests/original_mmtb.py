"""MMTB's evaluator, re-implemented for the agreement test from reading github.com/yupeijei1997/MMTB at
commit c0e83907fcd9534101777e2d980b1550a9fb98bb (`mmtb/bench_test/`):

- `tool_call_graph.py`: `ToolCallGraph` (`dfs`, `split_path`, `init_step_to_answer`,
  `update_updating_all_path_list`) and `eval_by_tool_call_graph` (the walk a model's replies take);
- `analysis_result.py`: `check_single_arguments`, `check_arguments`, `check_every_function_arguments`,
  `analysis_answer_type`, `calculate_predict_result_steps` and the per-mission part of `main2`
  (`parameters_eval`: an exception in the check makes both labels "error");
- `utils/tools.py`: `functions_uniform`, `properties_filter` (what the API handles send, and the in-place
  `a|b` edit the check then reads).

A reply is what an OpenAI-style API returns: `(content, tool_calls)` with each call
`{"id", "type": "function", "function": {"name", "arguments": <raw JSON text>}}`. ROUGE-L is passed in
(the default tier uses the suite's stand-in for rouge-score on jieba tokens). Not the project's code.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from itertools import combinations
from typing import Any

Reply = tuple[str | None, list[dict[str, Any]] | None]


# --- utils/tools.py ------------------------------------------------------------------------------------


def properties_filter(d: Any) -> Any:
    if type(d) is not dict:
        return None
    r: dict[str, Any] = {}
    for k in d:
        if k not in ["parameters", "properties", "description", "type", "example_value", "enum", "items"]:
            continue
        if k == "properties":
            r["properties"] = {p: properties_filter(d[k][p]) for p in d[k]}
        elif k == "items":
            r[k] = properties_filter(d[k])
        elif k == "type":
            if "|" in d[k]:
                d[k] = d[k].split("|")[0]  # the original edits the entry's tool list in place
            if d[k] == "float":
                t = "number"
            elif d[k] in ["list of dictionaries"]:
                t = "object"
            elif d[k] in ["int"]:
                t = "integer"
            elif d[k] in ["complex_string", "String", "UUID"]:
                t = "string"
            elif "enum" in d[k]:
                try:
                    r["enum"] = json.loads(d[k].replace("enum", ""))
                    assert type(r["enum"][0]) is str
                    t = "string"
                except Exception:
                    t = "string"
            elif type(d[k]) is dict:
                t = "object"
            else:
                t = d[k]
            assert t in ["string", "integer", "boolean", "array", "object", "number", "enum"], f"Wrong: {t}"
            r[k] = t
        else:
            r[k] = d[k]
    return r


def functions_uniform(f: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in f:
        if key == "parameters":
            out[key] = {"type": "object", "properties": {}} if "properties" not in f[key] else functions_uniform(f[key])
        elif key == "properties":
            out[key] = {p: properties_filter(f[key][p]) for p in f[key]}
        elif key == "function":
            out[key] = functions_uniform(f[key])
        else:
            out[key] = f[key]
    return out


# --- tool_call_graph.py --------------------------------------------------------------------------------


class Graph:
    def __init__(self, answer_list: list[dict[str, Any]]) -> None:
        self.nodes = answer_list
        self.paths: list[list[list[int]]] = []
        self.names = [a["action"]["name"] for a in answer_list]
        self.graph: dict[int, list[int]] = {i: [] for i in range(len(answer_list))}
        self.in_degree = {i: 0 for i in range(len(answer_list))}
        for idx, a in enumerate(answer_list):
            for d in a["dependency_list"]:
                self.graph[d].append(idx)
                self.in_degree[idx] += 1
        self.dfs(self.in_degree, [False] * len(answer_list), [])
        self.min_length = min(len(p) for p in self.paths)
        self.remaining = copy.deepcopy(self.paths)
        self.index()

    def dfs(self, in_degree: dict[int, int], visited: list[bool], path: list[list[int]]) -> None:
        if sum(len(p) for p in path) == len(self.nodes):
            self.paths.append(copy.deepcopy(path))
            return
        zero = [n for n in in_degree if in_degree[n] == 0 and not visited[n]]
        runs, current, last = [], [], ""
        for i, n in enumerate(zero):
            if i == 0 or self.names[n] == last:
                current.append(n)
            else:
                runs.append(current)
                current = [n]
            last = self.names[n]
        if current:
            runs.append(current)
        need_filter, no_filter = [], []
        for run in runs:
            if len(run) > 1:
                for r in range(1, len(run)):
                    need_filter.extend(combinations(run, r))
                no_filter.append(tuple(run))
        every = [c for r in range(1, len(zero) + 1) for c in combinations(zero, r)]
        seen, unique = set(), []
        for comb in every:
            key = "|".join(self.names[c] for c in comb)
            if key not in seen:
                seen.add(key)
                unique.append(comb)
        final = []
        for comb in unique:
            drop = False
            if len(comb) > 1:
                if comb in need_filter:
                    drop = True
                subs = [comb[: i + 1] for i in range(len(comb))]
                if any(s in need_filter for s in subs):
                    drop = True
                if any(s in no_filter for s in subs):
                    drop = False
                if drop:
                    continue
            final.append(comb)
        for comb in final:
            extend = False
            if len(comb) == 1:
                for nf in no_filter:
                    if comb[0] == nf[0]:
                        comb, extend = nf, True
                        break
            visited2, in_degree2, path2 = list(visited), dict(in_degree), copy.deepcopy(path)
            for c in comb:
                visited2[c] = True
                for nb in self.graph[c]:
                    in_degree2[nb] -= 1
            if extend:
                path2 += [[c] for c in comb]
            else:
                path2.append(list(comb))
            self.dfs(in_degree2, visited2, path2)

    def index(self) -> None:
        """`init_step_to_answer`: per step, each remaining path's nodes, names, observations, user inputs."""
        n = len(self.nodes)
        self.step_idx: dict[int, list] = {i: [] for i in range(n)}
        self.step_names: dict[int, list] = {i: [] for i in range(n)}
        self.step_obs: dict[int, list] = {i: [] for i in range(n)}
        self.step_user: dict[int, list] = {i: [] for i in range(n)}
        for path in self.remaining:
            for step, idx_list in enumerate(path):
                self.step_idx[step].append(idx_list)
                names = [self.names[i] for i in idx_list]
                order = [i for i, _ in sorted(enumerate(names), key=lambda x: x[1])]
                self.step_names[step].append([names[i] for i in order])
                self.step_obs[step].append([self.nodes[idx_list[i]]["observation"] for i in order])
                self.step_user[step].append([self.nodes[idx_list[i]].get("user_input") for i in order])

    def prune(self, step: int, idx_list: list[int]) -> None:
        self.remaining = [p for p in self.remaining if p[step] == idx_list]


def eval_by_tool_call_graph(answer_list: list[dict[str, Any]], replies: list[Reply]) -> tuple[str, bool, list]:
    """(label, is_optimal, predict_result): the walk of scripted replies; returns the observations it fed
    back too, in `observations` of each predict_result entry (for comparing what the agent is shown)."""
    graph = Graph(answer_list)
    step, label, predict_result = 0, "error", []
    replies = list(replies)
    while True:
        content, tool_calls = replies.pop(0) if replies else (None, None)
        predict_result.append({"step": step, "content": content, "tool_calls": tool_calls, "observations": []})
        if not tool_calls:
            if not content:
                label = "error"
                break
            for i, names in enumerate(graph.step_names[step]):
                if "ask_user_for_required_parameters" in names:
                    assert len(graph.step_user[step][i]) == 1
                    predict_result[-1]["observations"] = [graph.step_user[step][i][0]]
                    break
                if "prepare_to_answer" in names:
                    label = "correct"
                    break
            else:
                label = "error"
                break
        else:
            ids = [c["id"] for c in tool_calls]
            names = [c["function"]["name"] for c in tool_calls]
            order = [i for i, _ in sorted(enumerate(names), key=lambda x: x[1])]
            names = [names[i] for i in order]
            if not graph.step_idx.get(step):
                label = "error"
                break
            for i, answer_names in enumerate(graph.step_names[step]):
                if names != answer_names:
                    continue
                observations = graph.step_obs[step][i]
                shown = [o if isinstance(o, str) else json.dumps(o, ensure_ascii=False) for o in observations]
                predict_result[-1]["observations"] = list(zip(ids, shown, strict=False))
                graph.prune(step, graph.step_idx[step][i])
                graph.index()
                break
            else:
                label = "error"
                break
        if label == "correct":
            break
        step += 1
    return label, label == "correct" and step == graph.min_length - 1, predict_result


# --- analysis_result.py --------------------------------------------------------------------------------


def check_single_arguments(p1: Any, p2: Any, types: Any, rouge: Callable[[str, str], float]) -> float:
    p1 = float(p1) if type(p1) is int else p1
    p2 = float(p2) if type(p2) is int else p2
    if type(p1) is not type(p2):
        return 0
    if p1 == p2:
        return 1
    if type(p1) is str and (p1.lower() == p2.lower() or "".join(p1.split()).lower() == "".join(p2.split()).lower()):
        return 1
    if type(p1) is dict:
        if "items" in types:
            item_type = types.get("items", {"type": "string"})
        elif "properties" in types:
            item_type = types.get("properties", {"type": "string"})
        else:
            item_type = types
        if "properties" in item_type:
            item_type = item_type["properties"]
        assert type(item_type) is dict
        scores = []
        for key in p1:
            if key not in item_type:
                return 0
            if key not in p2:
                description = item_type[key].get("description", "")
                if str(p1[key]).lower() in description.lower() or (
                    str(p1[key]).lower() == "none" and "null" in description.lower()
                ):
                    scores.append(1)
                else:
                    scores.append(0)
            else:
                scores.append(check_single_arguments(p1[key], p2[key], item_type[key], rouge))
        if not scores:
            return 1 if len(p2) == 0 else 0
        return sum(scores) / len(scores)
    if types["type"] in ["integer", "boolean", "float", "number"]:
        return 0
    if types["type"] in ["string"]:
        if re.match(r"^\d+\.\d+,\d+\.\d+$", p1) and re.match(r"^\d+\.\d+,\d+\.\d+$", p2):
            return 1
        return rouge(p1, p2)
    if types["type"] in ["array"]:
        if type(p1) is list:
            s1 = sorted(p1, key=lambda x: json.dumps(x, sort_keys=True))
            s2 = sorted(p2, key=lambda x: json.dumps(x, sort_keys=True))
        else:
            s1, s2 = sorted(p1.values()), sorted(p2.values())
        if len(s1) != len(s2):
            return 0
        item_type = types.get("items", {"type": "string"})
        if "properties" in item_type:
            item_type = item_type["properties"]
        scores = [check_single_arguments(a, b, item_type, rouge) for a, b in zip(s1, s2, strict=False)]
        return sum(scores) / len(scores)
    raise AssertionError(f"Unknown type: {types}")


def check_arguments(predict: dict[str, Any], answer: dict[str, Any], tool: dict[str, Any], rouge) -> float:
    assert "arguments" in predict
    if type(predict["arguments"]) is str:
        predict["arguments"] = json.loads(predict["arguments"])  # the original raises here (a TypeError)
    params = tool["function"]["parameters"]
    for p in params.get("required", []):
        if p not in predict["arguments"]:
            return 0
    if len(predict["arguments"]) == 0 and len(answer["arguments"]) == 0:
        return 1
    scores = []
    props = params["properties"]
    for name in predict["arguments"]:
        if name not in props:
            scores.append(0)
            continue
        value = predict["arguments"][name]
        if name in answer["arguments"]:
            scores.append(check_single_arguments(value, answer["arguments"][name], props[name], rouge))
        else:
            description = props[name].get("description", "")
            if str(value).lower() in description.lower() or (
                str(value).lower() == "none" and "null" in description.lower()
            ):
                scores.append(1)
            else:
                scores.append(0)
    return sum(scores) / len(scores)


def check_every_function_arguments(answer_list, predict_result, tools, rouge) -> tuple[bool, dict[str, Any]]:
    tools_by_name = {t["function"]["name"]: t for t in tools}
    answers: dict[str, list] = {}
    for a in answer_list:
        if a["action"]["name"] in ["prepare_to_answer", "ask_user_for_required_parameters"]:
            continue
        answers.setdefault(a["action"]["name"], []).append(a)
    predicts: dict[str, list] = {}
    for step in predict_result:
        if step.get("tool_calls", None) is None:
            continue
        for call in step["tool_calls"]:
            predicts.setdefault(call["function"]["name"], []).append({"action": copy.deepcopy(call["function"])})
    assert len(predicts) == len(answers)
    bad: dict[str, Any] = {"items": [], "tool": []}
    scores: dict[str, list[float]] = {}
    for name in list(predicts):
        assert len(predicts[name]) == len(answers[name])
        paired: list[int] = []
        scores[name] = []
        for predict in predicts[name]:
            best, best_id = -1, -1
            for i, answer in enumerate(answers[name]):
                if i in paired:
                    continue
                s = check_arguments(predict["action"], answer["action"], tools_by_name[name], rouge)
                if s > best:
                    best, best_id = s, i
            if best < 0.7:
                bad["items"].append({"predict": predict["action"]})
            scores[name].append(best)
            paired.append(best_id)
    ok = all(s >= 0.7 for ss in scores.values() for s in ss)
    return ok, bad


def analysis_answer_type(answer_list: list[dict[str, Any]]) -> str | None:
    steps, now = [], []
    for item in answer_list:
        if item["action"]["name"] in ["ask_user_for_required_parameters", "prepare_to_answer"]:
            continue
        if any(d in now for d in item["dependency_list"]):
            steps.append(now.copy())
            now = [item["idx"]]
        else:
            now.append(item["idx"])
    if now:
        steps.append(now)
    serial, combine = len(steps) > 1, any(len(s) > 1 for s in steps)
    if serial and combine:
        return "cs"
    return "serial" if serial else "combine" if combine else None


def calculate_predict_result_steps(label: str, predict_results: list, answer_list: list, bad: dict) -> int:
    if label == "correct":
        return len(answer_list)
    steps = 0
    for r in predict_results[:-1]:
        steps += len(r["tool_calls"]) if r.get("tool_calls") else 1
    if len(bad.get("items", [])) != 0:
        last = predict_results[-1]
        steps += len(last["tool_calls"]) if last.get("tool_calls") else 1
    return steps


def mission(answer_list, tools, replies: list[Reply], rouge) -> dict[str, Any]:
    """One mission as `request_pipeline.main` then `analysis_result.main2` (parameters_eval) label it.
    `tools` are the entry's raw tools: sent through `functions_uniform` (which edits `a|b` types in place)."""
    tools = copy.deepcopy(tools)
    sent = [functions_uniform(t) for t in tools]
    label, optimal, predicted = eval_by_tool_call_graph(answer_list, replies)
    param_label, bad = label, {}
    if label == "correct":
        try:
            ok, bad = check_every_function_arguments(answer_list, predicted, tools, rouge)
            if not ok:
                param_label = "error"
        except Exception:  # main2: any exception in the check is an error of both labels
            label = param_label = "error"
    return {
        "predict_label": label,
        "param_predict_label": param_label,
        "predict_is_optimal": optimal,
        "complete_rate": calculate_predict_result_steps(param_label, predicted, answer_list, bad),
        "kind": analysis_answer_type(answer_list),
        "answer_list": answer_list,
        "sent": sent,
        "predicted": predicted,
    }


def summary(missions: list[dict[str, Any]], codes: list[str]) -> dict[str, float | None]:
    """`main2`'s rates: the type columns of `draw_matrix_by_type_and_index` over the `params` matrix
    (`weight_matrix_auto` with param_predict_label; None where the original's lookup has no entry and
    raises), and the multi-tool rates with their `+ 1e-5` denominators."""
    eps = 1e-5
    ok = [m["param_predict_label"] == "correct" for m in missions]
    out: dict[str, float | None] = {"all": sum(ok) / len(ok)}
    for code, key in (("单", "single"), ("多", "multi"), ("拒", "chat"), ("反", "clarify")):
        chosen = [o for o, c in zip(ok, codes, strict=True) if c == code]
        out[key] = sum(chosen) / len(chosen) if chosen else None
    for kind, key in (("combine", "parallel"), ("serial", "serial"), ("cs", "serial_parallel")):
        chosen = [o for o, m in zip(ok, missions, strict=True) if m["kind"] == kind]
        out[key] = sum(chosen) / (len(chosen) + eps)
    opt = [(o, m) for o, m in zip(ok, missions, strict=True) if m["kind"] in ("combine", "cs")]
    out["optimal_path"] = sum(o and m["predict_is_optimal"] for o, m in opt) / (len(opt) + eps)
    prog = [m for m in missions if m["kind"] in ("serial", "cs")]
    total = sum(len(m["answer_list"]) for m in prog)
    out["accomplished_progress"] = sum(m["complete_rate"] for m in prog) / (total + eps)
    return out
