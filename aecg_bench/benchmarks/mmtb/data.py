"""MMTB's data file: download, check, read.

`Multi-Mission-Tool-Bench.jsonl` comes from the authors' repository
(github.com/yupeijei1997/MMTB, `mmtb/bench_test/data/`) at a pinned commit and is
checked against that commit's git blob id (SHA-1 of the blob), so the bytes are
exactly the ones the commit holds. The download lands in a temporary file beside
the target and is moved into place only after the check.
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from aecg_bench.benchmarks.data import git_blob_sha1, make_parents, remove_empty
from aecg_bench.errors import DataError, one_line

FILE = "Multi-Mission-Tool-Bench.jsonl"
COMMIT = "c0e83907fcd9534101777e2d980b1550a9fb98bb"
BLOB_SHA1 = "4b62137b56c1b6cd3c0a4a10ad723b724f8c825e"
URL = f"https://raw.githubusercontent.com/yupeijei1997/MMTB/{COMMIT}/mmtb/bench_test/data/{FILE}"


def manual_steps(path: Path) -> str:
    """How to get the file by hand (what every 'missing' and 'could not download' line ends with)."""
    return (
        f"download {URL} (mmtb/bench_test/data/{FILE} of github.com/yupeijei1997/MMTB at commit {COMMIT}) and "
        f"save it as {path}; its git blob id (`git hash-object`) must be {BLOB_SHA1}"
    )


def fetch(data_dir: Path | None, *, download: bool, url: str | None = None, blob_sha1: str | None = None) -> Path:
    """The checked data file; `url` and `blob_sha1` default to the pinned source (tests vary them)."""
    url, blob_sha1 = url or URL, blob_sha1 or BLOB_SHA1
    if data_dir is None:
        raise DataError("no data directory configured for mmtb; set runtime.data_root or $AECG_DATA_ROOT")
    path = data_dir / FILE
    if not path.exists():
        if not download:
            raise DataError(f"missing data file {path}; {manual_steps(path)}; or set params.download=true when online")
        _download(url, path, blob_sha1)
    found = git_blob_sha1(path)
    if found != blob_sha1:
        raise DataError(f"{path}: git blob id {found} differs from the pinned {blob_sha1}; {manual_steps(path)}")
    return path


def _download(url: str, dest: Path, blob_sha1: str) -> None:
    created = make_parents(dest)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".mmtb-")
    landed = False
    try:
        with urllib.request.urlopen(url, timeout=120) as resp, os.fdopen(fd, "wb") as out:
            while chunk := resp.read(1 << 20):
                out.write(chunk)
        found = git_blob_sha1(Path(tmp))
        if found != blob_sha1:
            raise DataError(f"downloaded {url} but its git blob id {found} differs from the pinned {blob_sha1}")
        os.replace(tmp, dest)
        landed = True
    except OSError as exc:  # no network, DNS, HTTP and disk errors
        raise DataError(f"could not download {url} ({one_line(exc, 200)}); by hand: {manual_steps(dest)}") from exc
    finally:
        Path(tmp).unlink(missing_ok=True)
        if not landed:
            remove_empty(created)


def read_items(path: Path) -> list[dict[str, Any]]:
    items = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {i + 1} is not JSON ({exc})") from None
    return items
