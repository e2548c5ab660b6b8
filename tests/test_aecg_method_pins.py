"""AECGMemory's per-task loop pinned through behaviour (issue 17: mutation testing of `aecg/method.py`).

Hand-built team/event/agent decision graphs with the scripted mock model (tests/aecg_fixtures.py): what
recall returns and from which scope, how uses, cross-scope uses and exposure are recorded (and the
exposure window), how success and failure evidence reach memories and skills, that one task supports a
memory once, and the counters `stats()` reports (AECG sec. 3.2-3.3, Alg. 1).
"""

from __future__ import annotations

import dataclasses
import logging

import pytest
from aecg_fixtures import episode, events, make_memory

from aecg_bench.aecg.method import AECGMemory
from aecg_bench.aecg.objects import to_dict
from aecg_bench.errors import ConfigError
from aecg_bench.llm import LLMClient, ModelSpec
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.types import Outcome, RecallQuery, Task

SPLIT = "split the list in halves"


def query(level: str, context: str = "The list is unsorted.", task_type: str = "sort") -> RecallQuery:
    task = Task(id="q", benchmark="hand", instruction="Sort the numbers in the list.", task_type=task_type)
    return RecallQuery(task=task, level=level, agent=f"{level}-agent", role="worker", context=context)  # type: ignore[arg-type]


def grow_skill(mem, level: str = "team") -> str:
    for i in range(3):
        mem.observe(episode(f"grow{i}", [("t0", level, (), (), SPLIT)], True))
    return next(s.id for s in mem.store.active_skills() if s.level == level)


# -- recall ------------------------------------------------------------------------------------


def test_recall_returns_skills_with_their_lineage_and_version_then_memories_of_the_asked_scope():
    mem = make_memory({"recall": {"k_memories": 3}})
    sid = grow_skill(mem)
    mem.observe(episode("m", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    items = mem.recall(query("team"))
    skill = mem.store.skills[sid]
    assert items[0].id == sid and items[0].kind == "skill" and items[0].level == "team"
    assert items[0].metadata == {"lineage": skill.lineage, "version": 1} and items[0].text == skill.text()
    assert items[0].score > 0.05
    mems = [i for i in items if i.kind == "memory"]
    assert mems and all(i.level == "team" and i.text == mem.store.memories[i.id].text for i in mems)
    assert all(i.score is not None and i.score >= 0.05 for i in mems)
    assert mem.recall(query("agent")) == []


def test_recall_is_bounded_by_k_and_the_similarity_floor():
    mem = make_memory({"recall": {"k_skills": 0, "k_memories": 3}})
    grow_skill(mem)
    assert [i.kind for i in mem.recall(query("team"))] == []  # the one memory left is consolidated
    mem.observe(episode("m", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    assert [i.kind for i in mem.recall(query("team"))] == ["memory"]
    strict = make_memory({"recall": {"min_similarity": 1.0}})
    grow_skill(strict)
    assert strict.recall(query("team")) == []


def test_recall_matches_only_the_tail_of_a_long_observation():
    """A narrowed skill excludes "reverse"; a word beyond the last context_chars no longer counts."""
    mem = make_memory({"recall": {"context_chars": 40}})
    sid = grow_skill(mem)
    skill = mem.store.skills[sid]
    skill.content.predicate.none_of.append("zebra")
    near = "zebra " + "." * 10 + " The list is unsorted."
    far = "zebra " + "." * 60 + " The list is unsorted."
    assert sid not in [i.id for i in mem.recall(query("team", near))]
    assert sid in [i.id for i in mem.recall(query("team", far))]


# -- recording uses and exposure ----------------------------------------------------------------


def test_uses_cross_scope_uses_and_exposure_are_recorded_per_task_and_the_exposure_window_keeps_the_latest():
    mem = make_memory({"scope": {"mode": "flat"}, "triage": {"exposure_window": 2, "exposure_discount": 0.5}})
    sid = grow_skill(mem)
    graphs = [
        # recalled at the team node; two event children: reach 1 + 0.5 + 0.5
        [("t0", "team", (), (sid,), SPLIT), ("e1", "event", ("t0",), (), "x"), ("e2", "event", ("t0",), (), "y")],
        # recalled at a team node and (across scopes) at its agent child: reach 1 + 1
        [("t0", "team", (), (sid,), SPLIT), ("a1", "agent", ("t0",), (sid,), "z")],
        # recalled at an agent node only (cross scope): reach 1
        [("t0", "team", (), (), SPLIT), ("a1", "agent", ("t0",), (sid,), "z")],
    ]
    for i, g in enumerate(graphs):
        mem.observe(episode(f"u{i}", g, True))
    skill = mem.store.skills[sid]
    assert skill.uses == 3
    assert skill.exposure == [2.0, 1.0]  # the last two graphs only
    rows = [e["used"] for e in events(mem, "observe")[-3:]]
    assert rows[0] == [{"id": sid, "level": "team", "decisions": 1, "cross_scope": 0, "reach": 2.0}]
    assert rows[1] == [{"id": sid, "level": "team", "decisions": 2, "cross_scope": 1, "reach": 2.0}]
    assert rows[2] == [{"id": sid, "level": "team", "decisions": 1, "cross_scope": 1, "reach": 1.0}]
    c = mem.store.counters
    assert (c.recalled_uses, c.cross_scope_uses) == (4, 2)
    assert c.decisions_with_recall == 4
    assert mem.stats()["cross_scope_use_rate"] == 0.5


def test_a_use_of_an_unknown_id_is_ignored_and_a_task_without_a_label_is_only_audited():
    mem = make_memory()
    mem.observe(episode("x", [("t0", "team", (), ("nope",), SPLIT)], True))
    assert events(mem, "observe")[-1]["used"] == [] and mem.store.counters.decisions_with_recall == 1
    ep = episode("y", [("t0", "team", (), (), SPLIT)], True)
    ep = dataclasses.replace(ep, outcome=Outcome(success=None))
    before = len(mem.store.memories)
    mem.observe(ep)
    assert events(mem, "no_label")[-1]["task"] == "y" and len(mem.store.memories) == before


# -- success evidence ---------------------------------------------------------------------------


def test_a_success_credits_recalled_memories_and_skills_with_audited_belief_updates():
    mem = make_memory()
    sid = grow_skill(mem)
    mem.observe(episode("m", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    other = next(m.id for m in mem.store.memories.values() if m.consolidated_into is None)
    m = mem.store.memories[other]
    pos, support = m.pos, m.support
    skill = mem.store.skills[sid]
    slow = skill.belief.slow
    before = to_dict(skill.belief)
    ep = episode("ok", [("t0", "team", (), (sid, other), SPLIT)], True)
    ep = dataclasses.replace(ep, outcome=Outcome(success=True, value=0.5))
    mem.observe(ep)
    assert m.pos == pos + 0.25 and m.support == support + 1 and m.neg == 0  # its family's half of 0.5
    assert skill.belief.slow.alpha == slow.alpha + 0.25 and skill.belief.slow.beta == slow.beta
    upd = [e for e in events(mem, "belief_update") if e.get("memory") == other][-1]
    assert upd["before"] == {"pos": pos, "neg": 0.0, "support": support}
    assert upd["after"] == {"pos": pos + 0.25, "neg": 0.0, "support": support + 1}
    assert (upd["success"], upd["weight"], upd["task"]) == (True, 0.25, "ok")
    supd = [e for e in events(mem, "belief_update") if e.get("skill") == sid][-1]
    assert (supd["lineage"], supd["weight"], supd["after"]) == (skill.lineage, 0.25, to_dict(skill.belief))
    assert (supd["before"], supd["success"], supd["task"]) == (before, True, "ok")
    adm = events(mem, "admit_success")[-1]
    assert adm["confidence"] == 0.5 and adm["credit"] == {sid: 0.25, other: 0.25}
    assert adm["task"] == "ok" and adm["families"] == {sid: skill.family, other: m.family}
    assert skill.success_fixtures[-1].task_id == "ok"


def test_a_skill_keeps_the_latest_fixture_history_success_fixtures():
    mem = make_memory({"intervention": {"fixture_history": 2}})
    sid = grow_skill(mem)
    for i in range(3):
        mem.observe(episode(f"ok{i}", [("t0", "team", (), (sid,), SPLIT)], True))
    assert [f.task_id for f in mem.store.skills[sid].success_fixtures] == ["ok1", "ok2"]


def test_a_near_duplicate_success_supports_the_memory_once_per_task_and_is_audited():
    mem = make_memory()
    mem.observe(episode("a", [("t0", "team", (), (), SPLIT)], True))
    (mid,) = mem.store.memories
    created = events(mem, "memory_created")[-1]
    assert (created["memory"], created["level"], created["task"], created["pos"]) == (mid, "team", "a", 1.0)
    assert created["text"] == mem.store.memories[mid].text and "Level: team;" in created["text"]
    assert mem.store.memories[mid].family == mid  # a new memory starts its own provenance family
    # the same success twice in one task (two team decisions): one unit of support
    mem.observe(episode("b", [("t0", "team", (), (), SPLIT), ("t1", "team", ("t0",), (), SPLIT)], True))
    m = mem.store.memories[mid]
    assert (m.pos, m.support) == (2.0, 2)
    sup = events(mem, "memory_supported")[-1]
    assert (sup["memory"], sup["level"], sup["task"]) == (mid, "team", "b")
    assert sup["before"] == {"pos": 1.0, "neg": 0.0, "support": 1} and sup["after"] == {
        "pos": 2.0,
        "neg": 0.0,
        "support": 2,
    }
    assert 0.9 <= sup["similarity"] <= 1.0


def test_a_memory_recalled_by_a_successful_task_is_not_supported_again_by_its_own_decisions():
    mem = make_memory({"formation": {"min_support": 5}})
    mem.observe(episode("a", [("t0", "team", (), (), SPLIT)], True))
    (mid,) = mem.store.memories
    mem.observe(episode("b", [("t0", "team", (), (mid,), SPLIT)], True))
    m = mem.store.memories[mid]
    assert m.support == 2 and m.pos == 2.0  # credited as recalled; not supported again as a duplicate
    assert len(mem.store.memories) == 1


# -- failure evidence ----------------------------------------------------------------------------


def test_an_admitted_failure_is_a_kept_badcase_with_its_fixtures_judgements_and_audit():
    mem = make_memory({"intervention": {"fixture_history": 2}})
    sid = grow_skill(mem)
    for i in range(3):
        mem.observe(episode(f"bad{i}", [("t0", "team", (), (sid,), SPLIT)], False))
    skill = mem.store.skills[sid]
    assert len(skill.badcases) == 2  # the latest fixture_history
    bc = mem.store.badcases[skill.badcases[-1]]
    assert (bc.task_id, bc.status, bc.blamed, bc.failure_mode) == ("bad2", "admitted", [sid], "procedure")
    assert bc.mean_confidence == pytest.approx(0.9) and bc.reason == "both judges agree"
    assert list(bc.fixtures) == [sid] and bc.fixtures[sid].behaviour == SPLIT and not bc.fixtures[sid].success
    adm = events(mem, "admit_failure")[-1]
    assert (adm["skill"], adm["lineage"], adm["mode"], adm["failure_mode"], adm["weight"]) == (
        sid,
        skill.lineage,
        "asymmetric",
        "procedure",
        1.0,
    )
    assert (adm["badcase"], adm["task"], adm["reason"]) == (bc.id, "bad2", "both judges agree")
    assert len(adm["judgements"]) == 2 and adm["mean_confidence"] == pytest.approx(0.9)
    c = mem.store.counters
    assert (c.admitted_failures, c.unresolved_failures) == (3, 0)
    assert mem.stats()["admitted_failures"] == 3.0 and mem.stats()["badcases"] == 3.0


def test_a_failure_that_recalled_nothing_is_kept_as_unresolved_without_judges():
    mem = make_memory()
    mem.observe(episode("f", [("t0", "team", (), (), SPLIT)], False))
    (bc,) = mem.store.badcases.values()
    assert (bc.status, bc.reason, bc.judgements, bc.blamed) == (
        "no_candidates",
        "nothing from memory was recalled",
        [],
        [],
    )
    un = events(mem, "unresolved_failure")[-1]
    assert (un["status"], un["recalled"], un["badcase"]) == ("no_candidates", [], bc.id)
    assert mem.store.counters.unresolved_failures == 1 and mem.stats()["unresolved_failures"] == 1.0
    mem.observe(episode("g", [("t0", "team", (), (), SPLIT)], False))
    assert mem.store.counters.unresolved_failures == 2


def test_a_failed_memory_gets_negative_evidence_and_no_support():
    mem = make_memory({"formation": {"min_support": 5}})
    mem.observe(episode("a", [("t0", "team", (), (), SPLIT)], True))
    (mid,) = mem.store.memories
    mem.observe(episode("f", [("t0", "team", (), (mid,), SPLIT)], False))
    m = mem.store.memories[mid]
    assert (m.pos, m.neg, m.support) == (1.0, 1.0, 1)
    upd = events(mem, "belief_update")[-1]
    assert upd["before"] == {"pos": 1.0, "neg": 0.0, "support": 1} and upd["after"] == {
        "pos": 1.0,
        "neg": 1.0,
        "support": 1,
    }
    assert upd["badcase"] == mem.store.badcases[next(iter(mem.store.badcases))].id
    assert upd["success"] is False and events(mem, "admit_failure")[-1]["memory"] == mid
    mem.observe(episode("g", [("t0", "team", (), (mid,), SPLIT)], False))
    assert m.neg == 2.0


def test_judges_see_at_most_max_candidates_objects_most_used_first():
    mem = make_memory({"admission": {"max_candidates": 1}, "formation": {"min_support": 5}})
    mem.observe(episode("a", [("t0", "team", (), (), SPLIT)], True))
    mem.observe(episode("b", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    first, second = mem.store.memories
    nodes = [
        ("t0", "team", (), (first,), SPLIT),
        ("t1", "team", ("t0",), (second,), "x"),
        ("t2", "team", ("t1",), (second,), "y"),
    ]
    mem.observe(episode("f", nodes, False))
    bc = list(mem.store.badcases.values())[-1]
    assert bc.blamed == [second]  # the only candidate shown: used twice
    assert set(bc.fixtures) == {first, second}


# -- the client and the round ------------------------------------------------------------------------


def test_a_memory_without_an_llm_client_says_so():
    mem = make_memory()
    mem.services.llm = None
    with pytest.raises(ConfigError, match=r"^memory 'aecg' needs an LLM client for its memory-side prompts$"):
        mem.complete([{"role": "user", "content": "x"}], "memory", "test")


def test_stats_report_every_counter():
    mem = make_memory()
    sid = grow_skill(mem)
    mem.observe(episode("m", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    for i in range(8):
        mem.observe(episode(f"good{i}", [("t0", "team", (), (sid,), SPLIT)], True))
    for i in range(6):
        mem.observe(
            episode(f"bad{i}", [("t0", "team", (), (sid,), SPLIT)], False, observation="The list is long and unsorted.")
        )
    mem.maintain(1)
    s = mem.stats()
    c = mem.store.counters
    assert s == {
        "memories": float(sum(m.consolidated_into is None for m in mem.store.memories.values())),
        "skills_active": 1.0,
        "badcases": 6.0,
        "admitted_failures": 6.0,
        "unresolved_failures": 0.0,
        "promotions": 1.0,
        "reviews": 1.0,
        "activations": 1.0,
        "cross_scope_use_rate": 0.0,
    }
    assert c.promotions == 1 and s["memories"] == 1.0


# -- the judges' calls ------------------------------------------------------------------------------

JUDGE_CALLS: list[dict] = []


def second_judge_abstains(request, spec):
    """The judge model: the scripted verdict first, then an abstention (a different answer per call)."""
    from aecg_bench.aecg.mock_policy import mock_policy

    JUDGE_CALLS.append(dict(request.params))
    if len(JUDGE_CALLS) % 2 == 0:
        return '{"abstain": true, "alternatives_considered": "second thoughts"}'
    return mock_policy(request, spec)


register_mock_policy("aecg_pins_second_judge_abstains", second_judge_abstains)


def test_two_judges_are_two_calls_on_the_judge_role_with_their_own_sample_and_temperature(tmp_path):
    """Each judge is its own sample (sample index 0 and 1): with a response cache the second judge is not
    served the first one's verdict."""
    JUDGE_CALLS.clear()
    memory_side = ModelSpec(label="memory", provider="mock", model="mock/m", options={"policy": "aecg_oracle"})
    judge = ModelSpec(
        label="judge", provider="mock", model="mock/j", options={"policy": "aecg_pins_second_judge_abstains"}
    )
    client = LLMClient(
        {"memory": memory_side, "judge": judge},
        {"default": "memory", "judge": "judge"},
        ResponseCache(tmp_path / "cache.sqlite", "read_write"),
    )
    mem = make_memory({"admission": {"judge_temperature": 0.3}}, llm=client)
    sid = grow_skill(mem)
    mem.observe(episode("f", [("t0", "team", (), (sid,), SPLIT)], False))
    assert len(JUDGE_CALLS) == 2 and all(p["temperature"] == 0.3 for p in JUDGE_CALLS)
    assert all(p["max_tokens"] == mem.p.memory_max_tokens for p in JUDGE_CALLS)
    (bc,) = mem.store.badcases.values()
    assert [j.judge for j in bc.judgements] == [0, 1]
    assert not bc.judgements[0].abstain and bc.judgements[1].abstain
    assert bc.status == "unresolved" and bc.reason == "judge 1 abstained (judge abstained: second thoughts)"


def test_symmetric_admission_marks_the_badcase_symmetric():
    mem = make_memory({"admission": {"mode": "symmetric"}}, judge_abstain=True)
    sid = grow_skill(mem)
    mem.observe(episode("f", [("t0", "team", (), (sid,), SPLIT)], False))
    (bc,) = mem.store.badcases.values()
    assert (bc.status, bc.blamed) == ("symmetric", [sid])
    assert bc.reason.startswith("symmetric admission: every recalled object (judges: judge 0 abstained")


def test_recall_matches_a_predicate_on_the_task_level_role_and_agent_of_the_decision():
    mem = make_memory()
    sid = grow_skill(mem)
    mem.store.skills[sid].content.predicate.all_of.extend(["numbers", "level team", "role navigator", "agent captain"])
    task = Task(id="q", benchmark="hand", instruction="Sort the numbers in the list.", task_type="sort")
    q = RecallQuery(task=task, level="team", agent="captain", role="navigator", context="The list is unsorted.")
    assert sid in [i.id for i in mem.recall(q)]
    far = Task(id="q", benchmark="hand", instruction="Sort the list. " + "x " * 400 + "numbers", task_type="sort")
    q_far = RecallQuery(task=far, level="team", agent="captain", role="navigator", context="The list is unsorted.")
    assert sid not in [i.id for i in mem.recall(q_far)]  # the instruction is clipped as fixtures clip it


def test_a_round_carries_its_index_into_the_audit():
    mem = make_memory()
    sid = grow_skill(mem)
    for i in range(8):
        mem.observe(episode(f"good{i}", [("t0", "team", (), (sid,), SPLIT)], True))
    for i in range(6):
        mem.observe(
            episode(f"bad{i}", [("t0", "team", (), (sid,), SPLIT)], False, observation="The list is long and unsorted.")
        )
    mem.maintain(7)
    assert events(mem, "review_round")[-1]["round"] == 7 and events(mem, "review")[-1]["round"] == 7


def test_a_near_duplicate_is_supported_with_its_similarity_to_four_places():
    mem = make_memory({"formation": {"min_support": 9}})
    mem.observe(episode("a", [("t0", "team", (), (), SPLIT)], True))
    assert len(mem.store.memories) == 1
    ep = episode("b", [("t0", "team", (), (), SPLIT)], True, instruction="Sort the numbers in the list, please.")
    mem.observe(ep)
    assert len(mem.store.memories) == 1
    from aecg_bench.aecg import traces

    text = traces.memory_text(ep, "team", list(ep.trajectory.decisions))
    sim = mem.index.memories("team").ranked(mem.index.embed(text), 0.0, 1)[0][1]
    assert 0.9 <= sim < 1.0 and round(sim, 4) != round(sim, 5)
    assert events(mem, "memory_supported")[-1]["similarity"] == round(sim, 4)


def test_one_task_supports_an_existing_memory_once_when_flat_scope_pools_its_levels():
    mem = make_memory({"scope": {"mode": "flat"}, "formation": {"min_support": 9, "dedupe_similarity": 0.5}})
    nodes = [("t0", "team", (), (), SPLIT), ("a1", "agent", ("t0",), (), SPLIT)]
    mem.observe(episode("a", nodes, True))
    before = {m.id: m.support for m in mem.store.memories.values()}
    mem.observe(episode("b", nodes, True))
    after = {m.id: m.support for m in mem.store.memories.values()}
    # one pooled memory that both levels match: the second task supports it once
    assert len(before) == 1 and set(after) == set(before) and {after[i] - before[i] for i in before} == {1}


def test_a_recalled_memory_that_a_success_makes_eligible_is_queued_for_promotion():
    mem = make_memory()
    mem.observe(episode("m", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    (merge,) = mem.store.memories
    mem.observe(episode("a", [("t0", "team", (), (merge,), SPLIT)], True))  # a different memory is created
    assert len(mem.store.memories) == 2 and mem.store.memories[merge].support == 2
    assert merge in mem.store.pending_promotions


def test_memory_side_calls_are_accounted_under_the_memory_role():
    from aecg_bench.llm.usage import UsageMeter

    meter = UsageMeter()
    spec = ModelSpec(label="mock", provider="mock", model="mock/m", options={"policy": "aecg_oracle"})
    mem = make_memory(llm=LLMClient({"mock": spec}, {"default": "mock"}, meters=[meter]))
    grow_skill(mem)
    assert set(meter.by_role()) == {"memory"} and meter.by_role()["memory"]["calls"] >= 1


def too_long(what: str):
    def policy(request, spec):
        from aecg_bench.aecg import prompts
        from aecg_bench.aecg.mock_policy import mock_policy
        from aecg_bench.llm.providers import ContextLimitError

        kind = prompts.kind_of(request.messages)
        replayed = kind is None and "making a team-level decision" in str(request.messages)
        if (what == "judge" and kind == prompts.FAILURE_ATTRIBUTION) or (what == "replay" and replayed):
            raise ContextLimitError("prompt too long")
        return mock_policy(request, spec)

    return policy


register_mock_policy("aecg_method_pins_too_long_judge", too_long("judge"))
register_mock_policy("aecg_method_pins_too_long_replay", too_long("replay"))


def test_a_judge_prompt_too_long_for_the_model_is_an_empty_reply_and_a_warning(caplog):
    from aecg_bench.aecg import prompts

    mem = make_memory(policy="aecg_method_pins_too_long_judge")
    sid = grow_skill(mem)
    with caplog.at_level(logging.WARNING, logger="aecg_bench.aecg"):
        mem.observe(episode("f", [("t0", "team", (), (sid,), SPLIT)], False))
    kind = prompts.FAILURE_ATTRIBUTION
    warned = {r.getMessage() for r in caplog.records if r.name == "aecg_bench.aecg"}
    assert warned == {f"aecg {kind} prompt exceeds the model's context; treated as no answer: prompt too long"}
    (bc,) = mem.store.badcases.values()
    assert [j.reason for j in bc.judgements] == ["unparsable verdict", "unparsable verdict"]


def test_a_replayed_decision_too_long_for_the_model_is_no_decision():
    """No answer: the parent counts as repeating the recorded behaviour, the candidate passes nothing."""
    mem = make_memory(policy="aecg_method_pins_too_long_replay")
    sid = grow_skill(mem)
    for i in range(8):
        mem.observe(episode(f"good{i}", [("t0", "team", (), (sid,), SPLIT)], True))
    for i in range(6):
        nodes = [("t0", "team", (), (sid,), SPLIT)]
        mem.observe(episode(f"bad{i}", nodes, False, observation="The list is long and unsorted."))
    mem.maintain(1)
    results = events(mem, "replay")[0]["results"]
    assert results
    for r in results:
        assert r["candidate_pass"] is False and r["parent_pass"] is (r["kind"] == "success")


ATTRIBUTION: list[dict] = []


def recording_judges(request, spec):
    from aecg_bench.aecg import prompts
    from aecg_bench.aecg.mock_policy import mock_policy

    if prompts.kind_of(request.messages) == prompts.FAILURE_ATTRIBUTION:
        ATTRIBUTION.append(prompts.payload_of(request.messages))
    return mock_policy(request, spec)


register_mock_policy("aecg_method_pins_recording_judges", recording_judges)


def test_the_judges_see_each_recalled_skill_and_memory_as_recall_showed_it():
    from aecg_bench.aecg import traces

    ATTRIBUTION.clear()
    mem = make_memory(policy="aecg_method_pins_recording_judges")
    sid = grow_skill(mem)
    mem.observe(episode("m", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    mid = next(m.id for m in mem.store.memories.values() if m.consolidated_into is None)
    mem.store.skills[sid].content.applicability = "when sorting " * 80  # a rendered text over 800 characters
    nodes = [("t0", "team", (), (sid,), SPLIT), ("t1", "team", ("t0",), (mid, sid), "merge")]
    mem.observe(episode("f", nodes, False))
    skill = mem.store.skills[sid]
    assert ATTRIBUTION[0]["candidates"] == [
        {"id": sid, "kind": "skill", "scope": "team", "text": traces.clip(skill.text(), 800), "used_at": ["t0", "t1"]},
        {
            "id": mid,
            "kind": "memory",
            "scope": "team",
            "text": traces.clip(mem.store.memories[mid].text, 800),
            "used_at": ["t1"],
        },
    ]
    assert len(ATTRIBUTION[0]["candidates"][0]["text"]) == 800
    obs = events(mem, "observe")[-1]
    assert (obs["task"], obs["success"]) == ("f", False)


def test_the_observe_record_rounds_the_reach_to_six_places():
    mem = make_memory({"triage": {"exposure_discount": 0.1234567}})
    sid = grow_skill(mem)
    nodes = [("t0", "team", (), (sid,), SPLIT), ("a1", "agent", ("t0",), (), "merge")]
    mem.observe(episode("u", nodes, True))
    assert events(mem, "observe")[-1]["used"][0]["reach"] == 1.123457


def test_without_an_embedder_the_memory_matches_lexically():
    from conftest import mock_client

    from aecg_bench.audit import AuditLog
    from aecg_bench.contracts import MemoryServices
    from aecg_bench.llm.embeddings import Embedder

    client = mock_client(policy="aecg_oracle", agent_policy="hand_agent")
    bare = AECGMemory({}, services=MemoryServices(llm=client, embedder=None, audit=AuditLog(), seed=0))
    lexical = make_memory()
    for m in (bare, lexical):
        grow_skill(m)
    q = query("team")
    assert [(i.id, i.score) for i in bare.recall(q)] == [(i.id, i.score) for i in lexical.recall(q)]
    assert bare.index.embed("sort the list").tolist() == Embedder("lexical").embed(["sort the list"])[0].tolist()
