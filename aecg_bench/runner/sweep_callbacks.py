"""Hydra callbacks of a sweep: after the last job, fold the cache shards the jobs wrote into one cache."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from aecg_bench.llm.cache import merge_shards

log = logging.getLogger(__name__)


class MergeCacheShards(Callback):
    """Runs in the process that launched the sweep, once every job has returned (SLURM, Ray)."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        runtime = config.runtime
        if not runtime.cache.shards or runtime.cache.mode != "read_write":
            return
        path = Path(runtime.cache.path) if runtime.cache.path else Path(runtime.results_root) / ".cache" / "llm.sqlite"
        n_shards, added = merge_shards(path)
        print(f"merged {n_shards} cache shards into {path}: {added} new entries")
