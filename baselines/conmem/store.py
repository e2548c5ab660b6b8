"""ConMem's card store: the cards, the relation graph between them and the indexes over both.

Cards and edges are the state; the embedding index, keyword sets and
pattern-term postings are derived and rebuilt lazily after a load, so a recall
over 10,000 cards scans one matrix product and a few hundred gated candidates
instead of re-tokenising every card.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any, NamedTuple

import numpy as np
from scipy import sparse

from aecg_bench.llm.embeddings import Embedder
from baselines.conmem.cards import SECTIONS, activation_text, credibility, pattern_features, tokens, trigger_text
from baselines.index import VectorIndex

MIN_SHARED_TERMS = 2  # cross_task_signature_min_overlap


class CardArrays(NamedTuple):
    """Per index row (see VectorIndex.row_ids), what the trigger and ranking rules read, so one recall
    scores every gated card with array operations instead of a Python loop."""

    keywords: sparse.csr_matrix  # row x vocabulary: 1 where the card's trigger text has the keyword
    vocabulary: dict[str, int]
    sections: np.ndarray  # row x 4: which sections are filled
    credibility: np.ndarray
    quality: np.ndarray


class CardFeatures(NamedTuple):
    """What retrieval and merging read of a card, computed once per card version."""

    keywords: set[str]
    terms: frozenset[str]
    cluster_key: str
    sections: tuple[bool, ...]  # which of state / plan / exec / eval are filled
    credibility: float
    quality: float


class CardStore:
    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.cards: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str], dict[str, Any]] = {}
        self._index: VectorIndex | None = None
        self._features: dict[str, CardFeatures] = {}
        self._postings: dict[str, set[str]] = {}
        self._clusters: dict[str, set[str]] = {}
        self._touch: dict[str, set[tuple[str, str]]] | None = None
        self._arrays: CardArrays | None = None

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
        self._features[cid] = CardFeatures(
            keywords=tokens(trigger_text(card)),
            terms=terms,
            cluster_key=key,
            sections=tuple(bool(card["sections"].get(s, "").strip()) for s in SECTIONS),
            credibility=credibility(card),
            quality=card["admission_score"] if card["admission_score"] > 0 else 0.5,  # retrieval_quality_fallback
        )
        for t in terms:
            self._postings.setdefault(t, set()).add(cid)
        self._clusters.setdefault(key, set()).add(cid)

    def _underive(self, cid: str) -> None:
        features = self._features.pop(cid)
        for t in features.terms:
            self._postings[t].discard(cid)
        self._clusters[features.cluster_key].discard(cid)

    def arrays(self) -> CardArrays:
        """Row-aligned feature arrays, rebuilt after the cards change."""
        if self._arrays is None:
            rows = self.index.row_ids
            vocabulary: dict[str, int] = {}
            indptr, indices = [0], []
            sections = np.zeros((len(rows), 4))
            cred, qual = np.zeros(len(rows)), np.zeros(len(rows))
            for r, cid in enumerate(rows):
                if cid is not None:
                    f = self._features[cid]
                    indices += [vocabulary.setdefault(t, len(vocabulary)) for t in sorted(f.keywords)]
                    sections[r] = f.sections
                    cred[r], qual[r] = f.credibility, f.quality
                indptr.append(len(indices))
            data = np.ones(len(indices))
            keywords = sparse.csr_matrix((data, indices, indptr), shape=(len(rows), max(1, len(vocabulary))))
            self._arrays = CardArrays(keywords, vocabulary, sections, cred, qual)
        return self._arrays

    def features(self, cid: str) -> CardFeatures:
        """Per-card features, derived together with the index."""
        _ = self.index
        return self._features[cid]

    # -- cards -----------------------------------------------------------------

    def put(self, card: dict[str, Any]) -> None:
        """Insert or replace a card (re-embedded and re-featured)."""
        index = self.index
        self._arrays = None
        if card["id"] in self.cards:
            self._underive(card["id"])
        self.cards[card["id"]] = card
        index.add(card["id"], activation_text(card))
        self._derive(card["id"])

    def remove(self, cid: str) -> None:
        self._arrays = None
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
        self._touch, self._arrays = None, None


def _same_domain(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return not a["domain"] or not b["domain"] or a["domain"] == b["domain"]
