"""Pins of what reaches MMTB's metrics (`mmtb/benchmark.py`: the missions an entry splits into, the entry-level
split, `MmtbEnv`'s walk from the agent's actions, the predicted messages and calls, the per-mission outcome and
its metrics), written against the mutants of `make mutants PATHS=mmtb_env` (docs/quality.md).

The semantics are the original's `bench_test` (github.com/yupeijei1997/MMTB): `split_messages_by_equal`, the
golden context of earlier missions, the decision-tree walk ending at the first departure, the argument check
after a correct walk, `calculate_predict_result_steps`. Entries are built in memory in the raw
`Multi-Mission-Tool-Bench.jsonl` schema; no data files, no network.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from aecg_bench.benchmarks.mmtb import MmtbBenchmark, arguments, data
from aecg_bench.benchmarks.mmtb.benchmark import HINT, MmtbEnv, in_train, split_missions
from aecg_bench.contracts import EnvContext
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.types import Action, ToolCall

ANSWER = "prepare_to_answer"
ASK = "ask_user_for_required_parameters"


@pytest.fixture(autouse=True)
def exact_strings(monkeypatch):
    """Strings score 1 when equal, else 0 (the real ROUGE-L needs jieba; these tests use exact values only)."""
    monkeypatch.setattr(arguments, "rouge_l", lambda a, b: float(a == b))


def _tool(name: str, **props: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {
                "type": "object",
                "properties": {p: {"type": t, "description": p} for p, t in props.items()},
                "required": list(props),
            },
        },
    }


TOOLS = [_tool("get_weather", city="string"), _tool("book", n="integer"), _tool("search", q="string")]


def _node(idx: int, name: str, args: dict, obs: Any, deps: list[int], **extra: Any) -> dict[str, Any]:
    return {
        "idx": idx,
        "action": {"name": name, "arguments": args},
        "observation": obs,
        "dependency_list": deps,
        **extra,
    }


def _entry(**over: Any) -> dict[str, Any]:
    """Three missions: a parallel pair of calls, a clarification then a call, a chat."""
    entry = {
        "id": "e9",
        "type": ["多", "反", "拒"],
        "task_ids": [0, 2, 0],
        "english_task": ["Weather in Rome and Oslo?", "Book for me.", "Tell me a joke."],
        "english_answer_list": [
            [
                _node(0, "get_weather", {"city": "Rome"}, {"t": 20}, []),
                _node(1, "get_weather", {"city": "Oslo"}, "cold", []),
                _node(2, ANSWER, {}, "20 and cold", [0, 1]),
            ],
            [
                _node(0, ASK, {}, "How many?", [], user_input="Two people"),
                _node(1, "book", {"n": 2}, {"ok": True}, [0]),
                _node(2, ANSWER, {}, "Booked.", [1]),
            ],
            [_node(0, ANSWER, {}, "A joke.", [])],
        ],
        "english_messages": [
            {"role": "user", "content": "User: Weather in Rome and Oslo?"},
            {"role": "assistant", "content": "AI Agent: 20 and cold."},
            "=====",
            {"role": "user", "content": "User: Hi."},
            {"role": "assistant", "content": "AI Agent: Hello."},
            {"role": "user", "content": "User: Book for me."},
            {"role": "assistant", "content": "AI Agent: How many?"},
            "=====",
            {"role": "user", "content": "user: Tell me a joke."},
        ],
        "english_tools": TOOLS,
        "env_info": "当前时间：2024-05-01 12:00:00 星期三",
        "turn_type": [True, False],
    }
    entry.update(over)
    return entry


def _missions(entry: dict[str, Any] | None = None, **params: Any):
    return MmtbBenchmark({"download": False, **params}).missions(entry or _entry())


def _env(sample) -> MmtbEnv:
    env = MmtbBenchmark({"download": False}).make_env(sample, EnvContext(llm=None, seed=0))
    env.reset()
    return env


def _call(name: str, cid: str = "", **args: Any) -> ToolCall:
    return ToolCall(name, args, cid or f"id_{name}")


def _tools(*calls: ToolCall, text: str = "") -> Action:
    return Action(kind="tool", text=text, tool_calls=calls)


def _say(text: str) -> Action:
    return Action(kind="message", text=text)


# --- missions of an entry -----------------------------------------------------------------------------------


def test_messages_split_at_each_separator_string():
    a, b, c = ({"role": "user", "content": x} for x in "abc")
    assert split_missions([a, "=====", b, "=====", c]) == [[a], [b], [c]]
    assert split_missions(["=====", a]) == [[], [a]]
    assert split_missions([a, "x ===== y"]) == [[a]]  # a separator anywhere in the string; nothing after it
    assert split_missions([a, "plain", b]) == [[a, "plain", b]]
    assert split_missions([{"role": "user", "content": "====="}]) == [[{"role": "user", "content": "====="}]]
    assert split_missions([]) == []


def test_each_mission_is_scored_against_its_own_answer_list_and_type():
    entry = _entry()
    s0, s1, s2 = _missions(entry)
    assert [s.id for s in (s0, s1, s2)] == ["e9:0", "e9:1", "e9:2"]
    for i, s in enumerate((s0, s1, s2)):
        assert s.gold["answer_list"] == entry["english_answer_list"][i]
        assert s.gold["task"] == entry["english_task"][i] and s.gold["tools"] == TOOLS
        assert s.gold["type"] == entry["type"][i] and s.split == "test"
        assert s.task.max_steps == len(entry["english_answer_list"][i]) + 1
        assert s.task.benchmark == "mmtb" and s.task.mode == "conversation"
    assert [s.task.task_type for s in (s0, s1, s2)] == ["multi", "clarify", "chat"]
    assert [s.task.metadata["mission_type"] for s in (s0, s1, s2)] == ["multi", "clarify", "chat"]
    assert [s.task.metadata["multi_tool"] for s in (s0, s1, s2)] == ["parallel", "", ""]
    assert [s.task.metadata["true_multi_turn"] for s in (s0, s1, s2)] == [True, False, False]  # no flag: False
    assert {s.task.metadata["entry"] for s in (s0, s1, s2)} == {"e9"}
    assert [s.task.metadata["mission"] for s in (s0, s1, s2)] == [0, 1, 2]
    assert [t.name for t in s0.task.tools] == ["get_weather", "book", "search"]
    assert s0.task.tools[0].description == "get_weather tool"
    assert s0.task.tools[0].parameters["properties"]["city"]["type"] == "string"


def test_the_context_is_the_earlier_missions_and_the_opening_turns_without_speaker_tags():
    s0, s1, s2 = _missions()
    assert s0.gold["context"] == [{"role": "user", "content": " Weather in Rome and Oslo?"}]
    # mission 1 opens at its task_id 2: its first three turns, after the whole golden dialogue of mission 0
    assert [m["content"] for m in s1.gold["context"]] == [
        " Weather in Rome and Oslo?",
        " 20 and cold.",
        " Hi.",
        " Hello.",
        " Book for me.",
    ]
    assert [m["role"] for m in s1.gold["context"]] == ["user", "assistant", "user", "assistant", "user"]
    assert s2.gold["context"][-1] == {"role": "user", "content": " Tell me a joke."}
    assert len(s2.gold["context"]) == 7


def test_an_unknown_type_code_and_a_tool_without_description_or_parameters_pass_through():
    bare = {"type": "function", "function": {"name": "bare"}}
    (s,) = _missions(
        _entry(
            type=["X"],
            task_ids=[0],
            english_task=["t"],
            english_answer_list=[[_node(0, ANSWER, {}, "a", [])]],
            english_tools=[bare],
            english_messages=[{"role": "user", "content": "t"}],
        )
    )
    assert s.task.task_type == "X" and s.task.metadata["mission_type"] == "X" and s.gold["type"] == "X"
    # sent as the original's handles send a tool without properties: an empty object schema
    assert s.task.tools[0].description == "" and s.task.tools[0].parameters == {"type": "object", "properties": {}}
    assert s.task.metadata["multi_tool"] == ""


def test_a_per_mission_env_list_dates_each_mission_and_an_entry_id_list_is_joined():
    entry = _entry(id=["e", "9"], env_info=["当前时间：2024-05-01 12:00:00", "当前时间：2024-05-02 12:00:00", "x"])
    s0, s1, s2 = _missions(entry)
    assert s0.id == "e9:0" and s0.task.metadata["entry"] == "e9"
    assert s0.task.instruction.startswith("Current Date:2024-05-01") and s1.task.instruction.startswith(
        "Current Date:2024-05-02"
    )
    assert s2.task.instruction == "Current Date:x"


def test_more_tasks_than_task_ids_stop_at_the_shortest():
    entry = _entry(task_ids=[0, 2])
    assert [s.id for s in _missions(entry)] == ["e9:0", "e9:1"]


def test_the_split_keys_entries_by_the_documented_hash():
    ids = [f"entry{i}" for i in range(300)]
    for fraction in (0.1, 0.5, 0.9):
        ref = [int(hashlib.sha256(i.encode()).hexdigest()[:8], 16) / 16**8 < fraction for i in ids]
        assert [in_train(i, fraction) for i in ids] == ref
    assert 100 < sum(in_train(i, 0.5) for i in ids) < 200
    edge = int(hashlib.sha256(b"edge").hexdigest()[:8], 16) / 16**8
    assert not in_train("edge", edge) and in_train("edge", edge * (1 + 1e-9))  # train: strictly below


# --- the environment ----------------------------------------------------------------------------------------


def test_the_first_observation_is_the_context():
    s0, s1, _ = _missions()
    assert MmtbEnv(s0.gold).reset().text == "Weather in Rome and Oslo?"
    text = MmtbEnv(s1.gold).reset().text
    assert text.startswith("Conversation so far:\nUser: Weather in Rome and Oslo?\nAssistant: 20 and cold.\n")


def test_parallel_calls_get_their_golden_observations_and_the_answer_ends_the_mission():
    s0, _, _ = _missions()
    env = _env(s0)
    obs = env.step(_tools(_call("get_weather", "a", city="Oslo"), _call("get_weather", "b", city="Rome")))
    assert not obs.done and obs.valid
    results = obs.info["tool_results"]
    # golden observations in name order, attached to the calls in the order they came
    assert [(r["id"], r["name"], r["ok"]) for r in results] == [("a", "get_weather", True), ("b", "get_weather", True)]
    assert [r["content"] for r in results] == ['{"t": 20}', "cold"]
    assert obs.text == '{"t": 20}\ncold'
    end = env.step(_say("It is 20 in Rome and cold in Oslo."))
    assert end.done and end.valid and end.text == "The mission is over."
    s = env.score()
    assert s.success and s.value == 1.0
    assert env.predicted == [
        {
            "content": None,
            "tool_calls": [
                {"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "a"},
                {"name": "get_weather", "arguments": {"city": "Rome"}, "id": "b"},
            ],
        },
        {"content": "It is 20 in Rome and cold in Oslo.", "tool_calls": None},
    ]
    assert s.metrics == {
        "success": 1.0,
        "action_correct": 1.0,
        "optimal": 1.0,
        "progress_steps": 3.0,
        "progress_total": 3.0,
        "is_single": 0.0,
        "is_multi": 1.0,
        "is_chat": 0.0,
        "is_clarify": 0.0,
        "is_parallel": 1.0,
        "is_serial": 0.0,
        "is_serial_parallel": 0.0,
    }


def test_the_text_beside_a_tool_call_is_kept_as_its_content():
    s0, _, _ = _missions()
    env = _env(s0)
    env.step(_tools(_call("get_weather", city="Oslo"), _call("get_weather", city="Rome"), text="Checking."))
    assert env.predicted[0]["content"] == "Checking."


def test_a_wrong_call_ends_the_mission_as_an_error():
    s0, _, _ = _missions()
    env = _env(s0)
    obs = env.step(_tools(_call("search", q="Rome")))
    assert obs.done and obs.valid and obs.text == "The mission is over."
    after = env.step(_say("hello"))
    assert after.done and after.valid is False and after.text == "The mission is over."
    s = env.score()
    assert not s.success and s.metrics["action_correct"] == 0.0 and s.metrics["optimal"] == 0.0
    assert s.metrics["progress_steps"] == 0.0 and len(env.predicted) == 1  # the refused step is not recorded


def test_a_clarification_gets_the_golden_user_reply():
    _, s1, _ = _missions()
    env = _env(s1)
    obs = env.step(_say("How many people?"))
    assert obs.text == "Two people" and not obs.done and obs.valid
    obs = env.step(_tools(_call("book", n=2)))
    assert obs.text == '{"ok": true}' and not obs.done
    assert env.step(_say("Booked for two.")).done
    s = env.score()
    assert s.success and s.metrics["is_clarify"] == 1.0 and s.metrics["progress_steps"] == 3.0


def test_an_ask_node_without_a_user_reply_returns_empty_text():
    _, s1, _ = _missions()
    gold = dict(s1.gold)
    gold["answer_list"] = [dict(n) for n in s1.gold["answer_list"]]
    gold["answer_list"][0] = {k: v for k, v in gold["answer_list"][0].items() if k != "user_input"}
    env = MmtbEnv(gold)
    obs = env.step(_say("How many?"))
    assert obs.text == "" and not obs.done


def test_an_empty_message_is_an_invalid_error():
    _, _, s2 = _missions()
    env = _env(s2)
    obs = env.step(_say("   "))
    assert obs.done and obs.valid is False and obs.text == "The mission is over."
    assert env.predicted == [{"content": None, "tool_calls": None}]
    assert not env.score().success and env.walk.label == "error"


def test_a_tool_action_without_calls_is_a_text_reply():
    _, _, s2 = _missions()
    env = _env(s2)
    obs = env.step(Action(kind="tool", text="A joke: ..."))
    assert obs.done and env.score().success
    assert env.predicted == [{"content": "A joke: ...", "tool_calls": None}]


def test_a_chat_answered_in_text_is_a_success_and_reset_starts_over():
    _, _, s2 = _missions()
    env = _env(s2)
    assert env.step(_say("Why did the chicken...")).done
    assert env.score().success and env.score().metrics["is_chat"] == 1.0
    env.reset()
    assert env.walk.label is None and env.predicted == [] and env.calls == []
    assert not env.score().success  # nothing answered yet


def test_a_wrong_argument_after_a_correct_walk_fails_and_counts_the_last_step():
    _, s1, _ = _missions()
    env = _env(s1)
    env.step(_say("How many?"))
    env.step(_tools(_call("book", n=3)))
    env.step(_say("Booked."))
    o = env.outcome()
    assert o["action_correct"] and not o["success"] and o["progress_total"] == 3
    assert o["progress_steps"] == 3  # bad arguments: the last step counts too (the original's rule)
    s = env.score()
    assert s.metrics["action_correct"] == 1.0 and s.metrics["success"] == 0.0 and s.value == 0.0


def test_a_departure_after_some_steps_counts_the_steps_before_the_last():
    _, s1, _ = _missions()
    env = _env(s1)
    env.step(_say("How many?"))
    env.step(_tools(_call("get_weather", city="x")))
    assert env.outcome()["progress_steps"] == 1


def test_calls_that_cannot_be_checked_make_the_mission_fail_not_the_run():
    s0, _, _ = _missions()
    gold = {**s0.gold, "tools": [TOOLS[1]]}  # the golden tool is missing from the mission's tools
    env = MmtbEnv(gold)
    env.step(_tools(_call("get_weather", city="Oslo"), _call("get_weather", city="Rome")))
    env.step(_say("done"))
    assert env.walk.label == "correct"
    o = env.outcome()
    assert o["action_correct"] is False and o["success"] is False
    assert o["progress_steps"] == 2  # not a bad-arguments failure: the last step does not count
    assert env.score().metrics["action_correct"] == 0.0


def test_the_calls_checked_are_every_call_of_the_mission():
    s0, _, _ = _missions()
    env = _env(s0)
    env.step(_tools(_call("get_weather", city="Oslo")))  # serially: correct walk, not optimal
    env.step(_tools(_call("get_weather", city="Paris")))
    env.step(_say("ok"))
    assert [c["arguments"] for c in env.calls] == [{"city": "Oslo"}, {"city": "Paris"}]
    s = env.score()
    assert s.metrics["action_correct"] == 1.0 and not s.success and s.metrics["optimal"] == 0.0


def test_every_mission_asks_for_calls_or_a_message_and_keeps_its_split():
    for s in _missions():
        assert s.task.action_hint == HINT
    assert {s.split for s in MmtbBenchmark({"download": False}).missions(_entry(), "train")} == {"train"}


def test_an_entry_without_env_info_has_an_empty_date():
    entry = {k: v for k, v in _entry().items() if k != "env_info"}
    assert [s.task.instruction for s in _missions(entry)] == ["Current Date:"] * 3


def _write(tmp_path: Path, monkeypatch, entries: list[dict[str, Any]]) -> Path:
    d = tmp_path / "mmtb"
    d.mkdir(parents=True)
    path = d / data.FILE
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    monkeypatch.setattr(data, "BLOB_SHA1", data.git_blob_sha1(path))
    return d


def test_test_is_every_entry_and_train_and_heldout_split_them_by_entry(tmp_path, monkeypatch):
    ids = [f"e{i}" for i in range(12)]
    d = _write(tmp_path, monkeypatch, [_entry(id=i) for i in ids])
    bench = MmtbBenchmark({"download": False, "train_fraction": 0.5}, data_dir=d)
    test = bench.samples("test")
    assert [s.id for s in test] == [f"{i}:{m}" for i in ids for m in range(3)] and {s.split for s in test} == {"test"}
    train, held = bench.samples("train"), bench.samples("heldout")
    assert {s.task.metadata["entry"] for s in train} == {i for i in ids if in_train(i, 0.5)}
    assert {s.task.metadata["entry"] for s in held} == {i for i in ids if not in_train(i, 0.5)}
    assert train and held and {s.split for s in train} == {"train"} and {s.split for s in held} == {"heldout"}
    some = MmtbBenchmark({"download": False, "offset": 2, "size": 3}, data_dir=d).samples("test")
    assert [s.task.metadata["entry"] for s in some][::3] == ["e2", "e3", "e4"]
    rest = MmtbBenchmark({"download": False, "offset": 10}, data_dir=d).samples("test")
    assert [s.task.metadata["entry"] for s in rest][::3] == ["e10", "e11"]
    with pytest.raises(ConfigError, match=r"^benchmark 'mmtb' has no split 'dev'; valid splits: test, train, heldout$"):
        bench.samples("dev")


def test_a_malformed_entry_is_named_by_its_position_in_the_file(tmp_path, monkeypatch):
    broken = {k: v for k, v in _entry(id="bad").items() if k != "english_tools"}
    d = _write(tmp_path, monkeypatch, [_entry(id="a"), _entry(id="b"), broken])
    with pytest.raises(DataError, match=r"^MMTB entry 2: not in the Multi-Mission-Tool-Bench schema \(KeyError"):
        MmtbBenchmark({"download": False}, data_dir=d).samples()
    with pytest.raises(DataError, match=r"^MMTB entry 2: not in the"):
        MmtbBenchmark({"download": False, "offset": 1}, data_dir=d).samples()
    one_dialogue = [{"role": "user", "content": "x"}]
    no_content = [{"role": "user", "content": None}]
    for n, bad in enumerate(
        [
            _entry(id=5),  # KeyError/TypeError family: an id that is neither text nor a list of text
            _entry(english_messages=one_dialogue),  # IndexError: fewer dialogues than missions
            _entry(type=None),  # TypeError
            _entry(english_messages=no_content),  # AttributeError
        ]
    ):
        d2 = _write(tmp_path / str(n), monkeypatch, [bad])
        with pytest.raises(DataError, match=r"^MMTB entry 0: not in the Multi-Mission-Tool-Bench schema"):
            MmtbBenchmark({"download": False}, data_dir=d2).samples()


def test_the_download_switch_reaches_the_fetch(tmp_path, monkeypatch):
    d = _write(tmp_path, monkeypatch, [_entry()])
    fetch, seen = data.fetch, []

    def spy(data_dir, *, download):
        seen.append(download)
        return fetch(data_dir, download=download)

    monkeypatch.setattr(data, "fetch", spy)
    MmtbBenchmark({"download": False}, data_dir=d).samples()
    MmtbBenchmark({"download": True}, data_dir=d).samples()  # the file is there: nothing is downloaded
    assert seen == [False, True]
