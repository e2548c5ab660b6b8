"""Shared fixtures: composed configs, mock clients, the shared benchmark data."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from aecg_bench.llm import LLMClient, ModelSpec
from aecg_bench.llm.cache import ResponseCache

REPO = Path(__file__).resolve().parents[1]
# No per-example deadline: hypothesis's 200 ms default fails correct tests on a loaded 2-core machine
# (seen: DeadlineExceeded in test_aecg_math.py at load 10); an explicit @settings keeps this default.
settings.register_profile("aecg", deadline=None)
settings.load_profile("aecg")
SHARED_DATA = Path(os.environ.get("AECG_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def _no_network_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a provider: litellm stays offline and no real key leaks in."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("WANDB_MODE", "offline")


@pytest.fixture
def shared_data() -> Path:
    if not (SHARED_DATA / "README.md").exists():  # the shared copy, not an empty folder left by a failed download
        pytest.skip(f"shared benchmark data not found at {SHARED_DATA} (set AECG_SHARED_DATA)")
    return SHARED_DATA


def compose(overrides: list[str], results_root: Path, data_root: Path | None = None) -> dict[str, Any]:
    """Compose the real Hydra config (as the CLI would) into a plain dict."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from aecg_bench.run import CONF_DIR

    # lexical embeddings keep in-process tests fast; the default (minilm) is exercised by the CLI tests
    base = [
        f"runtime.results_root={results_root}",
        "runtime.progress=false",
        "runtime.fsync=false",
        "embedder.backend=lexical",
    ]
    if data_root is not None:
        base.append(f"runtime.data_root={data_root}")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=[*base, *overrides])
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    return raw


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    def _make(*overrides: str, data_root: Path | None = None) -> dict[str, Any]:
        return compose(list(overrides), tmp_path / "results", data_root)

    return _make


def mock_client(tmp_path: Path | None = None, *, mode: str = "off", **options: Any) -> LLMClient:
    spec = ModelSpec(label="mock", provider="mock", model="mock/test", options=options)
    cache = ResponseCache(tmp_path / "cache.sqlite" if tmp_path else None, mode)  # type: ignore[arg-type]
    return LLMClient({"mock": spec}, {"default": "mock"}, cache)


@pytest.fixture
def outside_tmp() -> Path:
    """A git-ignored directory on the real file system, for files that sandboxed code must not reach
    (under /tmp they would be hidden by the sandbox's private tmpfs and prove nothing)."""
    path = REPO / ".pytest_cache" / "sandbox-targets"
    path.mkdir(parents=True, exist_ok=True)
    return path


def crash_then_resume(make_config, monkeypatch, args: list[str], after: int) -> tuple[dict, dict]:
    """(clean run, run killed after `after` flushed records and rerun), each in its own experiment."""
    import aecg_bench.runner.batch as batch
    from aecg_bench.run import run_from_config

    clean = run_from_config(make_config(*args, "experiment_name=clean"))
    real_run_item = batch._run_item
    calls = {"n": 0}

    def crash_after(*a, **kw):
        if calls["n"] == after:
            raise KeyboardInterrupt  # the process dies after `after` flushed records
        calls["n"] += 1
        return real_run_item(*a, **kw)

    monkeypatch.setattr(batch, "_run_item", crash_after)
    with pytest.raises(KeyboardInterrupt):
        run_from_config(make_config(*args, "experiment_name=crashed"))
    monkeypatch.setattr(batch, "_run_item", real_run_item)
    return clean, run_from_config(make_config(*args, "experiment_name=crashed"))


@contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (a real full disk); skips the test unless root can mount one."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and the mount command")
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
