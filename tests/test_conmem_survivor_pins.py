"""Pins of ConMem behaviours the `conmem` mutation campaign left unchecked (issue 17): ties in retrieval keep
insertion order (ConMemCode sorts with Python's stable sort), the section-needs gate is inclusive at 0.25
(retriever._trigger, `>= retrieval_section_gate_threshold`), a conversation is recalled by its task text, the
graph walk adds a neighbour before checking the card cap (memory_graph.expand_activation), and the merge pass
goes on past candidates it skips and compares later candidates with the rewritten winner.

Embedders here are stubs with known cosines (a marker in a card's text picks its vector); the merge model
is a scripted mock."""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

import numpy as np
from test_conmem_pins import card, params  # the same card builder and retrieval parameters as the other ConMem pins

from aecg_bench.audit import AuditLog
from aecg_bench.contracts import MemoryServices
from aecg_bench.llm import LLMClient, ModelSpec
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.types import RecallQuery, Task
from baselines.conmem import prompts as P
from baselines.conmem import retrieval
from baselines.conmem.cards import SECTIONS
from baselines.conmem.method import ConMem
from baselines.conmem.store import CardStore

# -- fixtures ----------------------------------------------------------------------------------------


class _MarkerEmbedder:
    """Text -> the vector of the first marker ("zz" and one character) it contains; axis 0 otherwise."""

    dim = 4

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            found = re.search(r"zz.", text)
            out[i] = self.vectors[found.group()] if found else [1.0, 0.0, 0.0, 0.0]
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class _RecordingEmbedder(Embedder):
    """The lexical embedder, remembering every text embedded one at a time (queries)."""

    def __init__(self) -> None:
        super().__init__("lexical")
        self.queries: list[str] = []

    def embed_one(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return super().embed_one(text)


CALLS: list[str] = []
MERGE_REPLY: dict[str, Any] = {}


def _scripted(request, spec):
    system, user = str(request.messages[0]["content"]), str(request.messages[-1]["content"])
    if system != P.MERGE_SYSTEM:
        return "nothing to say"
    CALLS.append(user)
    return MERGE_REPLY["reply"](user)


register_mock_policy("conmem_survivor_pins", _scripted)


def _method(embedder: Any, **params: Any) -> ConMem:
    spec = ModelSpec(label="mock", provider="mock", model="mock/pins", options={"policy": "conmem_survivor_pins"})
    llm = LLMClient({"mock": spec}, {"default": "mock"}, ResponseCache(None, "off"))
    return ConMem(params, services=MemoryServices(llm=llm, embedder=embedder, audit=AuditLog(), seed=0))


def _store(embedder: Any, *cards: dict[str, Any]) -> CardStore:
    store = CardStore(embedder)
    for c in cards:
        store.put(copy.deepcopy(c))
    return store


# -- retrieval ---------------------------------------------------------------------------------------

_OPEN = dict(min_relevance=0.0, min_keyword_overlap=0.0, activation=0.0, top_k=40)  # every card fires
_EVEN = {s: 0.25 for s in SECTIONS}


def test_cards_tied_in_similarity_keep_their_insertion_order():
    # two kinds of card, interleaved: each kind ties in similarity and score, and MMR meets each kind's
    # cards in candidate order, so the result lists each kind in the order the cards were stored
    near = dict(task="sort numbers list", plan="sort numbers", triggers=["sort numbers"])
    far = dict(task="sort words list", plan="order words", triggers=["order words"])
    cards = [card(f"{kind}{i}", **spec) for i in range(10) for kind, spec in (("n", near), ("f", far))]
    store = _store(Embedder("lexical"), *cards)
    query = "sort numbers list"
    got = retrieval.retrieve(store, query, store.index.embed(query), _EVEN, params(**_OPEN))
    assert sorted(got) == sorted(c["id"] for c in cards)
    assert [c for c in got if c.startswith("n")] == [f"n{i}" for i in range(10)]
    assert [c for c in got if c.startswith("f")] == [f"f{i}" for i in range(10)]


def test_cards_tied_in_score_keep_their_insertion_order():
    # one text, alternating outcomes: the similarities tie, the scores tie within each outcome
    spec = dict(task="sort numbers list", plan="sort numbers", triggers=["sort numbers"])
    cards = [card(f"c{i:02d}", outcome="success" if i % 2 == 0 else "failure", rq=0.0, **spec) for i in range(20)]
    store = _store(Embedder("lexical"), *cards)
    query = "sort numbers list"
    got = retrieval.retrieve(store, query, store.index.embed(query), _EVEN, params(**_OPEN))
    assert got == [f"c{i:02d}" for i in range(0, 20, 2)] + [f"c{i:02d}" for i in range(1, 20, 2)]


def test_the_section_needs_boost_applies_from_a_base_score_of_exactly_a_quarter():
    # query along axis 0; the card's cosine is exactly 0.25 (float32-exact) and no query word matches,
    # so base = max(0.65 * 0.25, 0.25) = 0.25: the plan need (1.0) is added and the card fires at 0.5
    embedder = _MarkerEmbedder(
        {
            "zzq": [1.0, 0.0, 0.0, 0.0],
            "zzc": [0.25, math.sqrt(1 - 0.0625), 0.0, 0.0],
            "zzb": [0.24, math.sqrt(1 - 0.0576), 0.0, 0.0],
        }
    )
    needs = {"state": 0.0, "plan": 1.0, "exec": 0.0, "eval": 0.0}
    p = params(min_relevance=0.2, min_keyword_overlap=0.0, activation=0.5)
    at = _store(embedder, card("at", summary="zzc", plan="zzc"))
    assert float(at.index.scores(at.index.embed("zzq"))[1][0]) == 0.25
    assert retrieval.retrieve(at, "zzq", at.index.embed("zzq"), needs, p) == ["at"]
    below = _store(embedder, card("below", summary="zzb", plan="zzb"))
    assert retrieval.retrieve(below, "zzq", below.index.embed("zzq"), needs, p) == []


def test_a_conversation_is_recalled_by_its_opening_then_its_instruction():
    embedder = _RecordingEmbedder()
    m = _method(embedder)
    m.store.put(card("cm-0", task="return an order", plan="check the order", triggers=["order returns"]))
    task = Task(id="q", benchmark="unit", instruction="Airline policy text", mode="conversation")
    m.recall(RecallQuery(task=task, level="agent", agent="solver", role="actor", context=" I want a refund "))
    assert embedder.queries[-1] == "I want a refund\n\nAirline policy text"


def _edge(src: str, dst: str) -> dict[str, Any]:
    return {"src": src, "dst": dst, "relation": "supports", "weight": 0.8}


def test_the_walk_adds_a_neighbour_before_it_checks_the_card_cap():
    # ConMemCode's expand_activation: an edge to a card already selected is skipped, the first walkable
    # edge to a new card adds it, and only then does the cap (already reached by the activated cards) stop it
    store = _store(Embedder("lexical"), *(card(c, plan=f"plan {c}") for c in "abcd"))
    store.add_edges([_edge("a", "b"), _edge("a", "d"), _edge("c", "d")])
    ids, seen = retrieval.expand(store, ["a", "b", "c"], "task", params(expansion_max_cards=2, top_k=5))
    assert ids == ["a", "b", "c", "d"]
    assert [(e["src"], e["dst"]) for e in seen] == [("a", "b"), ("a", "d")]


# -- the merge pass ----------------------------------------------------------------------------------

_PLAN = "compare neighbours then swap neighbours; compare again and swap again"
_AXES = {"zz1": [0.0, 1.0, 0.0, 0.0], "zz2": [0.0, 0.0, 1.0, 0.0], "zz3": [0.0, 0.0, 0.0, 1.0]}


def _merged(marker: str) -> str:
    card = {
        "structured_content": {"plan": _PLAN},
        "trigger_semantics": ["when sorting numbers"],
        "summary": f"Sorting numbers {marker}",
        "evidence": "merged",
    }
    return "<merged_card>" + json.dumps(card) + "</merged_card>"


def _merging(reply, *cards: tuple[float, str]) -> ConMem:
    """A ConMem holding same-pattern cards (admission score, marker); the marker fixes the card's vector."""
    CALLS.clear()
    MERGE_REPLY["reply"] = reply
    m = _method(_MarkerEmbedder(_AXES), merge_every=1)
    for i, (score, marker) in enumerate(cards):
        spec = dict(task="Sort the numbers list", plan=_PLAN, triggers=["when sorting numbers"])
        m.store.put(card(f"cm-{i}", summary=f"Sorting numbers {marker}", score=score, **spec))
    m.next_id, m.committed_tasks = len(cards), 1
    return m


def _winner_marker(user: str) -> str:
    return re.search(r"zz.", user).group()


def test_the_merge_pass_goes_on_past_a_candidate_it_does_not_merge():
    # cm-0 is unlike cm-1 (orthogonal) but like cm-2: it absorbs cm-2 after passing over cm-1
    m = _merging(lambda user: _merged(_winner_marker(user)), (0.9, "zz1"), (0.8, "zz2"), (0.7, "zz1"))
    m.maintain(0)
    assert sorted(m.store.cards) == ["cm-0", "cm-1"] and len(CALLS) == 1
    assert '<card role="winner" id="cm-0">' in CALLS[0] and '<card role="candidate" id="cm-2">' in CALLS[0]


def test_the_merge_pass_goes_on_past_a_candidate_already_absorbed():
    # cm-0 absorbs cm-2; cm-1's candidates are cm-2 (gone) and cm-3, which it then absorbs
    m = _merging(lambda user: _merged(_winner_marker(user)), (0.9, "zz1"), (0.8, "zz2"), (0.7, "zz1"), (0.6, "zz2"))
    m.maintain(0)
    assert sorted(m.store.cards) == ["cm-0", "cm-1"] and len(CALLS) == 2
    assert '<card role="winner" id="cm-1">' in CALLS[1] and '<card role="candidate" id="cm-3">' in CALLS[1]


def test_later_candidates_are_compared_with_the_rewritten_winner():
    # cm-0 absorbs cm-1 (both zz1) and is rewritten to zz3: cm-2 (zz3) is now like it, though unlike the
    # stored cm-0
    m = _merging(lambda user: _merged("zz3"), (0.9, "zz1"), (0.8, "zz1"), (0.7, "zz3"))
    m.maintain(0)
    assert list(m.store.cards) == ["cm-0"] and len(CALLS) == 2
    assert '<card role="candidate" id="cm-2">' in CALLS[1] and "Sorting numbers zz3" in CALLS[1]
