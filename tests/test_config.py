"""Configuration: every config composes and validates; bad names and values fail in one clear line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

from aecg_bench import registry
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.run import GROUPS, check_overrides, group_choices
from aecg_bench.runner.build import build
from aecg_bench.runner.config import parse_run_config


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aecg_bench.run", *args], capture_output=True, text=True, cwd=REPO, timeout=120
    )


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("benchmark=toyy", "unknown benchmark 'toyy'; valid choices: .*toy.*; did you mean 'toy'\\?"),
        ("memory=no_memry", "did you mean 'no_memory'\\?"),
        ("protocol.mode=onlin", "bad value 'onlin' for 'protocol.mode'.*did you mean 'online'\\?"),
        (
            "benchmark.params.sise=3",
            "benchmark 'toy': unknown key 'sise'; valid keys here: .*size.*did you mean 'size'",
        ),
    ],
)
def test_cli_bad_input_is_one_line_without_a_traceback(arg, expected, tmp_path):
    out = _cli(arg, f"runtime.results_root={tmp_path}", "runtime.progress=false")
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[0].startswith("error: ")
    import re

    assert re.search(expected, lines[0]), lines[0]


def test_check_overrides_accepts_sweeps_and_rejects_any_bad_member():
    check_overrides(["memory=no_memory,recorder", "seed=0,1,2", "benchmark=toy"])
    with pytest.raises(ConfigError, match="unknown memory 'recordr'"):
        check_overrides(["memory=no_memory,recordr"])


def test_registry_errors_name_the_choices():
    with pytest.raises(ConfigError, match=r"unknown framework 'singel'.*did you mean 'single'"):
        registry.resolve("framework", "singel")
    with pytest.raises(ConfigError, match="unknown component group"):
        registry.resolve("frameworks", "single")


def test_component_params_are_validated_with_the_valid_keys():
    from aecg_bench.benchmarks.toy import ToyBenchmark

    with pytest.raises(ConfigError, match=r"benchmark 'toy': unknown key 'sise'.*did you mean 'size'"):
        ToyBenchmark({"sise": 3})
    with pytest.raises(ConfigError, match=r"bad value -1 for 'size'"):
        ToyBenchmark({"size": -1})


def test_every_config_file_composes_and_validates(make_config):
    """Each option of each group composes with the defaults and passes validation (no model call)."""
    for group in GROUPS:
        for choice in group_choices(group):
            raw = make_config(f"{group}={choice}")
            cfg = parse_run_config(raw)
            assert cfg.seed == 0


DOWNLOADED_ONLY = {"mind2web", "mmtb"}  # no copy in the shared data; their loaders download when online


def test_every_registered_component_builds(make_config, shared_data):
    """Configs whose components exist build end to end (benchmarks load their data, memories construct)."""
    for benchmark in group_choices("benchmark"):
        if registry.REGISTRY["benchmark"].get(benchmark) is None:
            continue
        if benchmark in DOWNLOADED_ONLY and not (shared_data / benchmark).exists():
            # no offline copy: building stops at the data with the one-line error (never a download in tests)
            raw = make_config(f"benchmark={benchmark}", "benchmark.params.download=false", data_root=shared_data)
            with pytest.raises(DataError, match="download=true when online"):
                build(parse_run_config(raw))
            continue
        raw = make_config(f"benchmark={benchmark}", data_root=shared_data)
        plan, services, _ = build(parse_run_config(raw))
        assert plan.stream, benchmark
        services.benchmark.close()
