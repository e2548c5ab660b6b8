"""AECG mechanism tests (paper sec. 4.3-4.5, appendix C.3): RQ2 scope, RQ3 drift, RQ4 triage.

The `warmup_snapshot` protocol: memory warms up on the first 60% of the task
stream once (`protocol.phases=warmup`), its final snapshot is taken, an
optional seeded intervention alters it (RQ3/RQ4: controlled corruption of
validated skills), and every variant then runs the remaining 40% from that
same state (`protocol.phases=eval`, `protocol.start_state`) with matched
tasks, order, seeds and review budget. `protocol` runs it, `corruption` is
the intervention, `metrics` reads each variant's audit log and records.

    python -m aecg_bench.mechanisms experiment=aecg_rq3_drift [overrides]
"""
