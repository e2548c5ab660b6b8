"""Pins of Mind2Web's metrics (`mind2web/metrics.py`) against the mutants that survived
`make mutants PATHS=mind2web` (docs/quality.md)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.benchmarks.mind2web.metrics import StepScore, split_metrics, task_metrics


def test_a_task_without_steps_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^a Mind2Web task has at least one step$"):
        task_metrics([])


def test_split_of_one_task_is_that_task_and_of_none_is_empty():
    one = task_metrics([StepScore(1.0, 0.5, 0.0, 1.0)])
    assert split_metrics([one]) == one
    assert split_metrics([]) == {}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.dictionaries(st.sampled_from(["a", "b"]), st.floats(0, 1), min_size=2, max_size=2), min_size=1, max_size=6
    ),
    st.randoms(),
)
def test_split_metrics_are_means_over_tasks_whatever_their_order(tasks, rnd):
    shuffled = rnd.sample(tasks, len(tasks))
    out = split_metrics(tasks)
    for k in ("a", "b"):
        assert out[k] == pytest.approx(sum(t[k] for t in tasks) / len(tasks))
        assert split_metrics(shuffled)[k] == pytest.approx(out[k])
        assert min(t[k] for t in tasks) - 1e-12 <= out[k] <= max(t[k] for t in tasks) + 1e-12
