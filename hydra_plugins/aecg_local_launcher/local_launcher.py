"""`hydra/launcher=aecg_local`: Hydra's joblib launcher, with the sweep's runs started longest first.

joblib hands jobs to its workers in the order given; when the longest run of a
sweep is listed last, it ends the sweep alone while the other workers idle.
This launcher estimates each run (aecg_bench/runner/sweep_order.py: what its
earlier records say is left, else its planned items), then dispatches them
largest first. Job numbers (`hydra.job.num`, the `.sweeps/<num>` folders) and
the returned list keep the sweep's own order. `order: as_listed` turns the
reordering off. Everything else is joblib's launcher as configured
(hydra plugins/hydra_joblib_launcher/_core.py, whose `execute_job` runs each job).
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, setup_globals
from hydra_plugins.hydra_joblib_launcher._core import execute_job, process_joblib_cfg
from hydra_plugins.hydra_joblib_launcher.config import JobLibLauncherConf
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher
from omegaconf import OmegaConf, open_dict

log = logging.getLogger(__name__)
ORDERS = ("longest_first", "as_listed")


@dataclass
class AecgLocalLauncherConf(JobLibLauncherConf):
    _target_: str = "hydra_plugins.aecg_local_launcher.local_launcher.AecgLocalLauncher"
    order: str = "longest_first"  # or as_listed: the sweep's own order


ConfigStore.instance().store(
    group="hydra/launcher", name="aecg_local", node=AecgLocalLauncherConf, provider="aecg_bench"
)


class AecgLocalLauncher(JoblibLauncher):
    def __init__(self, order: str = "longest_first", **joblib: Any) -> None:
        if order not in ORDERS:
            from aecg_bench.errors import ConfigError

            raise ConfigError(f"hydra.launcher.order={order!r}; valid: {', '.join(ORDERS)}")
        super().__init__(**joblib)
        self.order = order

    def dispatch_order(self, job_overrides: Sequence[Sequence[str]]) -> list[int]:
        """Indices of the jobs in the order they start."""
        if self.order == "as_listed" or len(job_overrides) < 2:
            return list(range(len(job_overrides)))
        from aecg_bench.runner import sweep_order

        estimates = [sweep_order.estimate(self._resolved(ov)) for ov in job_overrides]
        return sweep_order.longest_first(sweep_order.seconds(estimates))

    def _resolved(self, overrides: Sequence[str]) -> dict[str, Any]:
        """The job's config as its run will see it (empty when it does not compose: the job says why)."""
        assert self.hydra_context is not None and self.config is not None
        try:
            cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(cfg):
                del cfg["hydra"]
            raw = OmegaConf.to_container(cfg, resolve=True)
        except Exception:
            return {}
        return raw if isinstance(raw, dict) else {}

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from joblib import Parallel, delayed

        setup_globals()
        assert self.config is not None and self.task_function is not None and self.hydra_context is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        joblib_cfg = dict(self.joblib)
        joblib_cfg["backend"] = "loky"  # as joblib's launcher: the threading backend is incompatible with Hydra
        process_joblib_cfg(joblib_cfg)
        order = self.dispatch_order(job_overrides)
        log.info("Joblib.Parallel(%s) is launching %d jobs, %s", joblib_cfg, len(job_overrides), self.order)
        log.info("Launching jobs, sweep output dir : %s", sweep_dir)
        for idx in order:
            log.info("\t#%d : %s", initial_job_idx + idx, " ".join(filter_overrides(job_overrides[idx])))
        state = Singleton.get_state()
        runs = Parallel(**joblib_cfg)(
            delayed(execute_job)(
                initial_job_idx + idx, job_overrides[idx], self.hydra_context, self.config, self.task_function, state
            )
            for idx in order
        )
        by_index = dict(zip(order, runs, strict=True))
        return [by_index[i] for i in range(len(job_overrides))]
