"""The sweep budget: shared by processes through per-process files, refuses the call that would pass it,
and stops a run cleanly so that a rerun with a larger budget continues where it stopped."""

from __future__ import annotations

import pytest

from aecg_bench.errors import BudgetExceededError
from aecg_bench.llm.budget import SweepBudget
from aecg_bench.run import run_from_config
from aecg_bench.runner.identity import results_dir_of
from aecg_bench.runner.records import RunDir


def test_processes_see_each_others_spend_and_the_call_that_would_pass_is_refused(tmp_path):
    one = SweepBudget(tmp_path, 1.0, name="host-1", rescan_s=0.0)
    two = SweepBudget(tmp_path, 1.0, name="host-2", rescan_s=0.0)
    one.add(0.5)
    two.add(0.3)
    assert one.spent() == pytest.approx(0.8) and two.spent() == pytest.approx(0.8)
    two.check(0.2)  # exactly reaching the budget is allowed
    with pytest.raises(BudgetExceededError, match=r"budget of \$1.00 reached.*raise runtime.max_cost_usd"):
        one.check(0.25)


def test_a_restarted_process_keeps_its_earlier_spend(tmp_path):
    SweepBudget(tmp_path, 1.0, name="host-1").add(0.9)
    again = SweepBudget(tmp_path, 1.0, name="host-1")
    assert again.spent() == pytest.approx(0.9)
    with pytest.raises(BudgetExceededError):
        again.check(0.2)


def test_others_are_rescanned_only_every_rescan_s_but_own_spend_is_always_current(tmp_path):
    now = [0.0]
    mine = SweepBudget(tmp_path, 10.0, name="a", rescan_s=5.0, clock=lambda: now[0])
    other = SweepBudget(tmp_path, 10.0, name="b")
    assert mine.spent() == 0.0
    other.add(1.0)
    mine.add(2.0)
    assert mine.spent() == pytest.approx(2.0)
    now[0] = 5.0
    assert mine.spent() == pytest.approx(3.0)


def _priced(make_config, budget: float):
    return make_config(
        "benchmark=toy",
        "benchmark.params.size=6",
        "+model.models.mock.price.input=1000",  # $1000 per million tokens: a toy call costs cents
        "+model.models.mock.price.output=1000",
        f"runtime.max_cost_usd={budget}",
    )


def test_a_run_stops_at_the_budget_and_a_rerun_with_more_continues(make_config):
    with pytest.raises(BudgetExceededError):
        run_from_config(_priced(make_config, 1.0))
    assert run_from_config(_priced(make_config, 1.0), in_sweep=True) is None  # inside a sweep: recorded, no raise
    cfg = _priced(make_config, 1000.0)
    from aecg_bench.runner.build import build
    from aecg_bench.runner.config import parse_run_config

    run_dir = build(parse_run_config(cfg))[0].run_dir
    header = RunDir(run_dir).read_header()
    assert header["status"] == "stopped" and "budget of $1.00 reached" in header["error"]
    stopped_at = len(RunDir(run_dir).records())
    assert stopped_at < 6
    final = run_from_config(cfg)
    assert final is not None and final["status"] == "complete"
    records = RunDir(results_dir_of(final)).records()
    assert sorted(r["position"] for r in records) == list(range(6))  # nothing lost, nothing twice
    assert final["cost"] > 0


def test_threads_of_one_process_add_without_losing_spend(tmp_path):
    """A run's concurrent samples (runner/concurrent.py) add to one budget file from several threads."""
    from concurrent.futures import ThreadPoolExecutor

    budget = SweepBudget(tmp_path, 1e9, name="host-1")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: budget.add(0.25), range(400)))
    assert budget.mine == pytest.approx(100.0)
    assert SweepBudget(tmp_path, 1e9, name="host-1").spent() == pytest.approx(100.0)  # the file agrees
