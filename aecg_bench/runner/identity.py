"""A run's identity: what makes two runs the same run, and where it lives on disk.

Identity = registered names + versions + parameters + models + seed + data
hashes + the ordered sample list. Everything under `runtime` (paths, cache
mode, progress bars, wandb) is excluded: it changes how a run is executed, not
what it measures. The results directory is derived from the identity's labels,
with no timestamps, so rerunning a command finds its own directory.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

# A credential's name: "token" as a whole word or suffix (HF_TOKEN, access_token), never a count of tokens
# (max_tokens, max_output_tokens stay readable in run.json).
SECRET_KEY = re.compile(r"(api_?key|secret|password|authorization|(?:^|[_\-.])token$|bearer)", re.I)
_SAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


def derive_seed(seed: int, *parts: object) -> int:
    """A per-sample seed from the run seed and the sample's identity, independent of scheduling."""
    blob = ":".join([str(seed), *map(str, parts)]).encode("utf-8")
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") % (2**31 - 1)


def stable_hash(obj: Any, length: int = 16) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]


def safe_label(text: str) -> str:
    """A label usable as one path component below the results root (model ids contain slashes): never
    `.` or `..`, and never hidden (`.cache` and `.sweeps` are the harness's own)."""
    return _SAFE.sub("_", text).strip("_").lstrip(".") or "unnamed"


def results_dir(
    root: Path, *, experiment: str, benchmark: str, framework: str, memory: str, model: str, seed: int
) -> Path:
    parts = [experiment, benchmark, framework, memory, model]
    return root.joinpath(*(safe_label(p) for p in parts), f"seed={seed}")


def results_dir_of(header: dict[str, Any]) -> Path:
    """The run directory a run.json header (or a run's returned summary) describes."""
    labels = header["labels"]
    return results_dir(
        Path(header["runtime"]["results_root"]),
        experiment=labels["experiment"],
        benchmark=labels["benchmark"],
        framework=labels["framework"],
        memory=labels["memory"],
        model=labels["model"],
        seed=labels["seed"],
    )


def scrub(obj: Any) -> Any:
    """Copy of a config with values under secret-looking keys replaced by '***'."""
    if isinstance(obj, dict):
        return {
            k: ("***" if SECRET_KEY.search(str(k)) and not str(k).endswith("_env") else scrub(v))
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [scrub(v) for v in obj]
    return obj


class Redactor:
    """Removes secret values (the API keys a run can read) from any text it writes."""

    def __init__(self, env_names: list[str] | None = None) -> None:
        names = set(env_names or [])
        names |= {k for k in os.environ if SECRET_KEY.search(k)}
        self.secrets = sorted({os.environ[n] for n in names if len(os.environ.get(n, "")) >= 6}, key=len, reverse=True)

    @classmethod
    def none(cls) -> Redactor:
        """A redactor that knows no secret (files written outside a run: tests, tools)."""
        redactor = cls.__new__(cls)
        redactor.secrets = []
        return redactor

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def deep(self, obj: Any) -> Any:
        """A copy of `obj` with every secret masked; `obj` itself when no secret is configured (no pass)."""
        if not self.secrets:
            return obj
        return self._deep(obj)

    def _deep(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self(obj)
        if isinstance(obj, dict):
            return {k: self._deep(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self._deep(v) for v in obj]
        return obj

    def found_in(self, json_text: str) -> bool:
        """Whether JSON text (ensure_ascii=False) may hold a secret: JSON escapes each character on its own,
        so a string holding a secret holds the secret's escaped form. False means no redaction pass is needed."""
        return any(json.dumps(s, ensure_ascii=False)[1:-1] in json_text for s in self.secrets)

    def dumps(self, obj: Any) -> str:
        """Compact, key-sorted JSON of `obj` with every secret masked; the deep pass runs only when a
        secret shows up in the text (a large memory state is then encoded once, not walked twice)."""
        text = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        if self.found_in(text):
            text = json.dumps(self._deep(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return text


def config_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Unified diff of two identity configs, for the 'config changed' refusal."""
    a = json.dumps(old, sort_keys=True, indent=1).splitlines()
    b = json.dumps(new, sort_keys=True, indent=1).splitlines()
    return "\n".join(difflib.unified_diff(a, b, "recorded run.json", "this command", lineterm="", n=1))
