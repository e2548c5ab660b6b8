"""The runtime presets compose into the launchers and settings scale-out.md promises (no cluster needed)."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from aecg_bench.run import CONF_DIR


def _compose(*overrides: str) -> dict:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
    raw = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(raw, dict)
    return raw


def test_the_default_launcher_is_joblib_longest_first_with_aecg_jobs(monkeypatch):
    monkeypatch.setenv("AECG_JOBS", "3")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["experiment=aecg_table1"], return_hydra_config=True)
    assert cfg.hydra.launcher._target_.endswith("AecgLocalLauncher") and cfg.hydra.launcher.n_jobs == 3
    assert cfg.hydra.launcher.order == "longest_first"  # joblib's launcher, longest runs first (sweep_order.py)
    assert cfg.runtime.cache.shards is False and not cfg.hydra.callbacks


@pytest.mark.parametrize("experiment", [None, "aecg_table1", "aecg_table2_smoke"])
def test_slurm_preset_requeues_shards_the_cache_and_merges_it(experiment):
    extra = [f"experiment={experiment}"] if experiment else []
    raw = _compose("runtime=slurm", *extra)
    launcher = raw["hydra"]["launcher"]
    assert launcher["_target_"].endswith("SlurmLauncher")
    assert launcher["max_num_timeout"] > 0 and launcher["array_parallelism"] == 64
    assert raw["runtime"]["cache"]["shards"] is True
    assert raw["hydra"]["callbacks"]["merge_cache_shards"]["_target_"].endswith("MergeCacheShards")
    assert raw["runtime"]["results_root"] == "results"  # the shared runtime defaults are still there


def test_ray_preset_uses_our_launcher_without_importing_ray():
    raw = _compose("runtime=ray")
    assert raw["hydra"]["launcher"]["_target_"] == "hydra_plugins.aecg_ray_launcher.ray_launcher.AecgRayLauncher"
    assert raw["runtime"]["cache"]["shards"] is True


def test_submitit_resubmits_a_timed_out_job_with_its_arguments():
    """What makes `max_num_timeout` requeue a job: the launcher's checkpoint hands submitit the same call."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher

    launcher = SlurmLauncher(submitit_folder="x", timeout_min=1)
    again = launcher.checkpoint(["seed=1"], "job-dir", 0, 7, {"state": 1})
    assert isinstance(again, submitit.helpers.DelayedSubmission)
    assert again.args == (["seed=1"], "job-dir", 0, 7, {"state": 1})


def test_a_cluster_job_on_another_node_does_not_watch_the_launchers_pid(monkeypatch):
    """A sweep worker stops its run when the launching process is gone; on SLURM or Ray the job runs on
    another node, where the launcher's pid names nothing, so it must not conclude the launcher died."""
    from aecg_bench.runner import lifecycle

    monkeypatch.setenv(lifecycle.PARENT_ENV, "4242")
    monkeypatch.setenv(lifecycle.HOST_ENV, "a-login-node-that-is-not-this-one")
    assert lifecycle.watch_parent(getppid=lambda: 1, on_gone=lambda: None) is None
