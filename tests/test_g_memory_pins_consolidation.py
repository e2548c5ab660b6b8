"""Pins of G-Memory's periodic insight consolidation (issue 17): the finetuning cadence, the critique
prompts and what their AGREE/REMOVE/EDIT/ADD replies do, and the merge of each task cluster's rules,
driven by a scripted model that records every call."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

import baseline_mocks as bm
import pytest

from aecg_bench import registry
from aecg_bench.audit import AuditLog
from aecg_bench.contracts import MemoryServices
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.llm.providers import ContextLimitError
from baselines.g_memory import prompts as GP
from baselines.g_memory.insights import Operation, parse_operations
from baselines.llm_calls import stable_seed
from baselines.trajectory_text import clip

NEVER = {"start_insights_threshold": 10_000, "merge_every": 10_000}  # no consolidation unless a test asks


@dataclass
class _Reply:
    text: str


def _key(system: str) -> str:
    if system == GP.KEY_STEPS_SYSTEM:
        return "key_steps"
    if system == GP.MISTAKES_SYSTEM:
        return "mistakes"
    if system == GP.MERGE_SYSTEM:
        return "merge"
    if system == GP.RELEVANCE_SYSTEM:
        return "relevance"
    if system.startswith(GP.COMPARE_SYSTEM):
        return "compare"
    if system.startswith(GP.SUCCESS_SYSTEM):
        return "success"
    raise AssertionError(f"unexpected prompt: {system[:80]}")


class Scripted:
    """The model: records every call; answers per prompt kind with a fixed text, a callable of the
    call number (1-based, per kind) and user text, or an exception to raise."""

    def __init__(self, **replies):
        self.replies = replies
        self.calls: list[dict] = []
        self.steps = 0

    def complete(self, messages, **kwargs):
        system, user = messages[0]["content"], messages[1]["content"]
        key = _key(system)
        self.calls.append({"key": key, "system": system, "user": user, **kwargs})
        if key == "key_steps" and key not in self.replies:
            self.steps += 1
            return _Reply(f"Key step of trial {self.steps - 1}.")
        reply = self.replies.get(key, {"mistakes": "It stopped too early."}.get(key, "nothing usable"))
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            reply = reply(sum(c["key"] == key for c in self.calls), user)
        return _Reply(reply)

    def of(self, key: str) -> list[dict]:
        return [c for c in self.calls if c["key"] == key]


def gmem(llm: Scripted, seed: int = 0, **params):
    services = MemoryServices(llm=llm, embedder=Embedder("lexical"), audit=AuditLog(), seed=seed)
    return registry.build("memory", "g_memory", params, services=services), services


TASKS = [
    "Sort the list of numbers in ascending order",
    "Translate the French sentence into German",
    "Count the vowels of the given word",
    "Reverse the characters of the string",
    "Compute the factorial of the integer",
    "Find the largest prime below the bound",
    "Merge the two dictionaries into one",
]


def observe(memory, outcomes: list[bool], texts: list[str] | None = None) -> list[dict]:
    texts = texts or TASKS
    for i, ok in enumerate(outcomes):
        memory.observe(bm.episode(texts[i % len(texts)], f"t{len(memory.trials)}", ok))
    return list(memory.trials.values())


def rule(memory, text: str, tasks: list[str], score: float = 2) -> str:
    r = memory.book.add(text, tasks, score)
    memory.book.events.clear()
    return r["id"]


# -- one critique round: the prompts and what the replies do ---------------------------------------------------


def test_a_round_compares_the_success_with_the_failure_then_studies_the_successes_and_applies_the_edits():
    llm = Scripted(
        compare="AGREE 1: still right.\nADD: Check the goal before finishing, because early stops fail.",
        success="EDIT 2: Read the whole task first, because details matter.\nREMOVE 1: no longer needed.",
    )
    memory, services = gmem(
        llm,
        start_insights_threshold=2,
        rounds_per_insights=2,
        insights_point_num=1,
        merge_every=10_000,
        max_tokens=321,
    )
    s, f = observe(memory, [True, False])
    first = rule(memory, "Look before acting, because the state matters.", [s["task_main"]])
    second = rule(memory, "Read the task, because it says what to do.", [f["task_main"]])
    rule(memory, "Unrelated, because it is linked to no task here.", ["another task"])
    llm.calls.clear()
    memory.maintain(1)
    assert [c["key"] for c in llm.calls] == ["compare", "success"]
    shown = "1. Look before acting, because the state matters.\n2. Read the task, because it says what to do."
    compare, success = llm.calls
    assert compare["system"] == GP.COMPARE_SYSTEM and success["system"] == GP.SUCCESS_SYSTEM
    assert compare["user"] == GP.COMPARE_USER.format(
        task1=s["task_main"],
        trajectory1=s["trajectory"],
        fail_reason="It stopped too early.",
        task2=f["task_main"],
        trajectory2=f["trajectory"],
        rules=shown,
    )
    history = f"task0:\n{s['task_main']}\nKey step of trial 0."
    assert success["user"] == GP.SUCCESS_USER.format(history=history, rules=shown)
    assert all(c["max_tokens"] == 321 for c in llm.calls)
    rules = {r["id"]: r for r in memory.book.rules}
    both = [s["task_main"], f["task_main"]]
    # AGREE 1 (+1, linked to both tasks), then REMOVE 1 from the success study (-1, contradicted by the success)
    assert rules[first] == {
        "id": first,
        "rule": "Look before acting, because the state matters.",
        "score": 2,
        "positive": both,
        "negative": [s["task_main"]],
    }
    edited = rules[second]
    assert (edited["rule"], edited["score"], edited["positive"]) == (
        "Read the whole task first, because details matter.",
        3,
        [f["task_main"], s["task_main"]],
    )
    added = memory.book.rules[-1]
    assert (added["rule"], added["score"], added["positive"], added["negative"]) == (
        "Check the goal before finishing, because early stops fail.",
        2,
        both,
        [],
    )
    audited = [(e["event"], e.get("memory_id"), e.get("op")) for e in services.audit.read()]
    assert audited[-4:] == [
        ("critique", first, "AGREE"),
        ("admit", added["id"], None),
        ("critique", first, "REMOVE"),
        ("critique", second, "EDIT"),
    ]


# -- the cadence ------------------------------------------------------------------------------------------------


def _merge_echo(n, user):
    return "1. Merged rule, because merging helps."


def test_finetuning_starts_at_the_threshold_and_repeats_every_rounds_trials_and_merging_every_merge_every():
    llm = Scripted(success="nothing usable", merge=_merge_echo)
    memory, services = gmem(llm, start_insights_threshold=4, rounds_per_insights=2, insights_point_num=1, merge_every=3)
    ts = observe(memory, [True])
    rule(memory, "Start rule, because it starts.", [TASKS[0]])  # one cluster: one merge call
    rounds = {}
    for size in range(2, 10):
        llm.calls.clear()
        memory.maintain(size)  # the trials of the previous size
        rounds[size - 1] = [c["key"] for c in llm.calls]
        assert memory.maintained_size == size - 1
        observe(memory, [True], [TASKS[size % len(TASKS)]])
    assert ts and rounds == {
        1: [],
        2: [],
        3: ["merge"],
        4: ["success"],
        5: [],
        6: ["success", "merge"],
        7: [],
        8: ["success"],
    }
    assert sum(e["event"] == "merge" for e in services.audit.read()) == 2


def test_a_late_call_runs_every_round_that_came_due_each_with_its_own_seed_and_merges_once():
    llm = Scripted(success="nothing usable", merge=_merge_echo)
    memory, _ = gmem(llm, start_insights_threshold=4, rounds_per_insights=2, insights_point_num=1, merge_every=3)
    observe(memory, [True] * 7)
    rule(memory, "Start rule, because it starts.", [TASKS[0]])
    llm.calls.clear()
    memory.maintain(1)  # sizes 1..7 came due: finetunes at 4 and 6, merges at 3 and 6 (one merge)
    assert [c["key"] for c in llm.calls] == ["success", "success", "merge"]
    assert memory.maintained_size == 7
    llm.calls.clear()
    memory.maintain(2)
    assert llm.calls == []


def test_each_round_draws_its_trials_from_a_generator_seeded_by_the_run_seed_and_the_trial_count():
    def histories(seed: int) -> list[str]:
        llm = Scripted(success="nothing usable")
        memory, _ = gmem(llm, seed, start_insights_threshold=7, rounds_per_insights=7, insights_point_num=3)
        observe(memory, [True] * 7)
        llm.calls.clear()
        memory.maintain(1)
        return [c["user"] for c in llm.of("success")]

    def own(seed: int) -> list[str]:
        rng = random.Random(stable_seed(seed, "g_memory", "finetune", 7))
        picks = []
        for _ in range(3):
            picks.append(rng.choice([f"gm-t-{i}" for i in range(7)]))
            rng.shuffle([0, 1, 2])
        return picks

    runs = {seed: histories(seed) for seed in range(4)}
    assert runs[0] == histories(0) and len({tuple(h) for h in runs.values()}) > 1
    for seed, users in runs.items():
        # the drawn trial is the nearest success to itself, so it is in the history it is compared in
        for pick, user in zip(own(seed), users, strict=True):
            assert f"Key step of trial {pick.split('-')[-1]}." in user


# -- merging ----------------------------------------------------------------------------------------------------


def test_each_task_clusters_rules_are_merged_in_batches_of_ten_and_replace_every_rule():
    llm = Scripted(merge=lambda n, user: f"1. Merged rule {n}, because merging helps.\n2. Second of {n}, because.")
    memory, services = gmem(llm, merge_every=3, start_insights_threshold=10_000, max_tokens=222)
    a, b, c = (t["task_main"] for t in observe(memory, [True, True, False]))
    old = [rule(memory, f"Rule {i} of the first task, because {i}.", [a]) for i in range(12)]
    old.append(rule(memory, "Rule of the second task, because.", [b], score=9))
    old.append(rule(memory, "Rule of no stored task, because.", ["elsewhere"]))
    clusters = memory.graph.components()
    assert sorted(clusters) == sorted([[a], [b], [c]])
    llm.calls.clear()
    memory.maintain(1)
    users = [x["user"] for x in llm.of("merge")]
    batches = {
        a: [
            GP.MERGE_USER.format(
                rules="\n".join(f"Rule {i} of the first task, because {i}." for i in range(10)), limit=3
            ),
            GP.MERGE_USER.format(
                rules="Rule 10 of the first task, because 10.\nRule 11 of the first task, because 11.", limit=1
            ),
        ],
        b: [GP.MERGE_USER.format(rules="Rule of the second task, because.", limit=1)],
        c: [],
    }
    assert users == [u for (node,) in clusters for u in batches[node]]
    assert all(x["max_tokens"] == 222 for x in llm.calls)
    n = 0
    expected = []
    for (node,) in clusters:
        for _ in batches[node]:
            n += 1
            expected += [(f"Merged rule {n}, because merging helps.", [node]), (f"Second of {n}, because.", [node])]
    assert [(r["rule"], r["positive"]) for r in memory.book.rules] == expected
    assert all(r["score"] == 2 and r["negative"] == [] for r in memory.book.rules)
    new = [r["id"] for r in memory.book.rules]
    assert new == [f"gm-i-{i}" for i in range(14, 20)]
    merge = [e for e in services.audit.read() if e["event"] == "merge"]
    assert [(e["replaced"], e["into"]) for e in merge] == [(old, new)]


def test_an_unusable_merge_reply_keeps_the_batch_and_an_empty_book_asks_nothing():
    llm = Scripted(merge="I cannot merge these.")
    memory, services = gmem(llm, merge_every=1, start_insights_threshold=10_000)
    (t,) = observe(memory, [True])
    memory.maintain(1)
    assert llm.of("merge") == [] and not any(e["event"] == "merge" for e in services.audit.read())
    observe(memory, [True], [TASKS[0]])
    rule(memory, "Keep this one, because.", [t["task_main"]], score=7)
    memory.maintain(2)
    assert len(llm.of("merge")) == 1
    assert [(r["rule"], r["score"], r["positive"]) for r in memory.book.rules] == [
        ("Keep this one, because.", 2, [t["task_main"]])
    ]
    skips = [e for e in services.audit.read() if e["event"] == "skip"]
    assert [(e["purpose"], e["reason"], e["reply"]) for e in skips] == [
        ("merge", "unparsable", "I cannot merge these.")
    ]


def test_a_failure_half_way_leaves_the_insights_and_the_cadence_as_they_were():
    llm = Scripted(
        success="ADD: A new rule from the successes, because they worked.", merge=RuntimeError("provider down")
    )
    memory, services = gmem(llm, start_insights_threshold=2, rounds_per_insights=2, insights_point_num=1, merge_every=2)
    (t, _) = observe(memory, [True, True], [TASKS[0]])  # one task: one cluster
    rid = rule(memory, "Old rule, because.", [t["task_main"]])
    before = memory.book.state()
    n_events = len(services.audit.read())
    with pytest.raises(RuntimeError):
        memory.maintain(1)
    assert memory.book.state() == before and memory.maintained_size == 0
    assert len(services.audit.read()) == n_events
    llm.replies["merge"] = "1. Merged, because."
    memory.maintain(1)  # redone
    assert [r["rule"] for r in memory.book.rules] == ["Merged, because."] and memory.maintained_size == 2
    assert rid not in {r["id"] for r in memory.book.rules}
    admitted = [e.get("rule") for e in services.audit.read()[n_events:] if e["event"] == "admit"]
    assert admitted == ["A new rule from the successes, because they worked.", "Merged, because."]


# -- which trials and rules a round shows -----------------------------------------------------------------------


def _round(outcomes, texts=None, seed=0, **params):
    llm = Scripted(**params.pop("replies", {}))
    n = len(outcomes)
    memory, services = gmem(llm, seed, start_insights_threshold=n, rounds_per_insights=n, **params)
    trials = observe(memory, outcomes, texts)
    return memory, services, llm, trials


def _shown_trials(user: str) -> list[str]:
    return re.findall(r"Key step of trial (\d+)\.", user)


def test_a_round_shows_the_three_nearest_successes_and_compares_them_with_the_nearest_failure():
    memory, _, llm, trials = _round([True, True, True, True, False, False], insights_point_num=3)
    memory.maintain(1)
    assert len(llm.of("success")) == 3 and len(llm.of("compare")) == 3  # one failure per drawn trial
    for call in llm.of("success"):
        assert len(_shown_trials(call["user"])) == 3 and len(set(_shown_trials(call["user"]))) == 3
    for call in llm.of("compare"):
        failed = [t["task_main"] for t in trials if f"Start of {t['task_main']}." in call["user"]]
        assert len(failed) == 2 and failed[1] in {trials[4]["task_main"], trials[5]["task_main"]}


def test_the_drawn_trial_joins_its_own_group_when_equally_near_trials_push_it_out():
    """G-Memory compares the drawn trial itself: it is added when not among its nearest (ties of one task)."""
    seen_fourth = False
    for seed in range(6):
        memory, _, llm, _ = _round([True] * 4, [TASKS[0]], seed, insights_point_num=4)
        memory.maintain(1)
        for call in llm.of("success"):
            shown = _shown_trials(call["user"])
            assert len(shown) == len(set(shown)) and set(shown) >= {"0", "1", "2"}
            if len(shown) == 4:
                seen_fourth = True
                assert "3" in shown
    assert seen_fourth


def test_the_successes_are_studied_in_a_shuffled_order():
    orders = set()
    for seed in range(8):
        memory, _, llm, _ = _round([True] * 3, [TASKS[0]], seed, insights_point_num=1)
        memory.maintain(1)
        (call,) = llm.of("success")
        shown = _shown_trials(call["user"])
        assert sorted(shown) == ["0", "1", "2"]
        history = "\n".join(f"task{i}:\n{TASKS[0]}\nKey step of trial {n}." for i, n in enumerate(shown))
        assert call["user"] == GP.SUCCESS_USER.format(history=history, rules="(none yet)")
        orders.add(tuple(shown))
    assert len(orders) > 1


def test_a_round_shows_the_rules_linked_to_at_least_half_of_its_trials():
    memory, _, llm, trials = _round([True, True, False], insights_point_num=1)
    s1, s2, f = (t["task_main"] for t in trials)
    rule(memory, "Linked to the failure only, because.", [f])
    rule(memory, "Linked to two of three, because.", [s1, f])
    rule(memory, "Linked to all, because.", [s2, s1, f])
    memory.maintain(1)
    (call,) = llm.of("compare")
    assert "1. Linked to all, because.\n2. Linked to two of three, because." in call["user"]
    assert "Linked to the failure only" not in call["user"]


def test_with_no_related_rules_the_prompt_says_none_yet():
    memory, _, llm, _ = _round([True], insights_point_num=1)
    rule(memory, "Unrelated, because.", ["some other task"])
    memory.maintain(1)
    (call,) = llm.of("success")
    history = f"task0:\n{TASKS[0]}\nKey step of trial 0."
    assert call["user"] == GP.SUCCESS_USER.format(history=history, rules="(none yet)")


@pytest.mark.parametrize(("n_rules", "full_suffix", "remove_cost"), [(3, True, 3), (2, False, 3), (1, False, 1)])
def test_a_book_over_its_limit_discourages_adding_and_removing_costs_more_at_the_limit(
    n_rules, full_suffix, remove_cost
):
    memory, _, llm, trials = _round(
        [True, False],
        insights_point_num=1,
        max_rules=2,
        replies={"compare": "REMOVE 1: wrong.", "success": "nothing usable"},
    )
    ids = [rule(memory, f"Rule {i}, because.", [t["task_main"] for t in trials], score=9) for i in range(n_rules)]
    memory.maintain(1)
    suffix = GP.FULL_SUFFIX if full_suffix else ""
    assert llm.of("compare")[0]["system"] == GP.COMPARE_SYSTEM + suffix
    assert llm.of("success")[0]["system"] == GP.SUCCESS_SYSTEM + suffix
    assert memory.book.by_id(ids[0])["score"] == 9 - remove_cost


def test_an_unusable_critique_is_audited_and_changes_nothing_and_spent_rules_go_in_the_same_round():
    memory, services, _, trials = _round(
        [True, False], insights_point_num=1, replies={"compare": "REMOVE 1: wrong.", "success": "No idea."}
    )
    mains = [t["task_main"] for t in trials]
    spent = rule(memory, "About to go, because.", mains, score=1)
    kept = rule(memory, "Stays, because.", mains, score=5)
    memory.maintain(1)
    assert [r["id"] for r in memory.book.rules] == [kept] and memory.book.by_id(kept)["score"] == 5
    events = [(e["event"], e.get("memory_id"), e.get("purpose"), e.get("reply")) for e in services.audit.read()]
    assert ("skip", None, "critique", "No idea.") in events
    assert events.index(("forget", spent, None, None)) > events.index(("skip", None, "critique", "No idea."))


def test_prompts_too_long_for_the_model_are_audited_under_their_step_and_change_nothing():
    memory, services, _, trials = _round(
        [True, False],
        insights_point_num=1,
        merge_every=2,
        replies={
            "compare": ContextLimitError("too long"),
            "success": ContextLimitError("too long"),
            "merge": ContextLimitError("too long"),
        },
    )
    rule(memory, "Kept through it all, because.", [trials[0]["task_main"]], score=5)
    memory.maintain(1)
    skips = [(e["purpose"], e["reason"]) for e in services.audit.read() if e["event"] == "skip"]
    assert skips == [("critique", "context_limit"), ("critique", "context_limit"), ("merge", "context_limit")]
    assert [(r["rule"], r["score"]) for r in memory.book.rules] == [("Kept through it all, because.", 2)]


def test_operation_lines_need_a_final_stop_and_add_takes_no_number():
    assert parse_operations("ADD: Ends without a stop") == []
    assert parse_operations("REMOVE 2: Ends without a stop") == []
    # as in G-Memory's pattern, a category prefix ("Xxx: ") may span lines: the line without a stop is not lost alone
    assert parse_operations("REMOVE 2: Ends without a stop\nAGREE 1: Fine.") == [Operation("REMOVE", 2, "Fine.")]
    assert parse_operations("ADD 3: A new rule, because.") == [Operation("ADD", None, "A new rule, because.")]


# -- what a trial stores, and state that does not leak ---------------------------------------------------------


def test_a_conversation_is_stored_and_recalled_by_its_opening_whichever_came_last():
    memory, _ = gmem(Scripted(), successful_topk=1, **NEVER)
    # the longer opening is the one asked for: without the opening the query is nearer the shorter key
    long_opening = "exchange my pair of running shoes for a larger size please"
    for task_id, opening in [("shoes", long_opening), ("chairs", "cancel chairs")]:
        ep = bm.episode("Help the customer per the policy", task_id, True)
        ep.trajectory.initial_observation = opening
        memory.observe(replace(ep, task=replace(ep.task, mode="conversation")))
    assert memory.trials["gm-t-0"]["task_main"] == f"{long_opening}\n\nHelp the customer per the policy"
    query = bm.query("Help the customer per the policy", "q", context="exchange my running shoes")
    query = replace(query, task=replace(query.task, mode="conversation"))
    assert [i.metadata["source_task"] for i in memory.recall(query)] == ["shoes"]


def test_steps_with_negative_reward_are_left_out_of_the_stored_trajectory():
    memory, _ = gmem(Scripted(), **NEVER)
    ep = bm.episode(TASKS[0], "t", True, actions=("look", "break it", "finish"))
    ep.trajectory.steps[1] = replace(
        ep.trajectory.steps[1], observation=replace(ep.trajectory.steps[1].observation, reward=-1.0)
    )
    memory.observe(ep)
    shown = memory.trials["gm-t-0"]["trajectory"]
    assert "Act 1: look" in shown and "Act 3: finish" in shown and "break it" not in shown


def test_distillation_replies_are_clipped_and_a_prompt_too_long_is_audited_under_its_step():
    llm = Scripted(key_steps="x" * 3000, mistakes=ContextLimitError("too long"))
    memory, services = gmem(llm, **NEVER)
    memory.observe(bm.episode(TASKS[0], "a", False))
    trial = memory.trials["gm-t-0"]
    assert trial["key_steps"] == clip("x" * 3000, 2000) and trial["fail_reason"] == ""
    llm.replies["key_steps"] = ContextLimitError("too long")
    memory.observe(bm.episode(TASKS[1], "b", True))
    assert memory.trials["gm-t-1"]["key_steps"] == ""
    skips = [(e["purpose"], e["reason"]) for e in services.audit.read() if e["event"] == "skip"]
    assert skips == [("mistakes", "context_limit"), ("key_steps", "context_limit")]
    admits = [(e["memory_id"], e["success"]) for e in services.audit.read() if e.get("kind") == "trial"]
    assert admits == [("gm-t-0", False), ("gm-t-1", True)]


def test_query_graph_edges_carry_the_similarity_to_six_places():
    memory, _ = gmem(Scripted(), edge_similarity=0.1, **NEVER)
    observe(memory, [True, True], ["Sort the list of numbers", "Sort the list of integers quickly"])
    a, b = (t["task_main"] for t in memory.trials.values())
    sim = memory.index.similarity(memory.index.embed(b), ["gm-t-0"])["gm-t-0"]
    assert round(sim, 7) != round(sim, 6)  # the case tells six places from seven
    assert memory.graph.adj[b][a] == round(sim, 6) and memory.graph.adj[a][b] == round(sim, 6)


def test_a_saved_state_does_not_change_with_the_memory_nor_the_memory_with_it():
    memory, _ = gmem(Scripted(), **NEVER)
    (t,) = observe(memory, [True])
    rid = rule(memory, "Rewarded later, because.", [t["task_main"]])
    state = memory.state_dict()
    memory.observe(bm.episode(TASKS[0], "b", True, recalled=(rid,)))
    assert state["insights"]["rules"][0]["score"] == 2 and memory.book.by_id(rid)["score"] == 3
    assert set(state["trials"][0]) == set(memory.trials["gm-t-0"])
    state["trials"][0]["graph"]["nodes"][0]["agent"] = "someone else"
    assert memory.trials["gm-t-0"]["graph"]["nodes"][0]["agent"] == "solver"
    fresh, _ = gmem(Scripted(), **NEVER)
    fresh.load_state_dict(state)
    state["insights"]["rules"][0]["score"] = 99
    state["trials"][0]["graph"]["nodes"][0]["agent"] = "a third one"
    assert (
        fresh.book.by_id(rid)["score"] == 2 and fresh.trials["gm-t-0"]["graph"]["nodes"][0]["agent"] == "someone else"
    )


# -- recall: the trial neighbourhood and the insights it ranks --------------------------------------------------

Q = "alpha beta gamma delta epsilon"


def _sims(memory, text: str) -> dict[str, float]:
    return memory.index.similarity(memory.index.embed(text), list(memory.trials))


def test_a_trial_exactly_at_the_threshold_is_recalled():
    probe, _ = gmem(Scripted(), **NEVER)
    observe(probe, [True], ["alpha beta gamma zeta"])
    at = _sims(probe, Q)["gm-t-0"]
    assert 0 < at < 1
    memory, _ = gmem(Scripted(), threshold=at, **NEVER)
    observe(memory, [True], ["alpha beta gamma zeta"])
    assert [i.id for i in memory.recall(bm.query(Q, "q"))] == ["gm-t-0"]


def test_insights_count_the_four_nearest_successes_and_two_nearest_failures():
    texts = [
        "alpha beta gamma delta s1",  # successes, nearest first
        "alpha beta gamma s2 t2",
        "alpha beta s3 t3 u3",
        "alpha s4 t4 u4 v4",
        "alpha s5 t5 u5 v5 w5 x5",
        "alpha beta gamma delta f1 g1",  # failures, nearest first
        "alpha beta f2 g2 h2 i2",
        "alpha f3 g3 h3 i3 j3 k3",
    ]
    memory, _ = gmem(Scripted(), insights_topk=1, edge_similarity=2.0, **NEVER)
    observe(memory, [True] * 5 + [False] * 3, texts)
    sims = _sims(memory, Q)
    ids = [f"gm-t-{i}" for i in range(8)]
    assert sorted(ids[:5], key=lambda t: -sims[t]) == ids[:5] and sorted(ids[5:], key=lambda t: -sims[t]) == ids[5:]

    def top_rule(*links: str) -> str:
        memory.book = type(memory.book)()
        for i, text in enumerate(links):
            memory.book.add(f"Rule {i}, because.", [text])
        return next(i.text for i in memory.recall(bm.query(Q, "q")) if i.kind == "insight")

    assert top_rule(texts[4], texts[0]) == "Rule 1, because."  # the fifth success does not count
    assert top_rule(texts[7], texts[0]) == "Rule 1, because."  # nor the third failure
    assert top_rule(texts[5], texts[0]) == "Rule 0, because."  # the nearest failure does (ties keep book order)


def _neighbourhood(**params):
    """Nearest task N1 failed, the next N2 succeeded; M succeeded and is linked to N2 only, while T (not
    linked) is nearer the query than M."""
    texts = {
        "N1": "alpha beta gamma delta epsilon zeta",
        "N2": "alpha beta gamma delta eta theta",
        "T": "alpha beta gamma iota kappa lambda",
        "M": "alpha mu nu xi omicron pi",
    }
    memory, _ = gmem(Scripted(), edge_similarity=2.0, **NEVER | params)
    observe(memory, [False, True, True, True], list(texts.values()))
    memory.graph.add_edge(texts["N2"], texts["M"], 0.9)
    ids = dict(zip(texts, memory.trials, strict=True))
    sims = _sims(memory, Q)
    assert sims[ids["N1"]] > sims[ids["N2"]] > sims[ids["T"]] > sims[ids["M"]] > 0
    return memory, ids, sims


def test_the_graph_is_entered_at_as_many_nearest_tasks_as_half_the_trials_asked_for():
    memory, ids, _ = _neighbourhood()
    qvec = memory.index.embed(Q)
    successes, _ = memory._retrieve_trials(qvec, 2, 2, memory.index.rank(qvec))
    assert [t for t, _ in successes] == [ids["N2"], ids["M"]]  # entered at N1 and N2: N2's neighbour M, no top-up


def test_enough_graph_trials_mean_no_top_up_even_when_the_threshold_drops_some():
    memory, ids, sims = _neighbourhood()
    memory.params = memory.params.model_copy(update={"threshold": (sims[ids["T"]] + sims[ids["M"]]) / 2})
    qvec = memory.index.embed(Q)
    successes, _ = memory._retrieve_trials(qvec, 2, 2, memory.index.rank(qvec))
    assert [t for t, _ in successes] == [ids["N2"]]


def test_llm_reranking_sees_twice_the_successes_shown():
    llm = Scripted(relevance="7")
    memory, _ = gmem(llm, rerank_with_llm=True, successful_topk=1, **NEVER)
    observe(memory, [True] * 4, ["alpha beta one", "alpha beta two", "alpha beta three", "alpha beta four"])
    llm.calls.clear()
    memory.recall(bm.query("alpha beta", "q"))
    assert [c["key"] for c in llm.calls] == ["relevance", "relevance"]


def test_graph_failures_keep_their_place_ahead_of_nearer_top_ups():
    """Recall looks for twice the failures shown, entering the graph at (2*1 + 2*2) // 2 = 3 nearest tasks:
    the fourth nearest (a failure) comes only from the top-up, after the graph's failure."""
    texts = [
        "alpha beta gamma delta s1",
        "alpha beta gamma s2 t2",
        "alpha beta s3 t3 u3",
        "alpha s4 t4 u4 v4",  # failure, fourth nearest
        "alpha f5 g5 h5 i5 j5 k5",  # failure, far, linked to the third nearest
    ]
    memory, _ = gmem(Scripted(), failed_topk=2, include_failed_trials=True, edge_similarity=2.0, **NEVER)
    observe(memory, [True, True, True, False, False], texts)
    memory.graph.add_edge(texts[2], texts[4], 0.9)
    sims = _sims(memory, Q)
    assert sorted(sims, key=lambda t: -sims[t]) == [f"gm-t-{i}" for i in range(5)]
    assert [i.id for i in memory.recall(bm.query(Q, "q"))] == ["gm-t-0", "gm-t-4", "gm-t-3"]
