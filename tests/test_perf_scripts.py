"""The embedded-throughput script's fixed workload and settings parser (no model is loaded here)."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import REPO


def load_script():
    spec = importlib.util.spec_from_file_location("embedded_throughput", REPO / "scripts/perf/embedded_throughput.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["embedded_throughput"] = module
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_workload_is_fixed_and_cycles_three_agents_over_a_growing_history():
    script = load_script()
    calls = script._workload(2, 3)
    assert calls == script._workload(2, 3) and len(calls) == 6
    assert [c[0]["content"] for c in calls[:3]] == list(script.SYSTEMS)
    assert [len(c) for c in calls[:3]] == [2, 4, 6]
    assert calls[3][1]["content"] != calls[0][1]["content"]  # the second episode has its own task


def test_settings_parse_and_bad_ones_fail_in_one_line():
    script = load_script()
    assert script.parse_settings("1x1, 2x1,1x2") == [(1, 1), (2, 1), (1, 2)]
    for bad in ("2", "0x1", "ax1", "2x-1"):
        with pytest.raises(SystemExit, match=f"bad setting '{bad}'"):
            script.parse_settings(bad)
