"""The validated shape of a run's configuration (what Hydra composes).

Validation happens once, before anything runs, so a bad value fails with one
line naming the key, the value and the valid choices instead of failing an
hour into a sweep.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aecg_bench.errors import unknown_choice
from aecg_bench.llm.spec import ModelSpec, RetryPolicy
from aecg_bench.params import validate_params

TRANSPORT_FIELDS = ("api_base", "api_key_env", "timeout_s", "max_concurrency", "rate_limit")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ComponentConfig(_Strict):
    name: str  # registered name
    label: str | None = None  # results-path label for variants (e.g. an ablation); default = name
    params: dict[str, Any] = Field(default_factory=dict)

    @property
    def tag(self) -> str:
        return self.label or self.name


class ModelConfig(_Strict):
    label: str  # results-path label of the model assignment
    models: dict[str, dict[str, Any]]
    roles: dict[str, str]

    def specs(self) -> dict[str, ModelSpec]:
        out = {}
        for label, raw in self.models.items():
            out[label] = validate_params(f"model {label!r}", ModelSpec, {"label": label, **raw})
        for role, label in self.roles.items():
            if label not in out:
                raise unknown_choice(f"model for role {role!r}", label, out)
        return out


class ProtocolConfig(_Strict):
    mode: Literal["online", "build_then_freeze"] = "online"
    label_source: Literal["environment", "llm_judge", "none"] = "environment"
    split: str = "test"
    build_split: str = "train"
    build_epochs: int = Field(1, ge=1)
    warmup_fraction: float = Field(0.0, ge=0.0, lt=1.0)
    # warmup_snapshot protocol (AECG mechanism tests): run only one part of the warm-up/eval stream;
    # an eval-only run starts from `start_state` (a JSON file {"memory": ..., "framework": ...}).
    phases: Literal["all", "warmup", "eval"] = "all"
    start_state: str | None = None
    retrieval: Literal["per_task", "per_decision"] = "per_task"
    maintain_every: int = Field(10, ge=1)
    snapshot_every: int = Field(10, ge=1)
    max_invalid_actions: int = Field(3, ge=0)
    # training: a framework's own cross-task state (AgentNet's evolution) learns on build and warm-up items
    # only, frozen while evaluated (AgentNet's fit/evaluate); all: it also learns on the eval stream.
    framework_learning: Literal["training", "all"] = "training"
    max_steps: int | None = Field(None, ge=1)  # cap below every task's step limit (smoke presets)
    limit: int | None = Field(None, ge=1)  # first N samples of each split, build and eval (smoke, rehearsal)
    # given: the benchmark's order (what the papers run); shuffled: each phase's items in an order drawn
    # from the run seed (the phases and their samples stay the same; docs/frameworks/README.md).
    order: Literal["given", "shuffled"] = "given"


class EmbedderConfig(_Strict):
    backend: Literal["minilm", "lexical", "qwen3_embedding"] = "minilm"
    # qwen3_embedding only: a litellm embedding model id (an OpenAI-compatible server such as vLLM
    # serving Qwen/Qwen3-Embedding-4B, the paper's embedder), its endpoint, key variable and width.
    model: str = "openai/Qwen/Qwen3-Embedding-4B"
    api_base: str | None = None
    api_key_env: str | None = None
    dim: int = Field(2560, ge=1)


class CacheConfig(_Strict):
    mode: Literal["off", "read_write", "read_only"] = "read_write"
    path: str | None = None
    shards: bool = False  # each process writes its own shard (clusters, network file systems); merge after
    lock_timeout_s: float = Field(10.0, gt=0)  # wait for another writer's lock, then skip storing


class WandbConfig(_Strict):
    enabled: bool = False
    mode: Literal["offline", "online", "disabled"] = "offline"
    project: str = "aecg-bench"
    entity: str | None = None


class RuntimeConfig(_Strict):
    """How the run executes; excluded from the run's identity."""

    results_root: str = "results"
    data_root: str | None = None
    cache: CacheConfig = CacheConfig()
    embed_cache: str | None = None
    embed_threads: int = Field(1, ge=1)  # threads of the MiniLM embedder (llm/embeddings.py: 1 on shared cores)
    # how MiniLM is computed: onnx (ONNX Runtime, the same vectors at half the CPU) or torch (llm/minilm_onnx.py)
    embed_runtime: Literal["onnx", "torch"] = "onnx"
    rate_limit_path: str | None = None  # shared token buckets; default <results_root>/.cache/ratelimit.sqlite
    max_cost_usd: float | None = Field(None, gt=0)  # the sweep's budget, across processes (llm/budget.py)
    retry: RetryPolicy = RetryPolicy()
    progress: bool = True
    wandb: WandbConfig = WandbConfig()
    allow_config_change: bool = False
    fsync: bool = True
    # group commit: 0 fsyncs every record (the default); > 0 fsyncs at most once per this many seconds (and at the
    # run's end). A kill -9 loses nothing either way (records reach the OS at once); a power cut can lose the last
    # interval's records, which a rerun runs again (docs/infra/reliability.md)
    fsync_interval_s: float = Field(0.0, ge=0)
    log_level: str = "INFO"
    # memory snapshots (runner/snapshots.py): the newest N kept, plus those at phase and epoch ends
    snapshot_keep: int = Field(4, ge=1)
    # a large state is snapshotted less often: on average at most this many JSON bytes per record (0: every
    # protocol.snapshot_every records whatever the size)
    snapshot_bytes_per_record: int = Field(65536, ge=0)
    # samples of a frozen or memory-free phase run at once (runner/concurrent.py); None: the models' max_concurrency
    concurrent_samples: int | None = Field(None, ge=1)


class RunConfig(_Strict):
    experiment_name: str = "default"
    seed: int = Field(0, ge=0)
    rehearsal: bool = False  # a paper preset on LIMIT samples with any model (docs/infra/cost.md): never pooled
    framework: ComponentConfig
    benchmark: ComponentConfig
    memory: ComponentConfig
    model: ModelConfig
    protocol: ProtocolConfig = ProtocolConfig()
    embedder: EmbedderConfig = EmbedderConfig()
    runtime: RuntimeConfig = RuntimeConfig()

    def key_envs(self) -> list[str]:
        """Every variable a key is read from (models and embedder): their values are redacted everywhere."""
        names = {str(m["api_key_env"]) for m in self.model.models.values() if m.get("api_key_env")}
        return sorted(names | ({self.embedder.api_key_env} if self.embedder.api_key_env else set()))

    def identity_config(self) -> dict[str, Any]:
        """The parts of the config that define what is measured: not `runtime`, and not how a
        model is reached (endpoint, timeout, concurrency, key variable), only which model it is."""
        from aecg_bench.llm.client import TRANSPORT_OPTIONS

        out = self.model_dump(exclude={"runtime"})
        for spec in out["model"]["models"].values():
            for key in TRANSPORT_FIELDS:
                spec.pop(key, None)
            for key in TRANSPORT_OPTIONS:
                spec.get("options", {}).pop(key, None)
        return out


def parse_run_config(raw: dict[str, Any]) -> RunConfig:
    """Validate a composed config (Hydra's own keys dropped)."""
    return validate_params(
        "config",
        RunConfig,
        {k: v for k, v in raw.items() if k not in ("hydra", "experiment", "mechanism", "arm", "per_benchmark")},
    )


def validate_components(cfg: RunConfig) -> None:
    """Check each component's params against its schema without building it (no data, no model)."""
    from aecg_bench import registry
    from aecg_bench.llm.embedded_server import serve_mode, settings_for
    from aecg_bench.llm.threads import model_threads

    for group in ("benchmark", "framework", "memory"):
        comp: ComponentConfig = getattr(cfg, group)
        cls = registry.resolve(group, comp.name)
        validate_params(f"{group} {comp.name!r}", cls.Params, comp.params)
    for spec in cfg.model.models.values():
        options = spec.get("options") or {}
        if "n_threads" in options:
            model_threads(options["n_threads"])  # 'auto' or a positive integer; one line otherwise
        if serve_mode(options) == "server":  # in_process | server; slots 'auto' or a positive integer
            settings_for(str(spec.get("model", "")).partition("/")[2], options)
