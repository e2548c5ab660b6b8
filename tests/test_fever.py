"""FEVER: claim-only answers and the ReAct Wikipedia environment with local, live (faked) and cached search."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aecg_bench.benchmarks.data import sha256_of
from aecg_bench.benchmarks.fever import PAPER_DEV, FeverBenchmark, ReActWikiEnv, normalize_answer
from aecg_bench.benchmarks.fever_search import CachedSearch, LocalPages, SearchResult, WikipediaAPI
from aecg_bench.contracts import EnvContext
from aecg_bench.errors import CacheMissError, ConfigError, DataError
from aecg_bench.run import run_from_config
from aecg_bench.runner.records import RunDir
from aecg_bench.types import Action

PAGES = [
    {
        "title": "Tilda_Swinton",
        "text": "Tilda Swinton is a Scottish actress. She is known for roles in independent films. "
        "She won an Academy Award in 2008.\nSwinton was born in London. She lives in Nairn. "
        "Her diet is not publicly documented. She has twins.",
    },
    {"title": "Tilda Swinton filmography", "text": "This is a list of films with Tilda Swinton in them."},
    {"title": "Mercury", "text": "Mercury may refer to:\nMercury (planet), a planet\nMercury (element), an element"},
    {"title": "Mercury (planet)", "text": "Mercury is the smallest planet in the Solar System."},
    {"title": "Soul_Food_-LRB-film-RRB-", "text": "Soul Food is a 1997 film. It was released by Fox 2000 Pictures."},
]


def write_pages(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(p) for p in PAGES) + "\n", encoding="utf-8")
    return path


def act(env, text: str):
    return env.step(Action(kind="command", text=text))


@pytest.fixture
def pages(tmp_path: Path) -> LocalPages:
    path = write_pages(tmp_path / "pages.jsonl")
    return LocalPages(path, sha256_of(path))


def react_env(pages: LocalPages, label: str = "NOT ENOUGH INFO", cache: Path | None = None) -> ReActWikiEnv:
    return ReActWikiEnv("Tilda Swinton is a vegan.", label, CachedSearch(pages, cache, "read_write"))


def test_claim_only_mode_still_answers_in_one_step(shared_data):
    bench = FeverBenchmark({"size": 3}, data_dir=shared_data / "fever")
    samples = bench.samples()
    assert [s.id for s in samples] == ["91198", "194462", "137334"]
    assert samples[0].task.mode == "answer" and bench.describe_backends() == {"search": "none (claim_only)"}
    env = bench.make_env(samples[2], EnvContext(llm=None, seed=0))
    env.reset()
    obs = env.step(Action(kind="answer", text="Finish[supports]"))
    assert obs.done and env.score().success


def test_react_search_lookup_and_finish_read_as_react(pages):
    env = react_env(pages)
    assert env.reset().text == "Claim: Tilda Swinton is a vegan."
    obs = act(env, "Search[tilda swinton]")
    assert obs.valid and obs.text == (
        "Tilda Swinton is a Scottish actress. She is known for roles in independent films. "
        "She won an Academy Award in 2008.. Swinton was born in London. She lives in Nairn."
    )  # ReAct's '. ' split re-adds a dot to a paragraph's last sentence
    assert act(env, "Lookup[she]").text == "(Result 1 / 4) She is known for roles in independent films."
    assert act(env, "Lookup[she]").text == "(Result 2 / 4) She won an Academy Award in 2008.."
    assert act(env, "Lookup[diet]").text == "(Result 1 / 1) Her diet is not publicly documented."
    assert act(env, "Lookup[diet]").text == "No more results."
    obs = act(env, "Search[Tilda]")
    assert obs.text == "Could not find Tilda. Similar: ['Tilda Swinton filmography', 'Tilda_Swinton']."
    obs = act(env, "Think[hmm]")
    assert not obs.valid and obs.text == "Invalid action: Think[hmm]"
    obs = act(env, "Finish[Not Enough Info]")
    assert obs.done and obs.reward == 1.0 and obs.text == "Episode finished."
    assert act(env, "Search[x]").done
    score = env.score()
    assert score.success and score.metrics == {"answered": 1.0, "steps": 8.0, "searches": 2.0, "invalid_actions": 1.0}


def test_react_reward_needs_the_exact_label(pages):
    env = react_env(pages, label="SUPPORTS")
    env.reset()
    assert act(env, "finish[supports.]").reward == 1.0
    env.reset()
    obs = act(env, "Finish[supported]")
    assert obs.done and obs.reward == 0.0 and not env.score().success
    assert normalize_answer("NOT ENOUGH INFO") == "not enough info"


def test_local_store_decodes_fever_titles_and_skips_disambiguation(pages):
    assert pages.search("Soul Food (film)").page.startswith("Soul Food is a 1997 film.")
    result = pages.search("mercury")
    assert result.page is None and result.similar == ["Mercury (planet)"]
    assert pages.search("Atlantis") == SearchResult(page=None, similar=[])


class CountingBackend:
    identity = "counting:1"

    def __init__(self, page: str) -> None:
        self.page, self.calls = page, 0

    def search(self, entity: str) -> SearchResult:
        self.calls += 1
        return SearchResult(page=f"{self.page} about {entity}.")


def test_search_answers_are_cached_and_replayed(tmp_path):
    db = tmp_path / "cache" / "fever_search.sqlite"
    first = CachedSearch(CountingBackend("Version one"), db, "read_write")
    assert first.search("X").page == "Version one about X."
    assert first.search("X").page == "Version one about X." and first.backend.calls == 1
    first.close()
    changed = CachedSearch(CountingBackend("Version two"), db, "read_only")  # the live source drifted
    assert changed.search("X").page == "Version one about X." and changed.backend.calls == 0
    with pytest.raises(CacheMissError, match="'Y'"):
        changed.search("Y")
    off = CachedSearch(CountingBackend("Fresh"), db, "off")
    assert off.search("X").page == "Fresh about X."


def test_wikipedia_backend_reads_the_mediawiki_api_without_network():
    calls: list[str] = []
    extract = "Paris is the capital of France.\nSee also\nParis has many museums and parks."

    def fake(url: str) -> dict:
        calls.append(url)
        if "list=search" in url:
            return {"query": {"search": [{"title": "Paris"}, {"title": "Paris, Texas"}]}}
        if "titles=Paris&" in url:
            return {"query": {"pages": [{"title": "Paris", "extract": extract, "pageprops": {}}]}}
        if "titles=Mercury&" in url:
            return {"query": {"pages": [{"title": "Mercury", "pageprops": {"disambiguation": ""}}]}}
        return {"query": {"pages": [{"title": "x", "missing": True}]}}

    api = WikipediaAPI("https://wiki.invalid/w/api.php", fetch_json=fake)
    assert api.search("Paris").page == "Paris is the capital of France.\nParis has many museums and parks."
    assert api.search("paris").page is not None  # the search hit that matches up to case is opened
    assert api.search("Mercury") == SearchResult(page=None, similar=["Paris", "Paris, Texas"])
    assert all(u.startswith("https://wiki.invalid/w/api.php?action=query") for u in calls)


def test_params_are_consistent():
    with pytest.raises(ConfigError, match="needs a search backend"):
        FeverBenchmark({"mode": "react"})
    with pytest.raises(ConfigError, match="uses no tools"):
        FeverBenchmark({"search": "wikipedia"})
    with pytest.raises(ConfigError, match="needs pages_path"):
        FeverBenchmark({"mode": "react", "search": "local"})
    with pytest.raises(ConfigError, match="'hybrid'"):
        FeverBenchmark({"mode": "react", "search": "hybrid"})


def test_missing_or_tampered_data_is_refused_clearly(tmp_path, shared_data):
    data = tmp_path / "fever"
    data.mkdir()
    with pytest.raises(DataError, match=r"fever\.ai"):
        FeverBenchmark({"download": False}, data_dir=data).samples()
    copy = data / "paper_dev.jsonl"
    shutil.copyfile(shared_data / "fever" / "paper_dev.jsonl", copy)
    copy.chmod(0o644)
    with copy.open("a") as fh:
        fh.write("\n")
    with pytest.raises(DataError) as err:
        FeverBenchmark({"download": False}, data_dir=data).samples()
    assert PAPER_DEV.sha256 in str(err.value) and sha256_of(copy) in str(err.value)
    bench = FeverBenchmark({"mode": "react", "search": "local", "pages_path": "nowhere.jsonl"}, data_dir=data)
    with pytest.raises(DataError, match="page store"):
        bench.describe_backends()


def _run_dir(final: dict) -> RunDir:
    labels = final["labels"]
    root = Path(final["runtime"]["results_root"])
    path = root / labels["experiment"] / labels["benchmark"] / labels["framework"] / labels["memory"] / labels["model"]
    return RunDir(path / f"seed={labels['seed']}")


def test_react_run_records_the_backend_and_caches_searches(make_config, shared_data, tmp_path):
    pages_file = write_pages(tmp_path / "pages.jsonl")
    cfg = make_config(
        "benchmark=fever",
        "benchmark.params.mode=react",
        "benchmark.params.search=local",
        f"benchmark.params.pages_path={pages_file}",
        "benchmark.params.size=2",
        "model=mock",
        data_root=shared_data,
    )
    cfg["model"]["models"]["mock"]["options"] = {
        "policy": "script",
        "script": [
            {"match": r"Current observation:\nClaim: (\w+ \w+)", "reply": r"Search[\1]"},
            {"match": r"Current observation:\n", "reply": "Finish[NOT ENOUGH INFO]"},
        ],
    }
    final = run_from_config(cfg)
    rd = _run_dir(final)
    records = rd.records()
    assert [r["success"] for r in records] == [True, True]  # both claims are NOT ENOUGH INFO
    assert [r["steps"] for r in records] == [2, 2]
    header = json.loads(rd.run_json.read_text())
    assert header["backends"]["search"] == "local"
    assert header["backends"]["pages_sha256"] == sha256_of(pages_file)
    assert header["identity"]["data_hashes"]["pages:pages.jsonl"] == sha256_of(pages_file)
    episode = rd.read_trajectory(1, 1)["rollouts"][0]["episode"]
    assert episode["trajectory"]["steps"][0]["observation"]["text"].startswith("Tilda Swinton is a Scottish actress.")
    cache = Path(final["runtime"]["results_root"]) / ".cache" / "env" / "fever" / "fever_search.sqlite"
    assert cache.exists()


@pytest.mark.slow
def test_local_model_runs_two_claims_in_react_mode(make_config, shared_data, tmp_path):
    pages_file = write_pages(tmp_path / "pages.jsonl")
    cfg = make_config(
        "benchmark=fever",
        "benchmark.params.mode=react",
        "benchmark.params.search=local",
        f"benchmark.params.pages_path={pages_file}",
        "benchmark.params.max_steps=4",
        "framework=single",
        "model=local",
        "protocol.limit=2",
        data_root=shared_data,
    )
    final = run_from_config(cfg)
    records = _run_dir(final).records()
    assert [r["sample_id"] for r in records] == ["91198", "194462"]
    for r in records:
        assert r["status"] in {"ok", "limit_exceeded", "model_error"}
        assert r["success"] in {True, False} and 1 <= r["steps"] <= 4
        assert {"answered", "steps", "searches", "invalid_actions"} <= set(r["metrics"])
