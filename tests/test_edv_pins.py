"""Pins of EDV's stages, Judge and Router that mutation testing found unchecked (issue 17).

Each test states one behaviour of the paper's mechanism (who is assigned, what the distiller's and the
verifiers' calls carry, what is stored, how the Ability Matrix ranks) so that a silent change to it
fails here. The LLM is a recording stub or the scripted pool of `edv_mocks`; nothing touches the network.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from types import SimpleNamespace

import edv_mocks as em
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench import registry
from aecg_bench.audit import AuditLog
from aecg_bench.errors import ConfigError
from aecg_bench.llm import LLMClient, ModelSpec
from aecg_bench.llm.providers import ContextLimitError
from aecg_bench.types import (
    Action,
    DecisionNode,
    Episode,
    Observation,
    Outcome,
    Step,
    Task,
    ToolCall,
    ToolSpec,
    Trajectory,
)
from baselines.edv.ability import AbilityMatrix
from baselines.edv.banks import Banks, item_text
from baselines.edv.contamination import CORRUPT_SYSTEM, load_items
from baselines.edv.distill import Distilled, distill, parse_distilled
from baselines.edv.execute import execute, outcome_text
from baselines.edv.judge import parse_best
from baselines.edv.pool import Assignment, Pool, StagePlan
from baselines.edv.prompts import (
    VERIFY_GRAMMAR,
    VERIFY_SYSTEM,
    Candidate,
    distill_grammar,
    distill_messages,
    judge_grammar,
    judge_messages,
    render_tools,
    verify_messages,
)
from baselines.edv.verify import parse_vote, verify_items
from baselines.llm_calls import stable_seed
from baselines.reasoningbank import ReasoningItem
from baselines.trajectory_text import one_line

# -- a recording LLM stub -------------------------------------------------------------------------


@dataclass
class _Reply:
    text: str


class _Recorder:
    """Stands in for the LLM client: records every call's keyword arguments, answers from a function."""

    def __init__(self, answer=lambda system, user, model: "Rationale: ok.\nVerdict: APPROVE", fail=None):
        self.calls: list[dict] = []
        self.answer = answer
        self.fail = fail

    def complete(self, messages, **kwargs):
        system, user = messages[0]["content"], messages[1]["content"]
        self.calls.append({"system": system, "user": user, **kwargs})
        if self.fail is not None:
            raise self.fail
        return _Reply(self.answer(system, user, kwargs.get("model")))


def _method(llm) -> SimpleNamespace:
    return SimpleNamespace(name="edv", services=SimpleNamespace(llm=llm), audit=AuditLog())


def _candidates(n: int = 2) -> list[Candidate]:
    traj = Trajectory(task_id="t1", framework="scripted", initial_observation="A customer writes in.")
    return [Candidate(i, f"executor {i}", traj, "success" if i == 1 else "failure") for i in range(1, n + 1)]


# -- the Ability Matrix ---------------------------------------------------------------------------


def _lb(alpha: float, beta: float, z: float) -> float:
    total = alpha + beta
    return alpha / total - z * math.sqrt(alpha * beta / (total * total * (total + 1)))


def test_the_matrix_refuses_a_non_positive_prior_or_a_negative_confidence():
    for bad in [(0.0, 1.0), (-1.0, 1.0), (1.0, -0.5), (-1.0, -1.0)]:
        with pytest.raises(ValueError, match="prior_strength must be > 0 and confidence >= 0"):
            AbilityMatrix(*bad)
    for good in [(0.5, 1.0), (1.0, 0.0), (2.0, 0.5)]:
        assert AbilityMatrix(*good).prior_strength == good[0]
    for call in (lambda m: m.best("x", []), lambda m: m.best_overall([])):
        with pytest.raises(ValueError, match=r"^the Ability Matrix needs at least one model to rank$"):
            call(AbilityMatrix())


def test_a_tie_in_score_goes_to_the_model_with_more_attempts_on_that_type():
    # confidence 0 ranks by the posterior mean: 1/2 on "x" has the untried model's mean 0.5 exactly
    m = AbilityMatrix(confidence=0.0)
    m.update("b", "x", True)
    m.update("b", "x", False)
    assert m.score("a", "x") == m.score("b", "x") == 0.5
    assert m.best("x", ["a", "b"]) == "b" and [n for n, _ in m.rank("x", ["a", "b"])] == ["b", "a"]
    assert m.best_overall(["a", "b"]) == "b"  # Beta(1 + 1, 1 + 1) ties Beta(1, 1): more attempts win


def test_the_rank_of_a_task_type_reads_that_types_record_not_the_models_overall_one():
    m = AbilityMatrix()
    for i in range(10):
        m.update("a", "x", i < 9)  # a: good on x, bad elsewhere
        m.update("a", "y", False)
        m.update("b", "x", i < 5)  # b: middling on x, perfect elsewhere
        m.update("b", "y", True)
    assert m.best("x", ["b", "a"]) == "a" and m.best("y", ["a", "b"]) == "b"
    assert m.best_overall(["a", "b"]) == "b"  # 14/20 beats 9/20


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("xy"), st.booleans()), max_size=25),
    st.floats(0.1, 5.0),
    st.floats(0.0, 2.0),
)
def test_scores_are_the_beta_lower_bound_with_the_back_off_prior(events, strength, z):
    m = AbilityMatrix(strength, z)
    for model, task_type, success in events:
        m.update(model, task_type, success)
    models = ["a", "b", "c"]
    for t in "xy":
        for model in models:
            mine = [s for mm, tt, s in events if mm == model and tt == t]
            other = [s for mm, tt, s in events if mm == model and tt != t]
            centre = (sum(other) + 1) / (len(other) + 2)
            alpha = strength * centre + sum(mine)
            beta = strength * (1 - centre) + len(mine) - sum(mine)
            assert m.score(model, t) == pytest.approx(_lb(alpha, beta, z))
        expected = sorted(models, key=lambda mm: (-m.score(mm, t), -m.record(mm, t)[1], models.index(mm)))
        assert [mm for mm, _ in m.rank(t, models)] == expected
    overall = {mm: (sum(s for x, _, s in events if x == mm), sum(x == mm for x, _, _ in events)) for mm in models}
    best = min(
        models, key=lambda mm: (-_lb(1 + overall[mm][0], 1 + overall[mm][1] - overall[mm][0], z), -overall[mm][1])
    )
    assert m.best_overall(models) == best


def test_the_snapshot_gives_each_types_record_and_its_score_to_four_places():
    m = AbilityMatrix()
    m.update("a", "x", True)
    m.update("a", "x", False)
    m.update("b", "y", True)
    snap = m.snapshot(["a", "b"])
    assert snap == {
        "x": {
            "a": {"successes": 1, "attempts": 2, "score": round(m.score("a", "x"), 4)},
            "b": {"successes": 0, "attempts": 0, "score": round(m.score("b", "x"), 4)},
        },
        "y": {
            "a": {"successes": 0, "attempts": 0, "score": round(m.score("a", "y"), 4)},
            "b": {"successes": 1, "attempts": 1, "score": round(m.score("b", "y"), 4)},
        },
    }
    assert snap["x"]["a"]["score"] != round(m.score("a", "x"), 5)


# -- the pool: staffing, temperatures, assignment -------------------------------------------------


def _pool(n: int = 3, temperature: float = 0.7, **kw) -> Pool:
    labels = [f"m{i}" for i in range(n)]
    specs = {m: ModelSpec(label=m, provider="mock", model=f"mock/{m}", temperature=temperature) for m in labels}
    return Pool(labels, specs, **kw)


def test_the_pool_verifies_at_temperature_zero_and_otherwise_at_each_models_own():
    pool = _pool()
    assert [pool.temperature("m0", s) for s in ("execute", "distill", "verify", "solve")] == [0.7, 0.7, 0.0, 0.7]
    assert pool.describe() == {m: {"model": f"mock/{m}", "temperatures": [0.7, 0.7, 0.0]} for m in pool.members}


def test_the_pool_names_what_is_wrong_with_it():
    specs = _pool().specs
    with pytest.raises(
        ConfigError, match=r"^the EDV model pool is empty; list model labels in `pool` or configure models$"
    ):
        Pool([], specs)
    with pytest.raises(ConfigError, match=r"the EDV model pool lists a model twice: \['m0', 'm0'\]"):
        Pool(["m0", "m0"], specs)
    with pytest.raises(ConfigError, match="unknown fixed pool model 'zz'; valid choices: m0, m1, m2"):
        _pool().check(StagePlan(fixed="zz"))
    with pytest.raises(ConfigError, match="n_executors=0 needs as many pool models; the pool has 3"):
        _pool().check(StagePlan(n_executors=0))
    with pytest.raises(ConfigError, match="the pool has 3: m0, m1, m2 "):
        _pool().check(StagePlan(n_executors=3))
    with pytest.raises(ConfigError, match="the pool has 3: m0, m1, m2 "):
        _pool().check(StagePlan(verify_by="external"))


def test_plans_that_exactly_fill_the_pool_are_staffed():
    _pool().check(StagePlan(n_executors=3, distill_by="executor"))  # no outsider needed
    _pool(4).check(StagePlan(verify_by="external"))  # 2 executors, a distiller and one outsider
    _pool(2).check(StagePlan(distill_by="executor", verify_by="distiller"))


def test_fixed_roles_start_at_the_fixed_model_and_wrap_around_the_pool():
    pool = _pool()
    fixed = {
        f: pool.assign(StagePlan(rotate=False, fixed=f), seed=0, task_id="t", visit=0).executors for f in pool.members
    }
    assert fixed == {"m0": ("m0", "m1"), "m1": ("m1", "m2"), "m2": ("m2", "m0")}
    assert pool.assign(StagePlan(rotate=False, n_executors=1), seed=0, task_id="t", visit=0).executors == ("m0",)


def test_an_external_verifier_is_neither_an_executor_nor_the_distiller():
    pool, plan = _pool(4), StagePlan(verify_by="external")
    for t in range(30):
        a = pool.assign(plan, seed=0, task_id=f"t{t}", visit=0)
        assert set(a.verifiers) == set(pool.members) - set(a.executors) - {a.distiller}


def test_assignments_are_drawn_from_the_seed_the_task_and_the_visit():
    """The assignment is reproducible across versions: the same draw as a Random seeded from
    ("edv-assign", seed, task, visit), so every part of the key changes the draw."""
    pool, plan = _pool(), StagePlan()
    for seed, task_id, visit in [(0, "t1", 0), (3, "t1", 0), (0, "t2", 0), (0, "t1", 1), (7, "task-9", 2)]:
        rng = random.Random(stable_seed("edv-assign", seed, task_id, visit))
        executors = rng.sample(list(pool.members), 2)
        distiller = rng.choice([m for m in pool.members if m not in executors])
        got = pool.assign(plan, seed=seed, task_id=task_id, visit=visit)
        assert got == Assignment(tuple(executors), distiller, tuple(executors))
    by_task = {pool.assign(plan, seed=0, task_id=f"t{i}", visit=0) for i in range(12)}
    assert len(by_task) > 1


# -- Execute ------------------------------------------------------------------------------------


def _episode(success: bool | None) -> Episode:
    traj = Trajectory(task_id="t1", framework="scripted", initial_observation="hi")
    return Episode(em.task(), traj, Outcome(success=success, value=float(bool(success))))


def test_execute_numbers_candidates_names_executors_and_keeps_each_rollouts_settings():
    pool = _pool(temperature=0.4, execute_temperature=None)
    pool.specs["m1"] = ModelSpec(label="m1", provider="mock", model="mock/m1", temperature=0.9)
    outcomes = iter([True, False, None, True])
    seen = []

    def run_once(label, temperature, index):
        seen.append((label, temperature, index))
        return _episode(next(outcomes))

    out = execute(Assignment(("m0", "m1"), "m2", ("m0", "m1")), pool, 2, run_once)
    assert seen == [("m0", 0.4, 1), ("m0", 0.4, 2), ("m1", 0.9, 3), ("m1", 0.9, 4)]
    assert [(e.candidate.number, e.candidate.executor, e.candidate.outcome) for e in out] == [
        (1, "executor 1", "success"),
        (2, "executor 1", "failure"),
        (3, "executor 2", "unknown"),
        (4, "executor 2", "success"),
    ]
    assert [(e.model, e.temperature, e.sample_index) for e in out] == [(m, t, i) for m, t, i in seen]
    assert out[2].to_audit() == {
        "candidate": 3,
        "model": "m1",
        "temperature": 0.9,
        "sample_index": 3,
        "outcome": "unknown",
        "status": str(out[2].episode.trajectory.status),
        "steps": 0,
    }
    assert [outcome_text(_episode(s)) for s in (True, False, None)] == ["success", "failure", "unknown"]


# -- Distill ------------------------------------------------------------------------------------


def test_an_empty_distillation_is_nothing_at_all():
    for reply in (None, ""):
        assert parse_distilled(reply, 4, 3) == Distilled(None, (), "", {}, reply)


def test_the_distillers_best_candidate_must_be_one_of_the_candidates():
    body = "\n# Memory Item 1\n## Title T\n## Description D.\n## Content C."
    assert [parse_distilled(f"Best: {n}{body}", 4, 3).best for n in (0, 1, 2, 4, 5)] == [None, 1, 2, 4, None]
    assert parse_distilled(f"Best: candidate #3{body}", 4, 3).best == 3
    assert parse_distilled(body, 4, 3).best is None


def test_the_analysis_is_kept_to_500_characters_and_the_reply_is_kept_whole():
    reply = "Analysis: " + "a" * 600 + "\nBest: 1\n# Memory Item 1\n## Title T\n## Description D.\n## Content C."
    out = parse_distilled(reply, 2, 3)
    assert out.analysis == "a" * 500 and out.reply == reply and out.best == 1
    assert parse_distilled("Best: 1\n# Memory Item 1\n## Title T\n## Content C.", 2, 3).analysis == ""


def test_the_distiller_is_called_with_its_stage_settings_and_its_items_are_capped():
    items = "".join(f"\n# Memory Item {i}\n## Title T{i}\n## Description D.\n## Content C{i}." for i in range(1, 5))
    llm = _Recorder(lambda *_: "Best: 2\nAssessment: 1=success; 2=failure" + items)
    method = _method(llm)
    kw = {"distiller": "mc", "temperature": 0.3, "max_chars": 900, "max_tokens": 321, "show_outcome": True}
    out = distill(method, em.task(), _candidates(), max_items=2, **kw)
    assert [i.title for i in out.items] == ["T1", "T2"] and out.best == 2 and out.assessed == {1: True, 2: False}
    (call,) = llm.calls
    assert (call["model"], call["role"], call["temperature"], call["max_tokens"]) == ("mc", "distiller", 0.3, 321)
    assert call["grammar"] == distill_grammar(2, 2) and "at most 2" in call["system"]
    assert "outcome: success" in call["user"]
    down = _method(_Recorder(fail=ContextLimitError("too long")))
    assert distill(down, em.task(), _candidates(), max_items=2, **kw).items == ()
    assert [(e["purpose"], e["reason"]) for e in down.audit.read()] == [("distill", "context_limit")]


# -- Verify -------------------------------------------------------------------------------------


def test_a_votes_rationale_is_its_rationale_line_or_the_text_before_the_verdict():
    assert parse_vote("m", "Rationale: grounded in act 2.\nVerdict: APPROVE").rationale == "grounded in act 2."
    assert parse_vote("m", "Looks generic.\nVerdict: REJECT").rationale == "Looks generic."
    assert parse_vote("m", None).rationale == "" and parse_vote("m", "").rationale == ""
    long = parse_vote("m", "Rationale: " + "word " * 400 + "\nVerdict: APPROVE").rationale
    assert long == one_line("word " * 400, 800) and len(long) == 800


def test_every_verifier_votes_with_its_own_settings_on_every_item():
    llm = _Recorder(
        lambda system, user, model: "Rationale: ok.\nVerdict: " + ("APPROVE" if model == "ma" else "REJECT")
    )
    method = _method(llm)
    items = [ReasoningItem("One", "d1.", "c1."), ReasoningItem("Two", "d2.", "c2.")]
    verdicts = verify_items(
        method,
        em.task(),
        _candidates(),
        items,
        verifiers=["ma", "mb"],
        executors=["ma", "mb"],
        mode="hierarchical",
        temperature={"ma": 0.0, "mb": 0.2}.get,
        max_tokens={"ma": 64, "mb": 96}.get,
        max_chars=700,
        show_outcome=True,
    )
    assert [(c["model"], c["temperature"], c["max_tokens"], c["role"]) for c in llm.calls] == [
        ("ma", 0.0, 64, "verifier"),
        ("mb", 0.2, 96, "verifier"),
        ("ma", 0.0, 64, "verifier"),
        ("mb", 0.2, 96, "verifier"),
    ]
    assert all(c["grammar"] == VERIFY_GRAMMAR and "outcome: failure" in c["user"] for c in llm.calls)
    assert all(c["system"] == VERIFY_SYSTEM.format(schema_rule="") for c in llm.calls)
    assert [c["user"].split("## Candidate memory\n")[1] for c in llm.calls[::2]] == [i.render() for i in items]
    assert [(v.destination, v.owners, v.approvers) for v in verdicts] == [("private", ("ma",), ("ma",))] * 2
    down = _method(_Recorder(fail=ContextLimitError("too long")))
    kwargs = {"temperature": lambda v: 0.0, "max_tokens": lambda v: 64, "max_chars": 700, "show_outcome": False}
    (verdict,) = verify_items(
        down, em.task(), _candidates(), items[:1], verifiers=["ma"], executors=["ma"], mode="hierarchical", **kwargs
    )
    assert verdict.destination == "discard" and down.audit.read()[0]["purpose"] == "verify"


def test_every_schema_check_a_tool_prompt_asks_for_is_checkable_on_that_prompt():
    """B.2: referenced function names, arguments and return fields must exist. The tool schema the
    prompts show has no return types (ToolSpec), so return fields are checked against the tool outputs
    the trajectories show, and the schema is never named as where they are."""
    tools = (ToolSpec("find_orders", "List orders.", {"type": "object", "properties": {"customer": {}}}),)
    task = Task(id="t1", benchmark="toy_tools", instruction="Cancel my order.", tools=tools)
    act = Action(kind="tool", tool_calls=(ToolCall("find_orders", {"customer": "ana"}),))
    output = Observation(text='{"orders": [{"id": "o1", "status": "pending"}]}')
    traj = Trajectory(task_id="t1", framework="scripted", steps=[Step(0, act, output)])
    cands = [Candidate(1, "executor 1", traj, "unknown")]
    assert "status" not in render_tools(task)  # the schema shows names and arguments only
    system, user = verify_messages(task, cands, "Check the status field.", max_chars=6000, show_outcome=False)
    rule = system.split("4. Schema-aligned:")[1].split("If any check fails")[0]
    assert "return field" not in rule.split("tool schema")[0]  # not asked of the schema
    assert "return field it mentions appears in a tool output" in rule and '"status": "pending"' in user
    distill_system, distill_user = distill_messages(task, cands, max_items=3, max_chars=6000, show_outcome=False)
    schema_ask, outputs_ask = distill_system.split("Tool outputs:")[1].split("in the tool schema below")[:2]
    assert "return field" not in schema_ask and "return fields that appear in the tool outputs" in outputs_ask
    assert '"status": "pending"' in distill_user


# -- the banks ----------------------------------------------------------------------------------


class _Texts:
    """Lexical-free embedder that records what is embedded; every text gets the same vector."""

    dim = 2

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen += list(texts)
        return np.tile(np.asarray([[1.0, 0.0]], dtype=np.float32), (len(texts), 1))

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def _item(iid: str, bank: str = "shared", owners: list[str] | None = None, task_id: str = "src") -> dict:
    return {
        "id": iid,
        "title": f"T{iid}",
        "description": "D.",
        "content": "C.",
        "task_id": task_id,
        "query": f"query {iid}",
        "bank": bank,
        "owners": owners or [],
    }


def test_an_item_is_indexed_under_its_task_its_text_or_both():
    assert item_text(_item("1")) == "T1: D. C."
    for mode, expected in [("task", "query 1"), ("item", "T1: D. C."), ("task+item", "query 1\nT1: D. C.")]:
        emb = _Texts()
        banks = Banks(emb, mode)  # type: ignore[arg-type]
        banks.add(_item("1"))
        assert emb.seen == [expected], mode


def test_a_duplicate_id_is_refused_and_state_keeps_items_as_they_were():
    banks = Banks(_Texts())  # type: ignore[arg-type]
    banks.add(_item("1", "private", ["ma"]))
    with pytest.raises(ValueError, match="duplicate EDV memory id '1'"):
        banks.add(_item("1"))
    assert banks.state_dict() == [_item("1", "private", ["ma"])]
    banks.add(_item("2"))
    banks.add(_item("3"))
    assert banks.counts() == {"shared": 2, "private": 1}


def test_retrieval_skips_the_tasks_own_items_by_default_and_never_returns_more_than_k():
    banks = Banks(_Texts())  # type: ignore[arg-type]
    banks.add(_item("own", task_id="q"))
    banks.add(_item("s1"))
    for i in range(3):
        banks.add(_item(f"p{i}", "private", ["ma"]))
    args = {"solver": "ma", "shared_threshold": 0.5, "private_threshold": 0.5}
    hits = banks.retrieve("query", task_id="q", k=2, **args)
    assert [(h.item["id"], h.bank, h.score) for h in hits] == [("s1", "shared", 1.0), ("p0", "private:ma", 1.0)]
    assert banks.retrieve("query", task_id="q", k=0, **args) == []
    assert [h.item["id"] for h in banks.retrieve("query", task_id="other", k=1, **args)] == ["own"]


# -- Judge ----------------------------------------------------------------------------------------


class _Proxy:
    """The scripted pool client, recording the keyword arguments of every completion."""

    def __init__(self, llm) -> None:
        self.llm, self.calls = llm, []

    def __getattr__(self, name):
        return getattr(self.llm, name)

    def complete(self, messages, **kwargs):
        self.calls.append({"system": messages[0]["content"], "user": messages[1]["content"], **kwargs})
        return self.llm.complete(messages, **kwargs)


def _judge_services(reply: str, *, labels=("ma", "mb", "mc"), max_tokens: int = 111):
    rules = [{"match": "Attempt 1", "reply": reply}]
    specs = {
        m: ModelSpec(
            label=m,
            provider="mock",
            model=f"mock/{m}",
            temperature=0.5,
            max_tokens=max_tokens,
            options={"policy": "script", "script": rules},
        )
        for m in labels
    }
    proxy = _Proxy(LLMClient(specs, {"default": labels[0], "adjudicator": labels[-1]}))
    return em.services(proxy), proxy  # type: ignore[arg-type]


@dataclass
class _PoolRollout:
    """Each model's rollout: success iff listed; records how it was asked to run."""

    task: object
    succeeds: tuple[str, ...] = ()
    calls: list = None  # type: ignore[assignment]

    def __call__(self, *, model=None, temperature=None, sample_index=0, use_memory=True, usage_role=None):
        self.calls = [*(self.calls or []), (model, sample_index, use_memory, usage_role)]
        ok = None if self.succeeds is None else model in self.succeeds
        traj = Trajectory(task_id=self.task.id, framework="scripted", initial_observation=f"attempt by {model}")
        return Episode(self.task, traj, Outcome(success=ok, value=float(bool(ok)))), (model, sample_index)


def test_a_fixed_judge_does_not_answer_and_the_attempt_it_names_is_the_result():
    services, proxy = _judge_services("Reason: the second is right.\nBest: 2")
    judge = registry.build("memory", "judge", {"judge_model": "mc"}, services=services)
    rollout = _PoolRollout(em.task())
    episode, score = judge.solve(em.task(), rollout)
    assert rollout.calls == [("ma", 0, False, "solver"), ("mb", 1, False, "solver")]  # mc judges, never answers
    assert score == ("mb", 1) and episode.trajectory.initial_observation == "attempt by mb"
    verdict = {"judge": "mc", "attempts": ["ma", "mb"], "best": 2, "fallback": False}
    assert episode.trajectory.metadata["adjudication"] == verdict
    (call,) = proxy.calls
    assert (call["role"], call["model"], call["temperature"], call["max_tokens"]) == ("adjudicator", "mc", 0.0, 111)
    assert call["grammar"] == judge_grammar(2) and "attempt by mb" in call["user"]
    (event,) = [e for e in services.audit.read() if e["event"] == "adjudicate"]
    assert {k: event[k] for k in ("task", "reply", *verdict)} == {
        "task": "t1",
        "reply": "Reason: the second is right.\nBest: 2",
        **verdict,
    }


def test_by_default_each_task_draws_its_judge_from_the_pool_and_the_others_answer():
    """The judge never adjudicates its own attempt; which member judges is drawn from (seed, task)."""
    judges = {}
    for seed in (0, 1):
        services, proxy = _judge_services("Best: 1")
        services.seed = seed
        judge = registry.build("memory", "judge", {}, services=services)
        for i in range(12):
            task = em.task(f"t{i}")
            rollout = _PoolRollout(task)
            judge.solve(task, rollout)
            judged_by = proxy.calls[-1]["model"]
            assert [c[0] for c in rollout.calls] == [m for m in ("ma", "mb", "mc") if m != judged_by]
            assert [c[1] for c in rollout.calls] == [("ma", "mb", "mc").index(c[0]) for c in rollout.calls]
            assert judge.judge_for(task) == judged_by  # the same task draws the same judge again
            judges[seed, i] = judged_by
    assert set(judges.values()) == {"ma", "mb", "mc"}  # every member judges some tasks
    assert any(judges[0, i] != judges[1, i] for i in range(12))  # the draw follows the run seed
    assert judges == {
        (seed, i): random.Random(stable_seed("judge", seed, f"t{i}")).choice(["ma", "mb", "mc"])
        for seed in (0, 1)
        for i in range(12)
    }
    services, proxy = _judge_services("Best: 1")
    pair = registry.build("memory", "judge", {"pool": ["ma", "mb"]}, services=services)
    for i in range(6):  # of two members one judges, so the other answers alone and nobody is asked
        rollout = _PoolRollout(em.task(f"t{i}"))
        episode, _ = pair.solve(em.task(f"t{i}"), rollout)
        assert [c[0] for c in rollout.calls] == [m for m in ("ma", "mb") if m != pair.judge_for(em.task(f"t{i}"))]
        assert "adjudication" not in episode.trajectory.metadata
    assert proxy.calls == []


def test_an_unparsable_judgement_falls_back_to_the_first_attempt_and_says_so():
    services, _ = _judge_services("I cannot decide.")
    judge = registry.build("memory", "judge", {"judge_model": "mb", "judge_max_tokens": 64}, services=services)
    episode, _ = judge.solve(em.task(), _PoolRollout(em.task()))
    assert episode.trajectory.metadata["adjudication"] == {
        "judge": "mb",
        "attempts": ["ma", "mc"],
        "best": None,
        "fallback": True,
    }
    assert services.llm.calls[0]["model"] == "mb" and services.llm.calls[0]["max_tokens"] == 64
    assert episode.trajectory.initial_observation == "attempt by ma"  # the first attempt, in pool order
    long = "Reason: " + "because " * 200 + "\nBest: 2"
    services, _ = _judge_services(long)
    registry.build("memory", "judge", {}, services=services).solve(em.task(), _PoolRollout(em.task()))
    (event,) = [e for e in services.audit.read() if e["event"] == "adjudicate"]
    assert event["reply"] == long[:800] and event["best"] == 2


def test_a_one_model_pool_needs_no_judge_and_a_bad_judge_model_is_named():
    services, proxy = _judge_services("Best: 1", labels=("solo",))
    judge = registry.build("memory", "judge", {}, services=services)
    episode, score = judge.solve(em.task(), _PoolRollout(em.task()))
    assert score == ("solo", 0) and proxy.calls == [] and "adjudication" not in episode.trajectory.metadata
    with pytest.raises(ConfigError, match="judge_model 'zz' is not a configured model: ma, mb, mc"):
        registry.build("memory", "judge", {"judge_model": "zz"}, services=_judge_services("")[0])
    with pytest.raises(ConfigError, match=r"^memory 'judge' needs the run's LLM client \(its model pool\)$"):
        registry.build("memory", "judge", {}, services=_no_llm())


def _no_llm():
    s = em.services()
    s.llm = None
    return s


def test_the_judges_last_best_line_counts_and_must_name_an_attempt():
    assert parse_best("Best: 1\nOn reflection...\nBest: 3", 3) == 3
    assert parse_best("best attempt = #2", 3) == 2 and parse_best("Best: **Attempt 3", 3) == 3
    assert [parse_best(f"Best: {n}", 3) for n in (0, 1, 3, 4)] == [None, 1, 3, None]
    assert parse_best(None, 3) is None and parse_best("no verdict", 3) is None


# -- Router ---------------------------------------------------------------------------------------


def _router(params=None, *, scripts=None, seed=0, **temperatures):
    proxy = _Proxy(em.pool_client(scripts, **temperatures))
    services = em.services(proxy, seed=seed)  # type: ignore[arg-type]
    return registry.build("memory", "router", params or {}, services=services), services, proxy


def test_the_router_learns_from_edvs_draw_and_its_distillers_unlabelled_assessment():
    """Router and EDV share their label source: EDV's two executors per build task and the third-party
    distiller's assessment (no outcome in its prompt), never the environment's verdict."""
    router, services, proxy = _router()
    t = em.task("t1", task_type="cancel")
    a = router.pool.assign(StagePlan(), seed=0, task_id="t1", visit=0)
    e1, e2 = a.executors
    rollout = _PoolRollout(t, succeeds=(e2,))  # the environment says the opposite of the distiller
    router.build(t, rollout)
    assert rollout.calls == [(m, i, False, "executor") for i, m in enumerate((e1, e1, e2, e2), start=1)]
    (call,) = proxy.calls
    assert (call["model"], call["role"]) == (a.distiller, "distiller") and "outcome:" not in call["user"]
    assert "strict third-party evaluator" in call["system"]  # EDV's Distill prompt: 1-2 success, 3-4 failure
    assert router.ability.record(e1, "cancel") == (2, 2) and router.ability.record(e2, "cancel") == (0, 2)
    assert (call["temperature"], call["max_tokens"]) == (0.0, router.pool.specs[a.distiller].max_tokens)
    probes = [{k: v for k, v in e.items() if k != "seq"} for e in services.audit.read() if e["event"] == "probe"]
    assert probes == [
        {"event": "probe", "task": "t1", "task_type": "cancel", "model": m, "success": ok, "source": "distiller"}
        for m, ok in ((e1, True), (e1, True), (e2, False), (e2, False))
    ]
    router.build(t, _PoolRollout(t))
    assigns = [{k: v for k, v in e.items() if k != "seq"} for e in services.audit.read() if e["event"] == "assign"]
    visit1 = router.pool.assign(StagePlan(), seed=0, task_id="t1", visit=1)
    assert assigns == [  # each visit draws again, as EDV's
        {"event": "assign", "task": "t1", "visit": v, "executors": list(x.executors), "distiller": x.distiller}
        for v, x in ((0, a), (1, visit1))
    ]
    labelled, _, proxy = _router({"ability_from": "labels"})
    labelled.build(t, _PoolRollout(t, succeeds=(e2,)))
    assert proxy.calls == []  # no distiller
    assert labelled.ability.record(e2, "cancel") == (2, 2) and labelled.ability.record(e1, "cancel") == (0, 2)


def test_the_router_routes_each_task_type_to_its_best_and_restores_its_state():
    router, _, _ = _router({"ability_from": "labels", "candidates_per_executor": 1})
    for i in range(6):
        for task_type, good in (("cancel", "mb"), ("refund", "ma")):
            t = em.task(f"{task_type}{i}", task_type=task_type)
            router.build(t, _PoolRollout(t, succeeds=(good,)))
    assert router.select_model(em.task("q", task_type="cancel")) == "mb"
    assert router.select_model(em.task("q", task_type="refund")) == "ma"
    assert router.recall(em.RecallQuery(task=em.task(), level="agent", agent="a", role="actor")) == []
    assert router.stats() == {"observations": 24.0}
    fresh, _, _ = _router()
    fresh.load_state_dict(router.state_dict())
    assert fresh.state_dict() == router.state_dict() and fresh.select_model(em.task("q", task_type="refund")) == "ma"


def test_the_router_skips_unassessed_candidates_and_episodes_without_one_pool_model():
    silent = {m: [{"match": "strict third-party evaluator", "reply": "I cannot tell."}] for m in ("ma", "mb", "mc")}
    router, services, _ = _router(scripts=silent)
    t = em.task("t1")
    router.build(t, _PoolRollout(t, succeeds=("ma", "mb", "mc")))
    skips = [e for e in _plain(services.audit.read()) if e["event"] == "skip"]
    a = router.pool.assign(StagePlan(), seed=0, task_id="t1", visit=0)
    assert skips == [
        {"event": "skip", "purpose": "probe", "reason": "no_label", "task": "t1", "model": m, "source": "distiller"}
        for m in (a.executors[0], a.executors[0], a.executors[1], a.executors[1])
    ]
    assert router.ability.cells == {}
    ep = _episode(True)
    router.observe(ep)  # no decisions: no model to credit
    assert _plain(services.audit.read())[-1] == {
        "event": "skip",
        "purpose": "observe",
        "reason": "not_one_pool_model",
        "task": "t1",
        "models": [],
    }
    assert router.ability.cells == {}


def test_online_the_routed_models_episode_is_assessed_by_another_pool_model():
    router, services, proxy = _router(seed=3)
    ep = _episode(False)  # the environment's verdict is not what it learns from
    ep.trajectory.add_decision(
        DecisionNode(
            id="d0", agent="solver", role="actor", level="agent", output="x", action=Action("command", "x"), model="mb"
        )
    )
    router.observe(ep)
    (call,) = proxy.calls
    assert call["role"] == "distiller" and "### Candidate 1 (executor 1)\n" in call["user"]
    assert router.ability.record("mb", "cancel") == (1, 1)  # the script's assessment: candidate 1 succeeded
    drawn, expected = [], []
    for seed in range(8):  # the assessor is drawn from (salt, run seed, task id) among the other members
        for task_id in ("t1", "t2"):
            other, _, other_proxy = _router(seed=seed)
            other.observe(replace(ep, task=em.task(task_id)))
            drawn.append(other_proxy.calls[0]["model"])
            expected.append(random.Random(stable_seed("router-assess", seed, task_id)).choice(["ma", "mc"]))
    assert drawn == expected and set(drawn) == {"ma", "mc"}
    assert services.audit.read()[-1]["event"] == "outcome" and services.audit.read()[-1]["model"] == "mb"
    labelled, _, proxy = _router({"ability_from": "labels"})
    labelled.observe(ep)
    assert proxy.calls == [] and labelled.ability.record("mb", "cancel") == (0, 1)


def test_router_params_reach_its_ability_matrix_its_plan_and_its_stages():
    params = {"prior_strength": 4.0, "confidence": 0.0, "n_executors": 1, "candidates_per_executor": 3}
    router, _, _ = _router(params)
    assert (router.ability.prior_strength, router.ability.confidence) == (4.0, 0.0)
    rollout = _PoolRollout(em.task())
    router.build(em.task(), rollout)
    assert [c[1] for c in rollout.calls] == [1, 2, 3] and len({c[0] for c in rollout.calls}) == 1
    stages = {"execute_temperature": 0.5, "distill_temperature": 0.2, "distill_max_tokens": 77}
    router, _, proxy = _router(stages)
    rollout = em.ScriptedRollout(em.task(), router)
    router.build(em.task(), rollout)
    assert {(c["temperature"], c["use_memory"], c["usage_role"]) for c in rollout.calls} == {(0.5, False, "executor")}
    assert (proxy.calls[0]["temperature"], proxy.calls[0]["max_tokens"]) == (0.2, 77)
    own = _router(mb=0.7)[0]
    for i in range(6):
        rollout = em.ScriptedRollout(em.task(f"t{i}"), own)
        own.build(em.task(f"t{i}"), rollout)
        assert all(c["temperature"] == (0.7 if c["model"] == "mb" else 0.0) for c in rollout.calls)
    with pytest.raises(ConfigError, match=r"^memory 'router' needs the run's LLM client \(its model pool\)$"):
        registry.build("memory", "router", {}, services=_no_llm())
    two = {m: [] for m in ("ma", "mb")}
    for mode in ("distiller", "labels"):  # both modes draw EDV's executors and distiller
        with pytest.raises(ConfigError, match="third-party distillation needs a pool model outside the 2 executors"):
            _router({"ability_from": mode}, scripts=two)
    four = {m: [] for m in ("ma", "mb", "mc", "md")}
    assert _router({"pool": ["mb", "mc", "md"]}, scripts=four)[0].pool.members == ("mb", "mc", "md")


# -- the method: one construction's record, state and inference -----------------------------------


def _plain(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "seq"} for e in events]


ALPHA = "When asked to cancel (context), shipped orders cannot be cancelled (risk); read the status first (action)."
BETA = "When looking up orders (context), lookups fail without a verified name (risk); ask first (action)."


def test_one_construction_is_recorded_step_by_step_and_stored_with_its_provenance():
    services = em.services(em.pool_client(ma=1.0, mb=0.3, mc=0.6))
    memory = registry.build("memory", "edv", {"rotate_roles": False}, services=services)
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    temps = {"ma": [1.0, 1.0, 0.0], "mb": [0.3, 0.3, 0.0], "mc": [0.6, 0.6, 0.0]}
    roles = {"executors": ["ma", "mb"], "distiller": "mc", "verifiers": ["ma", "mb"]}
    pool = {m: {"model": f"mock/{m}", "temperatures": t} for m, t in temps.items()}
    execute_events = [
        {"event": "execute", "task": "t1", "candidate": n, "model": m, "temperature": temps[m][0], "sample_index": n}
        | {"outcome": "success" if m == "ma" else "failure", "status": "ok", "steps": 1}
        for n, m in [(1, "ma"), (2, "ma"), (3, "mb"), (4, "mb")]
    ]
    matrix = memory.ability.snapshot(["ma", "mb", "mc"])
    ok, generic = "grounded in candidate 1, act 1.", "generic, not grounded."

    def vote(mid, verifier, approve):
        rationale = ok if approve else generic
        return {"event": "vote", "memory_id": mid, "verifier": verifier, "approve": approve} | {
            "parsed": True,
            "rationale": rationale,
        }

    def record(event, mid, title, dest, owners, approvals):
        return {"event": event, "memory_id": mid, "task": "t1", "title": title, "destination": dest} | {
            "owners": owners,
            "approvals": approvals,
            "verified": True,
        }

    assert _plain(services.audit.read()) == [
        {"event": "assign", "task": "t1", "visit": 0, **roles, "pool": pool},
        *execute_events,
        {
            "event": "distill",
            "task": "t1",
            "distiller": "mc",
            "best": 1,
            "assessment": {"1": True, "2": True, "3": False, "4": False},
            "n_items": 3,
            "analysis": "candidate 1 checked the order status first; candidate 3 cancelled a shipped order.",
        },
        {
            "event": "ability",
            "task_type": "cancel",
            "source": "distiller",
            "evidence": [["ma", True], ["ma", True], ["mb", False], ["mb", False]],
            "matrix": matrix,
        },
        vote("edv-0", "ma", True),
        vote("edv-0", "mb", True),
        record("admit", "edv-0", "Alpha rule", "shared", [], "2/2"),
        vote("edv-1", "ma", True),
        vote("edv-1", "mb", False),
        record("admit", "edv-1", "Beta rule", "private", ["ma"], "1/2"),
        vote("edv-2", "ma", False),
        vote("edv-2", "mb", False),
        record("discard", "edv-2", "Gamma rule", "discard", [], "0/2"),
    ]
    assert set(matrix["cancel"]) == {"ma", "mb", "mc"} and matrix["cancel"]["ma"]["attempts"] == 2
    common = {"task_id": "t1", "task_type": "cancel", "query": em.INSTRUCTION, "distiller": "mc", "best_candidate": 1}
    assert memory.state_dict() == {
        "items": [
            {"id": "edv-0", "title": "Alpha rule", "description": "Check the status first.", "content": ALPHA}
            | common
            | {"bank": "shared", "owners": [], "item_index": 0, "visit": 0},
            {"id": "edv-1", "title": "Beta rule", "description": "Verify the name.", "content": BETA}
            | common
            | {"bank": "private", "owners": ["ma"], "item_index": 1, "visit": 0},
        ],
        "ability": [["cancel", "ma", 2, 2], ["cancel", "mb", 0, 2]],
        "visits": {"t1": 1},
        "next_id": 3,
        "discarded": 1,
    }
    assert memory.stats() == {"items": 2.0, "shared": 1.0, "private": 1.0, "discarded": 1.0, "constructions": 1.0}
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    assert [i["visit"] for i in memory.state_dict()["items"]] == [0, 0, 1, 1] and memory.next_id == 6
    assert memory.stats()["constructions"] == 2.0 and memory.discarded == 2


def test_an_unparsable_distillation_is_audited_with_its_reply():
    scripts = {
        m: [{"match": "strict third-party evaluator", "reply": "Best: 2 but no items"}] for m in ("ma", "mb", "mc")
    }
    services = em.services(em.pool_client(scripts))
    memory = registry.build("memory", "edv", {"rotate_roles": False}, services=services)
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    (event,) = [e for e in _plain(services.audit.read()) if e["event"] == "distill"]
    assert event == {
        "event": "distill",
        "task": "t1",
        "distiller": "mc",
        "best": 2,
        "assessment": {},
        "n_items": 0,
        "analysis": "",
        "reason": "unparsable",
        "reply": "Best: 2 but no items",
    }


def test_stage_token_limits_and_the_solve_temperature_reach_their_calls():
    proxy = _Proxy(em.pool_client())
    services = em.services(proxy)  # type: ignore[arg-type]
    params = {"rotate_roles": False, "distill_max_tokens": 300, "verify_max_tokens": 40, "solve_temperature": 0.25}
    memory = registry.build("memory", "edv", params, services=services)
    rollout = em.ScriptedRollout(em.task(), memory)
    memory.build(em.task(), rollout)
    assert {(c["role"], c["max_tokens"]) for c in proxy.calls} == {("distiller", 300), ("verifier", 40)}
    defaults = _Proxy(em.pool_client())
    plain = registry.build("memory", "edv", {"rotate_roles": False}, services=em.services(defaults))  # type: ignore[arg-type]
    plain.build(em.task(), em.ScriptedRollout(em.task(), plain))
    assert {c["max_tokens"] for c in defaults.calls} == {em.pool_client().models["ma"].max_tokens}
    probe = em.task("t2")
    solving = em.ScriptedRollout(probe, memory)
    memory.solve(probe, solving)
    assert solving.calls[0]["temperature"] == 0.25 and solving.calls[0]["model"] == "ma"


def test_recalled_experience_names_its_bank_source_task_and_score():
    memory = registry.build("memory", "edv", {"rotate_roles": False}, services=em.services())
    memory.build(em.task("t1"), em.ScriptedRollout(em.task("t1"), memory))
    memory._acting = "ma"
    query = em.RecallQuery(
        task=em.task("t2"), level="team", agent="solver", role="actor", context="A customer writes in."
    )
    items = memory.recall(query)
    assert [(i.id, i.level, i.kind, i.metadata) for i in items] == [
        ("edv-0", "team", "experience", {"bank": "shared", "source_task": "t1"}),
        ("edv-1", "team", "experience", {"bank": "private:ma", "source_task": "t1"}),
    ]
    assert items[0].text == f"Alpha rule: Check the status first. {ALPHA}" and all(0.8 <= i.score <= 1.0 for i in items)


def test_best_overall_routing_and_memory_while_executing_follow_their_params():
    memory = registry.build(
        "memory",
        "edv",
        {"rotate_roles": False, "routing": "best_overall", "execute_with_memory": True},
        services=em.services(),
    )
    for i in range(2):
        t = em.task(f"t{i}", task_type=f"type{i}")
        rollout = em.ScriptedRollout(t, memory)
        memory.build(t, rollout)
        assert {c["use_memory"] for c in rollout.calls} == {True}
    assert memory.select_model(em.task("q", task_type="never-seen")) == "ma"
    memory.load_state_dict({**memory.state_dict(), "ability": [["x", "mb", 9, 9], ["x", "ma", 0, 9]]})
    assert memory.select_model(em.task("q", task_type="never-seen")) == "mb"


def test_the_judge_reads_numbered_attempts_of_its_own_pool_under_its_prompt():
    services, proxy = _judge_services("Best: 1")
    params = {"pool": ["mb", "mc"], "judge_model": "ma", "max_chars_per_candidate": 300}
    judge = registry.build("memory", "judge", params, services=services)
    rollout = _PoolRollout(em.task())
    judge.solve(em.task(), rollout)
    assert [c[0] for c in rollout.calls] == ["mb", "mc"]  # a judge outside the pool leaves every member answering
    (call,) = proxy.calls
    candidates = [
        Candidate(n, "", Trajectory(task_id="t1", framework="scripted", initial_observation=f"attempt by {m}"), "")
        for n, m in [(1, "mb"), (2, "mc")]
    ]
    assert (call["system"], call["user"]) == judge_messages(em.task(), candidates, max_chars=300)
    assert "### Attempt 1\n" in call["user"] and "### Attempt 2\n" in call["user"] and "Attempt 0" not in call["user"]


class _TooLong(_Proxy):
    def complete(self, messages, **kwargs):
        raise ContextLimitError("prompt too long")


def test_a_judge_prompt_over_the_context_is_audited_and_falls_back():
    services, proxy = _judge_services("Best: 2")
    services.llm = _TooLong(proxy.llm)
    judge = registry.build("memory", "judge", {}, services=services)
    episode, _ = judge.solve(em.task(), _PoolRollout(em.task()))
    skip = next(e for e in services.audit.read() if e["event"] == "skip")
    assert (skip["purpose"], skip["reason"]) == ("adjudicate", "context_limit")
    assert episode.trajectory.metadata["adjudication"]["fallback"] is True
    assert next(e for e in services.audit.read() if e["event"] == "adjudicate")["reply"] == ""


# -- the contamination study's ReasoningBank ------------------------------------------------------

REAL = (
    "# Memory Item 1\n## Title Real rule\n## Description Real.\n## Content Check the order first.\n"
    "# Memory Item 2\n## Title Second rule\n## Description Two.\n## Content Ask for the name."
)
WRONG = "# Memory Item 1\n## Title Wrong rule\n## Description Wrong.\n## Content Never check the order."


def _contaminated(corrupt_reply: str, **params):
    llm = _Recorder(lambda system, user, model: corrupt_reply if system == CORRUPT_SYSTEM else REAL)
    services = em.services(llm)  # type: ignore[arg-type]
    memory = registry.build("memory", "reasoningbank_contaminated", {"source": "llm", **params}, services=services)
    return memory, services, llm


def _feed(memory, n: int) -> None:
    for i in range(n):
        t = em.task(f"t{i}", instruction=f"Cancel order number {i}")
        memory.observe(Episode(t, Trajectory(task_id=t.id, framework="scripted"), Outcome(success=True, value=1.0)))


def test_the_llm_source_rewrites_the_real_items_at_its_own_settings():
    memory, _, llm = _contaminated(WRONG, corrupt_temperature=0.4, extract_max_tokens=200)
    _feed(memory, 10)
    corrupt = [c for c in llm.calls if c["system"] == CORRUPT_SYSTEM]
    assert len(corrupt) == 1
    (call,) = corrupt
    real = (
        "# Memory Item 1\n## Title Real rule\n## Description Real.\n## Content Check the order first.\n\n"
        "# Memory Item 2\n## Title Second rule\n## Description Two.\n## Content Ask for the name."
    )
    assert call["user"] == f"**Task:** Cancel order number 9\n\n{real}"
    assert (call["role"], call["temperature"], call["max_tokens"]) == ("contaminator", 0.4, 200)
    injected = [e for e in memory.entries.values() if e["origin"] == "contamination"]
    assert [(e["task_id"], e["items"][0]["title"]) for e in injected] == [("t9", "Wrong rule")]


def test_an_unparsable_rewrite_keeps_the_tasks_real_items_and_is_audited():
    memory, services, _ = _contaminated("I will not do that.")
    _feed(memory, 10)
    assert memory.injected_entries() == 0 and len(memory.entries) == 10
    last = list(memory.entries.values())[-1]
    assert (last["task_id"], last["origin"], last["items"][0]["title"]) == ("t9", "induced", "Real rule")
    skips = [e for e in _plain(services.audit.read()) if e["event"] == "skip"]
    assert skips == [
        {
            "event": "skip",
            "purpose": "contaminate",
            "reason": "unparsable",
            "reply": "I will not do that.",
            "task": "t9",
        }
    ]
    fine, services, _ = _contaminated(WRONG)
    _feed(fine, 10)
    assert not [e for e in services.audit.read() if e["event"] == "skip"]


def test_a_rewrite_over_the_context_limit_is_audited_under_its_purpose():
    llm = _Recorder(
        lambda system, user, model: (
            (_ for _ in ()).throw(ContextLimitError("long")) if system == CORRUPT_SYSTEM else REAL
        )
    )
    services = em.services(llm)  # type: ignore[arg-type]
    memory = registry.build("memory", "reasoningbank_contaminated", {"source": "llm"}, services=services)
    _feed(memory, 10)
    skip = next(e for e in services.audit.read() if e["event"] == "skip")
    assert (skip["purpose"], skip["reason"]) == ("contaminate", "context_limit")


def test_contamination_files_skip_blank_lines_and_default_a_missing_description(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(
        '{"title": "Ä rule", "content": "Pay with a certificate."}\n\n'
        '{"title": "B rule", "description": "Desc.", "content": "Never refund."}\n',
        encoding="utf-8",
    )
    assert load_items(path) == [
        ReasoningItem("Ä rule", "", "Pay with a certificate."),
        ReasoningItem("B rule", "Desc.", "Never refund."),
    ]
    for missing in (None, ""):
        with pytest.raises(
            ConfigError,
            match=r"^reasoningbank_contaminated: source=file needs items_file \(JSONL of title/description/content\)$",
        ):
            load_items(missing)
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(ConfigError, match=r"^reasoningbank_contaminated: \S+empty.jsonl holds no items$"):
        load_items(tmp_path / "empty.jsonl")


# -- the method: params reach their stage ---------------------------------------------------------


def _edv(params: dict, llm=None, seed: int = 0, embedder=None):
    services = em.services(llm or em.pool_client(), seed=seed)
    if embedder is not None:
        services.embedder = embedder
    return registry.build("memory", "edv", params, services=services), services


def test_edv_params_reach_the_pool_the_banks_and_the_matrix():
    memory, _ = _edv({"pool": ["mc", "mb", "ma"], "rotate_roles": False, "index_text": "item"})
    assert memory.pool.members == ("mc", "mb", "ma") and memory.plan.fixed == "mc"
    assert memory.banks.index_text == "item"
    tuned, _ = _edv({"prior_strength": 5.0, "confidence": 0.25})
    assert (tuned.ability.prior_strength, tuned.ability.confidence) == (5.0, 0.25)
    with pytest.raises(ConfigError, match=r"^memory 'edv' needs the run's LLM client \(its model pool\)$"):
        registry.build("memory", "edv", {}, services=_no_llm())


def test_stage_temperatures_and_shown_outcomes_reach_the_distiller_and_verifiers():
    proxy = _Proxy(em.pool_client(ma=1.0, mb=0.3, mc=0.6))
    params = {"rotate_roles": False, "verify_temperature": None, "show_outcomes": True}
    memory, _ = _edv(params, proxy)
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    distill_calls = [c for c in proxy.calls if c["role"] == "distiller"]
    assert [(c["model"], c["temperature"]) for c in distill_calls] == [("mc", 0.6)]
    verify = {(c["model"], c["temperature"]) for c in proxy.calls if c["role"] == "verifier"}
    assert verify == {("ma", 1.0), ("mb", 0.3)}
    assert all("outcome: success" in c["user"] for c in proxy.calls)
    fixed = _Proxy(em.pool_client(ma=1.0, mb=0.3, mc=0.6))
    memory, _ = _edv({"rotate_roles": False, "distill_temperature": 0.9, "verify_temperature": 0.2}, fixed)
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    assert {(c["role"], c["temperature"]) for c in fixed.calls} == {("distiller", 0.9), ("verifier", 0.2)}


def test_each_construction_draws_its_roles_from_the_run_seed_and_the_task():
    memory, services = _edv({"rotate_roles": True}, seed=5)
    for i in range(4):
        t = em.task(f"t{i}")
        memory.build(t, em.ScriptedRollout(t, memory))
    drawn = [(e["executors"], e["distiller"]) for e in services.audit.read() if e["event"] == "assign"]
    expected = [memory.pool.assign(memory.plan, seed=5, task_id=f"t{i}", visit=0) for i in range(4)]
    assert drawn == [(list(a.executors), a.distiller) for a in expected]


def test_a_discarded_item_does_not_stop_the_items_after_it():
    scripts = {m: em.verdicts(("Beta rule", "Gamma rule")) for m in ("ma", "mb", "mc")}
    memory, _ = _edv({"rotate_roles": False}, em.pool_client(scripts))
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    assert [i["title"] for i in memory.banks.items.values()] == ["Beta rule", "Gamma rule"] and memory.discarded == 1


def test_an_unparsable_or_missing_distillation_reply_is_audited_clipped():
    long = "x" * 700
    scripts = {m: [{"match": "strict third-party evaluator", "reply": long}] for m in ("ma", "mb", "mc")}
    memory, services = _edv({"rotate_roles": False}, em.pool_client(scripts))
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    (event,) = [e for e in services.audit.read() if e["event"] == "distill"]
    assert event["reply"] == "x" * 500 and event["reason"] == "unparsable"

    class _NoDistiller(_Proxy):
        def complete(self, messages, **kwargs):
            if kwargs.get("role") == "distiller":
                raise ContextLimitError("too long")
            return super().complete(messages, **kwargs)

    memory, services = _edv({"rotate_roles": False}, _NoDistiller(em.pool_client()))
    memory.build(em.task(), em.ScriptedRollout(em.task(), memory))
    (event,) = [e for e in services.audit.read() if e["event"] == "distill"]
    assert event["reply"] == "" and event["reason"] == "unparsable"


def test_observing_without_a_pending_rollout_is_skipped_after_start_and_after_a_restore():
    memory, services = _edv({})
    memory.observe(_episode(True))
    t = em.task("t1")
    memory.solve(t, em.ScriptedRollout(t, memory))
    memory.load_state_dict(memory.state_dict())
    memory.observe(_episode(True))
    skips = [e for e in _plain(services.audit.read()) if e["event"] == "skip"]
    assert skips == [{"event": "skip", "purpose": "construct", "reason": "no_rollout", "task": "t1"}] * 2


def test_routing_by_task_type_and_by_best_overall_differ_where_the_records_differ():
    state = {"ability": [["x", "ma", 3, 3], ["x", "mb", 0, 3], ["y", "ma", 0, 20], ["y", "mb", 20, 20]]}
    picks = {}
    for routing in ("ability", "best_overall"):
        memory, _ = _edv({"routing": routing})
        memory.load_state_dict({**memory.state_dict(), **state})
        picks[routing] = memory.select_model(em.task("q", task_type="x"))
    assert picks == {"ability": "ma", "best_overall": "mb"}


def test_recall_applies_each_banks_threshold_the_key_and_the_same_task_guard():
    memory, _ = _edv({"rotate_roles": False})
    memory.build(em.task("t1"), em.ScriptedRollout(em.task("t1"), memory))
    near = em.task("t2", instruction="Cancel the pending order of the customer")

    def recalled(**params):
        m, _ = _edv({"rotate_roles": False, **params})
        m.load_state_dict(memory.state_dict())
        m._acting = "ma"
        query = em.RecallQuery(task=near, level="agent", agent="solver", role="actor", context="")
        return [(i.id, i.metadata["bank"]) for i in m.recall(query)]

    assert recalled(shared_threshold=0.0, private_threshold=0.0) == [("edv-0", "shared"), ("edv-1", "private:ma")]
    assert recalled(shared_threshold=0.999, private_threshold=0.0) == [("edv-1", "private:ma")]
    assert recalled(shared_threshold=0.0, private_threshold=0.999) == [("edv-0", "shared")]
    own = em.RecallQuery(task=em.task("t1"), level="agent", agent="solver", role="actor", context="")
    unguarded, _ = _edv({"exclude_same_task": False})
    unguarded.load_state_dict(memory.state_dict())
    assert [i.id for i in unguarded.recall(own)] == ["edv-0"]


def test_the_instruction_key_files_and_finds_items_by_the_instruction_alone():
    emb = _Texts()
    memory, _ = _edv({"rotate_roles": False, "retrieval_key": "instruction"}, embedder=emb)
    t = replace(em.task("t1"), mode="conversation")
    memory.build(t, em.ScriptedRollout(t, memory, opening="Hi, please cancel my order."))
    assert {i["query"] for i in memory.banks.items.values()} == {em.INSTRUCTION}
    query = em.RecallQuery(
        task=replace(em.task("t2"), mode="conversation"), level="agent", agent="s", role="actor", context="Hello there"
    )
    memory.recall(query)
    assert emb.seen[-1] == em.INSTRUCTION
