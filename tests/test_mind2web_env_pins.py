"""Pins of what Mind2Web's metrics are given (`mind2web/benchmark.py`: the reply's letter and operation, the
candidate it picks, the top-k positives and label of each step, the task score over answered and unanswered
steps), written against the mutants of `make mutants PATHS=mind2web_env` (docs/quality.md).

MindAct's offline multiple-choice setting (OSU-NLP-Group/Mind2Web, src/action_prediction): the candidates of a
step are the ranker's top k, shown after "A. None of the above" as B, C, ...; the agent's letter picks one. The
data are a small fixture in the raw dataset schema written under tmp_path; no network.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from aecg_bench.benchmarks.mind2web import Mind2WebBenchmark, files
from aecg_bench.benchmarks.mind2web.benchmark import Mind2WebEnv, grammar, parse_answer
from aecg_bench.contracts import EnvContext
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.types import Action

PAGE = (
    '<html backend_node_id="1"><body backend_node_id="2">'
    '<button backend_node_id="10"><text backend_node_id="11">Search</text></button>'
    '<input backend_node_id="12" type="text" name="origin"/>'
    '<a backend_node_id="13" title="Home"><text backend_node_id="14">Home</text></a>'
    '<select backend_node_id="20" name="cabin"><option backend_node_id="21">Economy</option></select>'
    "</body></html>"
)


def _cand(node: str) -> dict[str, Any]:
    return {"tag": "button", "attributes": json.dumps({"backend_node_id": node}), "backend_node_id": node}


def _action(uid: str, op: str, value: str, pos: list[str], neg: list[str], html: str = PAGE) -> dict[str, Any]:
    return {
        "action_uid": uid,
        "raw_html": html,
        "cleaned_html": html,
        "operation": {"original_op": op, "value": value, "op": op},
        "pos_candidates": [_cand(n) for n in pos],
        "neg_candidates": [_cand(n) for n in neg],
    }


def _task(aid: str, *actions: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "annotation_id": aid,
        "website": "united",
        "domain": "Travel",
        "subdomain": "Airlines",
        "confirmed_task": f"task {aid}",
        "action_reprs": [f"repr {aid} {i}" for i in range(len(actions))],
        "actions": list(actions),
        **extra,
    }


def _data(root: Path, tasks: list[dict[str, Any]], ranks: dict[str, dict[str, int]]) -> Path:
    d = root / "mind2web"
    for split in ("train", "test_task", "test_website", "test_domain"):
        (d / split).mkdir(parents=True)
        (d / split / f"{split}_0.json").write_text(json.dumps(tasks), encoding="utf-8")
    scores = {"scores": {k: {n: -float(r) for n, r in v.items()} for k, v in ranks.items()}, "ranks": ranks}
    (d / files.SCORES).write_bytes(pickle.dumps(scores))
    files.write_manifest(d, files.REVISION)
    return d


def _bench(root: Path, tasks, ranks, **params: Any) -> Mind2WebBenchmark:
    return Mind2WebBenchmark({"download": False, **params}, data_dir=_data(root, tasks, ranks))


# three steps: TYPE on 12 (ranked 0), CLICK on 10 (ranked 2, the top-k edge at k=3), SELECT on 20 (ranked 3)
TASK = _task(
    "t1",
    _action("a1", "TYPE", "New York", ["12"], ["10", "13", "20"]),
    _action("a2", "CLICK", "ignored", ["10"], ["12", "13"]),
    _action("a3", "SELECT", "Economy", ["20"], ["10", "12", "13"]),
)
RANKS = {
    "t1_a1": {"12": 0, "10": 1, "13": 2, "20": 3},
    "t1_a2": {"12": 0, "13": 1, "10": 2},
    "t1_a3": {"10": 0, "12": 1, "13": 2, "20": 3},
}


@pytest.fixture
def sample(tmp_path: Path):
    (s,) = _bench(tmp_path, [TASK], RANKS, top_k=3).samples("test")
    return s


# --- the sample: positives in the top k, labels, the task -----------------------------------------------------


def test_positives_are_the_gold_candidates_ranked_below_k(sample):
    s1, s2, s3 = sample.gold["steps"]
    assert s1["pos"] == ["12"] and [c for c, _ in s1["choices"]] == ["10", "12", "13"]  # page order, top 3
    assert s2["pos"] == ["10"]  # rank 2 < k = 3
    assert s3["pos"] == [] and "20" not in [c for c, _ in s3["choices"]]  # rank 3 = k: out
    assert [s["label"] for s in sample.gold["steps"]] == ["TYPE New York", "CLICK", "SELECT Economy"]
    assert [(s["op"], s["value"]) for s in sample.gold["steps"]] == [
        ("TYPE", "New York"),
        ("CLICK", "ignored"),
        ("SELECT", "Economy"),
    ]
    assert s1["choices"][0] == ("10", "<button id=0>Search</button>")


def test_a_candidate_the_ranker_did_not_score_is_not_shown(tmp_path):
    ranks = {"t1_a1": {"10": 0}, "t1_a2": RANKS["t1_a2"], "t1_a3": RANKS["t1_a3"]}
    (s,) = _bench(tmp_path, [TASK], ranks, top_k=25).samples("test")
    step = s.gold["steps"][0]
    assert step["pos"] == [] and [c for c, _ in step["choices"]] == ["10"]


def test_the_task_carries_its_steps_and_the_answer_format(sample):
    t = sample.task
    assert t.id == "t1" and t.benchmark == "mind2web" and t.mode == "steps" and t.max_steps == 3
    assert t.instruction == "Complete the following task on a website, one action at a time.\nTask: task t1"
    assert t.task_type == "Travel" and t.metadata == {"website": "united", "domain": "Travel", "subdomain": "Airlines"}
    assert "'<letter> TYPE <text>'" in t.action_hint and 'letter ::= "B" | "C" | "D"' in t.action_grammar
    assert sample.gold["task"] == "task t1" and sample.gold["action_reprs"] == ["repr t1 0", "repr t1 1", "repr t1 2"]
    assert sample.split == "test"


def test_a_task_without_a_domain_has_an_empty_task_type(tmp_path):
    task = {k: v for k, v in TASK.items() if k not in ("domain", "website", "subdomain")}
    (s,) = _bench(tmp_path, [task], RANKS).samples("train")
    assert s.task.task_type == "" and s.task.metadata == {"website": "", "domain": "", "subdomain": ""}
    assert s.split == "train"


def test_a_step_without_ranks_or_with_broken_html_is_one_clear_error(tmp_path):
    with pytest.raises(DataError, match=r"has no ranks for step t1_a3; the score file and the tasks differ"):
        _bench(tmp_path / "a", [TASK], {k: v for k, v in RANKS.items() if k != "t1_a3"}).samples("test")
    broken = _task("t2", _action("b1", "CLICK", "", ["10"], [], html="<html backend_node_id='1'><"))
    with pytest.raises(DataError, match=r"Mind2Web step t2_b1: its cleaned_html does not parse"):
        _bench(tmp_path / "b", [broken], {"t2_b1": {"10": 0}}).samples("test")


# --- parsing the reply --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "parsed"),
    [
        ("B", ("B", " ")),
        ("A", ("A", " ")),
        ("C CLICK", ("C", "CLICK ")),
        ("C. TYPE New York\nbecause", ("C", "TYPE New York")),
        ("C TYPE: New York", ("C", "TYPE New York")),  # a colon after the operation is no value token
        ("Answer: (D) SELECT  Economy ", (None, " ")),  # MindAct reads no letter in parentheses
        ("answer:B CLICK", (None, " ")),
        ("  E) TYPE x", (None, " ")),
        ("C.\nAction: SELECT\nValue: Queen", ("C", "SELECT Queen")),
        ("I think so.\nAnswer: D.\nAction: TYPE\nValue: New York", ("D", "TYPE New York")),
        ("Answer: G.\nAction: CLICK", ("G", "CLICK ")),  # past F only standing alone
        ("Answer: Great choice", (None, " ")),
        ("Answer: Based on the page, C", ("B", " ")),  # MindAct's own reading
        ("C TYPE first\nValue: second", ("C", "TYPE first")),
        ("C TYPE one\ntwo\nthree", ("C", "TYPE one")),
        ("B\nValue: only a value", ("B", " only a value")),
        ("Boston CLICK", (None, " ")),
        ("b click", (None, " ")),
        ("I choose C CLICK", (None, " ")),  # a one-letter word is no answer
        ("Choose C", (None, " ")),
        ("", (None, " ")),
        ("CLICKS", (None, " ")),
    ],
)
def test_the_reply_gives_a_letter_and_an_operation(reply, parsed):
    assert parse_answer(reply) == parsed


# --- the environment: picking, scoring, advancing -----------------------------------------------------------


def _env(sample, previous_k: int = 5) -> Mind2WebEnv:
    return Mind2WebEnv(sample.gold, previous_k)


def _step(env: Mind2WebEnv, text: str):
    return env.step(Action(kind="command", text=text))


def test_the_letter_picks_the_candidate_in_the_order_shown(sample):
    env = _env(sample)
    obs = _step(env, "C TYPE New York")  # B = 10, C = 12 (gold), D = 13
    assert obs.reward == 1.0 and obs.valid and not obs.done and obs.info == {"step_success": 1.0}
    obs = _step(env, "B CLICK")  # B = 10 = gold of step 2
    assert obs.reward == 1.0 and obs.info == {"step_success": 1.0}
    obs = _step(env, "A")
    assert obs.done and obs.valid and obs.reward == 0.0 and obs.text == "The task is over."
    s = env.score()
    assert s.metrics["step_success"] == pytest.approx(2 / 3) and not s.success
    assert s.value == pytest.approx(2 / 3) and s.metrics["upper_bound_task"] == 0.0


def test_a_right_element_with_a_wrong_operation_is_not_a_success(sample):
    env = _env(sample)
    obs = _step(env, "C TYPE Boston")
    assert obs.reward == 0.0 and obs.info["step_success"] == 0.0
    assert env.scores[0].element == 1.0 and env.scores[0].f1 == pytest.approx(0.4)


def test_a_letter_past_the_candidates_is_invalid_and_scores_as_none(sample):
    env = _env(sample)
    obs = _step(env, "E TYPE New York")  # three candidates: B, C, D
    assert not obs.valid and obs.reward == 0.0
    assert env.scores[0].element == 0.0 and env.scores[0].f1 == 0.0 and env.scores[0].gold_in_top_k == 1.0
    last = _step(_env(sample), "D TYPE New York")  # the last candidate is still a candidate
    assert last.valid


def test_no_letter_is_invalid_and_none_of_the_above_is_valid(sample):
    env = _env(sample)
    assert not _step(env, "TYPE New York").valid
    assert env.scores[0] == env.scores[0].__class__(0.0, 0.0, 0.0, 1.0)
    assert _step(_env(sample), "A").valid


def test_steps_after_the_last_are_refused_and_not_scored(sample):
    env = _env(sample)
    for _ in range(3):
        _step(env, "A")
    obs = _step(env, "C TYPE New York")
    assert obs.done and obs.valid is False and obs.text == "The task is over."
    assert len(env.scores) == 3 and env.score().metrics["steps_answered"] == 3.0


def test_unanswered_steps_keep_their_recall_cap(sample):
    env = _env(sample)
    _step(env, "C TYPE New York")
    s = env.score()  # two steps never answered: step 2 was solvable, step 3 was not
    assert s.metrics["steps_answered"] == 1.0
    assert s.metrics["upper_bound_step"] == pytest.approx(2 / 3) and s.metrics["step_success"] == pytest.approx(1 / 3)
    assert s.metrics["element_acc"] == pytest.approx(1 / 3) and not s.success
    assert s.metrics["action_f1"] == pytest.approx(1 / 3)  # unanswered steps score F1 0


def test_a_task_with_every_step_right_is_a_success(tmp_path):
    one = _task("t3", _action("c1", "CLICK", "", ["10"], ["12"]), _action("c2", "TYPE", "x", ["12"], ["10"]))
    (s,) = _bench(tmp_path, [one], {"t3_c1": {"10": 0, "12": 1}, "t3_c2": {"10": 0, "12": 1}}).samples("test")
    env = _env(s)
    _step(env, "B CLICK")
    _step(env, "C TYPE x")
    done = env.score()
    assert done.success and done.value == 1.0 and done.metrics["task_success"] == 1.0
    assert done.metrics["steps_answered"] == 2.0


def test_reset_starts_the_task_over(sample):
    env = _env(sample)
    _step(env, "A")
    obs = env.reset()
    assert env.index == 0 and env.scores == [] and obs.text == _env(sample).reset().text


def test_the_prompt_is_mindacts_with_the_gold_previous_actions(sample):
    env = _env(sample, previous_k=1)
    first = env.reset().text
    assert first == "\n".join(
        [
            "Task: task t1",
            "Previous actions:",
            "None",
            "What should be the next action? Please select from the following choices "
            "(If the correct action is not in the page above, please select A. 'None of the above'):\n",
            "A. None of the above",
            "B. <button id=0>Search</button>",
            "C. " + sample.gold["steps"][0]["choices"][1][1],
            "D. " + sample.gold["steps"][0]["choices"][2][1],
        ]
    )
    _step(env, "A")
    third = _step(env, "A").text  # the gold history, whatever was answered; only the last previous_k
    assert "Previous actions:\nrepr t1 1\nWhat should" in third
    everything = _env(sample, previous_k=5)
    _step(everything, "A")
    assert "Previous actions:\nrepr t1 0\nrepr t1 1\nWhat should" in _step(everything, "A").text
    none = _env(sample, previous_k=0)
    _step(none, "A")
    assert "Previous actions:\nNone\nWhat should" in _step(none, "A").text


def test_make_env_uses_the_benchmarks_previous_k(tmp_path):
    b = _bench(tmp_path, [TASK], RANKS, previous_k=0, top_k=3)
    (s,) = b.samples("test")
    env = b.make_env(s, EnvContext(llm=None, seed=0))
    env.reset()
    _step(env, "A")
    assert "Previous actions:\nNone\n" in _step(env, "A").text


def test_candidates_are_described_by_the_first_tokens_as_html_or_as_brackets(tmp_path):
    (short,) = _bench(tmp_path / "a", [TASK], RANKS, top_k=3, description_tokens=1).samples("test")
    assert [d for _, d in short.gold["steps"][0]["choices"]] == ["<button", "<input", "<a"]
    (plain,) = _bench(tmp_path / "b", [TASK], RANKS, top_k=3, keep_html_brackets=False).samples("test")
    assert plain.gold["steps"][0]["choices"][0] == ("10", "(button id=0Search)")  # MindAct get_tree_repr


def test_an_env_shows_the_last_five_gold_actions_by_default():
    steps = [{"pos": ["1"], "choices": [("1", "x")], "label": "CLICK"} for _ in range(7)]
    gold = {"task": "t", "action_reprs": [f"act{i}" for i in range(7)], "steps": steps}
    env = Mind2WebEnv(gold)
    for _ in range(6):
        obs = env.step(Action(kind="command", text="B CLICK"))
    assert "Previous actions:\nact1\nact2\nact3\nact4\nact5\nWhat should" in obs.text


def test_the_answer_grammar_offers_none_of_the_above_and_one_letter_per_candidate():
    assert grammar(3) == "\n".join(
        [
            'root ::= "A" | letter " CLICK" | letter " TYPE " value | letter " SELECT " value',
            'letter ::= "B" | "C" | "D"',
            r"value ::= [^\n]+",
        ]
    )
    assert 'letter ::= "B"\n' in grammar(0)


def test_offset_and_size_pick_tasks_and_the_split_picks_the_file(tmp_path):
    tasks = [_task(f"t{i}", _action("a", "CLICK", "", ["10"], ["12"])) for i in range(4)]
    ranks = {f"t{i}_a": {"10": 0, "12": 1} for i in range(4)}
    d = _data(tmp_path, tasks, ranks)
    ids = lambda **p: [s.id for s in Mind2WebBenchmark({"download": False, **p}, data_dir=d).samples("test")]  # noqa: E731
    assert ids() == ["t0", "t1", "t2", "t3"]
    default = Mind2WebBenchmark({"download": False, "offset": 3}, data_dir=d).samples()  # the test split
    assert [s.id for s in default] == ["t3"] and default[0].split == "test"
    assert ids(offset=1) == ["t1", "t2", "t3"] and ids(offset=1, size=2) == ["t1", "t2"] and ids(size=1) == ["t0"]
    (tmp_path / "mind2web" / "test_website" / "test_website_0.json").write_text(json.dumps(tasks[2:]), encoding="utf-8")
    files.write_manifest(d, files.REVISION)
    assert ids(split="test_website") == ["t2", "t3"] and ids(split="test_domain") == ids()
    train = Mind2WebBenchmark({"download": False, "split": "test_website"}, data_dir=d).samples("train")
    assert [s.id for s in train] == ["t0", "t1", "t2", "t3"] and {s.split for s in train} == {"train"}
    with pytest.raises(ConfigError, match=r"^benchmark 'mind2web' has no split 'dev'; valid splits: train, test"):
        Mind2WebBenchmark({"download": False}, data_dir=d).samples("dev")
