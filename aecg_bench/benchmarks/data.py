"""Finding, downloading and verifying benchmark data files.

Loaders take a data directory (config `runtime.data_root`, else $AECG_DATA_ROOT,
else ~/.cache/aecg_bench/data) and check every file against its pinned sha256,
so a run can never silently use a different file than the one its numbers
describe. A missing file is downloaded from its canonical source when online
(and allowed); otherwise the error says where to get it.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from aecg_bench.errors import DataError

DATA_ROOT_ENV = "AECG_DATA_ROOT"
_verified: dict[tuple[str, int, float], str] = {}


@dataclass(frozen=True)
class DataFile:
    relpath: str  # inside the benchmark's data directory
    sha256: str
    url: str | None = None  # canonical download; None when it comes in an archive
    source: str = ""  # where to get it by hand, for the error message
    compression: str | None = None  # "gzip": the download is gunzipped into relpath


def data_root(configured: str | Path | None = None) -> Path:
    if configured:
        return Path(configured).expanduser()
    if os.environ.get(DATA_ROOT_ENV):
        return Path(os.environ[DATA_ROOT_ENV]).expanduser()
    return Path("~/.cache/aecg_bench/data").expanduser()


def sha256_of(path: Path) -> str:
    """sha256 of a file, memoised on (path, size, mtime) so large files hash once per process."""
    st = path.stat()
    memo_key = (str(path.resolve()), st.st_size, st.st_mtime)
    if memo_key not in _verified:
        h = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _verified[memo_key] = h.hexdigest()
    return _verified[memo_key]


def fetch(data_dir: Path | None, spec: DataFile, *, download: bool = True) -> Path:
    """Path of a verified data file, downloading it first if missing and allowed."""
    if data_dir is None:
        raise DataError(f"no data directory configured for {spec.relpath}; set runtime.data_root or ${DATA_ROOT_ENV}")
    path = data_dir / spec.relpath
    if not path.exists():
        if download and spec.url:
            _download(spec.url, path, gunzip=spec.compression == "gzip")
        else:
            where = spec.url or spec.source or "its canonical source"
            raise DataError(
                f"missing data file {path}; get it from {where} and place it there, "
                f"or point runtime.data_root / ${DATA_ROOT_ENV} at a folder that has {spec.relpath}"
            )
    found = sha256_of(path)
    if found != spec.sha256:
        raise DataError(
            f"{path}: sha256 {found} differs from the pinned {spec.sha256}; the file is not the one this "
            f"benchmark version was built for (re-download it from {spec.url or spec.source or 'its source'})"
        )
    return path


def _download(url: str, dest: Path, *, gunzip: bool = False) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with (
            urllib.request.urlopen(url, timeout=60) as resp,
            tempfile.NamedTemporaryFile(dir=dest.parent, delete=False) as tmp,
        ):
            shutil.copyfileobj(gzip.GzipFile(fileobj=resp) if gunzip else resp, tmp)
    except OSError as exc:
        raise DataError(f"could not download {url} to {dest}: {exc}") from exc
    os.replace(tmp.name, dest)
