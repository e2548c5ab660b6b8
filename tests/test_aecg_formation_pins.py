"""Skill formation and promotion pinned through behaviour (issue 17: mutation testing of `aecg/formation.py`
and `aecg/consolidation.py`; AECG sec. 3.2.3, B.1).

Eligibility boundaries, what the abstraction prompt gets, how a reply becomes a skill, and the promotion
loop on hand-built decision graphs with the scripted mock model: queued, drafted, promoted one update
later with the seed's scope and a fraction of its evidence; a failed abstraction uses up an attempt; a seed
that evidence made ineligible after its draft is dropped; an equivalent skill is linked.
"""

from __future__ import annotations

import json

import pytest
from aecg_fixtures import embedded_client, episode, events, make_memory
from conftest import mock_client
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.aecg import beliefs as B
from aecg_bench.aecg import prompts
from aecg_bench.aecg.formation import abstraction_payload, eligible, parse_skill
from aecg_bench.aecg.mock_policy import mock_policy
from aecg_bench.aecg.objects import ACTIVE, Fixture, Memory, to_dict
from aecg_bench.aecg.params import BeliefParams, FormationParams
from aecg_bench.llm.mock import register_mock_policy

SPLIT = "split the list in halves"


def memory(**kw) -> Memory:
    fx = Fixture("t", "sort", "Sort.", "team", "a", "r", "ctx", "b", True)
    base = dict(id="m1", level="team", text="Task type: sort", family="m1", fixture=fx, pos=2.0, neg=0.0, support=2)
    return Memory(**{**base, **kw})


# -- eligibility ---------------------------------------------------------------------------


def test_eligibility_is_inclusive_at_min_support_and_min_reliability():
    f, b = FormationParams(min_support=2, min_reliability=0.6, max_attempts=2), BeliefParams()
    assert eligible(memory(support=2), f, b) and not eligible(memory(support=1), f, b)
    # mean (pos + 1) / (pos + neg + 2): 2 + 1 over 2 + 1 + 2 = 0.6 exactly
    assert eligible(memory(pos=2.0, neg=1.0), f, b)
    assert not eligible(memory(pos=2.0, neg=1.01), f, b)
    assert eligible(memory(promotion_attempts=1), f, b) and not eligible(memory(promotion_attempts=2), f, b)
    assert not eligible(memory(consolidated_into="s1.v1"), f, b)


@settings(deadline=None)  # no wall-clock limit on a loaded machine
@given(st.floats(0, 20), st.floats(0, 20), st.floats(0.1, 5), st.floats(0.1, 5))
def test_the_eligibility_mean_uses_the_belief_prior(pos, neg, a0, b0):
    f, b = FormationParams(min_support=1, min_reliability=0.5), BeliefParams(prior_alpha=a0, prior_beta=b0)
    mean = (pos + a0) / (pos + neg + a0 + b0)
    assert eligible(memory(pos=pos, neg=neg), f, b) == (mean >= 0.5)


# -- the abstraction prompt and reply ------------------------------------------------------------


def test_the_abstraction_prompt_gets_the_seed_and_its_neighbours_with_their_support():
    seed, near = memory(), memory(id="m2", text="Task type: sort (b)", support=3)
    assert abstraction_payload(seed, [near]) == {
        "scope": "team",
        "seed": {"id": "m1", "text": "Task type: sort", "support": 2},
        "auxiliary": [{"id": "m2", "text": "Task type: sort (b)", "support": 3}],
    }


def test_a_reply_becomes_a_skill_with_bounded_fields_and_a_name():
    reply = json.dumps(
        {
            "applicability": "a" * 100,
            "procedure": [f"step {i}" for i in range(12)],
            "triggers": [f"t{i}" for i in range(8)],
            "avoidance": [f"r{i}" for i in range(8)],
            "evidence_summary": "three successes",
        }
    )
    content, why = parse_skill(reply)
    assert why == "" and content is not None
    assert content.name == "a" * 60  # no name: the start of the applicability
    assert content.procedure == [f"step {i}" for i in range(10)]
    assert content.triggers == [f"t{i}" for i in range(6)] and content.avoidance == [f"r{i}" for i in range(6)]
    assert content.evidence_summary == "three successes" and content.predicate.empty
    named, _ = parse_skill(json.dumps({"name": "sorter", "applicability": "x", "procedure": ["y"]}))
    assert named is not None and named.name == "sorter"


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("no json", "unparsable reply"),
        (json.dumps({"applicability": "x"}), "reply lacks applicability or procedure"),
        (json.dumps({"procedure": ["y"]}), "reply lacks applicability or procedure"),
    ],
)
def test_a_reply_without_applicability_or_procedure_is_no_skill(reply, why):
    assert parse_skill(reply) == (None, why)


# -- the promotion loop ------------------------------------------------------------------------------


def succeed(mem, task: str, action: str = SPLIT, **kw) -> None:
    mem.observe(episode(task, [("t0", "team", (), (), action)], True, **kw))


def test_a_supported_memory_is_queued_then_promoted_one_update_later_with_a_share_of_its_evidence():
    mem = make_memory({"formation": {"inherit_fraction": 0.3}})
    succeed(mem, "a")
    (mid,) = mem.store.memories
    succeed(mem, "b")  # second support: queued, not yet promoted
    q = events(mem, "promotion_queued")[-1]
    assert (q["memory"], q["level"], q["support"], q["pos"], q["neg"]) == (mid, "team", 2, 2.0, 0.0)
    assert mem.store.pending_promotions == [mid] and not mem.store.skills
    seed = mem.store.memories[mid]
    succeed(mem, "c", "merge sort", instruction="Merge sorted runs.")  # the next update promotes
    (skill,) = mem.store.skills.values()
    assert (skill.id, skill.lineage, skill.version, skill.level, skill.status) == ("s1.v1", "s1", 1, "team", ACTIVE)
    assert (skill.seed, skill.family) == (mid, seed.family) and seed.consolidated_into == skill.id
    assert skill.belief == B.inherit(2.0, 0.0, 0.3, mem.prior, mem.p.beliefs.window)
    assert skill.success_fixtures[0] == seed.fixture
    promo = events(mem, "promotion")[-1]
    assert promo["seed_evidence"] == {"pos": 2.0, "neg": 0.0, "support": 2} and promo["inherit_fraction"] == 0.3
    assert promo["belief"] == to_dict(skill.belief) and promo["content"] == to_dict(skill.content)
    assert (promo["skill"], promo["lineage"], promo["level"], promo["seed"]) == ("s1.v1", "s1", "team", mid)
    assert mem.store.counters.promotions == 1 and mem.store.pending_promotions == []


def test_neighbours_are_same_scope_memories_above_the_similarity_floor_and_never_the_seed():
    mem = make_memory({"formation": {"neighbours": 1, "neighbour_min_similarity": 0.0, "min_support": 3}})
    succeed(mem, "a")
    succeed(mem, "m", "merge sort", instruction="Merge sorted runs.")
    other = next(m for m in mem.store.memories if m != "m1")
    succeed(mem, "b")
    succeed(mem, "c")  # m1 reaches support 3: queued
    succeed(mem, "d", "reverse it", instruction="Reverse the list.")  # promoted now
    skill = next(iter(mem.store.skills.values()))
    assert skill.seed == "m1" and skill.neighbours == [other]
    assert [f.task_id for f in skill.success_fixtures] == ["a", "m"]
    assert events(mem, "promotion")[-1]["neighbours"] == [other]


def test_no_neighbours_when_none_are_asked_for():
    mem = make_memory({"formation": {"neighbours": 0, "neighbour_min_similarity": 0.0}})
    succeed(mem, "m", "merge sort", instruction="Merge sorted runs.")
    succeed(mem, "a")
    succeed(mem, "b")
    succeed(mem, "c", "reverse it", instruction="Reverse the list.")
    (skill,) = mem.store.skills.values()
    assert skill.neighbours == [] and len(skill.success_fixtures) == 1


def test_at_most_max_promotions_per_update_are_drafted():
    mem = make_memory({"formation": {"max_promotions_per_update": 1}})
    for t in ("a", "b"):  # one memory per level, both supported twice: both queued by the same update
        mem.observe(episode(t, [("t0", "team", (), (), SPLIT), ("a1", "agent", ("t0",), (), "merge")], True))
    assert len(mem.store.pending_promotions) == 2
    mem.maintain(0)
    assert len(mem.store.skills) == 1 and len(mem.store.pending_promotions) == 1
    mem.maintain(1)
    assert len(mem.store.skills) == 2


REFUSAL = "I would rather not abstract this one. " * 10  # 380 characters, no JSON


def unreadable_abstraction(request, spec):
    if prompts.kind_of(request.messages) == prompts.SKILL_ABSTRACTION:
        return REFUSAL
    return mock_policy(request, spec)


def unreadable_team_abstraction(request, spec):
    kind = prompts.kind_of(request.messages)
    if kind == prompts.SKILL_ABSTRACTION and prompts.payload_of(request.messages)["scope"] == "team":
        return REFUSAL
    return mock_policy(request, spec)


register_mock_policy("aecg_pins_unreadable_abstraction", unreadable_abstraction)
register_mock_policy("aecg_pins_unreadable_team_abstraction", unreadable_team_abstraction)


def test_a_failed_abstraction_uses_up_an_attempt_and_is_retried_until_none_are_left():
    mem = make_memory({"formation": {"max_attempts": 2}}, policy="aecg_pins_unreadable_abstraction")
    succeed(mem, "a")
    succeed(mem, "b")
    (mid,) = mem.store.memories
    mem.maintain(0)
    fail = events(mem, "promotion_failed")[-1]
    assert (fail["memory"], fail["level"], fail["reason"], fail["reply"]) == (
        mid,
        "team",
        "unparsable reply",
        REFUSAL[:300],  # the audit keeps an excerpt
    )
    assert mem.store.memories[mid].promotion_attempts == 1 and mem.store.pending_promotions == [mid]
    mem.maintain(1)
    assert mem.store.memories[mid].promotion_attempts == 2 and mem.store.pending_promotions == []
    mem.maintain(2)
    assert len(events(mem, "promotion_failed")) == 2 and not mem.store.skills


def test_a_seed_made_ineligible_after_its_draft_is_dropped_not_promoted():
    mem = make_memory({"formation": {"min_reliability": 0.65}})
    succeed(mem, "a")
    succeed(mem, "b")
    (mid,) = mem.store.memories
    # the next update drafts the seed first, then admits this failure against it: 3/5 < 0.65
    mem.observe(episode("f", [("t0", "team", (), (mid,), SPLIT)], False))
    drop = events(mem, "promotion_dropped")[-1]
    assert (drop["memory"], drop["level"], drop["pos"], drop["neg"]) == (mid, "team", 2.0, 1.0)
    assert drop["reason"] == "evidence admitted since the draft made the seed ineligible"
    assert not mem.store.skills and mem.store.pending_promotions == []
    assert mem.store.memories[mid].promotion_attempts == 0


def test_an_equivalent_skill_is_linked_and_counted():
    mem = make_memory()
    for t in ("a", "b", "c"):
        succeed(mem, t)
    (sid,) = mem.store.skills
    for t in ("x", "y", "z"):
        succeed(mem, t, instruction="Please order this sequence of integers ascending.")
    (link,) = events(mem, "link_equivalent")
    seed = mem.store.memories[link["memory"]]
    assert (link["skill"], link["lineage"], link["evidence_moved"]) == (sid, "s1", False)
    assert link["family"] == mem.store.family_of(sid) == mem.store.family_of(seed.id)
    assert 0.85 <= link["similarity"] <= 1.0
    assert mem.store.counters.links == 1 and len(mem.store.skills) == 1
    assert seed.id not in [m for m, _ in mem.index.memories("team").ranked(mem.index.embed(seed.text), -1.0, 10)]


def test_abstracted_text_fields_are_bounded():
    reply = json.dumps(
        {"name": "n" * 100, "applicability": "a" * 700, "procedure": ["p"], "evidence_summary": "e" * 500}
    )
    content, _ = parse_skill(reply)
    assert content is not None
    assert (content.name, content.applicability, content.evidence_summary) == ("n" * 80, "a" * 600, "e" * 400)


def test_a_queued_seed_that_a_failure_made_ineligible_is_not_drafted():
    """Two seeds queued, one drafted per update: a failure blames the waiting one before its turn."""
    mem = make_memory({"formation": {"max_promotions_per_update": 1, "min_reliability": 0.65}})
    nodes = [("t0", "team", (), (), SPLIT), ("a1", "agent", ("t0",), (), "merge")]
    for t in ("a", "b"):
        mem.observe(episode(t, nodes, True))
    _, waiting = mem.store.pending_promotions
    level = mem.store.memories[waiting].level  # the judges blame it: 3/5 < 0.65
    mem.observe(episode("f", [("t0", level, (), (waiting,), SPLIT)], False))
    assert mem.store.memories[waiting].neg > 0 and waiting in mem.store.pending_promotions
    mem.maintain(0)
    fails = [e for e in events(mem, "promotion_failed") if e["memory"] == waiting]
    assert [(e["reason"], e["reply"]) for e in fails] == [("seed is no longer eligible", "")]  # no call made
    assert mem.store.memories[waiting].promotion_attempts == 0 and waiting not in mem.store.pending_promotions
    assert not events(mem, "promotion_dropped")


ABSTRACTIONS: list[tuple[str, str]] = []


def recording_abstraction(request, spec):
    """aecg_oracle; a seed worded with "integers" is abstracted with one more step (a near-equivalent skill)."""
    reply = mock_policy(request, spec)
    if prompts.kind_of(request.messages) == prompts.SKILL_ABSTRACTION:
        seed = prompts.payload_of(request.messages)["seed"]
        if "integers" in seed["text"]:
            obj = json.loads(str(reply))
            reply = json.dumps({**obj, "procedure": [*obj["procedure"], "then look"]})
        ABSTRACTIONS.append((seed["id"], str(reply)))
    return reply


register_mock_policy("aecg_pins_recording_abstraction", recording_abstraction)


def test_links_and_promotions_are_counted_each_time_and_a_link_is_audited():
    ABSTRACTIONS.clear()
    mem = make_memory(policy="aecg_pins_recording_abstraction")
    for t in ("a", "b", "c"):
        succeed(mem, t)
    for t in ("x", "y", "z"):  # another wording, one more step: an equivalent skill
        succeed(mem, t, instruction="Please order this sequence of integers ascending.")
    for t in ("p", "q", "r"):  # a third wording, the same skill: a second link
        succeed(mem, t, instruction="Kindly put these numbers into ascending order.")
    for t in ("g", "h", "i"):
        mem.observe(episode(t, [("t0", "agent", (), (), SPLIT)], True))
    mem.maintain(0)
    assert mem.store.counters.promotions == 2  # the team skill and the agent skill
    links = events(mem, "link_equivalent")
    assert len(links) == mem.store.counters.links == 2
    (link,) = [e for e in links if "integers" in mem.store.memories[e["memory"]].text]
    assert link["note"] == "equivalent skill already active: seed linked, its evidence is not transferred again"
    skill = mem.store.skills[link["skill"]]
    reply = [r for sid, r in ABSTRACTIONS if sid == link["memory"]][-1]
    content, _ = parse_skill(reply)
    sim = float(mem.index.embed(content.match_text()) @ mem.index.skills("team").vector(skill.id))
    assert 0.85 <= sim < 1.0 and round(sim, 4) != round(sim, 5)
    assert link["similarity"] == round(sim, 4)


def test_a_failed_abstraction_does_not_hold_up_the_other_drafts_of_the_update():
    mem = make_memory(policy="aecg_pins_unreadable_team_abstraction")
    nodes = [("t0", "team", (), (), SPLIT), ("a1", "agent", ("t0",), (), "merge")]
    for t in ("a", "b"):
        mem.observe(episode(t, nodes, True))
    assert len(mem.store.pending_promotions) == 2
    mem.maintain(0)
    assert [s.level for s in mem.store.skills.values()] == ["agent"]
    assert [e["level"] for e in events(mem, "promotion_failed")] == ["team"]


def test_a_memory_is_queued_once_and_a_queued_one_does_not_hold_up_the_next():
    mem = make_memory({"formation": {"max_promotions_per_update": 0}})  # nothing is drafted: the queue only grows
    succeed(mem, "a")
    succeed(mem, "b")
    (team,) = mem.store.memories
    assert mem.store.pending_promotions == [team]
    nodes = [("t0", "team", (), (), SPLIT), ("a1", "agent", ("t0",), (), "merge")]
    mem.observe(episode("c", nodes, True))  # the team memory again (already queued), a new agent memory
    mem.observe(episode("d", nodes, True))  # the agent memory reaches two supports
    agent = next(m for m in mem.store.memories if m != team)
    assert mem.store.pending_promotions == [team, agent]


def test_a_seed_skipped_in_draft_or_commit_does_not_hold_up_the_seeds_after_it():
    """Four seeds queued at once; a failure (symmetric: against both recalled memories) makes the first seed
    of this update's drafts and the first of the next update's ineligible: the seed after each is still
    promoted in the same update."""
    mem = make_memory({"admission": {"mode": "symmetric"}, "formation": {"min_reliability": 0.7}})
    mem.observe(episode("z", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    (z,) = mem.store.memories

    def chain(recall_z: bool):
        return [
            ("t0", "team", (), (z,) if recall_z else (), SPLIT),
            ("e1", "event", ("t0",), (), "hand over the halves"),
            ("a1", "agent", ("e1",), (), "merge the halves"),
        ]

    mem.observe(episode("a", chain(False), True))
    mem.observe(episode("b", chain(True), True))  # z credited, the three new memories supported: four queued
    by_level = {m.level: m.id for m in mem.store.memories.values() if m.id != z}
    assert mem.store.pending_promotions == [z, by_level["team"], by_level["event"], by_level["agent"]]
    fail = [("t0", "team", (), (z,), SPLIT), ("e1", "event", ("t0",), (by_level["event"],), "hand over the halves")]
    mem.observe(episode("f", fail, False))  # drafts z and the team seed, then blames z and the event seed
    assert [e["memory"] for e in events(mem, "promotion_dropped")] == [z]
    assert [s.seed for s in mem.store.skills.values()] == [by_level["team"]]
    mem.maintain(0)  # drafts the event seed (no longer eligible) and the agent seed
    assert [e["memory"] for e in events(mem, "promotion_failed")] == [by_level["event"]]
    assert [s.seed for s in mem.store.skills.values()] == [by_level["team"], by_level["agent"]]
    assert mem.store.pending_promotions == []


# -- what promotion may not do (held-out behaviour mutants, issue 37) -------------------------------------


def test_a_promoted_skill_inherits_a_share_of_its_seeds_evidence_and_none_of_its_neighbours():
    """Paper 3.2.3: "only the seed supplying initial evidence and nearby memories clarifying applicability".
    On a team -> agent chain, a neighbour of the seed with its own successes and an admitted failure is
    shown to the abstraction, yet the skill's belief is the seed's share alone."""
    mem = make_memory(
        {"formation": {"neighbours": 2, "neighbour_min_similarity": 0.0, "min_support": 3, "inherit_fraction": 0.5}}
    )

    def chain(action: str, recalled: tuple[str, ...] = ()) -> list:
        return [("t0", "team", (), recalled, action), ("a1", "agent", ("t0",), (), "merge the halves")]

    merge = {"instruction": "Merge sorted runs."}
    for t in ("n1", "n2"):  # the neighbour: two supports at team level
        mem.observe(episode(t, chain("merge sort"), True, **merge))
    (neighbour,) = [m.id for m in mem.store.memories.values() if m.level == "team"]
    mem.observe(episode("nf", chain("merge sort", (neighbour,)), False, **merge))  # blamed: negative evidence
    n = mem.store.memories[neighbour]
    assert (n.pos, n.neg) == (2.0, 1.0)
    for t in ("a", "b", "c"):  # the seed: three supports at team level, queued
        mem.observe(episode(t, chain(SPLIT), True))
    seed = next(m for m in mem.store.memories.values() if m.level == "team" and m.id != neighbour)
    mem.maintain(0)  # promoted, with the neighbour as auxiliary evidence
    (skill,) = [s for s in mem.store.skills.values() if s.seed == seed.id]
    assert neighbour in skill.neighbours and skill.level == "team"
    assert skill.belief == B.inherit(seed.pos, seed.neg, 0.5, mem.prior, mem.p.beliefs.window)
    promo = next(e for e in events(mem, "promotion") if e["skill"] == skill.id)
    assert promo["seed_evidence"] == {"pos": 3.0, "neg": 0.0, "support": 3}
    assert (n.pos, n.neg, n.consolidated_into) == (2.0, 1.0, None)  # the neighbour keeps its evidence, unconsolidated


def scope_blind_abstraction(request, spec):
    """aecg_oracle, except that the abstraction writes the same skill whatever the seed's scope (a model
    that ignores the target granularity): the same text for a team seed and an agent seed."""
    reply = mock_policy(request, spec)
    if prompts.kind_of(request.messages) == prompts.SKILL_ABSTRACTION:
        obj = json.loads(str(reply))
        reply = json.dumps({**obj, "name": "sort routine", "applicability": "decisions in tasks of type sort"})
    return reply


register_mock_policy("aecg_pins_scope_blind_abstraction", scope_blind_abstraction)


@pytest.mark.parametrize("mode", ["hard", "flat"])
def test_an_equivalent_skill_is_looked_for_in_the_seeds_scope_only(mode):
    """Algorithm 1 links equivalents without moving evidence, and scope is never pooled (3.2.1): an agent
    seed abstracted into the very text of an active team skill becomes its own agent skill under hard
    scope; only the flat-scope ablation, which pools the levels, links it to the team skill."""
    mem = make_memory({"scope": {"mode": mode}}, policy="aecg_pins_scope_blind_abstraction")
    for t in ("a", "b", "c"):
        succeed(mem, t)  # a team skill
    (team,) = mem.store.skills
    for t in ("x", "y", "z"):  # the same action at agent level: the same abstracted text
        mem.observe(episode(t, [("a0", "agent", (), (), SPLIT)], True))
    mem.maintain(0)
    links = events(mem, "link_equivalent")
    if mode == "hard":
        assert links == [] and mem.store.counters.promotions == 2
        assert sorted(s.level for s in mem.store.skills.values()) == ["agent", "team"]
    else:
        assert [(e["skill"], e["similarity"]) for e in links] == [(team, 1.0)]
        assert mem.store.counters.promotions == 1


# -- the skill grammar (a decoding aid for grammar-capable models) ------------------------------------------

# The embedded model's reply in the grammar's shape (SmolLM2-135M on `procedures`: strings filled to the bound,
# the optional avoidance and evidence summary left out).
GRAMMAR_SHAPED = '{ "name": "M1", "applicability": "team", "triggers": ["task_type: sort"], "procedure": ["split the list", "merge halves"] }'
ABSTRACTIONS_SEEN: list = []


def recording_grammar_shaped(request, spec):
    if prompts.kind_of(request.messages) == prompts.SKILL_ABSTRACTION:
        ABSTRACTIONS_SEEN.append(request)
        return GRAMMAR_SHAPED
    return mock_policy(request, spec)


register_mock_policy("aecg_pins_grammar_shaped", recording_grammar_shaped)


def test_the_skill_grammar_bounds_strings_and_steps_and_keeps_the_prompts_key_order():
    from llama_cpp import LlamaGrammar

    for grammar in (prompts.skill_grammar(), prompts.skill_grammar(40, 1), prompts.skill_grammar(8, 5)):
        LlamaGrammar.from_string(grammar, verbose=False)  # compiles (a bad grammar raises)
    assert "{1,16}" in prompts.skill_grammar() and "{1,40}" in prompts.skill_grammar(40, 1)
    assert '("," ws text){0,1} "]"' in prompts.skill_grammar()
    assert '("," ws text){0,4} "]"' in prompts.skill_grammar(8, 5)
    assert '"\\"procedure\\": [" text "]"' in prompts.skill_grammar(16, 1)  # one step: no repetition
    keys = ["name", "applicability", "triggers", "procedure", "avoidance", "evidence_summary"]
    root = prompts.skill_grammar().splitlines()[0]
    assert [root.index(f'\\"{k}\\"') for k in keys] == sorted(root.index(f'\\"{k}\\"') for k in keys)
    assert root.endswith('("," ws "\\"evidence_summary\\": " text)? ws "}"')  # avoidance and summary optional


@pytest.mark.parametrize("capable", [True, False])
def test_a_grammar_capable_model_gets_the_skill_grammar_and_its_grammar_shaped_reply_forms_a_skill(capable):
    ABSTRACTIONS_SEEN.clear()
    client = mock_client(policy="aecg_pins_grammar_shaped", agent_policy="hand_agent")
    client.models["mock"] = client.models["mock"].model_copy(update={"grammar": capable})
    mem = make_memory({"formation": {"grammar_max_chars": 24, "grammar_max_steps": 3}}, llm=client)
    for t in ("a", "b", "c"):
        succeed(mem, t)
    (request,) = ABSTRACTIONS_SEEN
    if capable:
        assert request.params["grammar"] == prompts.skill_grammar(24, 3)
    else:  # a model without grammars (the API presets) gets the prompt alone
        assert "grammar" not in request.params
    (skill,) = mem.store.skills.values()
    assert (skill.content.applicability, skill.content.procedure) == ("team", ["split the list", "merge halves"])
    assert (skill.content.avoidance, skill.content.evidence_summary, skill.content.name) == ([], "", "M1")
    assert not events(mem, "promotion_failed") and len(events(mem, "promotion")) == 1


@pytest.mark.slow
def test_with_the_embedded_model_the_skill_grammar_turns_a_procedures_memory_into_a_skill():
    """SmolLM2-135M under the smoke preset's 96-token cap abstracts a `procedures`-like memory (twice
    supported, so its promotion is drafted by the third update): with the skill grammar the reply parses
    into a skill (version 1, without it, never did on `procedures`)."""
    client = embedded_client(grammar=True)
    mem = make_memory({"governance": False}, llm=client)
    talon = "Unlock the Talon terminal in the north wing (serial 3487). You work on the day shift team."
    for t in ("a", "b", "c"):
        kw = {"task_type": "talon_terminal", "instruction": talon, "observation": "The Talon terminal is locked."}
        mem.observe(episode(t, [("t0", "team", (), (), "enter 317")], True, **kw))
    assert not events(mem, "promotion_failed"), events(mem, "promotion_failed")
    (promo,) = events(mem, "promotion")
    assert promo["content"]["applicability"] and promo["content"]["procedure"]
