"""AECGMemory on hand-built decision graphs (team/event/agent levels) with the mock model."""

from __future__ import annotations

import copy
import json

import pytest
from aecg_fixtures import episode, events, make_memory
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.aecg.objects import ACTIVE, ISOLATED, MONITORED, SUPERSEDED
from aecg_bench.errors import InfraError
from aecg_bench.llm import LLMClient, ModelSpec, RetryPolicy
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.llm.providers import Provider, TransientProviderError
from aecg_bench.types import RecallQuery, Task

TEAM_AGENT = [("t0", "team", (), (), "split the list in halves"), ("a1", "agent", ("t0",), (), "merge the halves")]


def query(level: str, task_type: str = "sort") -> RecallQuery:
    task = Task(id="q", benchmark="hand", instruction="Sort the numbers in the list.", task_type=task_type)
    return RecallQuery(task=task, level=level, agent=f"{level}-agent", role="worker", context="The list is unsorted.")  # type: ignore[arg-type]


def ids(items) -> list[str]:
    return [i.id for i in items]


def grow_skill(mem, level: str = "team", n: int = 3) -> str:
    """Successes at one level until a skill is promoted; returns its id."""
    for i in range(n):
        mem.observe(episode(f"grow{i}", [("t0", level, (), (), "split the list in halves")], True))
    skills = [s for s in mem.store.skills.values() if s.status == ACTIVE]
    assert skills, "no skill was promoted"
    return skills[0].id


def use(mem, sid: str, task: str, success: bool, level: str = "team", **kw):
    mem.observe(episode(task, [("t0", level, (), (sid,), "split the list in halves")], success, **kw))


# -- scope ------------------------------------------------------------------------------


def test_a_success_makes_one_memory_per_level_and_hard_scope_recall_never_crosses_levels():
    mem = make_memory({"recall": {"k_memories": 5}})
    mem.observe(episode("e1", TEAM_AGENT, True))
    levels = {m.id: m.level for m in mem.store.memories.values()}
    assert sorted(levels.values()) == ["agent", "team"]
    for level in ("team", "event", "agent"):
        assert all(levels[i] == level for i in ids(mem.recall(query(level))))
    assert ids(mem.recall(query("event"))) == []


def test_flat_scope_lets_objects_cross_levels():
    mem = make_memory({"scope": {"mode": "flat"}, "recall": {"k_memories": 5}})
    mem.observe(episode("e1", TEAM_AGENT, True))
    assert len(mem.recall(query("event"))) == 2


def test_promotion_keeps_the_seed_scope_and_a_team_skill_is_never_recalled_by_an_agent():
    hard = make_memory()
    sid = grow_skill(hard)
    assert hard.store.skills[sid].level == "team"
    assert sid in ids(hard.recall(query("team")))
    assert sid not in ids(hard.recall(query("agent")))
    flat = make_memory({"scope": {"mode": "flat"}})
    fsid = grow_skill(flat)
    assert fsid in ids(flat.recall(query("agent")))


def test_cross_scope_use_is_counted():
    flat = make_memory({"scope": {"mode": "flat"}})
    sid = grow_skill(flat)
    use(flat, sid, "x", True, level="agent")
    assert flat.stats()["cross_scope_use_rate"] > 0
    assert events(flat, "observe")[-1]["used"][0]["cross_scope"] == 1


def test_promotion_inherits_a_fraction_of_the_seed_evidence_only():
    mem = make_memory()
    sid = grow_skill(mem)
    skill = mem.store.skills[sid]
    seed = mem.store.memories[skill.seed]
    assert seed.consolidated_into == sid and skill.family == seed.family
    assert skill.belief.slow.alpha == pytest.approx(1 + 0.5 * seed.pos)
    promo = events(mem, "promotion")[0]
    assert promo["seed"] == seed.id and promo["level"] == "team"


# -- admission -----------------------------------------------------------------------------


def test_an_agreed_attribution_admits_negative_evidence_and_keeps_the_badcase():
    mem = make_memory()
    sid = grow_skill(mem)
    before = mem.store.skills[sid].belief.slow.beta
    use(mem, sid, "bad", False)
    skill = mem.store.skills[sid]
    assert skill.belief.slow.beta == before + 1.0
    bc = mem.store.badcases[skill.badcases[-1]]
    assert bc.status == "admitted" and bc.blamed == [sid] and len(bc.judgements) == 2
    assert events(mem, "admit_failure")[-1]["skill"] == sid


@pytest.mark.parametrize("options", [{"judge_confidence": 0.6}, {"judge_abstain": True}, {"policy": "script"}])
def test_low_confidence_abstention_or_unparsable_judges_add_no_negative_evidence(options):
    mem = make_memory(**options) if options.get("policy") != "script" else make_memory()
    sid = grow_skill(mem)
    if options.get("policy") == "script":  # judges that answer prose from now on
        mem.services.llm = make_memory(policy="script", default="it is hard to say").services.llm
    before = copy.deepcopy(mem.store.skills[sid].belief)
    use(mem, sid, "bad", False)
    assert mem.store.skills[sid].belief == before
    bc = list(mem.store.badcases.values())[-1]
    assert bc.status == "unresolved" and bc.blamed == []
    assert events(mem, "unresolved_failure")[-1]["badcase"] == bc.id


def test_symmetric_admission_blames_every_recalled_object():
    mem = make_memory({"admission": {"mode": "symmetric"}})
    sid = grow_skill(mem)
    mem.observe(episode("m", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    other = next(m.id for m in mem.store.memories.values() if m.consolidated_into is None)
    mem.observe(episode("bad", [("t0", "team", (), (sid, other), "x")], False))
    assert sorted(list(mem.store.badcases.values())[-1].blamed) == sorted([sid, other])
    assert mem.store.memories[other].neg == 0.5  # two families share the task's unit of evidence
    assert not events(mem, "unresolved_failure")


def test_success_credit_is_split_by_family():
    mem = make_memory()
    sid = grow_skill(mem)
    mem.observe(episode("m", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    other = next(m.id for m in mem.store.memories.values() if m.consolidated_into is None)
    mem.observe(episode("ok", [("t0", "team", (), (sid, other), "split the list in halves")], True))
    assert events(mem, "admit_success")[-1]["credit"] == {sid: 0.5, other: 0.5}


def test_an_equivalent_skill_is_linked_without_moving_evidence():
    mem = make_memory()
    sid = grow_skill(mem)
    belief = copy.deepcopy(mem.store.skills[sid].belief)
    # different wording (a separate memory) but the same abstracted skill
    for i in range(3):
        mem.observe(
            episode(
                f"alt{i}",
                [("t0", "team", (), (), "split the list in halves")],
                True,
                instruction="Please order this sequence of integers ascending.",
            )
        )
    link = events(mem, "link_equivalent")
    assert link and link[0]["skill"] == sid and link[0]["evidence_moved"] is False
    assert mem.store.skills[sid].belief == belief
    linked = mem.store.memories[link[0]["memory"]]
    assert linked.consolidated_into == sid
    assert mem.store.family_of(linked.id) == mem.store.family_of(sid)
    assert len(mem.store.active_skills()) == 1


# -- governance ---------------------------------------------------------------------------


def degrade(mem, sid: str, good: int = 8, bad: int = 6, **kw) -> None:
    """Successes on short lists, then failures on long lists (or where `kw` says)."""
    for i in range(good):
        use(mem, sid, f"good{i}", True)
    for i in range(bad):
        use(mem, sid, f"bad{i}", False, **{"observation": "The list is long and unsorted.", **kw})


def test_a_degraded_skill_is_reviewed_repaired_replayed_and_activated():
    mem = make_memory()
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    kinds = [e["event"] for e in mem.audit.read()]
    for kind in ("review_round", "review", "intervention", "replay", "activation"):
        assert kind in kinds
    new = events(mem, "activation")[0]["skill"]
    assert mem.store.skills[sid].status == SUPERSEDED and mem.store.skills[new].status == ACTIVE
    assert mem.store.skills[new].route == "repair" and mem.store.skills[new].parent == sid
    assert new in ids(mem.recall(query("team"))) and sid not in ids(mem.recall(query("team")))
    why = "\n".join(mem.explain(new))
    assert f"{new}: active" in why and "promoted from memory" in why and "replay: activate" in why


def test_a_zero_budget_reviews_nothing_though_a_skill_qualifies():
    """(The cooldown is exercised in test_aecg_governance_pins.py.)"""
    mem = make_memory({"triage": {"budget": 0}})
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    assert events(mem, "review_round")[0]["qualified"] and not events(mem, "review")


def test_a_candidate_that_fails_replay_is_isolated_and_the_parent_stays_active():
    from aecg_bench.aecg import prompts
    from aecg_bench.aecg.mock_policy import mock_policy

    def useless_repair(request, spec):
        """Repair that only adds an avoidance rule: replayed on the long lists it still splits."""
        if prompts.kind_of(request.messages) == prompts.PROCEDURAL_REPAIR:
            skill = prompts.payload_of(request.messages)["skill"]
            return json.dumps({"procedure": skill["procedure"], "avoidance": [*skill["avoidance"], "be careful"]})
        return mock_policy(request, spec)

    register_mock_policy("aecg_useless_repair", useless_repair)
    mem = make_memory(policy="aecg_useless_repair")
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    iso = events(mem, "isolation")[0]
    assert mem.store.skills[iso["skill"]].status == ISOLATED and mem.store.skills[sid].status == ACTIVE
    assert "mitigates 0/" in iso["reason"]
    assert "stays active" in "\n".join(mem.explain(sid))
    replayed = events(mem, "replay")[0]["results"]
    assert replayed and all(r["how"] == "replayed" for r in replayed)
    assert "candidate 'split the list in halves'" in replayed[0]["note"]


def test_without_success_fixtures_the_candidate_is_monitored_and_replayed_at_the_next_review():
    mem = make_memory({"replay": {"min_success_fixtures": 50}, "triage": {"cooldown_events": 0}})
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    cand = events(mem, "monitoring")[0]["skill"]
    assert mem.store.skills[cand].status == MONITORED and mem.store.skills[sid].pending_candidate == cand
    use(mem, sid, "bad-again", False)
    mem.maintain(2)
    assert len(events(mem, "intervention")) == 1  # no second proposal: the monitored candidate is replayed
    assert [e["candidate"] for e in events(mem, "replay")] == [cand, cand]


def test_no_replay_gate_activates_without_replay_and_no_governance_never_reviews():
    gateless = make_memory({"replay": {"enabled": False}})
    sid = grow_skill(gateless)
    degrade(gateless, sid)
    gateless.maintain(1)
    assert events(gateless, "activation") and events(gateless, "replay")[0]["results"] == []
    idle = make_memory({"governance": False})
    sid = grow_skill(idle)
    degrade(idle, sid)
    idle.maintain(1)
    assert not events(idle, "review_round") and idle.store.skills[sid].status == ACTIVE


def test_a_narrowed_skill_is_no_longer_recalled_where_its_predicate_excludes_it():
    mem = make_memory()
    sid = grow_skill(mem)
    degrade(mem, sid, bad=6, task_type="reverse")  # misapplied: judges say "applicability"
    mem.maintain(1)
    new = events(mem, "activation")[0]["skill"]
    assert mem.store.skills[new].route == "narrowing"
    assert mem.store.skills[new].content.predicate.none_of == ["reverse"]
    assert new in ids(mem.recall(query("team", "sort")))
    assert new not in ids(mem.recall(query("team", "reverse")))


# -- failures and state ----------------------------------------------------------------


class Down(Provider):
    def __call__(self, spec, request):
        raise TransientProviderError("503")


def down_client() -> LLMClient:
    spec = ModelSpec(label="mock", provider="mock", model="mock/down")
    return LLMClient({"mock": spec}, {"default": "mock"}, providers={"mock": Down()}, retry=RetryPolicy(max_attempts=1))


def test_an_llm_failure_leaves_the_memory_and_its_audit_log_unchanged():
    mem = make_memory()
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.observe(episode("new", [("t0", "event", (), (), "hand over")], True))
    mem.observe(episode("new2", [("t0", "event", (), (), "hand over")], True))  # queues a promotion
    assert mem.store.pending_promotions
    state, n_events = json.dumps(mem.state_dict(), sort_keys=True), len(mem.audit.read())
    good_llm = mem.services.llm
    mem.services.llm = down_client()
    with pytest.raises(InfraError):
        use(mem, sid, "bad-x", False)
    with pytest.raises(InfraError):
        mem.maintain(1)
    assert json.dumps(mem.state_dict(), sort_keys=True) == state and len(mem.audit.read()) == n_events
    mem.services.llm = good_llm
    mem.maintain(1)
    assert events(mem, "review")


def stream(mem, part: int) -> None:
    """Two halves of a deterministic workload touching every part of the loop."""
    if part == 0:
        sid = grow_skill(mem)
        degrade(mem, sid, good=12, bad=0)
        mem.observe(episode("ev", [("t0", "event", (), (), "hand over")], True))
    else:
        sid = mem.store.active_skills()[0].id
        for i in range(6):
            use(mem, sid, f"late{i}", False, task_type="reverse")
        mem.observe(episode("ev2", [("t0", "event", (), (), "hand over")], True))
        mem.maintain(1)
        use(mem, mem.store.active_skills()[0].id, "after", True)
        mem.maintain(2)


def _without_seq(evs: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "seq"} for e in evs]


def test_state_dict_round_trips_exactly_and_a_restored_memory_continues_identically():
    a = make_memory()
    stream(a, 0)
    snapshot = json.loads(json.dumps(a.state_dict()))
    assert snapshot == a.state_dict()
    b = make_memory()
    b.load_state_dict(snapshot)
    assert b.state_dict() == a.state_dict()
    assert ids(b.recall(query("team"))) == ids(a.recall(query("team")))
    mark = len(a.audit.read())
    stream(a, 1)
    stream(b, 1)
    assert b.state_dict() == a.state_dict()
    assert _without_seq(b.audit.read()) == _without_seq(a.audit.read()[mark:])
    assert events(a, "activation")  # the continued part did govern


def test_a_state_from_another_version_is_refused():
    mem = make_memory()
    with pytest.raises(ValueError, match="state version"):
        mem.load_state_dict({"store": {"version": 99}})


level_st = st.sampled_from(["team", "event", "agent"])


@given(st.lists(st.tuples(level_st, st.booleans(), st.sampled_from(["sort", "plan", "walk"])), min_size=1, max_size=12))
@settings(max_examples=25, deadline=None)
def test_hard_scope_recall_only_ever_returns_objects_of_the_asked_level(stream):
    mem = make_memory({"recall": {"k_memories": 4, "k_skills": 4}})
    recalled: list[str] = []
    for i, (level, success, kind) in enumerate(stream):
        hits = ids(mem.recall(query(level, kind)))
        recalled += hits
        mem.observe(episode(f"e{i}", [("d0", level, (), tuple(hits), f"do {kind}")], success, task_type=kind))
        for asked in ("team", "event", "agent"):
            for item in mem.recall(query(asked, kind)):
                assert item.level == asked and mem.store.get(item.id).level == asked
    assert mem.stats()["cross_scope_use_rate"] == 0.0


def test_replay_re_executes_held_out_decisions_on_the_agent_model_accounted_under_its_own_role():
    """Replayed decisions go to the model of role `replay` (the agent model in the paper's model
    configs), never to the memory model, and are metered apart; the reviser sees none of them."""
    from aecg_bench.llm.usage import UsageMeter

    meter = UsageMeter()
    memory_side = ModelSpec(label="memory", provider="mock", model="mock/m", options={"policy": "aecg_oracle"})
    agent = ModelSpec(label="agent", provider="mock", model="mock/a", options={"policy": "hand_agent"})
    client = LLMClient(
        {"memory": memory_side, "agent": agent}, {"default": "memory", "replay": "agent"}, meters=[meter]
    )
    mem = make_memory(llm=client)
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    assert events(mem, "activation")  # the repair mitigates the long-list failures on replay
    review = events(mem, "review")[0]
    shown = set(review["failure_fixtures"]) | set(review["success_fixtures"])
    held = set(review["replay_failure_fixtures"]) | set(review["replay_success_fixtures"])
    assert review["replay_failure_fixtures"] and review["replay_success_fixtures"] and not shown & held
    replayed = events(mem, "replay")[0]["results"]
    assert {r["task_id"] for r in replayed} == held
    roles, models = meter.by_role(), meter.by_model()
    assert roles["replay"]["calls"] == 2 * len(held)  # paired: parent and candidate per fixture
    assert models["agent"]["calls"] == roles["replay"]["calls"]  # and nothing else went to the agent model
