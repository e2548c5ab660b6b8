"""Mind2Web's files: where they live, how they download, how they are checked.

Layout inside `<data_root>/mind2web/`: `train/train_*.json` (the hub's
`data/train/`), `test_task/`, `test_website/`, `test_domain/` (the JSON files
of `test.zip`, extracted with its password) and `scores_all_data.pkl` (the
MindAct candidate ranker's scores and ranks for every step), plus
`MANIFEST.json`, the sha256 of every file and the hub revision they came from.

A download goes to a temporary folder beside the data directory; each file is
checked against the sha256 the hub publishes for it (its LFS/xet object id)
and the folder is moved into place only when everything checked out, so a
failed or offline download never leaves a partial data directory behind.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aecg_bench.benchmarks.data import git_blob_sha1, sha256_of
from aecg_bench.errors import DataError, one_line

REPO_ID = "osunlp/Mind2Web"
# The hub commit downloads are pinned to (the dataset's commit other harnesses pin as well); a download
# resolves it and refuses a different commit, and every load checks the manifest names it.
REVISION = "17ece8eb89862368edc0cc806acee6fca5163474"
SPLITS = ("train", "test_task", "test_website", "test_domain")
SCORES = "scores_all_data.pkl"
MANIFEST = "MANIFEST.json"
TEST_ZIP_PASSWORD = "mind2web"  # stated on the dataset card (it keeps the test set out of web crawls)
_WANTED = ("data/train/", "test.zip", SCORES)


def manual_steps(data_dir: Path, revision: str = REVISION) -> str:
    """How to lay the data out by hand (what every 'not found' and 'could not download' line ends with)."""
    return (
        f"get data/train/*.json, test.zip and {SCORES} from the Hugging Face dataset {REPO_ID} at commit "
        f"{revision} (https://huggingface.co/datasets/{REPO_ID}/tree/{revision}), extract test.zip (password "
        f"'{TEST_ZIP_PASSWORD}') so that {data_dir} holds train/, test_task/, test_website/, test_domain/ and "
        f"{SCORES}, then run aecg_bench.benchmarks.mind2web.files.write_manifest({str(data_dir)!r}, {revision!r})"
    )


def missing_message(data_dir: Path, revision: str = REVISION) -> str:
    return (
        f"Mind2Web data not found in {data_dir}; {manual_steps(data_dir, revision)}; "
        "or set params.download=true when online"
    )


def ensure(
    data_dir: Path | None, *, download: bool, revision: str = REVISION, password: str = TEST_ZIP_PASSWORD
) -> Path:
    """The verified data directory, downloading it first when missing and allowed; its manifest must name
    `revision`, the hub commit asked for."""
    if data_dir is None:
        raise DataError("no data directory configured for mind2web; set runtime.data_root or $AECG_DATA_ROOT")
    if not (data_dir / MANIFEST).is_file():
        if not download:
            raise DataError(missing_message(data_dir, revision))
        _download(data_dir, revision, password)
    found = manifest(data_dir).get("revision")
    if found != revision:
        raise DataError(
            f"{data_dir / MANIFEST} records hub commit {found!r}, not the pinned {revision}; move {data_dir} "
            f"away and download again, or set benchmark.params.revision={found} to use it as it is"
        )
    return data_dir


def manifest(data_dir: Path) -> dict[str, Any]:
    return json.loads((data_dir / MANIFEST).read_text(encoding="utf-8"))


def verified(data_dir: Path, relpath: str) -> Path:
    """A file of the data directory after checking it against the manifest."""
    files = manifest(data_dir)["files"]
    if relpath not in files:
        raise DataError(f"{data_dir / MANIFEST} does not list {relpath}; re-download Mind2Web")
    path = data_dir / relpath
    found = sha256_of(path) if path.is_file() else "missing"
    if found != files[relpath]:
        raise DataError(f"{path}: sha256 {found} differs from {files[relpath]} in {MANIFEST}; re-download Mind2Web")
    return path


def split_files(data_dir: Path, split: str) -> list[str]:
    """Relative paths of a split's JSON files, in name order (the order MindAct loads them)."""
    return sorted(p for p in manifest(data_dir)["files"] if p.startswith(f"{split}/") and p.endswith(".json"))


def iter_tasks(data_dir: Path, split: str) -> Iterator[dict[str, Any]]:
    """A split's raw tasks in file order, one file in memory at a time (train files are ~600 MB each)."""
    rels = split_files(data_dir, split)
    if not rels:
        raise DataError(f"Mind2Web split {split!r} has no files in {data_dir}")
    for rel in rels:
        try:
            tasks = json.loads(verified(data_dir, rel).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataError(f"{data_dir / rel} is not a Mind2Web JSON file ({exc})") from None
        tasks.reverse()
        while tasks:
            yield tasks.pop()


def load_ranks(data_dir: Path) -> dict[str, dict[str, int]]:
    """The ranker's rank of every candidate, keyed by `{annotation_id}_{action_uid}` then node id.

    The pickle is unpickled only after its hash matched the manifest."""
    with verified(data_dir, SCORES).open("rb") as fh:
        results = pickle.load(fh)  # the canonical format; hash-checked first
    return results["ranks"]


def write_manifest(data_dir: Path, revision: str) -> None:
    """Record the sha256 of every data file (also how tests lay out fixtures)."""
    files = {
        str(p.relative_to(data_dir)): sha256_of(p)
        for p in sorted(data_dir.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    (data_dir / MANIFEST).write_text(json.dumps({"revision": revision, "files": files}, indent=1), encoding="utf-8")


def _hub() -> tuple[Any, Any]:
    from huggingface_hub import HfApi, hf_hub_download

    return HfApi(), hf_hub_download


def _download(data_dir: Path, revision: str, password: str) -> None:
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".mind2web-", dir=data_dir.parent))
    try:
        api, download = _hub()
        info = api.dataset_info(REPO_ID, revision=revision, files_metadata=True)
        if info.sha != revision:
            raise DataError(f"{REPO_ID}: the hub answered commit {info.sha} for the pinned commit {revision}")
        wanted = [s for s in info.siblings if s.rfilename.startswith(_WANTED)]
        if not any(s.rfilename == "test.zip" for s in wanted):
            raise DataError(f"{REPO_ID}@{info.sha} has no test.zip")
        raw = tmp / "raw"
        for sib in wanted:
            path = Path(download(REPO_ID, sib.rfilename, repo_type="dataset", revision=info.sha, local_dir=raw))
            lfs = getattr(sib, "lfs", None)
            if lfs is not None:
                found, expected = sha256_of(path), lfs.sha256
            else:  # a plain git file: the hub gives its git blob id
                found, expected = git_blob_sha1(path), getattr(sib, "blob_id", None)
            if found != expected:
                raise DataError(f"{REPO_ID}/{sib.rfilename}: hash {found} differs from the hub's {expected}")
        out = tmp / "data"
        (out / "train").mkdir(parents=True)
        for f in sorted((raw / "data" / "train").glob("*.json")):
            os.replace(f, out / "train" / f.name)
        os.replace(raw / SCORES, out / SCORES)
        _extract_test(raw / "test.zip", out, password)
        write_manifest(out, info.sha)
        if data_dir.exists():
            data_dir.rmdir()  # only an empty leftover folder; a non-empty one raises and stays
        os.replace(out, data_dir)
    except DataError:
        raise
    except Exception as exc:  # hub, network, archive and file errors all end as one line
        raise DataError(
            f"could not download Mind2Web from {REPO_ID} into {data_dir} ({one_line(exc, 200)}); by hand: "
            f"{manual_steps(data_dir, revision)}"
        ) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _extract_test(archive: Path, out: Path, password: str) -> None:
    """Copy each test split's JSON files out of test.zip (their folder inside the archive may vary)."""
    with zipfile.ZipFile(archive) as zf:
        for name in zf.namelist():
            parts = Path(name).parts
            split = next((p for p in parts if p in SPLITS[1:]), None)
            if split is None or not name.endswith(".json"):
                continue
            dest = out / split / Path(name).name
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(name, pwd=password.encode()) as src, dest.open("wb") as dst:
                shutil.copyfileobj(src, dst)
    missing = [s for s in SPLITS[1:] if not (out / s).is_dir()]
    if missing:
        raise DataError(f"test.zip holds no {', '.join(missing)} folder")
