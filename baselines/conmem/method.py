"""`conmem`: ConMem, trajectory-to-memory conditioning for multi-agent systems (code snapshot:
github.com/FA66666/ConMemCode, mas_core/memory/backbone/conmem/; no paper was public when
this was written, so the code and its config.py are the source of every rule and default).

What is stored: typed memory cards. After each task the LLM turns the
trajectory (compressed by the LLM when over 4,096 estimated tokens; for
failures followed by an LLM failure reflection) into candidate cards, each
with sections state / plan / exec / eval, trigger phrases, a summary and
evidence, plus provenance (source task, agent, steps, outcome, reflection
quality, label source). Candidates are admitted by a weighted score
Q = 0.30 C + 0.25 N + 0.15 R + 0.30 U (reliability: section coverage and
coherence plus evidence; novelty: 1 - max cosine to cards about the same
pattern; relevance: exp(-age / 20), 1 at admission; utility: by primary
section and outcome plus text density) when C >= 0.40 and Q >= 0.50. Admitted
cards are linked to similar earlier cards (cosine >= 0.60, top 10) by
heuristic relations: conflicts, supports, satisfies, constrains.

When and how it is recalled: see retrieval.py (trigger by similarity and
keyword overlap with the task and its context, rank by a five-term score,
MMR top 3, expand along the graph, coordinate) and render.py (per agent
role: which sections a planner, executor or evaluator sees first; at most 2
cards within a 1,600-token budget).

How it learns from outcomes: the outcome is part of every card (credibility
1.0 / 0.8 / 0.9 for success / partial / failure, outcome-specific utility,
failure reflection, failure cards render what to avoid); recalled cards'
access counts are updated when the episode is observed. Periodically
(`maintain`, every `merge_every` tasks that committed cards, as ConMem's
post-commit merge every 20): near-duplicate cards about the same pattern
(cosine >= 0.84 and overlapping triggers, sections or pattern terms) are
rewritten by the LLM into the higher-scored card and the other is deleted.

LLM calls: compression, failure reflection, extraction and merge rewrites
all run at temperature 0.0 with an output budget of 4,096 tokens: config.py's
`llm_temperature` and `llm_max_tokens`, which ConMemCode's LLMClient applies to
every call, its JSON calls included (conmem_module.py, llm_backend.py).

Where this port had to choose (the snapshot leaves it open or is
domain-specific):
- Pattern terms: ConMem tags cards with code-domain keyword tables (array,
  sliding_window, pandas, ...) and falls back to the most frequent content
  words; only the domain-neutral fallback is used (2 words from the task side,
  3 from the method side).
- Relations are always judged by ConMem's heuristics; the LLM relation judge it
  uses for similarities in [0.30, 0.70] is not called (an extra memory-side LLM
  call per card for a graph that only steers expansion).
- Trigger clean-up keeps ConMem's length, question-mark and duplicate rules;
  its use-condition and task-specificity filters (English heuristics tuned on
  its benchmarks) are not ported; a card without triggers falls back to its
  summary.
- Task-needs presets are mapped to this harness's benchmarks (pddl -> its PDDL
  preset, mbpp_plus -> KodCode's, fever -> TriviaQA's); others use ConMem's
  keyword analysis.
- The domain of a card is its benchmark; retrieval does not filter by domain
  (the snapshot's retriever treats every card as same-domain), novelty and
  merging do.
- The outcome is "partial" when the label is a failure with a value strictly
  between 0 and 1.
- The merge pass is bounded by `max_merge_calls` LLM calls; a merge whose
  rewrite does not parse is skipped (as in ConMem) and audited.
- Recall does not write access statistics, so recall never changes state;
  they are updated from the trajectory when the episode is observed.
- The extraction and merge calls carry their JSON shape as a GBNF grammar
  (`prompts.cards_grammar`, `prompts.merged_card_grammar`: at most
  `grammar_max_cards` cards, strings of at most `grammar_max_chars`
  characters): a decoding aid that grammar-capable models (the embedded one)
  follow and other providers drop, so API runs and the paper preset are
  unchanged. Without it SmolLM2-135M wrote no JSON in 4 of 4 extractions on
  `procedures` (docs/benchmarks/procedures.md).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from pydantic import Field

from aecg_bench.contracts import MemoryMethod, MemoryServices, Params
from aecg_bench.types import Episode, MemoryItem, RecallQuery, task_text
from baselines.conmem import prompts as P
from baselines.conmem.cards import (
    SECTIONS,
    activation_text,
    build_summary,
    compose,
    has_failure_signal,
    pattern_features,
    reflection_quality,
    relevance,
    reliability,
    token_overlap,
    utility,
)
from baselines.conmem.render import render
from baselines.conmem.retrieval import coordinate, expand, retrieve, task_needs
from baselines.conmem.store import MIN_SHARED_TERMS, CardStore
from baselines.index import embedder_of
from baselines.llm_calls import ask, extract_json, skip, tagged
from baselines.trajectory_text import clip, has_agent_output, one_line, render_trajectory


class ConMemParams(Params):
    # retrieval (config.py: retrieval_*, activation_threshold, graph_walk_*, coord_merge_threshold)
    top_k: int = Field(3, ge=0)
    min_relevance: float = 0.30
    min_keyword_overlap: float = 0.08
    activation: float = 0.40
    mmr_lambda: float = Field(0.75, ge=0, le=1)
    graph_expansion: bool = True
    walk_hops: int = Field(2, ge=0)
    walk_weight: float = 0.40
    expansion_max_cards: int = Field(6, ge=1)
    coordination: bool = True
    coord_merge: float = 0.85
    # serialisation (token_budget, serializer_max_cards_per_section)
    token_budget: int = Field(1600, ge=50)
    max_cards: int = Field(2, ge=1)
    # admission (admission_*, round_decay_constant)
    admission_threshold: float = 0.50
    consistency_threshold: float = 0.40
    w_reliability: float = 0.30
    w_novelty: float = 0.25
    w_relevance: float = 0.15
    w_utility: float = 0.30
    round_decay: float = Field(20.0, gt=0)
    failure_admission: bool = True
    failure_reflection: bool = True
    skip_uninformative_failures: bool = True
    max_triggers: int = Field(6, ge=1)
    # graph (graph_similarity_threshold, graph_candidate_top_k)
    graph_similarity: float = 0.60
    graph_candidates: int = Field(10, ge=0)
    # post-commit merge (admission_post_commit_merge_every_k_tasks, cross_task_merge_threshold, ...)
    merge_every: int = Field(20, ge=1)
    merge_similarity: float = 0.84
    merge_strong_similarity: float = 0.90
    merge_overlap: float = 0.18
    max_merge_calls: int = Field(50, ge=0)
    # LLM (trajectory_max_tokens, llm_temperature, llm_max_tokens: every ConMem call, JSON ones included)
    trajectory_max_tokens: int = Field(4096, ge=100)
    existing_card_examples: int = Field(5, ge=0)
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(4096, ge=64)
    # decoding aid, not ConMem's (prompts.cards_grammar; dropped by providers without grammars): cards an extraction
    # and characters a string may hold, so that the embedded model's card fits the smoke preset's 96-token cap
    grammar_max_cards: int = Field(1, ge=1, le=8)
    grammar_max_chars: int = Field(40, ge=8, le=2000)


class ConMem(MemoryMethod):
    name = "conmem"
    # 2: task needs match ConMemCode's keyword phrases; 3: max_tokens 4096 (config.py's llm_max_tokens);
    # 4: card grammars for grammar-capable models (decoding aid)
    version = "4"
    Params = ConMemParams
    params: ConMemParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        self.store = CardStore(embedder_of(services))
        self.round = 0
        self.next_id = 0
        self.committed_tasks = 0
        self.merge_passes = 0

    # -- recall ----------------------------------------------------------------

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        p = self.params
        if not self.store.cards or p.top_k == 0:
            return []
        task = query.task.instruction
        query_text = task_text(query.task, query.context)
        if query_text == task:  # not a conversation: the task, then the current context
            query_text = f"{task}\n{query.context}".strip()
        qvec = self.store.index.embed(query_text)
        activated = retrieve(self.store, query_text, qvec, task_needs(query_text, query.task.benchmark), p)
        if not activated:
            return []
        if p.graph_expansion:
            ids, edges = expand(self.store, activated, task, p)
        else:
            ids, edges = activated, self.store.edges_touching(set(activated))
        if p.coordination:
            views = coordinate(self.store, ids, edges, task, p)
        else:
            views = [copy.deepcopy(self.store.cards[c]) for c in ids]
        return [
            MemoryItem(
                id=view["id"],
                text=text,
                level=query.level,
                kind="card",
                score=float(view["admission_score"]),
                metadata={
                    "source_task": view["task_id"],
                    "outcome": view["provenance"]["outcome"],
                    "merged_from": view.get("merged_from", [view["id"]]),
                },
            )
            for view, text in render(views, query.role, p)
        ]

    # -- learning from one episode ----------------------------------------------

    def observe(self, episode: Episode) -> None:
        p = self.params
        task, traj, label = episode.task, episode.trajectory, episode.outcome
        if label.success is None:
            self.audit.record("skip", purpose="extract", reason="no_label", task=task.id)
            return
        outcome = _outcome(label.success, label.value)
        current_round = self.round + 1
        raw_cards: list[dict[str, Any]] = []
        reflection_q = 1.0
        informative = has_agent_output(traj) or not p.skip_uninformative_failures
        if outcome == "failure" and not informative:
            self.audit.record("skip", purpose="extract", reason="uninformative_failure", task=task.id)
        elif outcome == "failure" and not p.failure_admission:
            self.audit.record("skip", purpose="extract", reason="failure_admission_off", task=task.id)
        else:
            raw_cards, reflection_q = self._interpret(episode, outcome)
        # state changes only from here on
        self.round = current_round
        for cid in traj.recalled_memory_ids():
            card = self.store.cards.get(cid)
            if card is not None:
                card["access_count"] += 1
                card["last_access_round"] = current_round
        candidates = [self._card(raw, episode, outcome, reflection_q) for raw in raw_cards]
        admitted = self._admit([c for c in candidates if c is not None])
        if admitted:
            self._link(admitted)
            self.committed_tasks += 1

    def _interpret(self, episode: Episode, outcome: str) -> tuple[list[dict[str, Any]], float]:
        """LLM side: compress if long, reflect on failures, extract candidate cards."""
        p = self.params
        task = episode.task.instruction
        text = f"Task: {task}\nOutcome: {outcome}\n\n" + render_trajectory(episode.trajectory, max_chars=10**9)
        if len(text) // 4 > p.trajectory_max_tokens:
            reply = self._ask(P.COMPRESS_SYSTEM.format(max_tokens=p.trajectory_max_tokens), P.COMPRESS_USER, task, text)
            compressed = tagged(reply, "compressed_trajectory") or (reply or "").strip()
            text = compressed or text[: p.trajectory_max_tokens * 4]
        quality = 1.0
        if p.failure_reflection and outcome in ("failure", "partial"):
            reply = self._ask(P.REFLECT_SYSTEM, P.REFLECT_USER, task, text)
            reflection = tagged(reply, "reflection") or (reply or "").strip()
            if reflection:
                text += f"\n\n--- Failure Reflection ---\n{reflection}"
            quality = reflection_quality(reflection)
        reply = ask(
            self,
            system=P.EXTRACT_SYSTEM,
            user=P.EXTRACT_USER.format(task=task, outcome=outcome, trajectory=text, existing=self._existing(episode)),
            purpose="extract",
            max_tokens=p.max_tokens,
            temperature=p.temperature,
            grammar=P.cards_grammar(p.grammar_max_cards, p.grammar_max_chars),
        )
        parsed = extract_json(tagged(reply, "cards") or reply)
        raw = [parsed] if isinstance(parsed, dict) else parsed if isinstance(parsed, list) else []
        raw = [r for r in raw if isinstance(r, dict) and isinstance(r.get("structured_content"), dict)]
        if not raw:
            skip(self, "extract", reply, task=episode.task.id)
        return raw, quality

    def _ask(self, system: str, user: str, task: str, trajectory: str) -> str | None:
        return ask(
            self,
            system=system,
            user=user.format(task=task, trajectory=trajectory),
            purpose="interpret",
            max_tokens=self.params.max_tokens,
            temperature=self.params.temperature,
        )

    def _existing(self, episode: Episode) -> str:
        same = [c for c in self.store.cards.values() if c["task_id"] == episode.task.id]
        same = same[: self.params.existing_card_examples]
        if not same:
            return ""
        blocks = []
        for i, c in enumerate(same, 1):
            parts = [f"  - {s}: {t[:120]}" for s, t in c["sections"].items() if t.strip()]
            blocks.append(f"Card {i}: {c['summary'][:160]}\n" + "\n".join(parts))
        return "\n## Existing Cards (avoid duplicating these)\n" + "\n\n".join(blocks) + "\n"

    def _card(self, raw: dict[str, Any], episode: Episode, outcome: str, reflection_q: float) -> dict[str, Any] | None:
        """A candidate card from one extracted JSON object; None (audited) when it has no content."""
        sections = {s: _text(raw["structured_content"].get(s)) for s in SECTIONS}
        if not any(t.strip() for t in sections.values()):
            self.audit.record("reject", reason="empty_sections", task=episode.task.id)
            return None
        task = episode.task.instruction
        evidence = clip(one_line(_text(raw.get("evidence"))), 360)
        triggers = self._triggers(raw.get("trigger_semantics"), sections)
        summary = one_line(_text(raw.get("summary"))) or build_summary(task, sections, evidence)
        if not triggers:
            triggers = [one_line(summary, 100)]
        steps = raw.get("source_steps") if isinstance(raw.get("source_steps"), list) else []
        return {
            "id": "",
            "task_id": episode.task.id,
            "domain": episode.task.benchmark,
            "task_description": task,
            "sections": sections,
            "triggers": triggers,
            "summary": summary,
            "evidence": evidence,
            "provenance": {
                "source_task_id": episode.task.id,
                "source_agent": one_line(_text(raw.get("source_agent")), 80),
                "source_steps": [s for s in steps if isinstance(s, int)],
                "outcome": outcome,
                "reflection_quality": round(reflection_q, 6),
                "label_source": episode.outcome.source,
            },
            "quality": {},
            "admission_score": 0.0,
            "create_round": self.round,
            "access_count": 0,
            "last_access_round": self.round,
        }

    def _triggers(self, raw: Any, sections: dict[str, str]) -> list[str]:
        items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
        out: list[str] = []
        for item in items:
            text = one_line(_text(item)).strip(" -;,.")
            if not text or len(text) > 100 or "?" in text or text in sections.values() or text in out:
                continue
            out.append(text)
            if len(out) >= self.params.max_triggers:
                break
        return out

    def _admit(self, candidates: list[dict[str, Any]]) -> list[str]:
        """Score every candidate against the cards committed before this task; commit the admitted."""
        p = self.params
        scored = []
        for card in candidates:
            vec = self.store.embedder.embed_one(activation_text(card))
            terms, key = pattern_features(card)
            related = self.store.pattern_related(card, terms, key)
            sims = self.store.index.similarity(vec, related)
            novelty = max(0.0, 1.0 - max(sims.values())) if sims else 1.0
            q = {
                "reliability": reliability(card),
                "novelty": novelty,
                "relevance": relevance(self.round - card["create_round"], p.round_decay),
                "utility": utility(card),
            }
            score = (
                p.w_reliability * q["reliability"]
                + p.w_novelty * q["novelty"]
                + p.w_relevance * q["relevance"]
                + p.w_utility * q["utility"]
            )
            card["quality"] = {k: round(v, 6) for k, v in q.items()}
            card["admission_score"] = round(score, 6)
            scored.append(card)
        admitted = []
        for card in scored:
            ok = (
                card["quality"]["reliability"] >= p.consistency_threshold
                and card["admission_score"] >= p.admission_threshold
            )
            if not ok:
                self.audit.record(
                    "reject", task=card["task_id"], score=card["admission_score"], quality=card["quality"]
                )
                continue
            card["id"] = f"cm-{self.next_id}"
            self.next_id += 1
            self.store.put(card)
            admitted.append(card["id"])
            self.audit.record(
                "admit",
                memory_id=card["id"],
                task=card["task_id"],
                outcome=card["provenance"]["outcome"],
                score=card["admission_score"],
                quality=card["quality"],
                summary=card["summary"][:200],
            )
        return admitted

    def _link(self, new_ids: list[str]) -> None:
        """Heuristic relations from each new card to similar earlier cards (memory_graph.update_graph)."""
        p = self.params
        fresh = set(new_ids)
        for cid in new_ids:
            card = self.store.cards[cid]

            def earlier(other: str, card: dict[str, Any] = card) -> bool:
                o = self.store.cards[other]
                return other not in fresh and (not o["domain"] or not card["domain"] or o["domain"] == card["domain"])

            hits = self.store.index.search(
                self.store.index.vector(cid), p.graph_candidates, allow=earlier, min_score=p.graph_similarity
            )
            edges = []
            for other, sim in hits:
                relation, weight = _relation(card, self.store.cards[other], sim)
                if relation is None:
                    continue
                edge = {"relation": relation, "weight": round(weight, 6)}
                if relation in ("supports", "conflicts"):
                    edges += [{"src": cid, "dst": other, **edge}, {"src": other, "dst": cid, **edge}]
                else:  # constrains / satisfies are walked from the earlier card to the new one
                    edges.append({"src": other, "dst": cid, **edge})
            self.store.add_edges(edges)
            for e in edges:
                self.audit.record("link", **e)

    # -- periodic merge -------------------------------------------------------------

    def maintain(self, round_index: int) -> None:
        due = self.committed_tasks // self.params.merge_every
        if due > self.merge_passes:
            self._merge_pass()
            self.merge_passes = due

    def _merge_pass(self) -> None:
        """ConMem's post-commit merge. LLM rewrites first, all changes committed at the end."""
        p = self.params
        store = self.store
        order = sorted(store.cards.values(), key=lambda c: -c["admission_score"])
        rank = {c["id"]: i for i, c in enumerate(order)}
        rewritten: dict[str, dict[str, Any]] = {}
        vectors: dict[str, np.ndarray] = {}
        removed: list[str] = []
        calls = 0
        for winner_id in (c["id"] for c in order):
            if winner_id in removed:
                continue
            features = store.features(winner_id)
            terms, key = features.terms, features.cluster_key
            candidates = store.pattern_related(store.cards[winner_id], terms, key)
            for loser_id in sorted((c for c in candidates if rank[c] > rank[winner_id]), key=rank.__getitem__):
                if loser_id in removed:
                    continue
                winner = rewritten.get(winner_id, store.cards[winner_id])
                wvec = vectors.get(winner_id, store.index.vector(winner_id))
                if not self._should_merge(winner, wvec, store.cards[loser_id], store.index.vector(loser_id)):
                    continue
                if calls >= p.max_merge_calls:
                    break
                calls += 1
                merged = self._rewrite(winner, store.cards[loser_id])
                if merged is None:
                    continue
                rewritten[winner_id] = merged
                vectors[winner_id] = store.embedder.embed_one(activation_text(merged))
                removed.append(loser_id)
                self.audit.record("merge", memory_id=winner_id, absorbed=loser_id, summary=merged["summary"][:200])
        for loser_id in removed:
            store.remove(loser_id)
        for winner_id, card in rewritten.items():
            if winner_id in store.cards:
                store.put(card)

    def _should_merge(self, winner: dict[str, Any], wvec: np.ndarray, loser: dict[str, Any], lvec: np.ndarray) -> bool:
        p = self.params
        if winner["domain"] and loser["domain"] and winner["domain"] != loser["domain"]:
            return False
        wterms, wkey = pattern_features(winner)
        lterms, lkey = pattern_features(loser)
        shared = len(wterms & lterms)
        if wkey != lkey and shared < MIN_SHARED_TERMS:
            return False
        sim = float(wvec @ lvec)
        if sim < p.merge_similarity:
            return False
        triggers = token_overlap(
            " ".join([*winner["triggers"], winner["summary"]]), " ".join([*loser["triggers"], loser["summary"]])
        )
        return (
            sim >= p.merge_strong_similarity
            or triggers >= p.merge_overlap
            or token_overlap(compose(winner), compose(loser)) >= p.merge_overlap
            or shared >= MIN_SHARED_TERMS
        )

    def _rewrite(self, winner: dict[str, Any], loser: dict[str, Any]) -> dict[str, Any] | None:
        cards = "\n\n".join(_card_for_merge(role, c) for role, c in (("winner", winner), ("candidate", loser)))
        reply = ask(
            self,
            system=P.MERGE_SYSTEM,
            user=P.MERGE_USER.format(cards=cards),
            purpose="merge",
            max_tokens=self.params.max_tokens,
            temperature=0.0,
            grammar=P.merged_card_grammar(self.params.grammar_max_chars),
        )
        raw = extract_json(tagged(reply, "merged_card") or reply)
        if isinstance(raw, dict) and isinstance(raw.get("merged_card"), dict):
            raw = raw["merged_card"]
        sections = raw.get("structured_content") if isinstance(raw, dict) else None
        triggers = self._triggers(raw.get("trigger_semantics"), {}) if isinstance(raw, dict) else []
        summary = one_line(_text(raw.get("summary")), 160) if isinstance(raw, dict) else ""
        if not isinstance(sections, dict) or not any(_text(sections.get(s)).strip() for s in SECTIONS):
            summary = ""
        if not (triggers and summary):
            skip(self, "merge", reply, winner=winner["id"], loser=loser["id"])
            return None
        merged = copy.deepcopy(winner)
        merged["sections"] = {s: one_line(_text(sections.get(s))) for s in SECTIONS}
        merged["triggers"] = triggers
        merged["summary"] = summary
        merged["evidence"] = clip(one_line(_text(raw.get("evidence"))), 360)
        return merged

    # -- state -----------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "next_id": self.next_id,
            "committed_tasks": self.committed_tasks,
            "merge_passes": self.merge_passes,
            **self.store.state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.round = int(state["round"])
        self.next_id = int(state["next_id"])
        self.committed_tasks = int(state["committed_tasks"])
        self.merge_passes = int(state["merge_passes"])
        self.store.load(state)

    def stats(self) -> dict[str, float]:
        return {"cards": float(len(self.store.cards)), "edges": float(len(self.store.edges))}


def _outcome(success: bool, value: float | None) -> str:
    if success:
        return "success"
    return "partial" if value is not None and 0.0 < value < 1.0 else "failure"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return str(value)


def _relation(new: dict[str, Any], old: dict[str, Any], sim: float) -> tuple[str | None, float]:
    """ConMem's heuristic relation of a new card to an earlier one, and its weight."""
    overlap = token_overlap(compose(new), compose(old))
    failing = has_failure_signal(new["sections"].get("eval", "")) or has_failure_signal(old["sections"].get("eval", ""))
    if failing and overlap >= 0.20:
        relation = "conflicts"
    elif sim >= 0.85 or overlap >= 0.45:
        relation = "supports"
    elif new["sections"].get("eval") and overlap >= 0.20:
        relation = "satisfies"
    elif new["sections"].get("state") and overlap >= 0.20:
        relation = "constrains"
    else:
        return None, 0.0
    return relation, max(sim, overlap, 0.40)


def _card_for_merge(role: str, card: dict[str, Any]) -> str:
    return "\n".join(
        [
            f'<card role="{role}" id="{card["id"]}">',
            f"Summary: {one_line(card['summary'], 240)}",
            f"Triggers: {'; '.join(card['triggers'])}",
            "Content:",
            compose(card),
            f"Evidence: {one_line(card['evidence'], 240)}",
            "</card>",
        ]
    )
