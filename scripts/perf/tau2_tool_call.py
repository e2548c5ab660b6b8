"""tau2 tool-call round trip (target: < 2 ms at the median).

One round trip is what happens between a model's tool call and the next prompt:
parse the call's JSON arguments, run the tool on the domain DB (pydantic models),
update the DB, serialise the result into the observation. Measured on the airline
domain (the largest DB) over a mix of reads and writes, through `Tau2Env.step`.
The user simulator is not involved (tool calls never reach it).

    AECG_DATA_ROOT=../shared/data python scripts/perf/tau2_tool_call.py [--calls 2000] [--domain airline]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from aecg_bench.benchmarks.data import data_root
from aecg_bench.benchmarks.tau2 import Tau2Benchmark
from aecg_bench.contracts import EnvContext
from aecg_bench.llm import LLMClient, ModelSpec
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.types import Action, ToolCall

CALLS = {
    "airline": [
        ("get_user_details", {"user_id": "mia_li_3668"}),
        ("get_reservation_details", {"reservation_id": "NO6JO3"}),
        ("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}),
        ("update_reservation_baggages", {"reservation_id": "NO6JO3", "total_baggages": 1, "nonfree_baggages": 0, "payment_id": "credit_card_4421486"}),
        ("get_flight_status", {"flight_number": "HAT001", "date": "2024-05-16"}),
    ],
    "retail": [
        ("find_user_id_by_email", {"email": "noah.brown7922@example.com"}),
        ("get_order_details", {"order_id": "#W2611340"}),
        ("get_product_details", {"product_id": "9523456873"}),
        ("calculate", {"expression": "(12.5 + 3) * 2"}),
    ],
}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--domain", choices=sorted(CALLS), default="airline")
    args = ap.parse_args()
    bench = Tau2Benchmark({"domain": args.domain}, data_dir=data_root() / "tau2")
    sample = bench.samples("all")[0]
    spec = ModelSpec(label="mock", provider="mock", model="mock/user", options={"default": "Hi."})
    llm = LLMClient({"mock": spec}, {"default": "mock"}, ResponseCache(None, "off"))
    env = bench.make_env(sample, EnvContext(llm=llm, seed=0))
    env.reset()
    raw = [(name, json.dumps(arguments)) for name, arguments in CALLS[args.domain]]
    times = []
    errors = 0
    for i in range(args.calls):
        if env.done:  # max_steps reached: a new conversation on a fresh DB (not timed)
            env.reset()
        name, arguments = raw[i % len(raw)]
        start = time.perf_counter()
        action = Action(kind="tool", tool_calls=(ToolCall(name, json.loads(arguments), f"call_{i}"),))
        obs = env.step(action)
        times.append(time.perf_counter() - start)
        errors += int(not obs.valid)
    times.sort()
    ms = [t * 1000 for t in times]
    print(
        f"tau2 {args.domain} tool-call round trip over {len(ms)} calls: median {statistics.median(ms):.3f} ms, "
        f"p90 {ms[int(0.9 * len(ms))]:.3f} ms, max {ms[-1]:.3f} ms; tool errors {errors} (target: median < 2 ms)"
    )


if __name__ == "__main__":
    main()
