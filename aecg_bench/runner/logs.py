"""Run logging: a file in the run directory and the console, both with secrets redacted."""

from __future__ import annotations

import logging
from pathlib import Path

from aecg_bench.runner.identity import Redactor


class _RedactFilter(logging.Filter):
    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.redact(record.getMessage())
        record.args = ()
        return True


def setup_logging(run_dir: Path, level: str = "INFO", *, quiet_console: bool = False) -> None:
    """Log to run_dir/run.log; the console shows warnings only while a progress bar is up."""
    run_dir.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger("aecg_bench")
    logger.setLevel(level.upper())
    logger.propagate = False
    for h in list(logger.handlers):
        logger.removeHandler(h)
        h.close()
    redact = _RedactFilter(Redactor())
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    file_handler = logging.FileHandler(run_dir / "run.log", encoding="utf-8")
    console = logging.StreamHandler()
    console.setLevel(logging.WARNING if quiet_console else level.upper())
    for h in (file_handler, console):
        h.setFormatter(fmt)
        h.addFilter(redact)
        logger.addHandler(h)
    for noisy in ("LiteLLM", "litellm", "httpx", "autogen_core", "autogen_agentchat"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
