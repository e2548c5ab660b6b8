"""Mind2Web: MindAct's metrics on hand-computed cases, candidate rendering, the loader's
checks and refusals, and the step-wise environment, on fixtures in the raw dataset schema."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.benchmarks.mind2web import Mind2WebBenchmark, dom, files
from aecg_bench.benchmarks.mind2web.benchmark import parse_answer
from aecg_bench.benchmarks.mind2web.metrics import (
    StepScore,
    operation_f1,
    score_step,
    split_metrics,
    target_operation,
    task_metrics,
)
from aecg_bench.contracts import EnvContext
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.llm.mock import register_mock_policy, route_reply
from aecg_bench.run import run_from_config
from aecg_bench.runner.records import RunDir
from aecg_bench.types import Action

PAGE = (
    '<html backend_node_id="1"><body backend_node_id="2"><div backend_node_id="3">'
    '<button backend_node_id="10" aria_label="Search flights" class="btn-primary"><text backend_node_id="11">Search'
    '</text></button><input backend_node_id="12" type="text" placeholder="From" name="origin"/>'
    '<a backend_node_id="13" title="Home page" href="https://x.com"><text backend_node_id="14">Home</text></a></div>'
    '<span backend_node_id="15"><text backend_node_id="16">Footer</text></span><select backend_node_id="20" '
    'name="cabin"><option backend_node_id="21">Economy</option></select></body></html>'
)


def cand(node: str) -> dict:
    """A candidate as the hub's JSON files carry it (attributes are a serialised JSON dict)."""
    return {
        "tag": "button",
        "attributes": json.dumps({"backend_node_id": node}),
        "is_original_target": True,
        "is_top_level_target": True,
        "backend_node_id": node,
    }


def action(uid: str, op: str, value: str, pos: list[str], neg: list[str]) -> dict:
    return {
        "action_uid": uid,
        "raw_html": PAGE,
        "cleaned_html": PAGE,
        "operation": {"original_op": op, "value": value, "op": op},
        "pos_candidates": [cand(n) for n in pos],
        "neg_candidates": [cand(n) for n in neg],
    }


TASKS = [
    {
        "annotation_id": "t1",
        "website": "united",
        "domain": "Travel",
        "subdomain": "Airlines",
        "confirmed_task": "Search flights from New York",
        "action_reprs": ["[textbox]  From -> TYPE: New York", "[button]  Search -> CLICK"],
        "actions": [
            action("a1", "TYPE", "New York", ["12"], ["10", "13", "20"]),
            action("a2", "CLICK", "", ["10"], ["12", "13", "20"]),
        ],
    },
    {
        "annotation_id": "t2",
        "website": "united",
        "domain": "Travel",
        "subdomain": "Airlines",
        "confirmed_task": "Choose economy",
        "action_reprs": ["[combobox]  Cabin -> SELECT: Economy"],
        "actions": [action("b1", "SELECT", "Economy", ["20"], ["10", "12"])],
    },
]
# the ranker's ranks: t2's gold element (20) is ranked 12th, outside the top 10
RANKS = {
    "t1_a1": {"12": 0, "10": 1, "13": 2, "20": 3},
    "t1_a2": {"10": 0, "12": 1, "13": 2, "20": 3},
    "t2_b1": {"10": 0, "12": 1, "20": 12},
}


def make_data(root: Path) -> Path:
    """A Mind2Web data directory in the on-disk layout the loader expects, with its manifest."""
    d = root / "mind2web"
    for split, tasks in (
        ("train", TASKS[:1]),
        ("test_task", TASKS),
        ("test_website", TASKS[1:]),
        ("test_domain", TASKS),
    ):
        (d / split).mkdir(parents=True)
        (d / split / f"{split}_0.json").write_text(json.dumps(tasks), encoding="utf-8")
    scores = {"scores": {k: {n: -float(r) for n, r in v.items()} for k, v in RANKS.items()}, "ranks": RANKS}
    (d / files.SCORES).write_bytes(pickle.dumps(scores))
    files.write_manifest(d, files.REVISION)
    return d


@pytest.fixture
def bench(tmp_path: Path) -> Mind2WebBenchmark:
    return Mind2WebBenchmark({"download": False}, data_dir=make_data(tmp_path))


def run_task(bench: Mind2WebBenchmark, sample, replies: list[str]):
    env = bench.make_env(sample, EnvContext(llm=None, seed=0))
    obs = env.reset()
    for r in replies:
        obs = env.step(Action(kind="command", text=r))
    return env, obs


# --- metrics, hand-computed -------------------------------------------------------------------


def test_operation_f1_is_mindact_token_set_f1():
    assert operation_f1("TYPE New York", "TYPE New York") == 1.0
    assert operation_f1("TYPE new york", "TYPE New York") == pytest.approx(1 / 3)  # case matters
    assert operation_f1("CLICK", "TYPE New York") == 0.0
    assert operation_f1("TYPE York New York", "TYPE New York") == 1.0  # sets, not bags
    assert operation_f1("TYPE New", "TYPE New York") == pytest.approx(2 * 1 * (2 / 3) / (1 + 2 / 3))
    assert operation_f1(" ", "") == 1.0
    assert target_operation("CLICK", "ignored") == "CLICK" and target_operation("SELECT", "Queen") == "SELECT Queen"
    # MindAct's target text read back by postprocess_action: the value's first line; an unknown op reads as none
    assert target_operation("TYPE", " New York \nNY 10001\nUSA") == "TYPE New York"
    assert target_operation("HOVER", "menu\nmore") == "menu" and target_operation("TYPE", "") == "TYPE"


def test_step_and_task_scores_follow_mindact():
    # the gold element out of the top k: every metric 0, whatever was answered
    assert score_step("20", "SELECT Economy", [], "SELECT Economy") == StepScore(0, 0, 0, 0)
    # None of the above: 0, but the step was solvable
    assert score_step(None, "", ["12"], "TYPE New York") == StepScore(0, 0, 0, 1)
    # wrong element, right operation: F1 still counts (MindAct does not zero it)
    assert score_step("10", "TYPE New York", ["12"], "TYPE New York") == StepScore(0, 1, 0, 1)
    m = task_metrics([StepScore(1, 1 / 3, 0, 1), StepScore(1, 1, 1, 1)])
    assert m == {
        "element_acc": 1.0,
        "action_f1": pytest.approx(2 / 3),
        "step_success": 0.5,
        "task_success": 0.0,
        "upper_bound_step": 1.0,
        "upper_bound_task": 1.0,
    }
    assert split_metrics([{"a": 1.0}, {"a": 0.0}, {"a": 0.5}]) == {"a": 0.5}


# --- candidates -------------------------------------------------------------------------------


def test_candidates_render_like_mindact_in_page_order():
    got = dom.describe_candidates(PAGE, ["13", "12", "10"], n_tokens=20, keep_html_brackets=True)
    assert got == [
        ("10", "<button id=0 search flights btn-primary>Search</button>"),
        ("12", "<input id=1 text origin from />"),
        ("13", "<a id=2 home page>Home</a>"),  # the http href is dropped
    ]
    short = dom.describe_candidates(PAGE, ["10"], n_tokens=3, keep_html_brackets=False)
    assert short == [("10", "(button id=0 search")]
    words = " ".join(f"w{i}" for i in range(30))
    (long,) = dom.describe_candidates(f'<html><p backend_node_id="5"><text>{words}</text></p></html>', ["5"])
    assert long[1] == "<p id=0>" + " ".join(f"w{i}" for i in range(19))  # EDV's 20 tokens by default


def test_samples_keep_the_top_k_and_describe_them(bench):
    t1, t2 = bench.samples("test")
    step = t1.gold["steps"][0]
    assert [c[0] for c in step["choices"]] == ["10", "12", "13", "20"] and step["pos"] == ["12"]
    assert step["label"] == "TYPE New York" and t1.gold["steps"][1]["label"] == "CLICK"
    assert t2.gold["steps"][0]["pos"] == []  # rank 12 >= k
    assert t1.task.max_steps == 2 and t1.task.metadata["website"] == "united"
    small = Mind2WebBenchmark({"download": False, "top_k": 2}, data_dir=bench.data_dir).samples("test")[0]
    assert [c[0] for c in small.gold["steps"][0]["choices"]] == ["10", "12"]


# --- episodes ---------------------------------------------------------------------------------


def test_perfect_policy_reaches_the_upper_bound(bench):
    t1, t2 = bench.samples("test")
    env, obs = run_task(bench, t1, ["C TYPE New York", "B CLICK"])
    s1 = env.score()
    assert obs.done and s1.success and s1.metrics["element_acc"] == s1.metrics["action_f1"] == 1.0
    env, _ = run_task(bench, t2, ["E SELECT Economy"])  # the best one can do: gold is not listed
    s2 = env.score()
    table = split_metrics([s1.metrics, s2.metrics])
    assert table["task_success"] == table["upper_bound_task"] == 0.5
    assert table["step_success"] == table["upper_bound_step"] == 0.5


def test_none_of_the_above_policy_scores_zero(bench):
    rows = []
    for sample in bench.samples("test"):
        env, _ = run_task(bench, sample, ["A"] * sample.task.max_steps)
        rows.append(env.score().metrics)
    table = split_metrics(rows)
    assert table["element_acc"] == table["action_f1"] == table["task_success"] == 0.0
    assert table["upper_bound_step"] == 0.5


def test_gold_action_is_taken_whatever_was_predicted(bench):
    t1 = bench.samples("test")[0]
    env, obs = run_task(bench, t1, ["D CLICK"])  # wrong: the next step still follows the gold history
    assert "[textbox]  From -> TYPE: New York" in obs.text and "B. <button id=0" in obs.text
    obs = env.step(Action(kind="command", text="Answer: B.\nAction: CLICK"))
    m = env.score().metrics
    assert obs.done and m["element_acc"] == 0.5 and m["step_success"] == 0.5 and m["task_success"] == 0.0
    assert m["action_f1"] == pytest.approx((0 + 1) / 2)  # CLICK vs TYPE New York shares no token


def test_unparseable_or_unlisted_answers_count_as_none(bench):
    t1 = bench.samples("test")[0]
    env, _ = run_task(bench, t1, ["I am not sure", "Z CLICK"])
    assert env.score().metrics["element_acc"] == 0.0 and env.score().metrics["steps_answered"] == 2.0
    assert parse_answer("C.\nAction: SELECT\nValue: Queen") == ("C", "SELECT Queen")
    assert parse_answer("b click") == (None, " ")


# --- loading ----------------------------------------------------------------------------------


def test_train_split_and_params_split(bench):
    assert [s.id for s in bench.samples("train")] == ["t1"]
    other = Mind2WebBenchmark({"download": False, "split": "test_website"}, data_dir=bench.data_dir)
    assert [s.id for s in other.samples("test")] == ["t2"]


def test_unknown_split_is_one_clear_error(bench):
    with pytest.raises(ConfigError, match=r"no split 'dev'; valid splits: train, test .*test_task"):
        bench.samples("dev")
    with pytest.raises(ConfigError, match="split"):
        Mind2WebBenchmark({"split": "test_site"})


def test_missing_data_names_what_to_download(tmp_path):
    with pytest.raises(DataError, match=r"osunlp/Mind2Web.*test\.zip.*password 'mind2web'"):
        Mind2WebBenchmark({"download": False}, data_dir=tmp_path / "mind2web").samples("test")


def test_changed_file_is_refused(bench):
    (bench.data_dir / "test_task" / "test_task_0.json").write_text("[]", encoding="utf-8")
    with pytest.raises(DataError, match=r"sha256 .* differs"):
        bench.samples("test")


def test_failed_download_leaves_the_data_root_untouched(tmp_path, monkeypatch):
    class Sib:
        def __init__(self, name: str, sha: str | None) -> None:
            self.rfilename, self.lfs = name, (type("L", (), {"sha256": sha}) if sha else None)

    class Api:
        commit = files.REVISION

        def dataset_info(self, repo, revision, files_metadata):
            assert revision == files.REVISION  # the pinned commit is what the hub is asked for
            sibs = [Sib("data/train/train_0.json", "0" * 64), Sib("test.zip", "1" * 64), Sib(files.SCORES, "2" * 64)]
            return type("Info", (), {"sha": self.commit, "siblings": sibs})

    def download(repo, name, repo_type, revision, local_dir):
        path = Path(local_dir) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("not what the hub published", encoding="utf-8")
        return str(path)

    monkeypatch.setattr(files, "_hub", lambda: (Api(), download))
    root = tmp_path / "data"
    root.mkdir()
    with pytest.raises(DataError, match="differs from the hub"):
        Mind2WebBenchmark({"download": True}, data_dir=root / "mind2web").samples("test")
    assert list(root.iterdir()) == []

    def offline(*a, **k):
        raise OSError("network is unreachable")

    moved = Api()
    moved.commit = "f" * 40
    monkeypatch.setattr(files, "_hub", lambda: (moved, download))
    with pytest.raises(DataError, match=f"answered commit f{{40}} for the pinned commit {files.REVISION}"):
        Mind2WebBenchmark({"download": True}, data_dir=root / "mind2web").samples("test")
    assert list(root.iterdir()) == []

    monkeypatch.setattr(files, "_hub", offline)
    with pytest.raises(DataError) as err:
        Mind2WebBenchmark({"download": True}, data_dir=root / "mind2web").samples("test")
    message = str(err.value)  # one line: the cause, then the manual steps
    assert "\n" not in message and "could not download Mind2Web" in message and "unreachable" in message
    assert f"by hand: get data/train/*.json, test.zip and {files.SCORES}" in message
    assert f"at commit {files.REVISION}" in message and "password 'mind2web'" in message and "write_manifest" in message
    assert list(root.iterdir()) == []


def test_a_copy_from_another_hub_commit_is_refused_by_name(bench):
    files.write_manifest(bench.data_dir, "0" * 40)
    with pytest.raises(DataError, match=f"records hub commit '0{{40}}', not the pinned {files.REVISION}"):
        bench.samples("test")
    other = Mind2WebBenchmark({"download": False, "revision": "0" * 40}, data_dir=bench.data_dir)
    assert [s.id for s in other.samples("test")] == ["t1", "t2"]
    with pytest.raises(ConfigError, match="revision"):
        Mind2WebBenchmark({"revision": "main"})  # a branch moves: only a commit pins the data


# --- metric math ------------------------------------------------------------------------------

words = st.lists(st.sampled_from(["CLICK", "TYPE", "SELECT", "new", "York", "a", "b"]), max_size=6).map(" ".join)


@settings(deadline=None, max_examples=60)  # no per-example deadline: CI machines are shared
@given(words, words)
def test_f1_is_symmetric_bounded_and_one_iff_same_token_set(a, b):
    f = operation_f1(a, b)
    assert f == operation_f1(b, a) and 0.0 <= f <= 1.0
    assert (f == 1.0) == (set(a.split()) == set(b.split()))


steps = st.builds(
    lambda e, f, bound: StepScore(
        float(e and bound), f if bound else 0.0, float(e and bound and f == 1.0), float(bound)
    ),
    st.booleans(),
    st.sampled_from([0.0, 0.5, 1.0]),
    st.booleans(),
)


@settings(deadline=None, max_examples=60)  # no per-example deadline: CI machines are shared
@given(st.lists(steps, min_size=1, max_size=8))
def test_task_metrics_never_exceed_their_bounds(step_list):
    m = task_metrics(step_list)
    assert m["step_success"] <= m["element_acc"] <= m["upper_bound_step"]
    assert m["action_f1"] <= m["upper_bound_step"]
    assert m["task_success"] <= m["upper_bound_task"]
    assert m["task_success"] == float(m["step_success"] == 1.0)


# --- through the runner -----------------------------------------------------------------------

KEY = {  # (task, previous actions) -> (the gold candidate's rendering, operation); None = not listed
    ("Search flights from New York", 0): ("<input id=1", "TYPE New York"),
    ("Search flights from New York", 1): ("<button id=0", "CLICK"),
    ("Choose economy", 0): None,
}
_BLOCK = re.compile(
    r"Task: ([^\n]*)\nPrevious actions:\n(.*?)\nWhat should be the next action\?.*?\n\n(.*?)(?:\n\n|$)", re.S
)


def answer_key(request, spec) -> str:
    """A scripted perfect policy: reads the latest step shown and answers from KEY (AgentNet's routers keep the
    task)."""
    if (route := route_reply(request)) is not None:
        return route
    text = "\n\n".join(str(m.get("content") or "") for m in request.messages)
    blocks = _BLOCK.findall(text)
    if not blocks:
        return "A"
    task, previous, choices = blocks[-1]
    gold = KEY[(task, 0 if previous.strip() == "None" else len(previous.strip().splitlines()))]
    if gold is None:
        return "A"
    letter = next(line[0] for line in choices.splitlines() if line[3:].startswith(gold[0]))
    return f"{letter} {gold[1]}"


@pytest.mark.parametrize("framework", ["single", "autogen", "macnet", "agentnet"])
def test_runs_under_each_framework_with_the_scripted_perfect_policy(make_config, tmp_path, framework):
    register_mock_policy("mind2web_key", answer_key)
    make_data(tmp_path / "data")
    final = run_from_config(
        make_config(
            f"framework={framework}",
            "benchmark=mind2web",
            "benchmark.params.download=false",
            "model.models.mock.options.policy=mind2web_key",
            "memory=no_memory",
            data_root=tmp_path / "data",
        )
    )
    assert final["status"] == "complete"
    root = Path(final["runtime"]["results_root"])
    rd = RunDir(root / "default" / "mind2web" / final["labels"]["framework"] / "no_memory" / "mock" / "seed=0")
    rows = {r["sample_id"]: r for r in rd.records()}
    assert rows["t1"]["success"] and rows["t1"]["metrics"]["step_success"] == 1.0
    assert not rows["t2"]["success"] and rows["t2"]["metrics"]["upper_bound_task"] == 0.0


def test_build_then_freeze_builds_on_train(make_config, tmp_path):
    register_mock_policy("mind2web_key", answer_key)
    make_data(tmp_path / "data")
    final = run_from_config(
        make_config(
            "benchmark=mind2web",
            "benchmark.params.download=false",
            "model.models.mock.options.policy=mind2web_key",
            "memory=reasoningbank",
            "protocol.mode=build_then_freeze",
            data_root=tmp_path / "data",
        )
    )
    assert final["status"] == "complete" and final["counts"]["items"] == 3  # 1 train task, then 2 test tasks
