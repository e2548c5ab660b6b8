"""The inspect_ai side of `vs_inspect_ai.py`: N samples x K chat calls against an OpenAI-compatible server.

Run by the Python of a separate environment that has inspect_ai (the project's own does not):

    <inspect python> scripts/perf/inspect_ai_task.py --base-url URL --samples 200 --calls 4 --concurrency 8

Each sample is a task prompt followed by K model calls, an observation appended after each reply (the
shape of a step-wise agent's sample without memory: No-Memory); `max_connections` and `max_samples` are
the concurrency, as an inspect_ai user would set them to a model's connection limit. Prints one JSON
line: the evaluation's own span (its log's started_at -> completed_at), the calls made and the samples
scored.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from datetime import datetime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    os.environ["FAKE_BASE_URL"] = args.base_url
    os.environ["FAKE_API_KEY"] = "not-a-key"

    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageUser
    from inspect_ai.scorer import includes
    from inspect_ai.solver import Generate, TaskState, solver

    @solver
    def steps(k: int):  # type: ignore[no-untyped-def]
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            for i in range(k):
                state = await generate(state)
                state.messages.append(ChatMessageUser(content=f"You are at cell {i + 1}. Next action?"))
            return state

        return solve

    task = Task(
        dataset=[
            Sample(input=f"Task {i}: walk to the target cell on a line of 1000 cells, then stop.", target="stop")
            for i in range(args.samples)
        ],
        solver=steps(args.calls),
        scorer=includes(),
    )
    with tempfile.TemporaryDirectory() as logs:
        (log,) = eval(
            task,
            model="openai-api/fake/fake-model",
            max_connections=args.concurrency,
            max_samples=args.concurrency,
            log_dir=logs,
            display="none",
            temperature=0.0,
        )
        samples = list(log.samples or [])  # read while the log file exists (samples load lazily)
    stats = log.stats
    span = (datetime.fromisoformat(stats.completed_at) - datetime.fromisoformat(stats.started_at)).total_seconds()
    calls = sum(sum(1 for m in s.messages if m.role == "assistant") for s in samples)
    print(json.dumps({"status": log.status, "seconds": span, "calls": calls, "samples": len(samples)}))


if __name__ == "__main__":
    main()
