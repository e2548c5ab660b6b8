"""Run logging and console output, both with secrets redacted.

Every line the harness prints or logs passes a `Redactor` that knows the value
of every configured model's `api_key_env` (plus secret-looking variables), so
a provider that echoes the key in an error body cannot put it on the console,
into run.log, or into anything that captures the console.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, TextIO

from aecg_bench.runner.identity import Redactor


class _RedactFilter(logging.Filter):
    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.redact(record.getMessage())
        record.args = ()
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = self.redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


class _QuietFileHandler(logging.FileHandler):
    """A full or read-only disk must not print logging's own traceback for every line."""

    failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        if not self.failed:
            self.failed = True
            exc = sys.exc_info()[1]
            print(f"warning: cannot write {self.baseFilename}: {exc}; logging to it stops", file=sys.stderr)


class RedactingStream:
    """A text stream that redacts whole lines before passing them on (a secret split across
    two writes of one line is still caught; partial lines are held until newline or flush).
    Everything else (fileno, isatty, encoding, buffer) is the wrapped stream's."""

    def __init__(self, inner: TextIO, redact: Redactor) -> None:
        self.inner = inner
        self.redact = redact
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending or "\r" in self._pending:
            cut = max(self._pending.rfind("\n"), self._pending.rfind("\r")) + 1
            done, self._pending = self._pending[:cut], self._pending[cut:]
            self.inner.write(self.redact(done))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.inner.write(self.redact(self._pending))
            self._pending = ""
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, buffer ...
        return getattr(self.inner, name)


def redact_console(redact: Redactor) -> None:
    """Route sys.stdout and sys.stderr through `redact` (idempotent; a newer redactor replaces
    the older one, so the set of secrets can grow once the config is known)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, RedactingStream):
            stream.flush()
            stream.redact = redact
        elif stream is not None:
            setattr(sys, name, RedactingStream(stream, redact))


def setup_logging(
    run_dir: Path, level: str = "INFO", *, quiet_console: bool = False, redact: Redactor | None = None
) -> None:
    """Log to run_dir/run.log; the console shows warnings only while a progress bar is up."""
    logger = logging.getLogger("aecg_bench")
    logger.setLevel(level.upper())
    logger.propagate = False
    for h in list(logger.handlers):
        logger.removeHandler(h)
        h.close()
    redact_filter = _RedactFilter(redact or Redactor())
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    handlers[0].setLevel(logging.WARNING if quiet_console else level.upper())
    try:
        handlers.append(_QuietFileHandler(run_dir / "run.log", encoding="utf-8"))
    except OSError as exc:
        print(
            f"warning: cannot write {run_dir / 'run.log'}: {exc.strerror}; logging to the console only", file=sys.stderr
        )
    for h in handlers:
        h.setFormatter(fmt)
        h.addFilter(redact_filter)
        logger.addHandler(h)
    for noisy in ("LiteLLM", "litellm", "httpx", "autogen_core", "autogen_agentchat"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
