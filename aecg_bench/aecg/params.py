"""AECG hyperparameters, grouped by component.

Every default below is either the paper's value (arXiv 2610.05176; marked
"paper") or our documented default where the paper gives none (marked "ours").
`conf/memory/aecg.yaml` repeats them with the same comments, and a test keeps
the two identical, so an ablation config only names what it changes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aecg_bench.contracts import Params


class ScopeParams(Params):
    # paper: hard (memories, skills and evidence never cross team/event/agent levels);
    # flat = the "flat scope" ablation (every level pooled into one scope).
    mode: Literal["hard", "flat"] = "hard"


class RecallParams(Params):
    k_skills: int = Field(2, ge=0, description="active skills recalled per decision (ours)")
    k_memories: int = Field(1, ge=0, description="unconsolidated memories recalled per decision (ours)")
    min_similarity: float = Field(0.05, ge=-1.0, le=1.0, description="cosine floor for recall (ours)")
    context_chars: int = Field(600, ge=0, description="tail of the observation matched by recall and fixtures (ours)")


class AdmissionParams(Params):
    # paper: asymmetric (two judges must agree); symmetric = ablation (every failure counts
    # against every recalled object).
    mode: Literal["asymmetric", "symmetric"] = "asymmetric"
    min_mean_confidence: float = Field(0.70, ge=0.0, le=1.0, description="paper: 0.70")
    judge_roles: tuple[str, str] = Field(("judge", "judge"), description="LLM roles of the two judges (ours)")
    judge_temperature: float | None = Field(None, ge=0.0, description="None = the judge model's default (ours)")
    max_candidates: int = Field(8, ge=1, description="recalled objects shown to a judge (ours)")
    max_trace_decisions: int = Field(40, ge=1, description="decisions shown to a judge (ours)")
    # decoding aid, not the paper's (prompts.attribution_grammar; dropped by providers without grammars): the
    # string bound that keeps the embedded model's verdict under the smoke preset's 96-token cap
    grammar_max_chars: int = Field(
        16, ge=4, le=2000, description="characters per string of the failure-attribution grammar (ours)"
    )


class FormationParams(Params):
    dedupe_similarity: float = Field(0.9, ge=0.0, le=1.0, description="same-scope success merges into a memory (ours)")
    min_support: int = Field(2, ge=1, description="supporting successes before a memory seeds a skill (ours)")
    min_reliability: float = Field(0.6, ge=0.0, le=1.0, description="seed belief mean needed to promote (ours)")
    neighbours: int = Field(3, ge=0, description="auxiliary same-scope memories in the abstraction prompt (ours)")
    neighbour_min_similarity: float = Field(0.2, ge=-1.0, le=1.0, description="(ours)")
    inherit_fraction: float = Field(0.5, ge=0.0, le=1.0, description="share of seed evidence a skill inherits (ours)")
    equivalence_similarity: float = Field(0.85, ge=0.0, le=1.0, description="new skill is linked, not added (ours)")
    max_promotions_per_update: int = Field(2, ge=0, description="abstraction calls per observe/maintain (ours)")
    max_attempts: int = Field(2, ge=1, description="abstraction attempts per seed before giving up (ours)")
    # decoding aid, not the paper's (prompts.skill_grammar; dropped by providers without grammars): the bounds
    # that keep the embedded model's abstraction under the smoke preset's 96-token cap
    grammar_max_chars: int = Field(16, ge=4, le=2000, description="characters per string of the skill grammar (ours)")
    grammar_max_steps: int = Field(2, ge=1, le=10, description="procedure steps the skill grammar allows (ours)")


class BeliefParams(Params):
    fast: bool = Field(True, description="paper: dual timescale; False = cumulative-only ablation")
    window: float = Field(5.0, gt=1.0, description="fast-belief window W in evidence mass (ours)")
    prior_alpha: float = Field(1.0, gt=0.0, description="Beta prior (ours)")
    prior_beta: float = Field(1.0, gt=0.0, description="Beta prior (ours)")


class DriftParams(Params):
    samples: int = Field(512, ge=16, description="paired belief samples per drift score (ours)")
    reliability_floor: float = Field(
        0.0, ge=0.0, le=1.0, description="lower bound of the reference reliability; 0 = off, the paper's rule (ours)"
    )
    cumulative_reference: Literal["peak", "origin"] = Field(
        "peak", description="cumulative-only ablation: the slow belief's best state, or its initial one (ours)"
    )
    gate_confidence: float = Field(0.9, ge=0.5, le=1.0, description="share of samples showing degradation (ours)")
    min_drift: float = Field(0.05, ge=0.0, le=1.0, description="drift score needed to qualify (ours)")
    min_uses: int = Field(2, ge=0, description="uses of a version before it can qualify (ours)")


class TriageParams(Params):
    # paper: exposure-aware; risk = "risk-only" ablation, random = "random review" ablation.
    order: Literal["exposure", "risk", "random"] = "exposure"
    budget: int = Field(1, ge=0, description="reviews per maintain round (paper mechanism tests: 1)")
    exposure_discount: float = Field(0.5, gt=0.0, le=1.0, description="weight per hop downstream (ours)")
    exposure_window: int = Field(20, ge=1, description="most recent decision graphs counted (ours)")
    cooldown_events: int = Field(5, ge=0, description="new evidence events before a re-review (ours)")


class InterventionParams(Params):
    max_failure_fixtures: int = Field(5, ge=1, description="BadCases shown and replayed (ours)")
    max_success_fixtures: int = Field(5, ge=0, description="success fixtures shown and replayed (ours)")
    max_predicate_terms: int = Field(3, ge=1, description="size bound of a narrowing predicate (ours)")
    hardcode_ngram: int = Field(6, ge=3, description="a repair may not quote this many words of a BadCase (ours)")
    fixture_history: int = Field(10, ge=1, description="fixtures kept per skill version (ours)")


class ReplayParams(Params):
    enabled: bool = Field(True, description="paper: gate on; False = no-replay-gate ablation")
    min_mitigation: float = Field(0.5, ge=0.0, le=1.0, description="share of reproduced failures mitigated (ours)")
    max_regression: float = Field(0.2, ge=0.0, le=1.0, description="tolerance on supported successes (ours)")
    min_success_fixtures: int = Field(1, ge=0, description="fewer: the candidate is monitored (ours)")
    holdout_fraction: float = Field(
        0.5, gt=0.0, lt=1.0, description="share of fixtures held out from the reviser for replay (ours)"
    )
    role: str = Field("replay", min_length=1, description="LLM role of replayed decisions (map it to the agent model)")


class AECGParams(Params):
    governance: bool = Field(True, description="False = no-governance ablation (accumulate only)")
    scope: ScopeParams = ScopeParams()
    recall: RecallParams = RecallParams()
    admission: AdmissionParams = AdmissionParams()
    formation: FormationParams = FormationParams()
    beliefs: BeliefParams = BeliefParams()
    drift: DriftParams = DriftParams()
    triage: TriageParams = TriageParams()
    intervention: InterventionParams = InterventionParams()
    replay: ReplayParams = ReplayParams()
    memory_max_tokens: int = Field(700, ge=64, description="output bound of memory-side LLM calls (ours)")
