"""Data files: pinned hashes, downloads from archives, and a bad download never lands."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from aecg_bench.benchmarks.data import DataFile, fetch
from aecg_bench.errors import DataError


def _tarball(tmp_path: Path, member: str, data: bytes) -> str:
    path = tmp_path / "data.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        other = tarfile.TarInfo("data/other.txt")
        other.size = 3
        tar.addfile(other, io.BytesIO(b"abc"))
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path.as_uri()


def test_a_member_is_extracted_from_a_tar_gz_archive(tmp_path):
    data = b'{"id": 0}\n'
    url = _tarball(tmp_path, "data/pddl/test.jsonl", data)
    spec = DataFile("test.jsonl", hashlib.sha256(data).hexdigest(), url, "", "tar.gz", "data/pddl/test.jsonl")
    path = fetch(tmp_path / "pddl", spec)
    assert path.read_bytes() == data


def test_a_download_with_the_wrong_hash_is_refused_and_not_kept(tmp_path):
    url = _tarball(tmp_path, "data/pddl/test.jsonl", b"tampered")
    spec = DataFile("test.jsonl", "0" * 64, url, "", "tar.gz", "data/pddl/test.jsonl")
    with pytest.raises(DataError, match="differs from the pinned 0000"):
        fetch(tmp_path / "pddl", spec)
    assert not (tmp_path / "pddl").exists()  # no file, no temp file, not even the folder it made


def test_a_missing_member_is_a_clear_error(tmp_path):
    url = _tarball(tmp_path, "data/pddl/test.jsonl", b"x")
    spec = DataFile("test.jsonl", "0" * 64, url, "", "tar.gz", "data/scienceworld/test.jsonl")
    with pytest.raises(DataError, match=r"data/scienceworld/test\.jsonl is not in the archive"):
        fetch(tmp_path / "sw", spec)


def test_a_failed_download_leaves_the_data_root_as_it_found_it(tmp_path):
    """Offline: no empty benchmark folders appear, so nothing later mistakes them for data."""
    root = tmp_path / "data"
    root.mkdir()
    spec = DataFile("test.jsonl", "0" * 64, (tmp_path / "nowhere.jsonl").as_uri(), "")
    with pytest.raises(DataError, match="could not download"):
        fetch(root / "scienceworld" / "v1", spec)
    assert list(root.iterdir()) == []
