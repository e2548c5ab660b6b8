"""`aecg`: Asymmetric Experience Consolidation and Governance (Tian et al., arXiv 2610.05176).

Memory as an auditable reliability-governance loop (paper Algorithm 1):

- recall (`recall`): scope-matched retrieval of active skill versions whose
  applicability predicate admits the decision context, plus unconsolidated
  memories (`recall_index`, `predicate`);
- per task (`observe`): successes are confidence-weighted positive evidence
  split across provenance families and become scope-tagged memories; a
  failure becomes a BadCase, and counts against an object only if two
  judges agree (`admission`); beliefs update on two timescales (`beliefs`);
  exposure is measured on the decision graph (`exposure`); supported memories
  are queued and promoted into skills, equivalents linked (`consolidation`);
- per round (`maintain`): pending promotions, then drift gate, exposure-aware
  triage under budget B, evidence-routed narrowing or repair, replay gate
  and activation (`governance`);
- every admission, unresolved failure, promotion, belief update, review,
  intervention, replay verdict and activation is an audit event with its
  inputs; `explain` reads them back ("why is this skill active?").

Both `observe` and `maintain` make all their LLM calls first and mutate
only afterwards, so an `InfraError` leaves the memory unchanged. Nothing is
random except drift samples and the random-review ablation, both seeded by
hashes (no RNG state). Hyperparameters: `params.AECGParams`
(conf/memory/aecg.yaml); deviations from the paper: docs/memory/aecg.md.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from aecg_bench.aecg import beliefs as B
from aecg_bench.aecg import consolidation, governance, prompts, traces
from aecg_bench.aecg.admission import (
    Attribution,
    Candidate,
    attribution_payload,
    decide,
    family_credit,
    parse_judgement,
    success_confidence,
)
from aecg_bench.aecg.explain import explain
from aecg_bench.aecg.exposure import downstream_reach
from aecg_bench.aecg.objects import BadCase, Judgement, Memory, Skill, to_dict
from aecg_bench.aecg.params import AECGParams
from aecg_bench.aecg.predicate import decision_text
from aecg_bench.aecg.recall_index import RecallIndex
from aecg_bench.aecg.store import Store
from aecg_bench.contracts import MemoryMethod, MemoryServices
from aecg_bench.errors import ConfigError
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.llm.providers import ContextLimitError
from aecg_bench.types import DecisionNode, Episode, Level, MemoryItem, RecallQuery

log = logging.getLogger("aecg_bench.aecg")


class AECGMemory(MemoryMethod):
    name = "aecg"
    # 2: the skill abstraction carries a GBNF grammar for grammar-capable models (decoding aid)
    # 3: so do the two failure-attribution judges (the verdict, its skill_id among the call's candidates)
    version = "3"
    Params = AECGParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        self.p = cast(AECGParams, self.params)
        self.prior = B.Beta(self.p.beliefs.prior_alpha, self.p.beliefs.prior_beta)
        self.store = Store()
        self.index = RecallIndex(services.embedder or Embedder("lexical"), flat=self.p.scope.mode == "flat")

    # -- LLM ---------------------------------------------------------------------

    def llm_call(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        role: str = "memory",
        sample_index: int = 0,
        temperature: float | None = None,
        grammar: str | None = None,
    ) -> str:
        """One memory-side call; always through the per-sample client the runner bound.

        A prompt too long for the model's context is answered with an empty reply,
        which every parser treats as abstention / no proposal (an infra error still
        propagates, before any state has changed).
        """
        return self.complete(prompts.messages(kind, payload), role, kind, sample_index, temperature, grammar)

    def complete(
        self,
        messages: list[dict[str, str]],
        role: str,
        what: str,
        sample_index: int = 0,
        temperature: float | None = None,
        grammar: str | None = None,
    ) -> str:
        """Any memory-side call (prompts above, replayed decisions) through the run's one client."""
        llm = self.services.llm
        if llm is None:
            raise ConfigError("memory 'aecg' needs an LLM client for its memory-side prompts")
        try:
            completion = llm.complete(
                messages,
                role=role,
                sample_index=sample_index,
                temperature=temperature,
                max_tokens=self.p.memory_max_tokens,
                grammar=grammar,  # a decoding aid: the client drops it for models without grammars
            )
        except ContextLimitError as exc:
            log.warning("aecg %s prompt exceeds the model's context; treated as no answer: %s", what, exc)
            return ""
        return completion.text

    # -- recall ------------------------------------------------------------------

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        r = self.p.recall
        context = traces.tail(query.context, r.context_chars)
        instruction = traces.clip(query.task.instruction, traces.INSTRUCTION_CHARS)  # as fixtures store it
        text = decision_text(query.task.task_type, instruction, query.level, query.role, query.agent, context)
        vec = self.index.embed(text)
        items = [
            MemoryItem(
                id=s.id,
                text=s.text(),
                level=s.level,
                kind="skill",
                score=score,
                metadata={"lineage": s.lineage, "version": s.version},
            )
            for s, score in self.index.search_skills(
                query.level, vec, text, self.store.skills, r.k_skills, r.min_similarity
            )
        ]
        for mid, score in self.index.search_memories(query.level, vec, r.k_memories, r.min_similarity):
            m = self.store.memories[mid]
            items.append(MemoryItem(id=m.id, text=m.text, level=m.level, kind="memory", score=score))
        return items

    # -- observe -----------------------------------------------------------------

    def observe(self, episode: Episode) -> None:
        if episode.outcome.success is None:
            self.audit.record("no_label", task=episode.task.id)
            return
        used = [u for u in traces.uses(episode.trajectory) if self.store.get(u.object_id) is not None]
        # 1) every LLM call, no mutation
        drafts = consolidation.draft(self)
        candidates = self._candidates(used)
        judgements: list[Judgement] = []
        if not episode.outcome.success and candidates:
            judgements = self._judge(episode, candidates)
        # 2) commit
        self._record_use(episode, used)
        if episode.outcome.success:
            touched = self._admit_success(episode, used)
        else:
            touched = self._admit_failure(episode, used, candidates, judgements)
        retry = consolidation.commit(self, drafts)
        consolidation.queue(self, [*touched, *sorted(retry)])

    def _candidates(self, used: list[traces.Use]) -> list[Candidate]:
        ranked = sorted(used, key=lambda u: -len(u.nodes))[: self.p.admission.max_candidates]
        out = []
        for u in ranked:
            obj = self.store.get(u.object_id)
            assert obj is not None
            text = obj.text() if isinstance(obj, Skill) else obj.text
            kind = "skill" if isinstance(obj, Skill) else "memory"
            out.append(Candidate(obj.id, kind, obj.level, traces.clip(text, 800), tuple(n.id for n in u.nodes)))
        return out

    def _judge(self, episode: Episode, candidates: list[Candidate]) -> list[Judgement]:
        a = self.p.admission
        payload = attribution_payload(episode, candidates, a.max_trace_decisions)
        scopes = {c.id: c.scope for c in candidates}
        grammar = prompts.attribution_grammar(list(scopes), a.grammar_max_chars)
        return [
            parse_judgement(
                self.llm_call(
                    prompts.FAILURE_ATTRIBUTION,
                    payload,
                    role=role,
                    sample_index=i,
                    temperature=a.judge_temperature,
                    grammar=grammar,
                ),
                i,
                scopes,
            )
            for i, role in enumerate(a.judge_roles)
        ]

    def _record_use(self, episode: Episode, used: list[traces.Use]) -> None:
        c = self.store.counters
        traj = episode.trajectory
        c.decisions_with_recall += sum(1 for n in traj.decisions if n.recalled_memory_ids)
        rows = []
        for u in used:
            obj = self.store.get(u.object_id)
            assert obj is not None
            obj.uses += 1
            cross = sum(1 for n in u.nodes if n.level != obj.level)
            c.recalled_uses += len(u.nodes)
            c.cross_scope_uses += cross
            row: dict[str, Any] = {"id": obj.id, "level": obj.level, "decisions": len(u.nodes), "cross_scope": cross}
            if isinstance(obj, Skill):
                reach = downstream_reach(traj.decisions, [n.id for n in u.nodes], self.p.triage.exposure_discount)
                obj.exposure = [*obj.exposure, reach][-self.p.triage.exposure_window :]
                row["reach"] = round(reach, 6)
            rows.append(row)
        self.audit.record("observe", task=episode.task.id, success=episode.outcome.success, used=rows)

    def _evidence(self, obj: Memory | Skill, success: bool, weight: float, **why: Any) -> None:
        if isinstance(obj, Skill):
            before = to_dict(obj.belief)
            obj.belief = B.update(obj.belief, success, weight, self.prior, self.p.beliefs.window)
            after = to_dict(obj.belief)
            self.audit.record(
                "belief_update",
                skill=obj.id,
                lineage=obj.lineage,
                success=success,
                weight=weight,
                before=before,
                after=after,
                **why,
            )
            return
        before = {"pos": obj.pos, "neg": obj.neg, "support": obj.support}
        if success:
            obj.pos += weight
            obj.support += 1
        else:
            obj.neg += weight
        after = {"pos": obj.pos, "neg": obj.neg, "support": obj.support}
        self.audit.record(
            "belief_update", memory=obj.id, success=success, weight=weight, before=before, after=after, **why
        )

    def _admit_success(self, episode: Episode, used: list[traces.Use]) -> list[str]:
        conf = success_confidence(episode.outcome)
        families = {u.object_id: self.store.family_of(u.object_id) for u in used}
        credit = family_credit(families, conf)
        self.audit.record("admit_success", task=episode.task.id, confidence=conf, families=families, credit=credit)
        first_node = {u.object_id: u.nodes[0] for u in used}
        for oid, w in credit.items():
            obj = self.store.get(oid)
            assert obj is not None
            self._evidence(obj, True, w, task=episode.task.id)
            if isinstance(obj, Skill):
                fixture = traces.fixture_for(episode, first_node[oid], self.p.recall.context_chars)
                obj.success_fixtures = [*obj.success_fixtures, fixture][-self.p.intervention.fixture_history :]
        touched = [oid for oid in credit if oid in self.store.memories]
        supported = set(credit)  # one task is one unit of support for any memory (issue 15, fix 4)
        for level, nodes in traces.nodes_by_level(episode.trajectory).items():
            touched.append(self._remember(episode, level, nodes, conf, supported))
        return list(dict.fromkeys(touched))

    def _remember(
        self, episode: Episode, level: Level, nodes: list[DecisionNode], conf: float, supported: set[str]
    ) -> str:
        """A success at one level: support a near-duplicate memory of the scope, or store a new one.

        `supported` holds the memories this task already credited, created or supported (at any
        level); they are not supported again, so one task never counts twice toward a promotion.
        """
        text = traces.memory_text(episode, level, nodes)
        vec = self.index.embed(text)
        hit = self.index.memories(level).ranked(vec, self.p.formation.dedupe_similarity, 1)
        if hit:
            mem = self.store.memories[hit[0][0]]
            if mem.id not in supported:
                supported.add(mem.id)
                before = {"pos": mem.pos, "neg": mem.neg, "support": mem.support}
                mem.pos += conf
                mem.support += 1
                self.audit.record(
                    "memory_supported",
                    memory=mem.id,
                    level=mem.level,
                    task=episode.task.id,
                    similarity=round(hit[0][1], 4),
                    before=before,
                    after={"pos": mem.pos, "neg": mem.neg, "support": mem.support},
                )
            return mem.id
        mid = self.store.new_memory_id()
        mem = Memory(
            id=mid,
            level=level,
            text=text,
            family=mid,
            fixture=traces.fixture_for(episode, nodes[0], self.p.recall.context_chars),
            pos=conf,
        )
        self.store.memories[mid] = mem
        supported.add(mid)
        self.index.add_memory(mem, vec)
        self.audit.record("memory_created", memory=mid, level=level, task=episode.task.id, pos=conf, text=text)
        return mid

    def _admit_failure(
        self, episode: Episode, used: list[traces.Use], candidates: list[Candidate], judgements: list[Judgement]
    ) -> list[str]:
        bc = BadCase(
            id=self.store.new_badcase_id(),
            task_id=episode.task.id,
            status="unresolved",
            fixtures={u.object_id: traces.fixture_for(episode, u.nodes[0], self.p.recall.context_chars) for u in used},
            judgements=judgements,
        )
        self.store.badcases[bc.id] = bc
        c = self.store.counters
        if not used:
            bc.status, bc.reason = "no_candidates", "nothing from memory was recalled"
        else:
            att: Attribution = decide(
                judgements, {x.id: x.scope for x in candidates}, self.p.admission.min_mean_confidence
            )
            bc.mean_confidence, bc.failure_mode, bc.reason = att.mean_confidence, att.failure_mode, att.reason
            if self.p.admission.mode == "symmetric":  # the one change: no agreement gate, every recalled object
                bc.status, bc.blamed = "symmetric", [u.object_id for u in used]
                bc.reason = f"symmetric admission: every recalled object (judges: {att.reason})"
            elif att.admitted is not None:
                bc.status, bc.blamed = "admitted", [att.admitted]
        event = {
            "badcase": bc.id,
            "task": episode.task.id,
            "judgements": [to_dict(j) for j in judgements],
            "reason": bc.reason,
            "mean_confidence": bc.mean_confidence,
        }
        if not bc.blamed:
            c.unresolved_failures += 1
            self.audit.record("unresolved_failure", status=bc.status, recalled=list(bc.fixtures), **event)
            return []
        c.admitted_failures += 1
        # the success rule's weights with confidence 1: an object's share of one task's evidence
        share = family_credit({u.object_id: self.store.family_of(u.object_id) for u in used}, 1.0)
        for oid in bc.blamed:
            obj = self.store.get(oid)
            assert obj is not None
            tag = {"skill": obj.id, "lineage": obj.lineage} if isinstance(obj, Skill) else {"memory": obj.id}
            self.audit.record(
                "admit_failure",
                mode=self.p.admission.mode,
                failure_mode=bc.failure_mode,
                weight=share[oid],
                **tag,
                **event,
            )
            self._evidence(obj, False, share[oid], badcase=bc.id)
            if isinstance(obj, Skill):
                obj.badcases = [*obj.badcases, bc.id][-self.p.intervention.fixture_history :]
        return [oid for oid in bc.blamed if oid in self.store.memories]

    # -- maintain ----------------------------------------------------------------

    def maintain(self, round_index: int) -> None:
        drafts = consolidation.draft(self)
        plan = governance.plan_round(self, round_index) if self.p.governance else None
        retry = consolidation.commit(self, drafts)
        if plan is not None:
            governance.commit_round(self, plan)
        consolidation.queue(self, sorted(retry))

    # -- state -------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"store": self.store.to_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.store = Store.from_dict(state["store"])
        self.index.rebuild(
            [m for m in self.store.memories.values() if m.consolidated_into is None],
            self.store.active_skills(),
        )

    def stats(self) -> dict[str, float]:
        c = self.store.counters
        return {
            "memories": float(sum(m.consolidated_into is None for m in self.store.memories.values())),
            "skills_active": float(len(self.store.active_skills())),
            "badcases": float(len(self.store.badcases)),
            "admitted_failures": float(c.admitted_failures),
            "unresolved_failures": float(c.unresolved_failures),
            "promotions": float(c.promotions),
            "reviews": float(c.reviews),
            "activations": float(c.activations),
            "cross_scope_use_rate": c.cross_scope_uses / c.recalled_uses if c.recalled_uses else 0.0,
        }

    def explain(self, skill_id: str) -> list[str]:
        """Why a skill version has its current status, from the audit log."""
        return explain(self.audit.read(), skill_id)
