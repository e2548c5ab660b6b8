"""FEVER scoring and task set-up, pinned so that a one-line change to the scorer fails a test (issue 17).

Every test here runs on small fixtures under tmp_path (no shared data, no network): the pinned paper_dev
file is swapped for a fixture with its own hash, and downloads are served from a local file:// URL.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aecg_bench.benchmarks import fever
from aecg_bench.benchmarks.data import DataFile, sha256_of
from aecg_bench.benchmarks.fever import (
    ANSWER_GRAMMAR,
    LABELS,
    REACT_GRAMMAR,
    REACT_HINT,
    REACT_INSTRUCTION,
    ClaimOnlyEnv,
    FeverBenchmark,
    ReActWikiEnv,
    normalize_answer,
    normalize_label,
)
from aecg_bench.benchmarks.fever_search import CachedSearch, LocalPages, SearchResult, WikipediaAPI
from aecg_bench.contracts import EnvContext
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.types import Action

ROWS = [
    {"id": 11, "claim": "Alpha is a letter.", "label": "SUPPORTS", "verifiable": "VERIFIABLE"},
    {"id": 12, "claim": "Beta is a number.", "label": "REFUTES"},
    {"id": 13, "claim": "Gamma rays taste sweet.", "label": "NOT ENOUGH INFO"},
]
PAGE = {"title": "Alpha", "text": "Alpha is the first letter. It comes before beta. Alpha and beta form a word."}


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A FEVER data folder whose paper_dev (with a blank line) is the pinned file."""
    folder = tmp_path / "fever"
    folder.mkdir()
    path = folder / "paper_dev.jsonl"
    lines = [json.dumps(ROWS[0]), "", json.dumps(ROWS[1]), json.dumps(ROWS[2]), "  "]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(fever, "PAPER_DEV", DataFile(relpath="paper_dev.jsonl", sha256=sha256_of(path)))
    (folder / "pages.jsonl").write_text(json.dumps(PAGE) + "\n", encoding="utf-8")
    return folder


def answer(env, text: str):
    env.reset()
    return env.step(Action(kind="answer", text=text))


# --- claim-only answers --------------------------------------------------------------------------------------


@pytest.mark.parametrize("gold", LABELS)
def test_claim_only_rewards_the_gold_label_and_nothing_else(gold):
    env = ClaimOnlyEnv(gold)
    assert env.reset().text == "Give your verdict on the claim."
    for label in LABELS:
        obs = answer(env, label)
        right = label == gold
        assert (obs.text, obs.reward, obs.done, obs.valid) == (f"Answer recorded: {label}.", float(right), True, True)
        assert env.score() == fever.Score(success=right, value=float(right), metrics={"answered": 1.0})


def test_claim_only_invalid_answer_ends_the_episode_unanswered():
    env = ClaimOnlyEnv("SUPPORTS")
    long = "maybe " * 40
    obs = answer(env, long)
    assert obs.done is True and obs.valid is False and obs.reward == 0.0
    assert obs.text == f"Invalid answer {long[:100]!r}; expected one of SUPPORTS, REFUTES, NOT ENOUGH INFO."
    assert env.score() == fever.Score(success=False, value=0.0, metrics={"answered": 0.0})
    fresh = ClaimOnlyEnv("SUPPORTS")
    assert fresh.score().metrics == {"answered": 0.0}  # nothing answered before any step
    answer(env, "SUPPORTS")
    assert env.score().success  # reset forgets the invalid answer
    env.reset()
    assert env.score().metrics == {"answered": 0.0}  # nor after a reset


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("SUPPORTS", "SUPPORTS"),
        ("Finish[supports]", "SUPPORTS"),
        ("Finish[not enough info]", "NOT ENOUGH INFO"),
        ("  Not Enough   Info!! ", "NOT ENOUGH INFO"),
        ("refutes.", "REFUTES"),
        ("The REFUTES", "REFUTES"),  # ReAct's normalisation drops articles
        ("It REFUTES [REFUTES]", "REFUTES"),  # the bracketed part is the answer when there is one
        ("[nonsense] SUPPORTS", None),
        # issue 17: ReAct / G-Memory score one label by normalised exact match; these were credited before
        ("REFUTES, it does not SUPPORTS the claim", None),
        ("SUPPORTS or REFUTES", None),
        ("The answer is SUPPORTS", None),
        ("refuted", None),
        ("NEI", None),
        ("SUPPORTSREFUTES", None),
        ("", None),
    ],
)
def test_normalize_label_reads_one_label(text, label):
    assert normalize_label(text) == label


def test_normalize_answer_is_reacts_normalisation():
    assert normalize_answer("The  Refutes, a claim!") == "refutes claim"
    assert normalize_answer("THE answer AN apple") == "answer apple"  # articles go after lower-casing
    assert normalize_answer("theory and anthem") == "theory and anthem"  # whole words only


# --- tasks, samples and data ---------------------------------------------------------------------------------


def test_claim_only_samples_read_the_pinned_file_in_order(data_dir):
    bench = FeverBenchmark({"size": 2, "offset": 1, "download": False}, data_dir=data_dir)
    samples = bench.samples()
    assert [(s.id, s.gold, s.split) for s in samples] == [
        ("12", {"label": "REFUTES"}, "test"),
        ("13", {"label": "NOT ENOUGH INFO"}, "test"),
    ]
    task = samples[0].task
    assert task.benchmark == "fever" and task.mode == "answer" and task.task_type == "fact_verification"
    assert task.instruction == (
        "Claim: Beta is a number.\nDoes the evidence support or refute the claim, or is there not enough information?"
    )
    assert task.action_hint == "Answer with exactly one of: SUPPORTS, REFUTES, NOT ENOUGH INFO."
    assert task.action_grammar == ANSWER_GRAMMAR and task.max_steps == 1
    assert bench.samples(split="dev")[0].split == "dev"
    assert bench.data_hashes() == {"paper_dev.jsonl": fever.PAPER_DEV.sha256}
    env = bench.make_env(samples[0], EnvContext(llm=None, seed=0))
    assert isinstance(env, ClaimOnlyEnv) and answer(env, "REFUTES").reward == 1.0
    with pytest.raises(ConfigError) as err:
        bench.backend()
    assert str(err.value) == "fever: claim_only mode has no search backend"
    assert bench.describe_backends() == {"search": "none (claim_only)"}


def test_react_tasks_and_local_backend(data_dir, tmp_path):
    params = {"mode": "react", "search": "local", "pages_path": "pages.jsonl", "max_steps": 7, "download": False}
    bench = FeverBenchmark(params, data_dir=data_dir)
    sample = bench.samples()[0]
    task = sample.task
    assert task.instruction == REACT_INSTRUCTION.format(claim="Alpha is a letter.")
    assert (task.benchmark, task.mode, task.task_type) == ("fever", "steps", "fact_verification")
    assert (task.action_hint, task.action_grammar, task.max_steps) == (REACT_HINT, REACT_GRAMMAR, 7)
    assert task.metadata == {"claim": "Alpha is a letter."}
    pages = data_dir / "pages.jsonl"
    assert bench.describe_backends() == {
        "search": "local",
        "pages": str(pages),
        "pages_sha256": sha256_of(pages),
        "tool_cache": "read_write",
    }
    assert bench.data_hashes()["pages:pages.jsonl"] == sha256_of(pages)
    backend = bench.backend()
    assert isinstance(backend, LocalPages) and backend.identity == f"local:{sha256_of(pages)}"
    assert bench.backend() is backend  # built once
    env = bench.make_env(sample, EnvContext(llm=None, seed=0, cache_dir=tmp_path / "cache"))
    assert isinstance(env, ReActWikiEnv) and env.search.mode == "read_write"
    assert env.search.path == tmp_path / "cache" / "fever_search.sqlite"
    assert env.step(Action(kind="command", text="Search[Alpha]")).text.startswith("Alpha is the first letter.")
    assert (tmp_path / "cache" / "fever_search.sqlite").exists()
    no_cache = bench.make_env(sample, EnvContext(llm=None, seed=0))
    assert no_cache.search.path is None
    absolute = FeverBenchmark({**params, "pages_path": str(pages), "tool_cache": "off"}, data_dir=tmp_path)
    assert absolute.pages_file() == pages  # an absolute path is not joined to the data dir
    assert absolute.describe_backends()["tool_cache"] == "off"


def test_wikipedia_backend_is_described_and_built_from_params(data_dir):
    bench = FeverBenchmark(
        {"mode": "react", "search": "wikipedia", "wikipedia_api": "https://wiki.invalid/api.php"}, data_dir=data_dir
    )
    assert bench.describe_backends() == {
        "search": "wikipedia",
        "api": "https://wiki.invalid/api.php",
        "tool_cache": "read_write",
    }
    backend = bench.backend()
    assert isinstance(backend, WikipediaAPI) and backend.api_url == "https://wiki.invalid/api.php"


def test_missing_page_store_names_the_path_and_the_alternatives(data_dir):
    bench = FeverBenchmark({"mode": "react", "search": "local", "pages_path": "gone.jsonl"}, data_dir=data_dir)
    with pytest.raises(DataError) as err:
        bench.pages_file()
    assert str(err.value) == (
        f"FEVER page store {data_dir / 'gone.jsonl'} not found; search=local needs a JSONL file with one "
        '{"title": ..., "text": ...} page per line (e.g. built from the FEVER wiki-pages dump), '
        "or use search=wikipedia when online"
    )


def test_page_store_path_without_a_data_dir(data_dir, monkeypatch):
    pages = data_dir / "pages.jsonl"
    absolute = FeverBenchmark({"mode": "react", "search": "local", "pages_path": str(pages)}, data_dir=None)
    assert absolute.pages_file() == pages
    monkeypatch.chdir(data_dir)  # a relative path is taken as it is (from the working directory)
    relative = FeverBenchmark({"mode": "react", "search": "local", "pages_path": "pages.jsonl"}, data_dir=None)
    assert relative.pages_file() == Path("pages.jsonl")


def test_bad_rows_name_their_line_and_a_download_is_fetched(tmp_path, monkeypatch):
    folder = tmp_path / "fever"
    folder.mkdir()
    path = folder / "paper_dev.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n\n" + json.dumps({"id": 2, "claim": "x"}) + "\n", encoding="utf-8")
    monkeypatch.setattr(fever, "PAPER_DEV", DataFile(relpath="paper_dev.jsonl", sha256=sha256_of(path)))
    with pytest.raises(DataError, match=r"paper_dev\.jsonl: line 3 is not a FEVER record \('label'\)"):
        FeverBenchmark({"download": False}, data_dir=folder).samples()
    source = tmp_path / "source.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    spec = DataFile(relpath="fresh/paper_dev.jsonl", sha256=sha256_of(source), url=source.as_uri())
    monkeypatch.setattr(fever, "PAPER_DEV", spec)
    assert [s.id for s in FeverBenchmark({}, data_dir=folder).samples()] == ["11", "12", "13"]  # downloaded
    assert (folder / "fresh" / "paper_dev.jsonl").exists()
    with pytest.raises(DataError, match="missing data file"):
        FeverBenchmark({"download": False}, data_dir=tmp_path / "elsewhere").samples()


# --- ReAct environment details -------------------------------------------------------------------------------


@pytest.fixture
def react(data_dir) -> ReActWikiEnv:
    pages = data_dir / "pages.jsonl"
    return ReActWikiEnv("Alpha is a letter.", "SUPPORTS", CachedSearch(LocalPages(pages, "x"), None, "off"))


def act(env: ReActWikiEnv, text: str):
    return env.step(Action(kind="command", text=text))


def test_react_after_finish_and_invalid_actions(react):
    obs = act(react, "Finish[SUPPORTS]")
    assert obs.info == {"answer": "SUPPORTS"} and obs.reward == 1.0
    late = act(react, "Finish[REFUTES]")
    assert (late.text, late.done, late.valid, late.reward) == ("Episode finished.", True, False, 0.0)
    assert react.score().success  # the late answer changes nothing
    react.reset()
    bad = act(react, "Think[x]")
    assert bad.valid is False and bad.done is False
    act(react, "nothing")
    assert react.score().metrics["invalid_actions"] == 2.0


def test_react_lookup_before_any_search_and_after_a_new_search(react):
    assert act(react, "Lookup[beta]").text == "No more results."
    act(react, "Search[Alpha]")
    assert act(react, "Lookup[beta]").text == "(Result 1 / 2) It comes before beta."
    act(react, "Search[Alpha]")  # a new search starts the lookup over
    assert act(react, "Lookup[beta]").text == "(Result 1 / 2) It comes before beta."
    assert act(react, "Lookup[beta]").text == "(Result 2 / 2) Alpha and beta form a word.."
    react.reset()
    assert react.page is None and react.lookup_keyword is None and react.lookup_hits == []
    assert act(react, "Lookup[beta]").text == "No more results."


class ManySimilar:
    identity = "many"

    def search(self, entity: str) -> SearchResult:
        return SearchResult(page=None, similar=[f"{entity} {i}" for i in range(7)])


def test_react_similar_titles_are_cut_at_five():
    env = ReActWikiEnv("c", "SUPPORTS", CachedSearch(ManySimilar(), None, "off"))
    text = act(env, "Search[Gamma]").text
    assert text == "Could not find Gamma. Similar: ['Gamma 0', 'Gamma 1', 'Gamma 2', 'Gamma 3', 'Gamma 4']."
