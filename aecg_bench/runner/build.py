"""From a validated config to the run's plan (identity, stream, paths) and its live components."""

from __future__ import annotations

import functools
import json
import os
import platform
import random
import subprocess
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from aecg_bench import registry
from aecg_bench.audit import AuditLog
from aecg_bench.benchmarks.data import data_root
from aecg_bench.contracts import Benchmark, Framework, MemoryServices
from aecg_bench.errors import ConfigError
from aecg_bench.llm.breaker import EndpointWatch, SqliteStore
from aecg_bench.llm.budget import SweepBudget
from aecg_bench.llm.cache import ResponseCache, run_shard, shard_name
from aecg_bench.llm.client import LLMClient
from aecg_bench.llm.cpu_build import cpu_model, llama_cpp_build
from aecg_bench.llm.embeddings import Embedder, RemoteEmbedding
from aecg_bench.llm.pricing import PRICE_TABLE_VERSION
from aecg_bench.llm.ratelimit import SharedRateLimiter
from aecg_bench.llm.threads import concurrent_jobs, model_threads
from aecg_bench.results_format import SCHEMA_VERSION
from aecg_bench.runner.config import RunConfig
from aecg_bench.runner.execute import Protocol, Services, StreamItem
from aecg_bench.runner.identity import derive_seed, results_dir, safe_label, scrub, stable_hash
from aecg_bench.runner.lifecycle import sweep_id
from aecg_bench.types import Sample

PACKAGES = (
    "aecg-bench",
    "litellm",
    "hydra-core",
    "autogen-agentchat",
    "llama-cpp-python",
    "scienceworld",
    "sentence-transformers",
    "torch",
    "onnxruntime",
    "numpy",
    "pandas",
)


@dataclass
class RunPlan:
    config: RunConfig
    run_dir: Path
    stream: list[StreamItem]
    header: dict[str, Any]


def plan_stream(benchmark: Benchmark, cfg: RunConfig) -> list[StreamItem]:
    """The ordered items of a run: build items (if any), then warm-up and eval items."""
    p = cfg.protocol
    if p.mode == "build_then_freeze" and p.build_split == p.split:
        raise ConfigError(
            f"protocol.build_split and protocol.split are both {p.split!r}; build_then_freeze builds memory on "
            "tasks that are never evaluated, so choose two different splits"
        )
    splits = benchmark.splits()
    for split in {p.split, *([p.build_split] if p.mode == "build_then_freeze" else [])}:
        if split not in splits:
            raise ConfigError(f"benchmark {benchmark.name!r} has no split {split!r}; valid splits: {', '.join(splits)}")
    ordered = functools.partial(stream_order, p.order, cfg.seed, benchmark.name)
    items: list[StreamItem] = []
    if p.mode == "build_then_freeze":
        build = benchmark.samples(p.build_split)[: p.limit]  # limit: the first N of every split
        for epoch in range(p.build_epochs):
            items += [
                StreamItem(len(items) + i, "build", s, epoch) for i, s in enumerate(ordered(build, "build", epoch))
            ]
    evals = benchmark.samples(p.split)
    if p.limit is not None:
        evals = evals[: p.limit]
    n_warm = round(len(evals) * p.warmup_fraction)
    for phase, part in (("warmup", evals[:n_warm]), ("eval", evals[n_warm:])):
        if p.phases in ("all", phase):  # one part of the stream only: positions count within it
            items += [StreamItem(len(items) + i, phase, s) for i, s in enumerate(ordered(part, phase, 0))]
    if p.phases == "eval" and not items:
        raise ConfigError(f"protocol.phases=eval leaves no eval items (warmup_fraction={p.warmup_fraction})")
    ids = [it.sample.id for it in items]
    if len(set(zip(ids, (it.phase for it in items), (it.epoch for it in items), strict=True))) != len(items):
        raise ConfigError(f"benchmark {benchmark.name!r} yields duplicate sample ids in one phase")
    return items


def stream_order(order: str, seed: int, benchmark: str, samples: list[Sample], phase: str, epoch: int) -> list[Sample]:
    """One phase's samples in the run's order: as given, or shuffled by a seed drawn from the run seed.

    Only the order within a phase changes: which samples are built on, warmed up on and evaluated
    (`limit`, `warmup_fraction`) is fixed by the given order, so every seed is scored on the same
    samples and a warm-up snapshot fits every eval run of its seed."""
    if order == "given":
        return list(samples)
    shuffled = list(samples)
    random.Random(derive_seed(seed, benchmark, "order", phase, epoch)).shuffle(shuffled)
    return shuffled


def build_llm(cfg: RunConfig, cache_root: Path, shard: str | None = None) -> LLMClient:
    """The run's client; `shard` names the run's cache shard (cache.py: read first; written on clusters)."""
    cache_path = Path(cfg.runtime.cache.path) if cfg.runtime.cache.path else cache_root / "llm.sqlite"
    mode = cfg.runtime.cache.mode
    cache = ResponseCache(
        cache_path if mode != "off" else None,
        mode,
        lock_timeout_s=cfg.runtime.cache.lock_timeout_s,
        shard=shard,
        shard_writes=cfg.runtime.cache.shards,
    )
    specs = cfg.model.specs()
    shared = Path(cfg.runtime.rate_limit_path) if cfg.runtime.rate_limit_path else cache_root / "ratelimit.sqlite"
    limiter = None
    if any(spec.rate_limit is not None for spec in specs.values()):
        limiter = SharedRateLimiter(shared)
    budget = None
    if cfg.runtime.max_cost_usd is not None:
        budget_dir = cache_root / "budget" / safe_label(cfg.experiment_name)
        budget = SweepBudget(budget_dir, cfg.runtime.max_cost_usd, name=shard_name())
    # one circuit breaker per endpoint for the whole sweep, beside the rate limits (llm/breaker.py)
    sweep = sweep_id()
    watch = EndpointWatch(
        SqliteStore(shared.with_name("endpoints.sqlite")) if sweep else None,
        scope=sweep or "",
        outage_window_s=cfg.runtime.retry.outage_window_s,
    )
    return LLMClient(
        specs, dict(cfg.model.roles), cache, cfg.runtime.retry, rate_limiter=limiter, budget=budget, endpoints=watch
    )


def build(cfg: RunConfig) -> tuple[RunPlan, Services, AuditLog]:
    root = Path(cfg.runtime.results_root)
    benchmark_cls = registry.resolve("benchmark", cfg.benchmark.name)
    benchmark = benchmark_cls(cfg.benchmark.params, data_dir=data_root(cfg.runtime.data_root) / cfg.benchmark.name)
    framework = registry.build("framework", cfg.framework.name, cfg.framework.params)
    run_dir = results_dir(
        root,
        experiment=cfg.experiment_name,
        benchmark=cfg.benchmark.tag,
        framework=cfg.framework.tag,
        memory=memory_label(cfg),
        model=cfg.model.label,
        seed=cfg.seed,
    )
    llm = build_llm(cfg, root / ".cache", shard=run_shard(run_dir, root))
    audit = AuditLog(run_dir / "memory" / "audit.jsonl")
    embed_cache = Path(cfg.runtime.embed_cache) if cfg.runtime.embed_cache else root / ".cache" / "embeddings.sqlite"
    e = cfg.embedder
    remote = RemoteEmbedding(e.model, e.api_base, e.api_key_env, e.dim) if e.backend == "qwen3_embedding" else None
    embedder = Embedder(
        e.backend, embed_cache, remote=remote, threads=cfg.runtime.embed_threads, runtime=cfg.runtime.embed_runtime
    )
    memory = registry.build(
        "memory",
        cfg.memory.name,
        cfg.memory.params,
        services=MemoryServices(llm=llm, embedder=embedder, audit=audit, seed=cfg.seed),
    )
    stream = plan_stream(benchmark, cfg)
    p = cfg.protocol
    protocol = Protocol(
        label_source=memory.label_source(p.label_source),
        retrieval=p.retrieval,
        max_invalid_actions=p.max_invalid_actions,
        max_steps=p.max_steps,
        learn_in_eval=p.mode == "online",
        framework_learning=p.framework_learning,
    )
    services = Services(
        benchmark=benchmark,
        framework=framework,
        memory=memory,
        llm=llm,
        protocol=protocol,
        env_cache_dir=root / ".cache" / "env" / cfg.benchmark.name,
        run_seed=cfg.seed,
    )
    header = make_header(cfg, benchmark, framework.describe(), memory.describe(), embedder, stream, llm)
    header["protocol"]["label_source"] = protocol.label_source  # what memory learns from, after the method's say
    header["seed_effects"] = seed_effects(cfg, stream, framework, llm)
    return RunPlan(cfg, run_dir, stream, header), services, audit


def seed_effects(cfg: RunConfig, stream: list[StreamItem], framework: Framework, llm: LLMClient) -> dict[str, Any]:
    """What changing `seed` changes in this run (docs/frameworks/README.md, "What a seed varies")."""
    phases = Counter(it.phase for it in stream)
    return {
        "sample_order": cfg.protocol.order == "shuffled" and any(n > 1 for n in phases.values()),
        "provider_seed": llm.seed_support(),
        "temperature": {label: spec.temperature for label, spec in llm.models.items()},
        "framework_randomness": framework.randomness(),
        "cache_keys": True,
    }


def memory_label(cfg: RunConfig) -> str:
    """The memory's results label; `_<mode>` is appended when the run's protocol is not the one the
    method's paper uses (EDV run online is `edv_online`, never plain `edv`)."""
    paper = registry.resolve("memory", cfg.memory.name).paper_protocol
    tag, mode = cfg.memory.tag, cfg.protocol.mode
    return tag if mode == paper or tag.endswith(f"_{mode}") else f"{tag}_{mode}"


def make_header(
    cfg: RunConfig,
    benchmark: Benchmark,
    framework: dict[str, Any],
    memory: dict[str, Any],
    embedder: Embedder,
    stream: list[StreamItem],
    llm: LLMClient,
) -> dict[str, Any]:
    sample_list = [[it.phase, it.epoch, it.sample.id] for it in stream]
    identity = {
        "config": scrub(cfg.identity_config()),
        "components": {"benchmark": benchmark.describe(), "framework": framework, "memory": memory},
        "data_hashes": benchmark.data_hashes(),
        "sample_list_hash": stable_hash(sample_list),
        "start_state_hash": start_state_hash(cfg.protocol.start_state),
        "embedder": embedder.describe(),
    }
    identity["hash"] = stable_hash(identity)
    return {
        "schema": SCHEMA_VERSION,
        "status": "running",
        "labels": {
            "experiment": cfg.experiment_name,
            "benchmark": cfg.benchmark.tag,
            "framework": cfg.framework.tag,
            "memory": memory_label(cfg),
            "model": cfg.model.label,
            "seed": cfg.seed,
        },
        "identity": identity,
        **({"preset": "rehearsal"} if cfg.rehearsal else {}),  # never pooled with a paper run (analysis/load.py)
        "protocol": cfg.protocol.model_dump(),
        "n_items": len(stream),
        "n_eval": sum(it.phase == "eval" for it in stream),
        "backends": benchmark.describe_backends(),
        "models": {label: scrub(spec.model_dump()) for label, spec in llm.models.items()},
        "roles": dict(cfg.model.roles),
        "runtime": scrub(cfg.runtime.model_dump()),
        "price_table_version": PRICE_TABLE_VERSION,
        "environment": environment_facts(),
        # which installed package provides each component (a plugin's name and version; aecg_bench/plugins.py)
        "component_packages": {
            group: registry.package_of(group, getattr(cfg, group).name)
            for group in ("benchmark", "framework", "memory")
        },
    }


def start_state_hash(path: str | None) -> str | None:
    """Hash of the state an eval-only run starts from (part of the run's identity)."""
    if path is None:
        return None
    try:
        return stable_hash(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"protocol.start_state {path!r} is not a readable JSON state: {exc}") from None


def load_start_state(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def environment_facts() -> dict[str, Any]:
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
        "git_commit": _git_commit(),
        "cpu_model": cpu_model(),  # what every speed figure is reported with
        "cpu_count": os.cpu_count(),
        "concurrent_jobs": concurrent_jobs(),  # runs of the sweep sharing the cores
        "embedded_model_threads": model_threads("auto"),  # what `n_threads: auto` gives (llm/threads.py)
        "llama_cpp_build": llama_cpp_build(),  # portable baseline or its AVX-512 VNNI variant (llm/cpu_build.py)
    }


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=Path(__file__).resolve().parent
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
