"""Search backends for FEVER's ReAct environment, behind one replayable cache.

ReAct (Yao et al., 2023; ysymyth/ReAct `wikienv.py`) searches live Wikipedia:
an entity whose title matches opens that page; otherwise the agent sees up to
five similar titles. A backend here answers `search(entity) -> SearchResult`
with the same two outcomes:

- `local`: a JSONL page store, one `{"title": ..., "text": ...}` per line
  (offline runs and tests). Titles match case-insensitively, with `_` read as a
  space and FEVER's bracket escapes (`-LRB-`, `-RRB-`, ...) decoded; a page whose
  text says "may refer to:" is a disambiguation page and counts as not found,
  as in ReAct. Similar titles are ranked by word overlap with the query.
- `wikipedia`: the live MediaWiki API over plain HTTP (no extra package):
  `prop=extracts` for the page (plain text), `list=search` for similar titles.
  Results change over time; the cache pins what a run saw.

`CachedSearch` stores every answer in SQLite (under the run's env cache dir),
keyed by the backend's identity and the query, so a rerun replays exactly;
`read_only` turns a miss into a `CacheMissError` (exact replay or nothing).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from aecg_bench.errors import CacheMissError, DataError, InfraError

USER_AGENT = "aecg-bench/0.1 (research benchmark harness; FEVER ReAct search)"
_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}", "-COLON-": ":"}


@dataclass(frozen=True)
class SearchResult:
    page: str | None  # the page's text when the entity names a page
    similar: list[str] = field(default_factory=list)  # similar titles otherwise


class SearchBackend(Protocol):
    identity: str  # what the cache keys on: the backend and the exact data it reads

    def search(self, entity: str) -> SearchResult: ...


def normalize_title(title: str) -> str:
    for code, char in _ESCAPES.items():
        title = title.replace(code, char)
    return " ".join(title.replace("_", " ").split()).casefold()


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", normalize_title(text)))


def is_disambiguation(text: str) -> bool:
    return "may refer to:" in text


class LocalPages:
    """A JSONL page store read once into memory."""

    def __init__(self, path: Path, sha256: str) -> None:
        self.path = path
        self.identity = f"local:{sha256}"
        self.pages: dict[str, tuple[str, str]] = {}
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                title, text = str(row["title"]), str(row["text"])
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DataError(f"{path}: line {i + 1} is not a {{'title', 'text'}} page ({exc})") from None
            self.pages.setdefault(normalize_title(title), (title, text))

    def search(self, entity: str) -> SearchResult:
        hit = self.pages.get(normalize_title(entity))
        if hit is not None and not is_disambiguation(hit[1]):
            return SearchResult(page=hit[1])
        query = _words(entity)
        scored = []
        for title, _ in self.pages.values():
            overlap = len(query & _words(title))
            if overlap and (hit is None or title != hit[0]):
                scored.append((-overlap, title))
        return SearchResult(page=None, similar=[t for _, t in sorted(scored)[:5]])


def http_json(url: str, timeout: float = 30.0, attempts: int = 3) -> dict[str, Any]:
    """GET a JSON document with bounded retries; InfraError when the network keeps failing."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    last: Exception | None = None
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except (OSError, ValueError) as exc:
            last = exc
            time.sleep(min(2.0**attempt, 8.0))
    raise InfraError(f"Wikipedia API unreachable after {attempts} attempts ({url}): {last}")


class WikipediaAPI:
    """Live English Wikipedia through the MediaWiki API (online users only; never in tests' network)."""

    def __init__(self, api_url: str, fetch_json: Callable[[str], dict[str, Any]] = http_json) -> None:
        self.api_url = api_url
        self.identity = f"wikipedia:{api_url}"
        self.fetch_json = fetch_json

    def _get(self, **params: str) -> dict[str, Any]:
        query = urllib.parse.urlencode({"action": "query", "format": "json", "formatversion": "2", **params})
        return self.fetch_json(f"{self.api_url}?{query}")

    def _page(self, title: str) -> str | None:
        data = self._get(titles=title, redirects="1", prop="extracts|pageprops", explaintext="1")
        pages = data.get("query", {}).get("pages", [])
        if not pages or pages[0].get("missing") or "disambiguation" in pages[0].get("pageprops", {}):
            return None
        text = str(pages[0].get("extract", ""))
        if is_disambiguation(text):
            return None
        # ReAct keeps only paragraphs longer than two words
        return "\n".join(p for p in text.split("\n") if len(p.strip().split(" ")) > 2) or None

    def search(self, entity: str) -> SearchResult:
        page = self._page(entity)
        if page is not None:
            return SearchResult(page=page)
        hits = self._get(list="search", srsearch=entity, srlimit="5").get("query", {}).get("search", [])
        titles = [str(h["title"]) for h in hits]
        for title in titles:  # Wikipedia's "go" search opens a title that matches up to case
            if normalize_title(title) == normalize_title(entity) and (page := self._page(title)) is not None:
                return SearchResult(page=page)
        return SearchResult(page=None, similar=titles)


class CachedSearch:
    """A backend with a persistent answer cache (modes: read_write, read_only, off)."""

    def __init__(self, backend: SearchBackend, path: Path | None, mode: str) -> None:
        self.backend = backend
        self.mode = mode
        self.path = path if mode != "off" else None
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS search (key TEXT PRIMARY KEY, backend TEXT, query TEXT, value TEXT)"
            )
        return self._db

    def search(self, entity: str) -> SearchResult:
        if self.path is None:
            return self.backend.search(entity)
        key = hashlib.sha256(json.dumps([self.backend.identity, entity]).encode("utf-8")).hexdigest()
        row = self._conn().execute("SELECT value FROM search WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return SearchResult(**json.loads(row[0]))
        if self.mode == "read_only":
            raise CacheMissError(f"search cache {self.path} has no answer for {entity!r} ({self.backend.identity})")
        result = self.backend.search(entity)
        with self._conn() as db:
            db.execute(
                "INSERT OR REPLACE INTO search VALUES (?, ?, ?, ?)",
                (key, self.backend.identity, entity, json.dumps(asdict(result))),
            )
        return result

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
