"""EDV (Execute-Distill-Verify, arXiv 2606.24428) and its inference-time baselines Judge and Router.

Modules: `ability` (the Ability Matrix), `pool` (model pool, temperature
schedules, per-task role assignment), `execute`, `distill`, `verify` (the
three construction stages), `banks` (shared/private banks and hierarchical
retrieval), `prompts`, `method` (EDVMemory), `judge`, `router`,
`contamination` (the section 5.4 ReasoningBank variant).
"""
