"""aecg-bench's conformance kit on `recency_window`, and one behaviour of the method itself."""

from __future__ import annotations

import pytest

from aecg_bench.testing import conformance


@pytest.mark.parametrize("check", conformance.MEMORY_CHECKS, ids=conformance.check_id)
def test_conformance(check, tmp_path):
    check(tmp_path, memory="recency_window")


def test_later_tasks_recall_what_earlier_successes_stored(tmp_path):
    ran = conformance.run(conformance.compose(tmp_path, memory="recency_window", framework="single"))
    recalled = [r["recalled_memory_ids"] for r in ran["records"]]
    assert not recalled[0], "nothing to recall before the first task"
    assert any(recalled[1:]), "later tasks recall the stored successes"
    assert ran["memory"]["items"], "successes were stored"
