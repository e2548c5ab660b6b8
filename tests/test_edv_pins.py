"""Pins of EDV's stages, Judge and Router that mutation testing found unchecked (issue 17).

Each test states one behaviour of the paper's mechanism (who is assigned, what the distiller's and the
verifiers' calls carry, what is stored, how the Ability Matrix ranks) so that a silent change to it
fails here. The LLM is a recording stub or the scripted pool of `edv_mocks`; nothing touches the network.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from types import SimpleNamespace

import edv_mocks as em
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.audit import AuditLog
from aecg_bench.errors import ConfigError
from aecg_bench.llm import ModelSpec
from aecg_bench.llm.providers import ContextLimitError
from aecg_bench.types import Episode, Outcome, Trajectory
from baselines.edv.ability import AbilityMatrix
from baselines.edv.banks import Banks, item_text
from baselines.edv.distill import Distilled, distill, parse_distilled
from baselines.edv.execute import execute, outcome_text
from baselines.edv.pool import Assignment, Pool, StagePlan
from baselines.edv.prompts import VERIFY_GRAMMAR, Candidate, distill_grammar
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
        with pytest.raises(ValueError, match="needs at least one model to rank"):
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
    with pytest.raises(ConfigError, match="the EDV model pool is empty; list model labels"):
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
    assert [c["user"].split("## Candidate memory\n")[1] for c in llm.calls[::2]] == [i.render() for i in items]
    assert [(v.destination, v.owners, v.approvers) for v in verdicts] == [("private", ("ma",), ("ma",))] * 2
    down = _method(_Recorder(fail=ContextLimitError("too long")))
    kwargs = {"temperature": lambda v: 0.0, "max_tokens": lambda v: 64, "max_chars": 700, "show_outcome": False}
    (verdict,) = verify_items(
        down, em.task(), _candidates(), items[:1], verifiers=["ma"], executors=["ma"], mode="hierarchical", **kwargs
    )
    assert verdict.destination == "discard" and down.audit.read()[0]["purpose"] == "verify"


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
    assert banks.counts() == {"shared": 1, "private": 1}


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
