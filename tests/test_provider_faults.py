"""A whole run against a misbehaving OpenAI-compatible server, through litellm for real.

The fake server answers toy-benchmark prompts correctly but makes a fraction of
first attempts fail (429 with Retry-After, 500, too slow, empty, not JSON). The
run must complete with every sample recorded once, the retries counted in
run.json, and a permanently failing sample recorded as an infra error that a
rerun redoes.
"""

from __future__ import annotations

from aecg_bench.benchmarks.toy import mock_oracle
from aecg_bench.llm.providers import Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.run import run_from_config
from aecg_bench.runner.records import latest_by_position
from aecg_bench.testing.fake_server import FAULTS, FakeOpenAIServer

ORACLE_SPEC = ModelSpec(label="fake", provider="mock", model="mock/x")


def _reply(messages: list[dict]) -> str:
    return str(mock_oracle(Request(messages=messages, params={}), ORACLE_SPEC))


class FirstAttemptFaults:
    """Every second distinct prompt fails on its first attempt, cycling through every fault kind."""

    def __init__(self) -> None:
        self.seen = 0

    def __call__(self, messages: list[dict], attempt: int) -> str | None:
        if attempt > 1:
            return None
        self.seen += 1
        return FAULTS[(self.seen // 2) % len(FAULTS)] if self.seen % 2 == 0 else None


def _config(make_config, base_url: str, *extra: str) -> dict:
    return make_config(
        "benchmark=toy",
        "benchmark.params.size=6",
        "model=server",
        f"model.models.served.api_base={base_url}",
        "model.models.served.model=openai/fake-model",
        "model.models.served.timeout_s=1.0",
        "model.label=fake",
        "runtime.retry.base_delay_s=0.01",
        "runtime.retry.max_delay_s=0.05",
        *extra,
    )


def test_run_survives_provider_faults_and_counts_them(make_config):
    with FakeOpenAIServer(_reply, fault=FirstAttemptFaults(), slow_s=1.5) as server:
        final = run_from_config(_config(make_config, server.base_url))
    assert set(server.served) >= {"ok", *FAULTS}, server.served  # every fault kind was exercised
    assert final["status"] == "complete"
    assert final["counts"]["recorded"] == 6 and final["failures"]["infra_error"] == 0
    assert final["eval"]["success_rate"] == 1.0
    assert final["failures"]["retries"] == sum(n for mode, n in server.served.items() if mode != "ok")


def test_permanent_failure_is_an_infra_error_and_a_rerun_redoes_it(make_config):
    from aecg_bench.benchmarks.toy import ToyBenchmark

    target = ToyBenchmark({"size": 6}).samples()[0].gold["target"]

    def broken_for_target_cell(messages: list[dict], attempt: int) -> str | None:
        return "500" if f"The target is cell {target}." in str(messages[-1].get("content")) else None

    with FakeOpenAIServer(_reply, fault=broken_for_target_cell) as server:
        cfg = _config(make_config, server.base_url, "runtime.retry.max_attempts=2")
        first = run_from_config(cfg)
    assert first["status"] == "incomplete"
    n_broken = first["failures"]["infra_error"]
    assert n_broken >= 1 and first["counts"]["recorded"] == 6

    with FakeOpenAIServer(_reply) as server:
        healed = run_from_config(_config(make_config, server.base_url, "runtime.retry.max_attempts=2"))
    assert healed["status"] == "complete" and healed["failures"]["infra_error"] == 0
    rd_records = _records(healed)
    assert sum(r["attempt"] == 2 for r in rd_records) == n_broken  # only the failed ones were redone
    assert len(latest_by_position(rd_records)) == 6


def _records(final: dict) -> list[dict]:
    from aecg_bench.runner.identity import results_dir_of
    from aecg_bench.runner.records import RunDir

    return RunDir(results_dir_of(final)).records()
