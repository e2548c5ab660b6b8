"""G-Memory: interaction graphs per trial, the query graph, scored insights and their finetuning,
and the fixes to the public code's defects."""

from __future__ import annotations

import baseline_mocks as bm
import pytest

from aecg_bench import registry
from aecg_bench.llm import UsageMeter
from aecg_bench.llm.mock import register_mock_policy
from baselines.g_memory.insights import InsightBook, Operation, parse_operations


def gmem(**params):
    services = bm.services()
    return registry.build("memory", "g_memory", params, services=services), services


def test_trials_keep_key_steps_failure_reasons_and_the_interaction_graph():
    memory, services = gmem()
    memory.observe(bm.episode(bm.SORT, "s", True, actions=("look", "sort", "finish"), critic="fine"))
    memory.observe(bm.episode(bm.TRANSLATE, "f", False))
    s, f = memory.state_dict()["trials"]
    assert s["key_steps"].startswith("Understand the goal") and s["fail_reason"] == ""
    assert f["fail_reason"] == "The agent stopped before the required state was reached."
    graph = s["graph"]
    assert [n["agent"] for n in graph["nodes"]] == ["solver", "solver", "solver", "critic"]
    assert graph["edges"] == [["d0", "d1"], ["d1", "d2"]]
    assert "Act 2: sort" in s["trajectory"]
    assert [e["memory_id"] for e in services.audit.read() if e["event"] == "admit"] == ["gm-t-0", "gm-t-1"]


def test_the_query_graph_links_similar_tasks_only():
    memory, _ = gmem(edge_similarity=0.3)
    for i, text in enumerate([bm.SORT, bm.SORT_SIMILAR, bm.TRANSLATE]):
        memory.observe(bm.episode(text, f"t{i}", True))
    adj = dict(memory.state_dict()["graph"]["adj"])
    assert [b for b, _ in adj[bm.SORT]] == [bm.SORT_SIMILAR]
    assert adj[bm.TRANSLATE] == []


def test_similar_tasks_recall_the_related_successful_trial_and_linked_insights():
    memory, _ = gmem()
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.TRANSLATE, "t", True))
    memory.observe(bm.episode(bm.SORT_SIMILAR, "f", False))
    memory.book.add("Check the order before returning, because unsorted output fails.", [bm.SORT])
    memory.book.add("Keep the register of the source, because tone matters.", [bm.TRANSLATE])
    items = memory.recall(bm.query(bm.SORT_SIMILAR, "q"))
    assert [(i.id, i.kind) for i in items] == [("gm-t-0", "trajectory"), ("gm-i-0", "insight"), ("gm-i-1", "insight")]
    assert items[0].text.startswith("Successful trial of a similar task: Sort the list")
    # insights rank by how many of the query's neighbourhood tasks they are linked to
    assert [i.id for i in memory.recall(bm.query(bm.TRANSLATE, "q"))] == ["gm-t-1", "gm-i-1", "gm-i-0"]
    shown, _ = gmem(include_failed_trials=True)
    shown.load_state_dict(memory.state_dict())
    assert "gm-t-2" in [i.id for i in shown.recall(bm.query(bm.SORT_SIMILAR, "q"))]


def test_insight_scores_follow_each_outcome_and_spent_insights_are_removed():
    memory, services = gmem()
    memory.observe(bm.episode(bm.SORT, "s", True))
    rule = memory.book.add("Check the order before returning, because unsorted output fails.", [bm.SORT])
    memory.observe(bm.episode(bm.SORT, "a", True, recalled=(rule["id"], "gm-t-0")))
    assert memory.book.by_id(rule["id"])["score"] == 3
    memory.observe(bm.episode(bm.SORT, "b", False, recalled=(rule["id"],)))
    assert memory.book.by_id(rule["id"])["score"] == 1
    memory.observe(bm.episode(bm.SORT, "c", False, recalled=(rule["id"],)))
    assert memory.book.by_id(rule["id"]) is None
    events = [(e["event"], e.get("delta")) for e in services.audit.read() if e.get("memory_id") == rule["id"]]
    assert events == [("admit", None), ("score", 1.0), ("score", -2.0), ("score", -2.0), ("forget", None)]


def test_maintain_finetunes_insights_on_the_trial_count_cadence_and_merges_them():
    memory, services = gmem(merge_every=10)
    for i in range(4):
        memory.observe(bm.episode(bm.SORT if i % 2 else bm.SORT_SIMILAR, f"t{i}", i != 1))
    memory.maintain(1)
    assert memory.book.rules == [] and memory.maintained_size == 4  # fewer than 5 trials: nothing yet
    memory.observe(bm.episode(bm.SORT, "t4", True))
    meter = UsageMeter()
    memory.services.llm = memory.services.llm.with_context(meter=meter)
    memory.maintain(2)
    rules = [r["rule"] for r in memory.book.rules]
    assert "Check the current state against the goal before finishing, because finishing early fails." in rules
    assert "Act on the latest observation, because it tells what is left to do." in rules
    assert meter.by_role()["memory"]["calls"] > 0
    calls = meter.by_role()["memory"]["calls"]
    memory.maintain(3)  # no new trials: no work
    assert meter.by_role()["memory"]["calls"] == calls
    for i in range(5, 10):
        memory.observe(bm.episode(bm.SORT, f"t{i}", True))
    before = {r["id"] for r in memory.book.rules}
    memory.maintain(4)
    merged = [r["rule"] for r in memory.book.rules]  # each task cluster gets the merged list
    assert set(merged) == {"Check the state against the goal before finishing.", "Act on the latest observation."}
    assert all(r["score"] == 2 for r in memory.book.rules) and before.isdisjoint(r["id"] for r in memory.book.rules)
    assert any(e["event"] == "merge" for e in services.audit.read())


def test_graph_neighbours_keep_their_place_when_the_fallback_tops_up():
    """Fix 2: the original replaced the hop-expanded results by a plain similarity search."""
    memory, _ = gmem(edge_similarity=0.3)
    texts = {"X": "alpha beta gamma delta", "Y": "alpha beta epsilon zeta", "Z": "gamma theta iota kappa"}
    for key, text in texts.items():
        memory.observe(bm.episode(text, key, True))
    qvec = memory.index.embed("alpha gamma delta theta")
    sims = memory.index.similarity(qvec, ["gm-t-0", "gm-t-1", "gm-t-2"])
    assert sims["gm-t-0"] > sims["gm-t-2"] > sims["gm-t-1"]  # Z is closer than the neighbour Y
    successes, _ = memory._retrieve_trials(
        qvec, 3, 0, memory.index.rank(qvec)
    )  # nearest node X, its neighbour Y, top-up Z
    assert [t for t, _ in successes] == ["gm-t-0", "gm-t-1", "gm-t-2"]


def test_llm_reranking_is_optional_and_uses_the_memory_role():
    memory, _ = gmem(rerank_with_llm=True, successful_topk=2)
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.SORT_SIMILAR, "t", True))
    meter = UsageMeter()
    memory.services.llm = memory.services.llm.with_context(meter=meter)
    assert len(memory.recall(bm.query(bm.SORT, "q"))) == 2
    assert meter.by_role()["memory"]["calls"] == 2


def test_rule_operations_follow_g_memory_with_the_agree_defect_fixed():
    ops = parse_operations(
        "AGREE 1: a paraphrase of rule one.\nEDIT 2: Improved second rule, because clearer.\n"
        "REMOVE 9: out of range.\nADD: New rule, because new.\nADD: no period\nADD: says ADD inside."
    )
    assert [(o.kind, o.number) for o in ops] == [("AGREE", 1), ("EDIT", 2), ("REMOVE", 9), ("ADD", None)]
    book = InsightBook()
    one = book.add("Rule one.", ["a"])
    two = book.add("Rule two.", ["a"])
    last = book.add("Rule three.", ["a"])
    book.apply(ops, [one["id"], two["id"]], ["task-x"], max_rules=10)
    assert one["score"] == 3 and "task-x" in one["positive"]  # AGREE by number, not by text (fix 5)
    assert last["score"] == 2  # the original hit the last rule with a paraphrased AGREE
    assert two["rule"] == "Improved second rule, because clearer." and two["score"] == 3
    assert book.rules[-1]["rule"] == "New rule, because new."


def test_remove_costs_more_when_the_rule_list_is_full_and_edits_of_existing_text_agree():
    book = InsightBook()
    ids = [book.add(f"Rule {i}.", ["a"])["id"] for i in range(3)]
    book.apply([Operation("REMOVE", 1, "x.")], ids, ["t"], max_rules=3)
    assert book.by_id(ids[0])["score"] == -1 and book.by_id(ids[0])["negative"] == ["t"]
    book.apply([Operation("EDIT", 3, "Rule 1. plus more.")], ids, ["t"], max_rules=10)
    assert book.by_id(ids[1])["score"] == 3 and book.by_id(ids[2])["score"] == 2
    book.prune()
    assert [r["id"] for r in book.rules] == ids[1:]


@pytest.mark.parametrize(("n_rules", "limit"), [(2, 1), (9, 3)])
def test_merge_asks_for_a_third_of_the_rules_never_zero(n_rules, limit):
    seen: list[str] = []

    def recording(request, spec):
        seen.append(str(request.messages[-1]["content"]))
        return bm.memory_policy(request, spec)

    register_mock_policy("g_memory_recording", recording)
    memory, _ = gmem(merge_every=1)
    memory.services.llm = bm.client(policy="g_memory_recording")
    memory.observe(bm.episode(bm.SORT, "s", True))
    for i in range(n_rules):
        memory.book.add(f"Rule number {i}, because it helps.", [bm.SORT])
    memory.maintained_size = 0
    memory.maintain(1)
    merge_prompts = [p for p in seen if "refined insights" in p]
    assert len(merge_prompts) == 1 and f"no more than {limit} refined insights" in merge_prompts[0]
