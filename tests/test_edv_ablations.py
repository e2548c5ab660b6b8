"""EDV's ablation configs and sweep arms do what they change (issue 17: not only that they compose).

Table 4's configs (conf/memory/edv_sa_*.yaml, edv_ma_*.yaml) change who executes, distils and verifies:
observed here in the calls one construction actually makes. Figure 6's threshold arms
(conf/arm/edv_tau*.yaml) set the retrieval thresholds: a stricter arm recalls fewer items from the same
bank. The contamination arm (conf/arm/rb_contaminated_b3.yaml) is ReasoningBank with injected entries on
backbone 3, built then frozen, without ground truth. Table 5's configs are tested in tests/test_edv.py
(routing, bank storage), the backbone arms in tests/test_edv_tables.py.
"""

from __future__ import annotations

from pathlib import Path

import edv_mocks as em
import pytest
from conftest import compose
from test_edv import _item, _Planar

from aecg_bench import registry
from aecg_bench.llm import UsageMeter
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


def construction_roles(config: str) -> tuple[list[str], set[str], set[str], list[str]]:
    """(executor models, distiller models, verifier models, banks of the stored items) of one construction."""
    params = compose([f"memory={config}"], Path("/tmp/unused"))["memory"]["params"]
    services = em.services()
    meter = UsageMeter()
    services.llm = services.llm.with_context(meter=meter)
    memory = registry.build("memory", "edv", params, services=services)
    rollout = em.ScriptedRollout(em.task(), memory)
    memory.build(em.task(), rollout)
    rows = meter.state_dict()
    executors = sorted({c["model"] for c in rollout.calls})
    distillers = {r["model"] for r in rows if r["role"] == "distiller"}
    verifiers = {r["model"] for r in rows if r["role"] == "verifier"}
    return executors, distillers, verifiers, [i["bank"] for i in memory.banks.items.values()]


def test_single_agent_basic_distils_its_own_runs_and_stores_everything_unverified():
    executors, distillers, verifiers, banks = construction_roles("edv_sa_basic")
    assert len(executors) == 1 and distillers == set(executors) and verifiers == set()
    assert banks and set(banks) == {"shared"}


def test_single_agent_self_verification_has_the_executor_verify_its_own_items():
    executors, distillers, verifiers, _ = construction_roles("edv_sa_selfverify")
    assert len(executors) == 1 and distillers == verifiers == set(executors)


def test_single_agent_independent_verifier_is_a_model_that_did_not_execute():
    executors, distillers, verifiers, _ = construction_roles("edv_sa_indep_verifier")
    assert len(executors) == 1 and distillers == set(executors)
    assert len(verifiers) == 1 and not verifiers & set(executors)


def test_multi_agent_self_distillation_has_an_executor_distil_and_the_executors_verify():
    executors, distillers, verifiers, _ = construction_roles("edv_ma_selfdistill")
    assert len(executors) == 2 and len(distillers) == 1 and distillers <= set(executors)
    assert verifiers == set(executors)


def test_third_party_distillation_has_the_outsider_distil_and_verify():
    executors, distillers, verifiers, _ = construction_roles("edv_ma_thirdparty_distill")
    assert len(executors) == 2 and len(distillers) == 1 and not distillers & set(executors)
    assert verifiers == distillers


def test_full_edv_has_an_outsider_distil_and_the_executors_verify():
    executors, distillers, verifiers, banks = construction_roles("edv")
    assert len(executors) == 2 and len(distillers) == 1 and not distillers & set(executors)
    assert verifiers == set(executors)
    assert "private" in banks and "shared" in banks  # hierarchical banks: partial approval stays private
