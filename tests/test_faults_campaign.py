"""The second reliability campaign's cases (issue 38; docs/infra/reliability.md's fault matrix): keys in
no file, exact replay of sharded caches, no path out of the results root, paced resumption after
Retry-After, one-line config errors, a nearly full disk, and the smaller ones. Each test fails on the
code before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, small_tmpfs
from test_faults import _crash_after, _files_containing

from aecg_bench.llm.providers import FatalProviderError
from aecg_bench.run import run_from_config
from aecg_bench.testing.fake_server import FakeOpenAIServer

SECRET = "sk-embed-CAMPAIGN-never-in-a-file-0123456789"
MODEL_SECRET = "sk-model-CAMPAIGN-never-in-a-file-9876543210"
CLI_BASE = ["runtime.progress=false", "runtime.log_level=WARNING"]


def _cli(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aecg_bench.run", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- 1: the embedder's key -------------------------------------------------------------------------


SUMMARY = "The agent team walked to the target cell and stopped there."


def _embedder_args(url: str, model_url: str) -> list[str]:
    """MemoryBank admits the chat server's reply as a summary and embeds it at the embedding server."""
    return [
        "benchmark=toy",
        "benchmark.params.size=4",
        "memory=memorybank",
        "model=server",
        f"model.models.served.api_base={model_url}",
        "model.models.served.api_key_env=MODEL_CRED",
        "embedder.backend=qwen3_embedding",
        "embedder.model=openai/fake-embed",
        f"embedder.api_base={url}",
        "embedder.api_key_env=EMBED_CRED",  # a name no secret-looking pattern matches
        "embedder.dim=8",
    ]


def test_a_bad_embedder_key_stops_the_run_in_one_line_and_its_echo_reaches_no_file(make_config, monkeypatch):
    monkeypatch.setenv("EMBED_CRED", SECRET)
    monkeypatch.setenv("MODEL_CRED", MODEL_SECRET)
    with (
        FakeOpenAIServer(lambda m: "ok", fault=lambda messages, attempt: "401") as server,
        FakeOpenAIServer(lambda m: SUMMARY) as model,
    ):
        cfg = make_config(*_embedder_args(server.base_url, model.base_url))
        with pytest.raises(FatalProviderError, match="embedding model openai/fake-embed") as info:
            run_from_config(cfg)
    assert SECRET in str(info.value), "the server echoed the key (what the redaction below is tested on)"
    assert server.served["401"] == 1, "not retried, not one infra_error per sample"
    root = Path(cfg["runtime"]["results_root"])
    (header_path,) = root.rglob("run.json")
    header = json.loads(header_path.read_text())
    assert header["status"] == "failed" and "401" in header["error"] and "EMBED_CRED" in header["error"]
    assert _files_containing(root, SECRET) == [] and _files_containing(root, MODEL_SECRET) == []


@pytest.mark.slow  # a CLI subprocess with wandb
def test_no_key_of_any_model_or_embedder_reaches_a_file_or_the_console(tmp_path):
    root = tmp_path / "results"
    with (
        FakeOpenAIServer(lambda m: "ok", fault=lambda messages, attempt: "401") as embedder,
        FakeOpenAIServer(lambda m: SUMMARY) as model,
    ):
        proc = _cli(
            *CLI_BASE,
            f"runtime.results_root={root}",
            *_embedder_args(embedder.base_url, model.base_url),
            "runtime.wandb.enabled=true",
            "runtime.wandb.mode=offline",
            env={"EMBED_CRED": SECRET, "MODEL_CRED": MODEL_SECRET, "WANDB_MODE": "offline"},
        )
    out = (proc.stdout + proc.stderr).strip()
    assert proc.returncode == 2, out
    assert "Traceback" not in out and len(out.splitlines()) == 1 and "401" in out, out
    assert SECRET not in out and MODEL_SECRET not in out
    assert list(root.rglob("wandb")), "wandb wrote its offline files"
    assert _files_containing(root, SECRET) == [] and _files_containing(root, MODEL_SECRET) == []


# -- 3: any character in the results path --------------------------------------------------------

ODD_ROOT = "results #1 ?mode=ro&x=%41 é"


def test_a_results_root_with_hash_query_percent_space_and_unicode_keeps_everything_inside(make_config, tmp_path):
    from aecg_bench.llm.cache import merge_shards

    root = tmp_path / ODD_ROOT

    def config(*extra: str) -> dict:
        raw = make_config("benchmark=toy", "benchmark.params.size=3", "memory=recorder", *extra)
        raw["runtime"]["results_root"] = str(root)
        return raw

    assert run_from_config(config("runtime.cache.shards=true"))["status"] == "complete"
    merge_shards(root / ".cache" / "llm.sqlite")
    replay = run_from_config(config("experiment_name=replay", "runtime.cache.mode=read_only"))
    assert replay["status"] == "complete" and replay["cache_hit_rate"] == 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == [ODD_ROOT], "nothing was written beside the results root"
    assert (root / ".cache" / "llm.sqlite").stat().st_size > 0


@pytest.mark.slow  # a CLI subprocess
def test_the_cli_takes_such_a_results_root_quoted(tmp_path):
    root = tmp_path / ODD_ROOT
    proc = _cli(*CLI_BASE, f"runtime.results_root='{root}'", "benchmark=toy", "benchmark.params.size=2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [ODD_ROOT]
    assert [p.relative_to(root).parts[0] for p in root.rglob("run.json")] == ["default"]


# -- 4: no config value writes outside the results root -------------------------------------------


@pytest.mark.parametrize("name", ["..", "../../../../x", ".cache", "."])
def test_no_experiment_name_puts_a_file_outside_the_results_root(make_config, tmp_path, name):
    from aecg_bench.runner.identity import results_dir_of

    root = tmp_path / "deep" / "er" / "results"
    raw = make_config("benchmark=toy", "benchmark.params.size=2", f"experiment_name='{name}'", "runtime.max_cost_usd=5")
    raw["runtime"]["results_root"] = str(root)
    final = run_from_config(raw)
    run_dir = results_dir_of(final)
    assert root in run_dir.parents and not run_dir.relative_to(root).parts[0].startswith(".")
    assert sorted(p.name for p in tmp_path.rglob("*") if root not in p.parents) == ["deep", "er", "results"]
    assert (root / ".cache" / "budget").is_dir() and len(list((root / ".cache" / "budget").iterdir())) == 1


# -- 6: config errors are one line ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            ["-m", "model=server,mock", "model.models.served.timeout_s=2"],
            "with model=mock (one run of the sweep): 'model.models.served.timeout_s' does not exist here: "
            "'model.models' has no 'served' (it has: mock); an override must apply to every run of a sweep",
        ),
        (
            ["model=server", "model.models.served.max_output_tokens=5", "model.models.served.options.n_ctx=512"],
            "keys 'model.models.served.max_output_tokens', 'model.models.served.options.n_ctx' are not in the "
            "composed config; add with a '+': +model.models.served.max_output_tokens=5 "
            "+model.models.served.options.n_ctx=512",
        ),
        (
            ["model=server", "model.models.served.max_output_tokens=5"],
            "key 'model.models.served.max_output_tokens' is not in the composed config; add with a '+': "
            "+model.models.served.max_output_tokens=5",
        ),
        (["-m", "seed=0,-1"], "with seed=-1 (one run of the sweep): config: bad value -1 for 'seed'"),
        (["embedder.dim=8", "embedder.model=x"], None),  # the YAML lists the embedder's keys: no '+' needed
    ],
)
def test_config_errors_are_one_line_naming_the_key_the_run_and_the_fix(overrides, expected):
    from aecg_bench.errors import ConfigError
    from aecg_bench.run import precheck

    if expected is None:
        assert precheck(overrides)["embedder"]["dim"] == 8
        return
    with pytest.raises(ConfigError) as info:
        precheck(overrides)
    assert "\n" not in str(info.value) and str(info.value).startswith(expected), str(info.value)


def test_an_override_valid_for_one_sweep_value_fails_before_anything_runs(tmp_path):
    root = tmp_path / "results"
    proc = _cli("-m", *CLI_BASE, f"runtime.results_root={root}", "model=server,mock", "model.models.served.timeout_s=2")
    out = (proc.stdout + proc.stderr).strip()
    assert proc.returncode == 2 and len(out.splitlines()) == 1 and out.startswith("error: with model=mock"), out
    assert not root.exists(), "nothing ran"


# -- 7: too little disk to start ------------------------------------------------------------------


def test_a_run_without_room_for_its_reserve_does_not_start_and_records_failed(make_config, monkeypatch):
    import errno

    import aecg_bench.runner.records as records
    from aecg_bench.errors import RunStateError

    def no_room(path: Path, size: int) -> None:
        path.write_bytes(b"\0" * 100)  # a partial file, as a full disk leaves it
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    cfg = make_config("benchmark=toy", "benchmark.params.size=3", "memory=recorder")
    monkeypatch.setattr(records, "allocate", no_room)
    with pytest.raises(RunStateError, match=r"less than 1024 KiB free for .*free disk space, then rerun") as info:
        run_from_config(cfg)
    assert "\n" not in str(info.value)
    (run_json,) = Path(cfg["runtime"]["results_root"]).rglob("run.json")
    header = json.loads(run_json.read_text())
    assert header["status"] == "failed" and "KiB free" in header["error"]
    assert not (run_json.parent / "samples.jsonl").exists(), "nothing ran"
    assert not (run_json.parent / ".reserve").exists()
    monkeypatch.undo()
    assert run_from_config(cfg)["status"] == "complete", "space freed: the rerun runs"


def test_a_really_nearly_full_disk_records_failed_not_running(make_config, tmp_path):
    from aecg_bench.errors import RunStateError

    with small_tmpfs(tmp_path / "small", "4m") as mnt:
        with (mnt / "ballast").open("wb") as fh:  # fill the disk, then give back 256 KiB
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        os.truncate(mnt / "ballast", (mnt / "ballast").stat().st_size - (256 << 10))
        cfg = make_config("benchmark=toy", "benchmark.params.size=3", f"runtime.results_root={mnt}")
        cfg["runtime"]["cache"]["mode"] = "off"
        with pytest.raises(RunStateError, match="KiB free"):
            run_from_config(cfg)
        (run_json,) = mnt.rglob("run.json")
        assert json.loads(run_json.read_text())["status"] == "failed"


# -- 8: the smaller ones ----------------------------------------------------------------------------


def test_a_failed_resume_keeps_the_audit_lines_it_cut(make_config, monkeypatch):
    from aecg_bench.errors import RunStateError
    from aecg_bench.runner.records import RunDir

    cfg = make_config("benchmark=toy", "benchmark.params.size=8", "memory=recorder", "protocol.snapshot_every=3")
    _crash_after(monkeypatch, 5, cfg)
    (run_json,) = Path(cfg["runtime"]["results_root"]).rglob("run.json")
    rd = RunDir(run_json.parent)
    before = rd.audit_file.read_text().splitlines()
    target = rd.trajectory_path(4, 1)  # after the snapshot at 3 records: the replay needs it
    intact = target.read_bytes()
    target.write_bytes(intact[:30])
    with pytest.raises(RunStateError, match="is damaged"):
        run_from_config(cfg)
    kept = rd.audit_file.read_text().splitlines()
    cut_file = rd.audit_file.with_name("audit.jsonl.cut")
    cut = cut_file.read_text().splitlines()
    assert len(cut) == 2 and set(before) <= set(kept) | set(cut), "every line cut is kept aside"
    target.write_bytes(intact)  # restored from a backup: the resume replays and completes
    assert run_from_config(cfg)["status"] == "complete"
    assert not cut_file.exists(), "replayed: the copy is dropped"
    seqs = [json.loads(line)["seq"] for line in rd.audit_file.read_text().splitlines()]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > len(before)


def test_a_reply_far_past_max_tokens_is_cut_before_it_is_cached_and_a_warning_says_so(tmp_path, caplog):
    from aecg_bench.llm import LLMClient, ModelSpec
    from aecg_bench.llm.cache import ResponseCache
    from aecg_bench.llm.client import REPLY_CHARS_PER_TOKEN

    huge = "word " * 200_000  # 1 MB for a call that allows 64 tokens
    cache = ResponseCache(tmp_path / "c.sqlite")
    with FakeOpenAIServer(lambda m: huge) as server:
        spec = ModelSpec(label="served", model="openai/x", api_base=server.base_url, max_tokens=64)
        client = LLMClient({"served": spec}, {"default": "served"}, cache)
        out = client.complete([{"role": "user", "content": "hi"}])
    assert len(out.text) == 64 * REPLY_CHARS_PER_TOKEN and out.finish_reason == "length"
    assert len(cache.get(out.key)["text"]) == 64 * REPLY_CHARS_PER_TOKEN, "the cache holds the cut reply"
    assert "sent 1000000 characters for max_tokens=64" in caplog.text


def test_each_command_gets_its_own_sweep_folder_and_breaker_scope(monkeypatch, tmp_path):
    from aecg_bench.runner import lifecycle

    ids = []
    for _ in range(2):
        lifecycle.start_sweep(tmp_path)
        ids.append(lifecycle.sweep_id())
    assert ids[0] and ids[1] and ids[0] != ids[1]


@pytest.mark.slow  # two Hydra multiruns
def test_two_sweeps_on_one_results_root_keep_their_own_multirun_yaml(tmp_path):
    root = tmp_path / "results"
    for seeds in ("0,1", "2,3"):
        proc = _cli("-m", *CLI_BASE, "hydra/launcher=basic", f"runtime.results_root={root}", f"seed={seeds}")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    saved = sorted(root.glob(".sweeps/*/multirun.yaml"))
    assert len(saved) == 2
    assert sorted("seed=0,1" in p.read_text() for p in saved) == [False, True]


def test_tool_calls_whose_arguments_are_not_json_end_the_sample_like_unparsable_outputs(make_config):
    from aecg_bench.llm.mock import register_mock_policy
    from aecg_bench.llm.providers import ProviderResult
    from aecg_bench.types import ToolCall

    def broken_json(request, spec):  # type: ignore[no-untyped-def]
        return ProviderResult(text="", tool_calls=(ToolCall("find_orders", {"_unparsed": '{"customer": "'}, "c1"),))

    register_mock_policy("campaign_broken_json", broken_json)
    final = run_from_config(
        make_config(
            "benchmark=toy_tools",
            "benchmark.params.size=2",
            "model.models.mock.options.policy=campaign_broken_json",
            "protocol.max_invalid_actions=3",
        )
    )
    from aecg_bench.runner.identity import results_dir_of
    from aecg_bench.runner.records import RunDir

    records = RunDir(results_dir_of(final)).records()
    assert [r["status"] for r in records] == ["model_error", "model_error"]
    assert all(r["steps"] == 4 and "not JSON" in r["error"] for r in records), records
