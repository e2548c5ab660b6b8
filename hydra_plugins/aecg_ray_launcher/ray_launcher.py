"""`hydra/launcher=aecg_ray`: each job of a multirun sweep runs as one Ray task.

Hydra's own hydra-ray-launcher plugin no longer installs beside current Ray
and Hydra releases, so this is a small launcher of our own, built like
Hydra's joblib launcher (hydra plugins/hydra_joblib_launcher/_core.py): the
driver composes nothing itself; each task loads its job's sweep config,
restores Hydra's global state and calls `run_job`. `address: null` starts a
local Ray with `num_cpus`; `address: auto` (or `ray://host:10001`) joins a
running cluster, whose nodes must see the same results directory and the
same code (a shared file system, or a Ray runtime_env).

A task that dies with its node is retried by Ray (`max_retries`); the rerun
resumes the run's directory like any rerun.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

log = logging.getLogger(__name__)


@dataclass
class AecgRayLauncherConf:
    _target_: str = "hydra_plugins.aecg_ray_launcher.ray_launcher.AecgRayLauncher"
    address: str | None = None  # null: start a local Ray; "auto" or "ray://host:port": join a cluster
    num_cpus: int | None = None  # local Ray only: CPUs it may use (null: all)
    cpus_per_job: float = 1.0  # Ray resources one run reserves (runs are sequential inside)
    max_retries: int = 3  # re-runs of a task whose worker died (node lost, OOM-killed)
    init: dict[str, Any] = field(default_factory=dict)  # further ray.init() arguments


ConfigStore.instance().store(group="hydra/launcher", name="aecg_ray", node=AecgRayLauncherConf, provider="aecg_bench")


def _execute_job(
    idx: int,
    overrides: Sequence[str],
    hydra_context: HydraContext,
    config: DictConfig,
    task_function: TaskFunction,
    singleton_state: dict[Any, Any],
) -> JobReturn:
    """One job inside a Ray worker: restore Hydra's globals, load the job's sweep config, run it."""
    setup_globals()
    Singleton.set_state(singleton_state)
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
        sweep_config.hydra.job.num = idx
    HydraConfig.instance().set_config(sweep_config)
    ret = run_job(
        hydra_context=hydra_context,
        config=sweep_config,
        task_function=task_function,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )
    ret.hydra_cfg = None  # keep the returned object small and picklable
    return ret


class AecgRayLauncher(Launcher):
    def __init__(self, **params: Any) -> None:
        self.params = OmegaConf.create(params)
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import ray

        setup_globals()
        assert self.config is not None and self.task_function is not None and self.hydra_context is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        p = self.params
        started_here = not ray.is_initialized()
        if started_here:
            init = dict(OmegaConf.to_container(p.init, resolve=True) or {})  # type: ignore[arg-type]
            if p.address is not None:
                init["address"] = p.address
            elif p.num_cpus is not None:
                init["num_cpus"] = p.num_cpus
            init.setdefault("include_dashboard", False)
            init.setdefault("log_to_driver", True)
            ray.init(**init)
        log.info("Ray launcher: %d jobs, sweep dir %s", len(job_overrides), sweep_dir)
        for idx, overrides in enumerate(job_overrides):
            log.info("\t#%d : %s", initial_job_idx + idx, " ".join(filter_overrides(overrides)))
        remote = ray.remote(num_cpus=p.cpus_per_job, max_retries=p.max_retries)(_execute_job)
        state = Singleton.get_state()
        try:
            refs = [
                remote.remote(
                    initial_job_idx + idx, list(ov), self.hydra_context, self.config, self.task_function, state
                )
                for idx, ov in enumerate(job_overrides)
            ]
            return list(ray.get(refs))
        finally:
            if started_here:
                ray.shutdown()
