"""The EDV sweep arms that change a mechanism do what they change (issue 17: not only that they compose).

Figure 6's threshold arms (conf/arm/edv_tau*.yaml) set EDV's retrieval thresholds: a stricter arm recalls
fewer items from the same bank. The contamination arm (conf/arm/rb_contaminated_b3.yaml) is ReasoningBank
with injected entries on backbone 3, built then frozen, without ground truth. The other arms are pinned in
tests/test_edv_tables.py, EDV's Table 4/5 memory configs in tests/test_edv.py.
"""

from __future__ import annotations

from pathlib import Path

import edv_mocks as em
import pytest
from conftest import compose
from test_edv import _item, _Planar

from aecg_bench import registry
from aecg_bench.types import RecallQuery
from baselines.edv.banks import Banks

TINY = ("model=edv_pool_mock", "benchmark=toy_tools")
# shared-bank items at these cosines to the query: tau 0.60 keeps three, 0.70 two, 0.80 one, 0.90 none
COSINES = {"s65": 0.65, "s75": 0.75, "s85": 0.85}


def arm(name: str, experiment: str = "edv_fig6_threshold") -> dict:
    return compose([f"experiment={experiment}", f"arm={name}", *TINY], Path("/tmp/unused"))


def recalled_under(arm_name: str) -> list[str]:
    params = arm(arm_name)["memory"]["params"]
    memory = registry.build("memory", "edv", {**params, "rotate_roles": False}, services=em.services())
    memory.banks = Banks(_Planar(COSINES))  # type: ignore[arg-type]
    for iid in COSINES:
        memory.banks.add(_item(iid, "shared", []))
    query = RecallQuery(task=em.task("q"), level="agent", agent="solver", role="solver", context="")
    return [item.id for item in memory.recall(query)]


@pytest.mark.parametrize(
    ("arm_name", "expected"),
    [
        ("edv_tau60", ["s85", "s75", "s65"]),
        ("edv_tau70", ["s85", "s75"]),
        ("edv_tau80", ["s85"]),
        ("edv_tau90", []),
    ],
)
def test_threshold_arms_recall_less_as_the_threshold_rises(arm_name: str, expected: list[str]):
    assert recalled_under(arm_name) == expected


def test_the_contamination_arm_runs_contaminated_reasoningbank_on_backbone_3_without_ground_truth():
    raw = arm("rb_contaminated_b3", "edv_table1")
    assert raw["memory"]["name"] == "reasoningbank_contaminated" and raw["memory"]["params"]["fraction"] > 0
    assert (raw["protocol"]["mode"], raw["protocol"]["label_source"]) == ("build_then_freeze", "none")
    assert raw["model"]["roles"]["default"] == raw["model"]["roles"]["backbone_3"] == raw["model"]["label"]
