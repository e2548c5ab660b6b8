"""Replay the simulator's gold action path of every ScienceWorld task through the environment.

Measures, per task: native score reached, subgoals matched (with and without
AgentBoard's 30-step limit), grounding accuracy of the gold commands, per-step
latency, and the JVM's resident memory. It documents how far subgoal progress
and the native score agree, and picks the tasks the tests replay.

    python scripts/scienceworld_gold_paths.py --data-root ../shared/data [--out gold.jsonl] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from aecg_bench.benchmarks.scienceworld import ScienceWorldBenchmark
from aecg_bench.contracts import EnvContext
from aecg_bench.types import Action


def replay(bench: ScienceWorldBenchmark, sample, step_limit: int) -> dict:
    gold = bench.gold_action_sequence(sample)
    env = bench.make_env(sample, EnvContext(llm=None, seed=0))
    latencies = []
    matched_at_limit = None
    try:
        env.reset()
        for i, command in enumerate(gold):
            start = time.perf_counter()
            obs = env.step(Action(kind="command", text=command))
            latencies.append(time.perf_counter() - start)
            if i + 1 == step_limit:
                matched_at_limit = env.score().success
            if obs.done:
                break
        score = env.score()
    finally:
        env.close()
    sim = bench.pool.acquire()
    rss = sim.rss_bytes()
    bench.pool.release(sim)
    return {
        "id": sample.id,
        "gold_steps": len(gold),
        "steps_taken": int(score.metrics["steps"]),
        "success": score.success,
        "success_within_limit": score.success if matched_at_limit is None else matched_at_limit,
        "progress": score.value,
        "native_score": score.metrics["native_score"],
        "grounding_accuracy": score.metrics["grounding_accuracy"],
        "step_latency_ms": 1000 * statistics.mean(latencies) if latencies else None,
        "jvm_rss_mib": rss / 2**20 if rss else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", type=Path, required=True)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--jvm-option", action="append", help="replaces the default JVM options (repeat; use =)")
    args = ap.parse_args()
    params = {} if args.jvm_option is None else {"jvm_options": args.jvm_option}
    bench = ScienceWorldBenchmark(params, data_dir=args.data_root / "scienceworld")
    rows = []
    try:
        for sample in bench.samples()[: args.limit]:
            row = replay(bench, sample, bench.params.max_steps)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        bench.close()
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    n = len(rows)
    print(
        f"tasks {n}: native 100 on {sum(r['native_score'] == 100 for r in rows)}, "
        f"all subgoals on {sum(r['success'] for r in rows)}, "
        f"all subgoals within {bench.params.max_steps} steps on {sum(r['success_within_limit'] for r in rows)}; "
        f"mean step latency {statistics.mean(r['step_latency_ms'] for r in rows if r['step_latency_ms']):.1f} ms; "
        f"max JVM RSS {max(r['jvm_rss_mib'] or 0 for r in rows):.0f} MiB; JVM launches {bench.pool.launches}"
    )


if __name__ == "__main__":
    main()
