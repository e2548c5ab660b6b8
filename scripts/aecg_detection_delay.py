"""Detection delay of a corrupted skill: dual-timescale beliefs vs cumulative only (unit-level check).

Controlled outcome streams, no LLM (see aecg_bench/aecg/simulation.py); NOT the
paper's RQ3 experiment (that is `python -m aecg_bench.mechanisms
experiment=aecg_rq3_drift`). Prints
the mean number of post-corruption uses until the drift gate first qualifies
the skill, the share of streams never detected within the horizon, and the
share of streams with a false alarm before the corruption.

    python scripts/aecg_detection_delay.py [--seeds 200] [--history 20] [--floor 0.0]
        [--review-every 1] [--cooldown 5] [--admission-noise 0.0]
"""

from __future__ import annotations

import argparse
import statistics

from aecg_bench.aecg.params import BeliefParams, DriftParams
from aecg_bench.aecg.simulation import Corruption, detection_delay


def summary(c: Corruption, seeds: int, fast: bool, drift: DriftParams) -> dict[str, float]:
    out = [detection_delay(c, s, BeliefParams(fast=fast), drift) for s in range(seeds)]
    delays = [d if d is not None else c.horizon for d, _ in out]
    return {
        "mean_uses_to_review": statistics.mean(delays),
        "missed": sum(d is None for d, _ in out) / seeds,
        "false_alarm_streams": sum(fa > 0 for _, fa in out) / seeds,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--history", type=int, default=20)
    ap.add_argument("--p-before", type=float, default=0.9)
    ap.add_argument("--p-after", type=float, default=0.2)
    ap.add_argument("--floor", type=float, default=DriftParams().reliability_floor)
    ap.add_argument("--review-every", type=int, default=1, help="uses between review rounds")
    ap.add_argument("--cooldown", type=int, default=5, help="evidence events before a re-review")
    ap.add_argument("--admission-noise", type=float, default=0.0, help="share of failures left unresolved")
    args = ap.parse_args()
    c = Corruption(
        history=args.history,
        p_before=args.p_before,
        p_after=args.p_after,
        review_every=args.review_every,
        cooldown=args.cooldown,
        admission_noise=args.admission_noise,
    )
    drift = DriftParams(reliability_floor=args.floor)
    print(
        f"history={c.history} p {c.p_before}->{c.p_after} horizon={c.horizon} seeds={args.seeds} floor={args.floor} "
        f"review_every={c.review_every} cooldown={c.cooldown} admission_noise={c.admission_noise}"
    )
    for label, fast in (("dual (AECG)", True), ("cumulative only", False)):
        s = summary(c, args.seeds, fast, drift)
        print(
            f"{label:16s} uses to review {s['mean_uses_to_review']:5.2f}  missed {s['missed']:.1%}  "
            f"false-alarm streams {s['false_alarm_streams']:.1%}"
        )


if __name__ == "__main__":
    main()
