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
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aecg_bench.errors import DataError

DATA_ROOT_ENV = "AECG_DATA_ROOT"
_verified: dict[tuple[str, int, float], str] = {}
_blob_ids: dict[tuple[str, int, float], str] = {}


@dataclass(frozen=True)
class DataFile:
    relpath: str  # inside the benchmark's data directory
    sha256: str
    url: str | None = None  # canonical download; None when it comes in an archive
    source: str = ""  # where to get it by hand, for the error message
    compression: str | None = None  # "gzip": gunzip the download; "tar.gz": extract `member` from it
    member: str | None = None  # path inside a tar.gz archive (compression="tar.gz")


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
            _download(spec, path)
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


def _download(spec: DataFile, dest: Path) -> None:
    """Download (and unpack) into a temp file, check the hash, then move it into place, so a
    broken or different download never becomes the file a later run trusts."""
    assert spec.url is not None
    created = make_parents(dest)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent)
    landed = False
    try:
        with urllib.request.urlopen(spec.url, timeout=120) as resp, os.fdopen(fd, "wb") as tmp:
            if spec.compression == "gzip":
                shutil.copyfileobj(gzip.GzipFile(fileobj=resp), tmp)
            elif spec.compression == "tar.gz":
                _copy_member(resp, spec.member or spec.relpath, tmp)
            else:
                shutil.copyfileobj(resp, tmp)
        found = sha256_of(Path(tmp_name))
        if found != spec.sha256:
            raise DataError(f"downloaded {spec.url} but its sha256 {found} differs from the pinned {spec.sha256}")
        os.replace(tmp_name, dest)
        landed = True
    except (OSError, tarfile.TarError) as exc:
        raise DataError(f"could not download {spec.url} to {dest}: {exc}") from exc
    finally:
        Path(tmp_name).unlink(missing_ok=True)
        if not landed:
            remove_empty(created)


def make_parents(dest: Path) -> list[Path]:
    """Create dest's missing parent folders; returns them, deepest first, for `remove_empty`."""
    created = []
    folder = dest.parent
    while not folder.exists():
        created.append(folder)
        folder = folder.parent
    dest.parent.mkdir(parents=True, exist_ok=True)
    return created


def remove_empty(folders: list[Path]) -> None:
    """Undo `make_parents` after a failed download: a data root is left as it was found."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            break


def _copy_member(stream: Any, member: str, out: Any) -> None:
    """Stream a tar.gz and copy one member out, without keeping the archive."""
    with tarfile.open(fileobj=stream, mode="r|gz") as archive:
        for info in archive:
            if info.name.lstrip("./") == member and info.isfile():
                src = archive.extractfile(info)
                assert src is not None
                shutil.copyfileobj(src, out)
                return
    raise DataError(f"{member} is not in the archive")


def git_blob_sha1(path: Path) -> str:
    """Git's object id of a file's bytes (sha1 of 'blob <size>\\0' + content), memoised per file state."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime)
    if key not in _blob_ids:
        h = hashlib.sha1(f"blob {st.st_size}\0".encode())  # git's object id, not a security use
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _blob_ids[key] = h.hexdigest()
    return _blob_ids[key]
