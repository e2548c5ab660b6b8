"""ConMem's card store: the cards, the relation graph between them and the indexes over both.

Cards and edges are the state; the embedding index, keyword sets and
pattern-term postings are derived and rebuilt lazily after a load, so a recall
over 10,000 cards scans one matrix product and a few hundred gated candidates
instead of re-tokenising every card.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from aecg_bench.llm.embeddings import Embedder
from baselines.conmem.cards import activation_text, pattern_features, tokens, trigger_text
from baselines.index import VectorIndex

MIN_SHARED_TERMS = 2  # cross_task_signature_min_overlap


class CardStore:
    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.cards: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str], dict[str, Any]] = {}
        self._index: VectorIndex | None = None
        self._features: dict[str, tuple[set[str], frozenset[str], str]] = {}
        self._postings: dict[str, set[str]] = {}
        self._clusters: dict[str, set[str]] = {}
        self._touch: dict[str, set[tuple[str, str]]] | None = None

    # -- derived ---------------------------------------------------------------

    @property
    def index(self) -> VectorIndex:
        if self._index is None:
            self._index = VectorIndex(self.embedder)
            self._index.add_many(list(self.cards), [activation_text(c) for c in self.cards.values()])
            for cid in self.cards:
                self._derive(cid)
        return self._index

    def _derive(self, cid: str) -> None:
        card = self.cards[cid]
        terms, key = pattern_features(card)
        self._features[cid] = (tokens(trigger_text(card)), terms, key)
        for t in terms:
            self._postings.setdefault(t, set()).add(cid)
        self._clusters.setdefault(key, set()).add(cid)

    def _underive(self, cid: str) -> None:
        _, terms, key = self._features.pop(cid)
        for t in terms:
            self._postings[t].discard(cid)
        self._clusters[key].discard(cid)

    def keyword_tokens(self, cid: str) -> set[str]:
        return self._featured()[cid][0]

    def terms(self, cid: str) -> frozenset[str]:
        return self._featured()[cid][1]

    def cluster_key(self, cid: str) -> str:
        return self._featured()[cid][2]

    def _featured(self) -> dict[str, tuple[set[str], frozenset[str], str]]:
        """Per-card features, derived together with the index."""
        _ = self.index
        return self._features

    # -- cards -----------------------------------------------------------------

    def put(self, card: dict[str, Any]) -> None:
        """Insert or replace a card (re-embedded and re-featured)."""
        index = self.index
        if card["id"] in self.cards:
            self._underive(card["id"])
        self.cards[card["id"]] = card
        index.add(card["id"], activation_text(card))
        self._derive(card["id"])

    def remove(self, cid: str) -> None:
        self.index.remove([cid])
        self._underive(cid)
        del self.cards[cid]
        self.edges = {k: e for k, e in self.edges.items() if cid not in k}
        self._touch = None

    def pattern_related(self, card: dict[str, Any], terms: frozenset[str], key: str) -> list[str]:
        """Cards of the same domain about the same pattern: same cluster key or >= 2 shared terms."""
        _ = self.index
        counts: Counter[str] = Counter()
        for t in terms:
            counts.update(self._postings.get(t, ()))
        ids = {c for c, n in counts.items() if n >= MIN_SHARED_TERMS} | self._clusters.get(key, set())
        return [c for c in self.cards if c in ids and c != card["id"] and _same_domain(card, self.cards[c])]

    # -- edges -----------------------------------------------------------------

    def add_edges(self, edges: list[dict[str, Any]]) -> None:
        touch = self._touching()
        for e in edges:
            key = (e["src"], e["dst"])
            self.edges[key] = e
            touch.setdefault(e["src"], set()).add(key)
            touch.setdefault(e["dst"], set()).add(key)

    def _touching(self) -> dict[str, set[tuple[str, str]]]:
        if self._touch is None:
            self._touch = {}
            for key in self.edges:
                for end in key:
                    self._touch.setdefault(end, set()).add(key)
        return self._touch

    def edges_touching(self, ids: set[str]) -> list[dict[str, Any]]:
        """Edges with an end in `ids`, ordered by (source, target) so results never depend on history."""
        touch = self._touching()
        keys: set[tuple[str, str]] = set()
        for i in ids:
            keys |= touch.get(i, set())
        return [self.edges[k] for k in sorted(keys)]

    # -- state -----------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {"cards": copy.deepcopy(list(self.cards.values())), "edges": copy.deepcopy(list(self.edges.values()))}

    def load(self, state: dict[str, Any]) -> None:
        self.cards = {c["id"]: copy.deepcopy(c) for c in state["cards"]}
        self.edges = {(e["src"], e["dst"]): dict(e) for e in state["edges"]}
        self._index, self._features, self._postings, self._clusters = None, {}, {}, {}
        self._touch = None


def _same_domain(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return not a["domain"] or not b["domain"] or a["domain"] == b["domain"]
