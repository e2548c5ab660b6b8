"""Optional Weights & Biases logging: off unless enabled, offline by default, never required.

Only the scrubbed config and per-sample numbers are sent; secrets are removed
by key name and by value before anything leaves the process. wandb's console
capture is off: it would copy raw stdout/stderr (a provider's error body with a
key in it) into `wandb/*/files/output.log`; run.log holds the redacted log.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from aecg_bench.runner.config import RunConfig
from aecg_bench.runner.identity import Redactor, scrub

log = logging.getLogger("aecg_bench.run")


class Tracker:
    def __init__(self, cfg: RunConfig, header: dict[str, Any], run_dir: Path, redact: Redactor) -> None:
        self.run: Any = None
        self.redact = redact
        wb = cfg.runtime.wandb
        if not wb.enabled or wb.mode == "disabled":
            return
        try:
            import wandb
        except ImportError:  # pragma: no cover - wandb is a dependency, but never a requirement
            log.warning("wandb logging requested but wandb is not installed; continuing without it")
            return
        os.environ.setdefault("WANDB_SILENT", "true")
        labels = header["labels"]
        try:
            self.run = wandb.init(
                project=wb.project,
                entity=wb.entity,
                mode=wb.mode,
                dir=str(run_dir),
                name="/".join(str(labels[k]) for k in ("benchmark", "framework", "memory", "model", "seed")),
                config=redact.deep(
                    scrub({"labels": labels, "identity": header["identity"], "protocol": header["protocol"]})
                ),
                reinit=True,
                settings=wandb.Settings(console="off"),
            )
        except Exception as exc:  # tracking must never stop a run
            log.warning("wandb init failed (%s); continuing without it", exc)
            self.run = None

    def log(self, record: dict[str, Any]) -> None:
        if self.run is None:
            return
        total = record["usage"]["total"]
        self.run.log(
            {
                "position": record["position"],
                "success": float(bool(record["success"])),
                "value": record["value"] or 0.0,
                "status": record["status"],
                "tokens": total["input_tokens"] + total["output_tokens"],
                "cost": total["cost"],
                **{f"memory/{k}": v for k, v in record["memory_stats"].items()},
            }
        )

    def abort(self) -> None:
        """The run stopped on an error or a signal: close the wandb run as failed."""
        if self.run is None:
            return
        try:
            self.run.finish(exit_code=1)
        except Exception as exc:  # tracking must never mask the run's own error
            log.warning("wandb finish failed (%s)", exc)
        self.run = None

    def finish(self, final: dict[str, Any]) -> None:
        if self.run is None:
            return
        self.run.summary.update(
            {"status": final["status"], "success_rate": final["eval"]["success_rate"], "cost": final["cost"]}
        )
        self.run.finish()
