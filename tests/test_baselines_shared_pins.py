"""Pins of what every baseline shares (issue 17): the cosine index, the memory-side LLM call and the parsing
of its replies, how a trajectory is shown to a memory LLM, `no_memory`, and the prompts."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.audit import AuditLog
from aecg_bench.contracts import MemoryServices
from aecg_bench.errors import ConfigError
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.llm.providers import ContextLimitError
from aecg_bench.types import (
    Action,
    DecisionNode,
    Observation,
    RecallQuery,
    Status,
    Step,
    Task,
    ToolCall,
    ToolSpec,
    Trajectory,
)
from baselines.conmem import prompts as cm
from baselines.conmem.cards import SECTIONS, reflection_quality
from baselines.edv.distill import parse_distilled
from baselines.edv.judge import parse_best
from baselines.edv.prompts import (
    VERIFY_GRAMMAR,
    Candidate,
    distill_grammar,
    distill_messages,
    judge_grammar,
    judge_messages,
    render_tools,
    verify_messages,
)
from baselines.edv.verify import parse_vote
from baselines.g_memory import prompts as gm
from baselines.g_memory.insights import parse_operations
from baselines.index import VectorIndex, embedder_of, task_key
from baselines.llm_calls import ask, extract_json, numbered_list, skip, stable_seed, stable_uniform, tagged
from baselines.no_memory import NoMemory
from baselines.trajectory_text import (
    action_text,
    clip,
    final_solution,
    has_agent_output,
    interaction_graph,
    models_used,
    one_line,
    render_trajectory,
)


def test_no_memory_recalls_nothing_and_keeps_no_state():
    method = NoMemory(services=MemoryServices(llm=None, embedder=None, audit=AuditLog()))
    query = RecallQuery(task=Task(id="t", benchmark="b", instruction="x"), level="agent", agent="a", role="r")
    assert method.recall(query) == []
    assert method.state_dict() == {}


# -- the cosine index every retrieval baseline shares -------------------------------------------------


class _AxisEmbedder:
    """Text "x y z" -> the unit vector along (x, y, z, 0, ...); "#i" -> the i-th axis of 512: exact cosines,
    so ties and thresholds are known, and hundreds of entries are told apart exactly."""

    dim = 512

    @staticmethod
    def _row(text: str) -> list[float]:
        if text.startswith("#"):
            return [1.0 if i == int(text[1:]) else 0.0 for i in range(512)]
        values = [float(v) for v in text.split()]
        return values + [0.0] * (512 - len(values))

    def embed(self, texts: list[str]) -> np.ndarray:
        mat = np.array([self._row(t) for t in texts], dtype=np.float32).reshape(len(texts), 512)
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        return mat / np.where(norms == 0, 1, norms)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def _index(entries: dict[str, str]) -> VectorIndex:
    index = VectorIndex(_AxisEmbedder())
    index.add_many(list(entries), list(entries.values()))
    return index


def test_search_ranks_by_cosine_best_first_and_breaks_ties_by_insertion_order():
    index = _index({"far": "0 1", "tie_a": "1 1", "near": "1 0", "tie_b": "2 2", "opposite": "-1 0"})
    hits = index.search("1 0", 5)
    assert [k for k, _ in hits] == ["near", "tie_a", "tie_b", "far", "opposite"]
    assert [round(s, 4) for _, s in hits] == [1.0, 0.7071, 0.7071, 0.0, -1.0]
    assert index.search("1 0", 2) == hits[:2]
    assert index.search("1 0", 0) == [] and index.search("1 0", -1) == []
    assert VectorIndex(_AxisEmbedder()).search("1 0", 3) == []
    # a query vector works as a query text does
    assert index.search(np.eye(512, dtype=np.float32)[0], 1) == hits[:1]


def test_search_filters_and_stops_below_the_minimum_score():
    index = _index({"near": "1 0", "mid": "1 1", "far": "0 1"})
    assert [k for k, _ in index.search("1 0", 3, allow=lambda k: k != "near")] == ["mid", "far"]
    # min_score keeps the entries at or above it: 0.7071 stays at 0.7, the orthogonal one goes
    assert [k for k, _ in index.search("1 0", 3, min_score=0.7)] == ["near", "mid"]
    assert [k for k, _ in index.search("1 0", 3, min_score=1.0)] == ["near"]
    assert [k for k, _ in index.search("1 0", 3, min_score=0.0)] == ["near", "mid", "far"]
    # k counts the allowed entries only
    assert [k for k, _ in index.search("1 0", 1, allow=lambda k: k == "far")] == ["far"]


def test_one_ranking_serves_several_filtered_reads():
    index = _index({"a": "1 0", "b": "1 1", "c": "0 1"})
    ranking = index.rank("0 1")
    assert [k for k, _ in ranking.top(2)] == ["c", "b"]
    assert [k for k, _ in ranking.top(2, allow=lambda k: k != "c")] == ["b", "a"]
    assert ranking.top(0) == [] and ranking.top(-2) == []
    assert [k for k, _ in ranking.top(5, min_score=0.5)] == ["c", "b"]


def test_adding_an_existing_key_replaces_its_vector_and_removed_keys_are_never_found():
    index = _index({"a": "1 0", "b": "0 1"})
    assert len(index) == 2 and "a" in index and "z" not in index
    index.add("a", "0 0 1")
    assert len(index) == 2
    assert index.search("0 0 1", 1) == [("a", 1.0)]
    assert index.search("1 0", 3)[0][0] != "a"
    assert np.allclose(index.vector("a"), index.embed("#2")) and index.vector("missing") is None
    index.remove(["b", "never-added"])
    assert len(index) == 1 and "b" not in index
    assert [k for k, _ in index.search("0 1", 5)] == ["a"]
    ids, sims = index.scores(index.embed("0 1"))
    # the replaced and the removed row are still rows (tombstones) and score -inf
    assert ids == [None, None, "a"] and list(sims[:2]) == [-np.inf, -np.inf]
    assert index.row_ids == ids and np.allclose(index.matrix_row(2), index.embed("#2"))
    index.add_many([], [])
    assert len(index) == 1


def test_similarity_reads_only_present_entries():
    index = _index({"a": "1 0", "b": "1 1"})
    sims = index.similarity(index.embed("1 0"), ["b", "gone", "a"])
    assert list(sims) == ["b", "a"] and sims["a"] == pytest.approx(1.0) and sims["b"] == pytest.approx(0.70710677)
    assert index.similarity(index.embed("1 0"), ["gone"]) == {}


def test_the_matrix_grows_and_keeps_every_earlier_row():
    index = VectorIndex(_AxisEmbedder())
    for i in range(150):  # past the first allocation (64 rows) and its doubling
        index.add(f"k{i}", f"#{i}")
    assert len(index) == 150
    for i in (0, 63, 64, 127, 128, 149):
        assert index.search(f"#{i}", 1)[0] == (f"k{i}", pytest.approx(1.0))
    index.add_many([f"m{i}" for i in range(100)], ["#300"] * 100)  # more than doubling gives
    assert len(index) == 250 and [k for k, _ in index.search("#300", 2)] == ["m0", "m1"]
    assert index.search("#5", 1)[0] == ("k5", pytest.approx(1.0))
    # the matrix is float32 (the memory budget the module documents), however it grew
    assert index.vector("k0").dtype == np.float32 and index.scores(index.embed("#1"))[1].dtype == np.float32


def test_growing_past_a_tombstone_keeps_every_earlier_entry_alive():
    index = _index({f"k{i}": f"#{i}" for i in range(10)})
    index.remove(["k3"])
    index.add_many([f"n{i}" for i in range(60)], [f"#{i + 100}" for i in range(60)])  # grows past 64 rows
    assert [k for k, _ in index.search("#0", 1)] == ["k0"] and [k for k, _ in index.search("#9", 1)] == ["k9"]
    assert "k3" not in [k for k, _ in index.search("#3", 70)]


class _PlaneEmbedder(_AxisEmbedder):
    """Two dimensions: far fewer than the rows an index holds."""

    dim = 2

    def embed(self, texts: list[str]) -> np.ndarray:
        return super().embed(texts)[:, :2]


def test_an_index_holds_more_rows_than_its_vectors_have_dimensions():
    index = VectorIndex(_PlaneEmbedder())
    index.add_many([f"k{i}" for i in range(70)], ["1 0"] * 69 + ["0 1"])
    index.remove(["k0"])
    assert [k for k, _ in index.search("0 1", 1)] == ["k69"]
    assert [k for k, _ in index.search("1 0", 2)] == ["k1", "k2"]


def test_tombstones_are_compacted_only_past_a_quarter_of_the_rows_and_at_least_64():
    index = _index({f"k{i}": f"#{i}" for i in range(100)})
    index.remove([f"k{i}" for i in range(64)])  # 64 dead: not more than max(64, 100 // 4)
    assert index.row_ids.count(None) == 64
    index.remove(["k64"])  # 65 dead: compacted
    assert index.row_ids == [f"k{i}" for i in range(65, 100)]
    assert [k for k, _ in index.search("#65", 1)] == ["k65"]
    ids, sims = index.scores(index.embed("#65"))
    assert len(ids) == 35 and np.isfinite(sims).all()
    index.add("new", "0 0 1")
    assert index.search("0 0 1", 1) == [("new", pytest.approx(1.0))]
    index.remove(["k65"])  # tombstones are counted again after a compaction
    assert index.row_ids.count(None) == 1 and "k65" not in [k for k, _ in index.search("#65", 3)]

    again = _index({f"k{i}": f"#{i}" for i in range(200)})
    again.remove([f"k{i}" for i in range(65)])  # 65 dead of 200: compacted to 135 rows
    assert len(again.row_ids) == 135
    again.remove([f"k{i}" for i in range(65, 129)])  # 64 dead since: not more than max(64, 135 // 4)
    assert again.row_ids.count(None) == 64

    big = _index({f"k{i}": f"#{i}" for i in range(400)})
    big.remove([f"k{i}" for i in range(100)])  # 100 dead: not more than 400 // 4
    assert big.row_ids.count(None) == 100
    big.remove(["k100"])
    assert None not in big.row_ids and len(big.row_ids) == 299

    whole = _index({f"k{i}": f"#{i}" for i in range(70)})
    whole.remove([f"k{i}" for i in range(70)])  # everything removed: an empty index that still works
    assert whole.row_ids == [] and len(whole) == 0 and whole.search("1 1", 3) == []
    whole.add("again", "1 0")
    whole.add("more", "0 1")
    assert whole.search("1 0", 1) == [("again", pytest.approx(1.0))]
    whole.remove(["more"])
    assert [k for k, _ in whole.search("0 1", 2)] == ["again"]


def test_clear_empties_the_index():
    index = _index({"a": "1 0", "b": "0 1"})
    index.remove(["a"])
    index.clear()
    assert len(index) == 0 and index.row_ids == [] and index.search("1 0", 2) == []
    index.add("c", "1 0")
    ids, sims = index.scores(index.embed("1 0"))
    assert ids == ["c"] and list(sims) == [pytest.approx(1.0)]
    index.add("d", "0 1")  # and grows again
    assert [k for k, _ in index.search("0 1", 2)] == ["d", "c"]
    # a cleared index counts tombstones from zero: 64 removals of 100 do not compact it yet
    index.clear()
    index.add_many([f"k{i}" for i in range(100)], [f"#{i}" for i in range(100)])
    index.remove([f"k{i}" for i in range(64)])
    assert index.row_ids.count(None) == 64


def test_task_key_and_the_fallback_embedder():
    chat = Task(id="t", benchmark="b", instruction="policy", mode="conversation")
    assert task_key(chat, " my order ", "instruction+observation") == "my order\n\npolicy"
    assert task_key(chat, " my order ", "instruction") == "policy"
    services = MemoryServices(llm=None, embedder=None, audit=AuditLog())
    assert embedder_of(services).backend == "lexical"
    own = Embedder("lexical")
    assert embedder_of(MemoryServices(llm=None, embedder=own, audit=AuditLog())) is own


# -- the memory-side LLM call and the parsing of its replies ------------------------------------------


@dataclass
class _Reply:
    text: str


class _Recorder:
    """Stands in for the LLM client: records each call's messages and keyword arguments."""

    def __init__(self, reply: str = "ok", fail: Exception | None = None) -> None:
        self.calls: list[dict] = []
        self.reply, self.fail = reply, fail

    def complete(self, messages, **kwargs):
        self.calls.append({"messages": messages, **kwargs})
        if self.fail is not None:
            raise self.fail
        return _Reply(self.reply)


def _memory(llm) -> NoMemory:
    return NoMemory(services=MemoryServices(llm=llm, embedder=None, audit=AuditLog()))


def test_ask_sends_system_and_user_under_the_memory_role_with_greedy_defaults():
    llm = _Recorder("the reply")
    method = _memory(llm)
    assert ask(method, system="S", user="U", purpose="extract") == "the reply"
    assert llm.calls == [
        {
            "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
            "role": "memory",
            "model": None,
            "temperature": 0.0,
            "max_tokens": 512,
            "grammar": None,
        }
    ]
    ask(
        method,
        system="S",
        user="U",
        purpose="p",
        max_tokens=7,
        temperature=None,
        role="verifier",
        model="m2",
        grammar="root ::= x",
    )
    assert {k: llm.calls[1][k] for k in ("role", "model", "temperature", "max_tokens", "grammar")} == {
        "role": "verifier",
        "model": "m2",
        "temperature": None,
        "max_tokens": 7,
        "grammar": "root ::= x",
    }
    assert method.audit.read() == []


def test_ask_turns_a_context_overflow_into_an_audited_skip_and_needs_an_llm():
    method = _memory(_Recorder(fail=ContextLimitError("x" * 400)))
    assert ask(method, system="S", user="U", purpose="compress") is None
    [event] = method.audit.read()
    assert event["event"] == "skip" and event["purpose"] == "compress" and event["reason"] == "context_limit"
    assert event["error"] == "x" * 300
    with pytest.raises(ConfigError) as err:
        ask(_memory(None), system="S", user="U", purpose="reflect")
    assert str(err.value) == "memory 'no_memory' needs an LLM for its reflect step; none was given"


def test_skip_audits_an_unusable_reply_clipped_but_not_a_missing_one():
    method = _memory(None)
    skip(method, "extract", None, item=3)
    assert method.audit.read() == []
    skip(method, "extract", "y" * 600, item=3)
    [event] = method.audit.read()
    assert (event["event"], event["purpose"], event["reason"], event["item"]) == ("skip", "extract", "unparsable", 3)
    assert event["reply"] == "y" * 500


def test_extract_json_prefers_a_fence_and_skips_brackets_that_start_no_json():
    assert extract_json('{"outer": 1} ```json\n{"fenced": 2}\n```') == {"fenced": 2}
    assert extract_json("```JSON\n[1, 2]\n```") == [1, 2]
    assert extract_json('```\n{"bare": true}\n```') == {"bare": True}
    assert extract_json("```json\nnot json\n``` then [3]") == [3]
    assert extract_json('see [note] and {bad} then {"a": [1]} and [2]') == {"a": [1]}
    assert extract_json("") is None and extract_json("no brackets") is None
    assert extract_json('"a string"') is None


def test_tagged_reads_the_first_tag_across_lines_and_numbered_lists_flatten_items():
    assert tagged("<cards>\n  [1,\n 2]\n</cards> <cards>later</cards>", "cards") == "[1,\n 2]"
    assert tagged("<card>x</card>", "cards") is None
    assert tagged("", "cards") is None and tagged(None, "cards") is None
    assert numbered_list("Rules:\n1. Keep it.\n  10) Tenth\n   rule.\n3. \n4. Last") == [
        "Keep it.",
        "Tenth rule.",
        "Last",
    ]
    assert numbered_list("") == [] and numbered_list(None) == []


def test_seeded_draws_are_fixed_functions_of_their_parts():
    # Golden values: a rerun (and a resume of a stored run) must draw the same numbers, e.g. MemoryBank's
    # forgetting and the method's sampling.
    assert stable_uniform(0, "memorybank", "mb-1") == 0.8146971760547659
    assert stable_seed(3, "edv") == 1910782420032755456
    assert stable_uniform("ab", "c") != stable_uniform("a", "bc")
    draws = [stable_uniform(i) for i in range(2000)]
    assert min(draws) >= 0.0 and max(draws) < 1.0 and 0.45 < sum(draws) / len(draws) < 0.55
    seeds = [stable_seed(i) for i in range(200)]
    assert all(0 <= s < 2**63 for s in seeds) and len(set(seeds)) == 200


# -- how a trajectory is shown to a memory LLM --------------------------------------------------------


def test_clip_keeps_a_third_head_and_the_tail_within_the_budget():
    text = "".join(chr(ord("a") + i % 26) for i in range(200))
    clipped = clip(text, 60)
    assert clipped == text[:20] + "\n...\n" + text[-35:] and len(clipped) == 60
    assert clip("  short  ", 5) == "short" and clip("  exactly  ", 7) == "exactly"
    assert clip(text, 0) == text and clip(text, -1) == text
    assert clip("a" * 40 + "     " + "b" * 10, 30) == "a" * 10 + "\n...\n" + "b" * 10
    # at the budget the text is kept whole; below 8 characters only the tail fits
    assert clip("abcdefgh", 8) == "abcdefgh" and clip("abcdefghi", 8) == "ab\n...\ni"
    assert clip("abcdefghij", 7) == "defghij" and clip("abcdef   ij", 4) == "ij" and clip("abc", 1) == "c"
    assert clip("head      " + "x" * 40 + "      tail", 30) == "head\n...\nxxxxx      tail"


def test_one_line_collapses_whitespace_and_marks_a_cut():
    assert one_line("  a\n b\t c  ") == "a b c"
    assert one_line("abcdefghij", 10) == "abcdefghij"
    assert one_line("abcd  fghijk", 8) == "abcd..."
    assert one_line("abcdef", 4) == "a..." and one_line("abcdef", 3) == "..." and one_line("abcdef", 2) == "ab"
    assert one_line("abcdefghijk", 9) == "abcdef..." and one_line("abcdefghijk", 0) == "abcdefghijk"


def test_actions_read_as_their_text_or_sorted_tool_calls():
    calls = (ToolCall("get_order", {"order_id": "#1", "a": 2}), ToolCall("cancel", {}))
    assert action_text(Action(kind="tool", text="ignored", tool_calls=calls)) == (
        "get_order(a=2, order_id='#1'); cancel()"
    )
    assert action_text(Action(kind="answer", text="42")) == "42" and action_text(None) == ""


def _run() -> Trajectory:
    traj = Trajectory(task_id="t", framework="unit", initial_observation="  Room.  ")
    traj.add_decision(DecisionNode(id="plan", agent="boss", role="planner", level="team", output="Plan " + "p" * 30))
    traj.add_decision(DecisionNode(id="quiet", agent="x", role="y", level="team", output="   "))
    traj.add_decision(
        DecisionNode(
            id="talk",
            agent="critic",
            role="critic",
            level="event",
            output="Careful\nnow",
            step=0,
            parents=("plan", "ghost"),
            model="m-b",
        )
    )
    traj.add_decision(DecisionNode(id="quiet0", agent="x", role="y", level="event", output=" ", step=0))
    traj.add_decision(
        DecisionNode(
            id="act",
            agent="actor",
            role="actor",
            level="agent",
            output="go north",
            step=0,
            parents=("talk",),
            model="m-a",
        )
    )
    traj.add_decision(
        DecisionNode(id="act1", agent="actor", role="actor", level="agent", output="answer", step=1, model="m-a")
    )
    traj.steps.append(Step(0, Action(kind="command", text="go north"), Observation(" North. ", reward=0.0), "act"))
    traj.steps.append(Step(1, Action(kind="answer", text="42"), Observation("Done.", reward=-0.5), "act1"))
    return traj


def test_render_shows_each_step_once_with_the_other_agents_utterances_under_it():
    assert render_trajectory(_run(), utterance_chars=12).splitlines() == [
        "Initial observation: Room.",
        "  [boss/planner] Plan pppp...",
        "  [critic/critic] Careful now",
        "Act 1: go north",
        "Obs 1: North.",
        "Act 2: 42",
        "Obs 2: Done.",
    ]
    assert render_trajectory(_run(), skip_negative_reward=True).splitlines()[-1] == "Obs 1: North."
    later = _run()
    later.steps.append(Step(2, Action(kind="command", text="wait"), Observation("Later.", reward=0.0), None))
    assert render_trajectory(later, skip_negative_reward=True).splitlines()[-2:] == ["Act 3: wait", "Obs 3: Later."]
    assert "  [critic/critic] Care..." in render_trajectory(_run(), utterance_chars=7).splitlines()
    zero = _run()
    zero.steps[1] = Step(1, Action(kind="answer", text="42"), Observation("Done.", reward=0.0), "act1")
    assert render_trajectory(zero, skip_negative_reward=True).splitlines()[-1] == "Obs 2: Done."
    assert render_trajectory(_run(), with_agents=False).splitlines() == [
        "Initial observation: Room.",
        "Act 1: go north",
        "Obs 1: North.",
        "Act 2: 42",
        "Obs 2: Done.",
    ]
    # the default utterance budget is 300 characters
    long = _run()
    long.decisions[0] = DecisionNode(id="plan", agent="boss", role="planner", level="team", output="w" * 400)
    assert render_trajectory(long).splitlines()[1] == "  [boss/planner] " + "w" * 297 + "..."


def test_render_notes_how_a_failed_run_ended_and_clips_to_its_budget():
    traj = _run()
    traj.initial_observation = ""
    traj.status, traj.error = Status.LIMIT_EXCEEDED, "step\nlimit " + "e" * 300
    lines = render_trajectory(traj, with_agents=False, max_chars=100000).splitlines()
    assert lines[0] == "Act 1: go north"
    assert lines[-1] == "(ended: limit_exceeded: step limit " + "e" * 186 + "...)"
    traj.error = ""
    assert render_trajectory(traj, with_agents=False).splitlines()[-1] == "Obs 2: Done."
    ok = _run()
    ok.error = "a warning"
    assert "ended" not in render_trajectory(ok)
    big = _run()
    big.initial_observation = "o" * 10000
    assert len(render_trajectory(big)) == 6000 and len(render_trajectory(big, max_chars=500)) == 500


def test_final_solution_is_the_last_answer_else_the_numbered_actions():
    traj = _run()
    traj.steps.append(Step(2, Action(kind="answer", text="  "), Observation("x"), None))
    assert final_solution(traj) == "42"
    traj.steps.append(Step(3, Action(kind="answer", text="y" * 2000), Observation("x"), None))
    assert len(final_solution(traj)) == 1500 and len(final_solution(traj, max_chars=100)) == 100
    commands = _run()
    commands.steps[1] = Step(1, Action(kind="command", text="look"), Observation("x"), None)
    assert final_solution(commands) == "1. go north\n2. look"
    assert final_solution(Trajectory(task_id="t", framework="unit")) == ""


def test_interaction_graph_nodes_edges_and_who_spoke():
    graph = interaction_graph(_run(), output_chars=10)
    assert graph["nodes"][2] == {
        "id": "talk",
        "agent": "critic",
        "role": "critic",
        "level": "event",
        "step": 0,
        "output": "Careful...",
    }
    assert [n["id"] for n in graph["nodes"]] == ["plan", "quiet", "talk", "quiet0", "act", "act1"]
    assert graph["edges"] == [["plan", "talk"], ["talk", "act"]]  # the unknown parent is dropped
    assert interaction_graph(_run())["nodes"][0]["output"] == "Plan " + "p" * 30
    wide = _run()
    wide.decisions[0] = DecisionNode(id="plan", agent="boss", role="planner", level="team", output="w" * 400)
    assert interaction_graph(wide)["nodes"][0]["output"] == "w" * 297 + "..."
    assert models_used(_run()) == ["m-a", "m-b"]
    assert has_agent_output(_run())
    silent = Trajectory(task_id="t", framework="unit")
    silent.add_decision(DecisionNode(id="d", agent="a", role="r", level="agent", output=" "))
    assert not has_agent_output(silent)
    silent.steps.append(Step(0, Action(kind="command", text="act"), Observation("x"), None))
    assert has_agent_output(silent)
    silent.steps[0] = Step(0, Action(kind="command", text="  "), Observation("x"), None)
    assert not has_agent_output(silent)


# -- EDV's prompts (Appendix B) and the grammars that constrain their replies -------------------------

_GBNF_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(\[(?:[^\]\\]|\\.)*\](?:\{\d+,\d+\})?)|([A-Za-z_]+)|([()|?]))')


def _gbnf_regex(grammar: str) -> re.Pattern:
    """The language of a GBNF grammar of the kind EDV sends (literals, rule names, groups, alternatives,
    `?`, one bounded character class), as a regular expression: what a grammar-constrained server can emit."""
    rules = {}
    for line in grammar.splitlines():
        name, _, body = line.partition(" ::= ")
        rules[name.strip()] = body

    def expand(body: str) -> str:
        out, pos = [], 0
        while pos < len(body.rstrip()):
            m = _GBNF_TOKEN.match(body, pos)
            assert m, f"unreadable grammar at {body[pos:]!r}"
            literal, cls, name, op = m.groups()
            if literal:
                out.append(re.escape(json.loads(literal)))
            elif cls:
                out.append(cls.replace("\\n", "\n"))
            elif name:
                out.append(f"(?:{expand(rules[name])})")
            else:
                out.append({"(": "(?:"}.get(op, op))
            pos = m.end()
        return "".join(out)

    return re.compile(expand(rules["root"]), re.S)


def _distilled_reply(best: int, verdicts: list[str], n_items: int, line: str = "x") -> str:
    assessment = "; ".join(f"{i}={v}" for i, v in enumerate(verdicts, 1))
    items = "".join(
        f"# Memory Item\n## Title T{i} {line}\n## Description D{i}\n## Content C{i}\n" for i in range(1, n_items + 1)
    )
    return f"Analysis: {line}\nBest: {best}\nAssessment: {assessment}\n{items}"


def test_the_distill_grammar_admits_exactly_the_replies_the_parser_reads():
    grammar = _gbnf_regex(distill_grammar(3, 2))
    for best in (1, 2, 3):
        for n_items in (1, 2):
            reply = _distilled_reply(best, ["success", "failure", "success"], n_items)
            assert grammar.fullmatch(reply), reply
            parsed = parse_distilled(reply, 3, 2)
            assert parsed.best == best and parsed.assessed == {1: True, 2: False, 3: True}
            assert [i.title for i in parsed.items] == [f"T{i} x" for i in range(1, n_items + 1)]
    refused = [
        _distilled_reply(4, ["success"] * 3, 1),  # no such candidate
        _distilled_reply(0, ["success"] * 3, 1),
        _distilled_reply(12, ["success"] * 3, 1),
        _distilled_reply(1, ["success"] * 3, 3),  # more items than asked for
        _distilled_reply(1, ["success"] * 3, 0),  # no item at all
        _distilled_reply(1, ["success"] * 2, 1),  # a candidate not assessed
        _distilled_reply(1, ["success"] * 4, 1),
        _distilled_reply(1, ["success", "unknown", "failure"], 1),
        _distilled_reply(1, ["success"] * 3, 1, line=""),  # an empty line
        _distilled_reply(1, ["success"] * 3, 1, line="y" * 301),  # a line over 300 characters
        _distilled_reply(1, ["success"] * 3, 1).replace("Assessment: ", "Assessment:"),
        _distilled_reply(1, ["success"] * 3, 1).replace("## Title", "## title"),
    ]
    assert not [r for r in refused if grammar.fullmatch(r)]
    assert grammar.fullmatch(_distilled_reply(1, ["success"] * 3, 1, line="y" * 296))
    one = _gbnf_regex(distill_grammar(1, 1))
    assert one.fullmatch(_distilled_reply(1, ["failure"], 1))
    assert not one.fullmatch(_distilled_reply(1, ["failure"], 2)) and not one.fullmatch(
        _distilled_reply(2, ["failure"], 1)
    )


def test_the_verify_and_judge_grammars_admit_exactly_a_verdict_and_an_attempt_number():
    verify = _gbnf_regex(VERIFY_GRAMMAR)
    assert verify.fullmatch("Rationale: grounded in act 3.\nVerdict: APPROVE")
    assert verify.fullmatch("Rationale: vague.\nVerdict: REJECT")
    assert parse_vote("v", "Rationale: vague.\nVerdict: REJECT").approve is False
    assert parse_vote("v", "Rationale: grounded.\nVerdict: APPROVE").approve is True
    for bad in (
        "Rationale: r\nVerdict: approve",
        "Rationale: \nVerdict: REJECT",
        "Verdict: APPROVE",
        "Rationale: r\nVerdict: MAYBE",
        "Rationale: r\nVerdict: APPROVE\n",
    ):
        assert not verify.fullmatch(bad), bad
    judge = _gbnf_regex(judge_grammar(3))
    assert [n for n in range(0, 6) if judge.fullmatch(f"Reason: r\nBest: {n}")] == [1, 2, 3]
    assert parse_best("Reason: r\nBest: 3", 3) == 3
    assert not judge.fullmatch("Reason: r\nBest: 1 and 2") and not judge.fullmatch("Best: 1")


def _edv_task(tools: bool) -> Task:
    spec = (ToolSpec("get_order", "Look an order up.", {"type": "object", "properties": {"id": {"type": "string"}}}),)
    return Task(id="t1", benchmark="b", instruction="  Refund the order.  ", tools=spec if tools else ())


def _edv_candidates() -> list[Candidate]:
    def traj(text: str) -> Trajectory:
        return Trajectory(task_id="t1", framework="unit", initial_observation=text)

    return [
        Candidate(1, "executor 1", traj("first " + "f" * 200), "success"),
        Candidate(2, "executor 2", traj("second"), "unknown"),
    ]


def test_the_distill_prompt_carries_the_papers_objectives_and_the_candidates():
    system, user = distill_messages(_edv_task(False), _edv_candidates(), max_items=3, max_chars=40, show_outcome=True)
    # Appendix B.1: a strict third-party evaluator comparing several candidates (no self-reflection), the
    # priority Compliance > Accuracy > Efficiency, evidence-based items written as Context -> Risk -> Action,
    # no generic advice; Appendix C.2: Title, one-sentence Description, 1-3 sentence Content
    for phrase in (
        "strict third-party evaluator",
        "You produced none of them",
        "2 candidate trajectories",
        "Compliance > Accuracy > Efficiency",
        "at most 3 memory items",
        "evidence-based",
        "Context -> Risk -> Action",
        '"read carefully"',
        "no outcome labels are given",
        "Assessment: 1=<success|failure>; 2=<success|failure>\n",
        "## Title <a short identifier>",
        "## Description <one sentence>",
        "## Content <1-3 sentences: Context -> Risk -> Action>",
    ):
        assert phrase in system, phrase
    assert "Tool outputs" not in system and "{" not in system
    assert "- transfer: no task-specific names, numbers or identifiers.\n\nObjective 3" in system
    first = render_trajectory(_edv_candidates()[0].trajectory, max_chars=40)
    assert len(first) == 40
    assert user == (
        "## Task\nRefund the order.\n\n## Candidates\n"
        f"### Candidate 1 (executor 1; outcome: success)\n{first}\n\n"
        "### Candidate 2 (executor 2; outcome: unknown)\nInitial observation: second"
    )
    _, hidden = distill_messages(_edv_task(False), _edv_candidates(), max_items=3, max_chars=40, show_outcome=False)
    assert "### Candidate 1 (executor 1)\n" in hidden and "outcome" not in hidden


def test_tool_tasks_inject_the_tool_schema_into_distill_and_verify():
    task = _edv_task(True)
    schema = '{"description": "Look an order up.", "name": "get_order", "parameters": {"properties": {"id": {"type": "string"}}, "type": "object"}}'
    assert render_tools(task) == schema
    two = replace(task, tools=task.tools * 2)
    assert render_tools(two) == schema + "\n" + schema
    system, _ = distill_messages(task, _edv_candidates(), max_items=2, max_chars=100, show_outcome=False)
    # Appendix B.1: for tool use, instructions about tool outputs (data integrity, returned fields)
    assert "Tool outputs" in system and "data integrity" in system
    assert f"Tool schema (names, descriptions, arguments):\n{schema}\n" in system
    v_system, _ = verify_messages(task, _edv_candidates(), "ITEM", max_chars=100, show_outcome=False)
    # Appendix B.2: schema alignment of every function name and argument; return fields, which the schema
    # does not carry, against the tool outputs in the trajectories
    rule = (
        "4. Schema-aligned: every function name and argument it mentions exists in this tool schema, and every "
        f"return field it mentions appears in a tool output in the trajectories below:\n{schema}\n"
    )
    assert rule in v_system
    plain, _ = verify_messages(_edv_task(False), _edv_candidates(), "ITEM", max_chars=100, show_outcome=False)
    assert "Schema-aligned" not in plain and "{" not in plain and "}" not in plain


def test_the_verify_prompt_is_a_default_reject_audit_of_one_memory_against_the_trajectories():
    system, user = verify_messages(
        _edv_task(False), _edv_candidates(), "# Memory Item\n## Title T", max_chars=30, show_outcome=True
    )
    # Appendix B.2: an exceptionally strict auditor, default reject, grounding, specificity, density
    for phrase in (
        "exceptionally strict auditor",
        "Your default is REJECT",
        "1. Grounded",
        "2. Specific and non-obvious",
        "3. Dense",
        "If any check fails or you are unsure, reject.",
        "Verdict: APPROVE or REJECT",
    ):
        assert phrase in system, phrase
    first = render_trajectory(_edv_candidates()[0].trajectory, max_chars=30)
    assert user == (
        "## Task\nRefund the order.\n\n## Trajectories\n"
        f"### Candidate 1 (executor 1; outcome: success)\n{first}\n\n"
        "### Candidate 2 (executor 2; outcome: unknown)\nInitial observation: second\n\n"
        "## Candidate memory\n# Memory Item\n## Title T"
    )
    _, hidden = verify_messages(_edv_task(False), _edv_candidates(), "I", max_chars=30, show_outcome=False)
    assert "outcome" not in hidden


def test_the_judge_sees_numbered_attempts_without_outcomes_or_executors():
    system, user = judge_messages(_edv_task(True), _edv_candidates(), max_chars=28)
    first = render_trajectory(_edv_candidates()[0].trajectory, max_chars=28)
    assert user == (
        f"## Task\nRefund the order.\n\n## Attempts\n### Attempt 1\n{first}\n\n### Attempt 2\nInitial observation: second"
    )
    assert system.endswith("Reply in exactly this format:\nReason: <one paragraph>\nBest: <attempt number>")


# -- G-Memory's and ConMem's prompts against the original repositories --------------------------------
# github.com/bingreeky/GMemory at 7b581c5, mas/memory/mas_memory/prompt.py (format_rules_operation_template,
# finetune_insights_suffix, the critique user prompts' closing paragraphs); github.com/FA66666/ConMemCode at
# fc896f1, mas_core/memory/backbone/conmem/prompts.py (output tags, user-prompt layout, card JSON shape).

_GMEMORY_OPERATIONS = (
    "<OPERATION> <RULE NUMBER>: <RULE> (e.g. ADD: xxx, EDIT/REMOVE/AGREE 1: xxx)\n\n"
    "The available operations are: **AGREE (if the existing rule is strongly relevant for the task), REMOVE (if one "
    "existing rule is contradictory or similar/duplicated to other existing rules), EDIT (if any existing rule is not "
    "general enough or can be enhanced, rewrite and improve it), ADD (add new rules that are very different from "
    "existing rules and relevant for other tasks). Each needs to CLOSELY follow their corresponding formatting below "
    "(any existing rule not edited, not agreed, nor removed is considered copied)**:\n\n"
    "AGREE <EXISTING RULE NUMBER>: <EXISTING RULE>\n"
    "REMOVE <EXISTING RULE NUMBER>: <EXISTING RULE>\n"
    "EDIT <EXISTING RULE NUMBER>: <NEW MODIFIED RULE>\n"
    "ADD: <NEW RULE>\n\n"
    "Do not mention the trials in the rules because all the rules should be GENERALLY APPLICABLE. Each rule should be "
    "concise and easy to follow. Any operation can be used MULTIPLE times. Do at most 4 operations and each existing "
    "rule can only get a maximum of 1 operation. "
)


def test_g_memory_keeps_the_original_rule_operation_format_and_full_suffix_verbatim():
    assert gm.RULE_OPERATIONS == _GMEMORY_OPERATIONS
    assert gm.FULL_SUFFIX == (
        "Focus on REMOVE or EDIT or AGREE rules first, and stop ADD rule unless the new rule is VERY insightful and "
        "different from EXISTING RULES.\n"
    )
    compare = gm.COMPARE_USER.format(
        task1="T1", trajectory1="J1", fail_reason="R", task2="T2", trajectory2="J2", rules="1. r"
    )
    success = gm.SUCCESS_USER.format(history="H", rules="1. r")
    assert compare.endswith(
        "By examining and contrasting to the successful trial, and the list of existing rules, you can perform the "
        "following operations: add, edit, remove, or agree so that the new list of rules is GENERAL and HIGH LEVEL "
        "critiques of the failed trial or proposed way of Thought so they can be used to avoid similar failures when "
        "encountered with different questions in the future. Have an emphasis on critiquing how to perform better "
        "Thought and Action. Follow the below format:\n" + _GMEMORY_OPERATIONS
    )
    assert success.endswith(
        "By examining the successful trials, and the list of existing rules, you can perform the following "
        "operations: add, edit, remove, or agree so that the new list of rules are general and high level insights of "
        "the successful trials or proposed way of Thought so they can be used as helpful tips to different tasks in "
        "the future. Have an emphasis on tips that help the agent perform better Thought and Action. Follow the below "
        "format:\n" + _GMEMORY_OPERATIONS
    )
    assert "## Trial Task 1 (success):\nT1\nJ1\n\n## Trial Task 2 (fail):\n### Failed reason\nR\n" in compare
    assert "## Here are the EXISTING RULES:\n1. r\n\nBy examining and contrasting to the successful trial" in compare
    assert (
        "## Here are the trials:\nH\n\n## Here are the EXISTING RULES:\n1. r\n\nBy examining the successful trials"
        in success
    )


def test_every_operation_the_g_memory_format_shows_is_read_by_its_parser():
    block = _GMEMORY_OPERATIONS.split(
        "below (any existing rule not edited, not agreed, nor removed is considered copied)**:\n\n"
    )[1]
    lines = block.split("\n\n")[0].splitlines()
    reply = "\n".join(
        re.sub(r"<[A-Z ]*RULE>", "Check the goal first.", line.replace("<EXISTING RULE NUMBER>", "2")) for line in lines
    )
    assert [(o.kind, o.number, o.text) for o in parse_operations(reply)] == [
        ("AGREE", 2, "Check the goal first."),
        ("REMOVE", 2, "Check the goal first."),
        ("EDIT", 2, "Check the goal first."),
        ("ADD", None, "Check the goal first."),
    ]
    # the merge prompt's list format is what the merge step reads, and its limit is shown
    assert numbered_list(gm.MERGE_SYSTEM.split("one short sentence per insight:\n")[1]) == ["Insight 1", "Insight 2"]
    assert "no more than 3 refined insights" in gm.MERGE_USER.format(rules="a\nb", limit=3)
    assert gm.RELEVANCE_USER.format(trajectory="J", task="T").endswith(
        "Ongoing task:\nT\nYour output format should be:\nScore: "
    )


def test_conmem_prompts_ask_for_the_tags_its_parsers_read_and_lay_out_the_user_turn_as_the_original():
    for system, user, tag in (
        (cm.COMPRESS_SYSTEM.format(max_tokens=300), cm.COMPRESS_USER, "compressed_trajectory"),
        (cm.REFLECT_SYSTEM, cm.REFLECT_USER, "reflection"),
        (cm.EXTRACT_SYSTEM, cm.EXTRACT_USER, "cards"),
        (cm.MERGE_SYSTEM, cm.MERGE_USER, "merged_card"),
    ):
        assert f"Wrap the output in <{tag}> tags" in system and f"</{tag}>" in system
        assert user.endswith(f"<{tag}>")
    assert "in under 300 tokens" in cm.COMPRESS_SYSTEM.format(max_tokens=300)
    assert cm.COMPRESS_USER.format(task="T", trajectory="J") == (
        "<task>T</task>\n\n<trajectory>\nJ\n</trajectory>\n\n<compressed_trajectory>"
    )
    assert cm.REFLECT_USER.format(task="T", trajectory="J") == (
        "<task>T</task>\n\n<outcome>failure</outcome>\n\n<trajectory>\nJ\n</trajectory>\n\n<reflection>"
    )
    assert cm.EXTRACT_USER.format(task="T", outcome="success", trajectory="J", existing="\nE\n") == (
        "<task>T</task>\n\n<outcome>success</outcome>\n\n<trajectory>\nJ\n</trajectory>\n\nE\n\n<cards>"
    )
    assert cm.MERGE_USER.format(cards="C") == "<cards_to_merge>\nC\n</cards_to_merge>\n\n<merged_card>"


def test_conmem_prompt_templates_are_what_its_parsers_score_and_read():
    # the reflection template's four headings are the four marks the reflection quality counts
    assert reflection_quality(tagged(cm.REFLECT_SYSTEM, "reflection")) >= 0.8
    # the card the extraction prompt shows is a JSON array of one card in the original's shape, with the
    # sections ConMem stores
    [card] = extract_json(tagged(cm.EXTRACT_SYSTEM, "cards"))
    assert set(card) == {
        "structured_content",
        "trigger_semantics",
        "summary",
        "evidence",
        "source_agent",
        "source_steps",
    }
    assert tuple(card["structured_content"]) == SECTIONS and card["source_steps"] == [1, 2]
    merged = tagged(cm.MERGE_SYSTEM, "merged_card")
    assert all(f'"{key}"' in merged for key in ("structured_content", "trigger_semantics", "summary", "evidence"))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet=" ab\n\t", max_size=80), st.integers(1, 90))
def test_clip_and_one_line_never_exceed_their_budget(text, budget):
    clipped, line = clip(text, budget), one_line(text, budget)
    assert len(clipped) <= budget and len(line) <= budget
    stripped = text.strip()
    if len(stripped) <= budget:
        assert clipped == stripped
    elif budget >= 8:  # room for a head, the marker and a tail: the first and last characters are kept
        assert clipped[0] == stripped[0] and clipped[-1] == stripped[-1] and "\n...\n" in clipped
    else:
        assert stripped.endswith(clipped)
    words = " ".join(text.split())
    if len(words) <= budget:
        assert line == words
    else:
        assert line.endswith("...") if budget >= 3 else line == words[:budget]
