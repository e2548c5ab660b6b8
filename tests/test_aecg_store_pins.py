"""AECG's store (provenance families, ids, state) and applicability predicates, pinned one rule at a time
(issue 17: mutation testing of `aecg/store.py` and `aecg/predicate.py`).

Families decide how a task's credit is split (AECG B.1: one share per provenance family), so the
union-find is checked against connected components with hypothesis; predicates are what narrowing
produces and recall enforces (sec. 3.4.2).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.aecg.beliefs import Belief, Beta
from aecg_bench.aecg.objects import ACTIVE, ISOLATED, BadCase, Fixture, Memory, Skill, SkillContent
from aecg_bench.aecg.predicate import Predicate, clean_terms, decision_text, normalised, words
from aecg_bench.aecg.store import STATE_VERSION, Store

# -- ids ------------------------------------------------------------------------------------------


def test_ids_count_up_per_kind():
    s = Store()
    assert [s.new_memory_id(), s.new_memory_id(), s.new_lineage(), s.new_badcase_id(), s.new_lineage()] == [
        "m1",
        "m2",
        "s1",
        "b1",
        "s2",
    ]
    assert (s.counters.memories, s.counters.skills, s.counters.badcases) == (2, 2, 1)


# -- families ---------------------------------------------------------------------------------------

FAMILIES = [f"m{i}" for i in range(1, 13)] + [f"s{i}" for i in range(1, 5)]


def order(fam: str) -> tuple[str, int]:
    return fam[0], int(fam[1:])


@settings(deadline=None)  # no wall-clock limit on a loaded machine
@given(st.lists(st.tuples(st.sampled_from(FAMILIES), st.sampled_from(FAMILIES)), max_size=30))
def test_a_family_is_the_oldest_member_of_everything_unions_joined(pairs):
    s = Store()
    groups = {f: {f} for f in FAMILIES}
    for a, b in pairs:
        root = s.union(a, b)
        merged = groups[a] | groups[b]
        for f in merged:
            groups[f] = merged
        assert root == min(merged, key=order)
    for f in FAMILIES:
        assert s.family(f) == min(groups[f], key=order)


def test_union_orders_by_kind_then_number_not_by_text():
    s = Store()
    assert s.union("m10", "m9") == "m9"  # as text "m10" < "m9"
    assert s.union("s1", "m12") == "m12"  # memories before skills
    assert s.family_parent == {"m10": "m9", "s1": "m12"}
    assert s.union("m9", "m10") == "m9" and len(s.family_parent) == 2  # already one family: nothing changes


def test_a_family_id_without_a_number_sorts_first_within_its_kind():
    s = Store()
    assert s.union("m1", "mx") == "mx"


def test_a_corrupt_cyclic_family_map_still_terminates():
    s = Store(family_parent={"m1": "m2", "m2": "m1"})
    assert s.family("m1") in {"m1", "m2"}


def fixture() -> Fixture:
    return Fixture("t", "sort", "Sort.", "team", "a", "r", "ctx", "b", True)


def content() -> SkillContent:
    return SkillContent("n", "when", [], ["act"], [], "")


def skill(sid: str, family: str, status: str = ACTIVE) -> Skill:
    return Skill(sid, sid.split(".")[0], 1, "team", family, status, content(), Belief(Beta(1, 1), Beta(1, 1)))


def test_objects_are_found_by_id_and_belong_to_their_familys_root():
    s = Store()
    s.memories["m1"] = Memory("m1", "team", "text", "m1", fixture())
    s.skills["s1.v1"] = skill("s1.v1", "m1")
    s.skills["s2.v1"] = skill("s2.v1", "m2", ISOLATED)
    s.union("m2", "m1")
    assert s.get("m1") is s.memories["m1"] and s.get("s1.v1") is s.skills["s1.v1"] and s.get("x") is None
    assert s.family_of("s2.v1") == "m1" and s.family_of("m1") == "m1"
    with pytest.raises(KeyError, match="nope"):
        s.family_of("nope")
    assert [k.id for k in s.active_skills()] == ["s1.v1"]


def test_the_state_round_trips_and_names_its_version():
    s = Store()
    s.memories["m1"] = Memory("m1", "team", "text", "m1", fixture(), pos=1.5, support=2)
    s.skills["s1.v1"] = skill("s1.v1", "m1")
    s.union("m3", "m1")
    s.pending_promotions.append("m1")
    s.counters.reviews = 4
    s.badcases["b1"] = BadCase("b1", "t9", "admitted", {"s1.v1": fixture()}, blamed=["s1.v1"], reason="agreed")
    d = s.to_dict()
    assert d["version"] == STATE_VERSION == 1
    assert d["family_parent"] == {"m3": "m1"} and d["pending_promotions"] == ["m1"] and d["counters"]["reviews"] == 4
    back = Store.from_dict(d)
    assert back.to_dict() == d and back.memories == s.memories and back.skills == s.skills
    assert back.badcases == s.badcases and list(back.badcases) == ["b1"]
    with pytest.raises(ValueError, match="AECG state version 2 is not 1"):
        Store.from_dict({**d, "version": 2})
    with pytest.raises(ValueError, match="AECG state version None is not 1"):
        Store.from_dict({k: v for k, v in d.items() if k != "version"})


# -- predicates ---------------------------------------------------------------------------------------


def test_the_decision_text_names_every_part_of_the_decision():
    assert decision_text("sort", "Sort it.", "team", "planner", "lead", "A list.") == (
        "task type: sort\ntask: Sort it.\nlevel: team; role: planner; agent: lead\nobservation: A list."
    )
    assert words("Sort-IT, 3x!") == ["sort", "it", "3x"]
    assert normalised("Sort-IT, 3x!") == " sort it 3x "


def test_a_predicate_needs_every_all_of_term_and_no_none_of_term_on_word_boundaries():
    text = normalised("task type: right; walk to the target")
    assert Predicate(all_of=["walk", "type right"]).admits(text)
    assert not Predicate(all_of=["walk", "left"]).admits(text)
    assert not Predicate(none_of=["target"]).admits(text) and Predicate(none_of=["targets"]).admits(text)
    assert not Predicate(all_of=["alk"]).admits(text)  # part of a word is no match
    assert Predicate().empty and not Predicate(all_of=["a"]).empty and not Predicate(none_of=["a"]).empty
    assert Predicate(all_of=["walk"], none_of=["left", "back"]).describe() == '"walk" and not "left" and not "back"'


def test_terms_from_a_reply_are_one_to_four_normalised_words_deduplicated_and_bounded():
    assert clean_terms("Left", 3) == ["left"]
    assert clean_terms(["Left!", "left", 7, "a b c d", "a b c d e", "", "Up"], 5) == ["left", "a b c d", "up"]
    assert clean_terms(["a", "b", "c"], 2) == ["a", "b"]
    assert clean_terms({"a": 1}, 3) == []


def test_a_long_chain_of_unions_is_walked_to_its_root():
    s = Store()
    for i in range(8, 1, -1):  # m8 -> m7 -> ... -> m1: every union drops the younger root under the older
        s.union(f"m{i}", f"m{i - 1}")
    assert len(s.family_parent) == 7 and s.family("m8") == "m1"
