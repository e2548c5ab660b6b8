"""The `procedures` benchmark: its generated world, its environment, its chance rate, and runs of every
framework and memory method on it with the scripted mock model (the `oracle` policy copies a procedure
from recalled experience that names the device, and guesses otherwise)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import baseline_mocks as bm  # registers the `baselines_memory` mock policy
import pytest
import yaml
from conftest import REPO
from hypothesis import given
from hypothesis import strategies as st

from aecg_bench import registry
from aecg_bench.benchmarks.procedures import (
    ProceduresBenchmark,
    ProceduresParams,
    chance_rate,
    make_world,
    mock_copier,
    poisoned_items,
)
from aecg_bench.contracts import EnvContext
from aecg_bench.llm.providers import Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.run import run_from_config
from aecg_bench.runner.records import RunDir
from aecg_bench.types import Action

MOCK = ModelSpec(label="mock", provider="mock", model="mock/x")


def bench(**params) -> ProceduresBenchmark:
    return ProceduresBenchmark(params)


def act(env, text: str):
    return env.step(Action(kind="command", text=text))


def test_the_world_is_a_pure_function_of_the_generator_parameters():
    p = ProceduresParams()
    assert make_world(p) == make_world(ProceduresParams())
    assert make_world(p) != make_world(ProceduresParams(generator_seed=1))
    world = make_world(ProceduresParams(families=6, scoped_fraction=0.34, drift_fraction=0.34, rare_fraction=0.17))
    assert sum(f.scoped for f in world) == 2 and sum(bool(f.drifted) for f in world) == 2
    assert sum(f.rare for f in world) == 1
    for fam in world:
        assert all(c in fam.panel for proc in fam.procedures.values() for c in proc)
        assert len(set(fam.procedures.values())) == len(fam.procedures)  # teams never share a procedure
        assert all(fam.drifted[k] != v for k, v in fam.procedures.items() if fam.drifted)


def test_samples_carry_no_procedure_in_their_public_task_and_vary_within_a_family():
    b = bench(size=60)
    samples = b.samples("test")
    by_family: dict[str, list] = {}
    for s in samples:
        by_family.setdefault(s.task.task_type, []).append(s)
        public = json.dumps([s.task.instruction, s.task.metadata]).lower()
        assert not any(c in public for c in s.gold["panel"])  # only the action hint lists controls
        assert s.task.action_grammar.count("|") == len(s.gold["panel"]) - 1
    assert len(by_family) == 4
    for group in by_family.values():
        assert len({s.task.instruction for s in group}) == len(group)  # serials, places, teams vary
    # the panel's order varies from task to task, the procedure does not (before drift, same team)
    fam = b.world[0]
    same = [s for s in samples if s.gold["device"] == fam.name and not s.gold["drifted"]]
    assert len({tuple(s.gold["panel"]) for s in same}) > 1
    assert len({tuple(s.gold["procedure"]) for s in same}) <= len(fam.procedures)


def test_drift_changes_procedures_after_its_point_in_the_test_stream_only():
    b = bench(size=40, drift_at=0.5, drift_fraction=1.0, drift_among="all")
    test = b.samples("test")
    assert not any(s.gold["drifted"] for s in test[:20]) and all(s.gold["drifted"] for s in test[20:])
    assert not any(s.gold["drifted"] for s in b.samples("train"))
    fam = {f.name: f for f in b.world}
    for s in test[20:]:
        f = fam[s.gold["device"]]
        assert tuple(s.gold["procedure"]) == f.procedure(s.task.metadata["team"], True)
        assert tuple(s.gold["procedure"]) != f.procedure(s.task.metadata["team"], False)


def test_drifting_families_are_drawn_among_the_common_ones_unless_told_otherwise():
    """By default a rare family never drifts (it would have almost no tasks after the drift point);
    the default world's drifting family recurs on both sides of the drift point."""
    for seed in range(20):
        world = make_world(ProceduresParams(generator_seed=seed, families=6, rare_fraction=0.34, drift_fraction=0.5))
        assert sum(bool(f.drifted) for f in world) == 3 and not any(f.rare and f.drifted for f in world)
    # asked for more drifting families than there are common ones: every common one drifts, no rare one
    world = make_world(ProceduresParams(families=4, rare_fraction=0.5, drift_fraction=1.0))
    assert [bool(f.drifted) for f in world] == [not f.rare for f in world]
    world = make_world(ProceduresParams(families=4, rare_fraction=0.5, drift_fraction=1.0, drift_among="all"))
    assert all(f.drifted for f in world) and sum(f.rare for f in world) == 2
    b = bench()
    drifting = [f.name for f in b.world if f.drifted]
    assert len(drifting) == 1 and not next(f for f in b.world if f.drifted).rare
    stream = [s for s in b.samples("test") if s.gold["device"] == drifting[0]]
    before, after = sum(not s.gold["drifted"] for s in stream), sum(s.gold["drifted"] for s in stream)
    assert before >= 4 and after >= 4, (before, after)


def test_rare_families_recur_less_often():
    b = bench(size=2000, families=4, rare_fraction=0.25, rare_weight=0.25)
    counts = Counter(s.gold["device"] for s in b.samples("test"))
    rare = next(f.name for f in b.world if f.rare)
    assert counts[rare] < 0.5 * min(c for name, c in counts.items() if name != rare)


def test_the_environment_unlocks_on_the_procedure_and_locks_on_a_wrong_code():
    b = bench(size=5)
    s = b.samples()[0]
    proc, panel = s.gold["procedure"], s.gold["panel"]
    env = b.make_env(s, EnvContext(llm=None, seed=0))
    first = env.reset()
    assert first.text.endswith(f"Step 1 of {len(proc)}.") and all(c in s.task.action_hint for c in panel)
    bad = act(env, "dance")
    assert not bad.valid and not bad.done
    for c in proc[:-1]:
        assert "accepted" in act(env, c).text
    last = act(env, proc[-1].upper() + ".")
    assert last.done and last.reward == 1.0
    score = env.score()
    assert score.success and score.value == 1.0 and score.metrics["invalid_actions"] == 1.0
    env.reset()
    wrong = next(c for c in panel if c != proc[0])
    obs = act(env, wrong)
    assert obs.done and "locks" in obs.text and not env.score().success and env.score().value == 0.0
    assert not act(env, proc[0]).valid  # a locked device stays locked


@given(controls=st.integers(2, 6), length=st.integers(1, 3))
def test_the_chance_rate_is_that_of_uniform_random_controls(controls, length):
    p = ProceduresParams(controls=controls, length=length, size=1)
    assert chance_rate(p) == pytest.approx(controls**-length)


def test_a_uniform_random_agent_succeeds_at_the_stated_chance_rate():
    b = bench(size=3000)
    rng = random.Random(0)
    wins = 0
    for s in b.samples():
        env = b.make_env(s, EnvContext(llm=None, seed=0))
        env.reset()
        obs = None
        while obs is None or not obs.done:
            obs = act(env, rng.choice(s.gold["panel"]))
        wins += env.score().success
    rate, chance = wins / 3000, chance_rate(b.params)
    assert abs(rate - chance) < 3 * (chance * (1 - chance) / 3000) ** 0.5


def test_the_data_hash_and_backends_name_the_world():
    a, b = bench(), bench(generator_seed=1)
    assert a.data_hashes() != b.data_hashes() and a.data_hashes() == bench().data_hashes()
    assert bench(drift_at=0.6).data_hashes() != a.data_hashes()
    assert bench(drift_among="all").data_hashes() != a.data_hashes()
    assert a.describe_backends()["procedures"]["chance_rate"] == pytest.approx(1 / 9)


def test_poisoned_items_are_coherent_and_wrong_for_every_family_and_team():
    p = ProceduresParams()
    items = poisoned_items(p)
    world = make_world(p)
    assert len(items) == sum(len(f.procedures) for f in world)
    for fam in world:
        for team, proc in fam.procedures.items():
            who = "" if team == "*" else f" on the {team} team"
            item = next(i for i in items if i["content"].startswith(f"To unlock the {fam.name}{who},"))
            told = item["content"].split(": ", 1)[1].rstrip(".")
            assert told not in (" ; ".join(proc), " ; ".join(fam.drifted.get(team, proc)))
            assert all(c in fam.panel for c in told.split(" ; "))


def test_the_committed_contamination_file_is_what_the_generator_writes():
    path = Path(__file__).resolve().parents[1] / "data" / "contamination" / "procedures_wrong_procedures.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows == poisoned_items(ProceduresParams())


def _request(system: str, user: str) -> Request:
    return Request(messages=[{"role": "system", "content": system}, {"role": "user", "content": user}], params={})


def test_the_mock_copier_follows_experience_naming_the_device_and_guesses_without():
    b = bench(size=4)
    s = b.samples()[0]
    device, proc = s.gold["device"], s.gold["procedure"]
    user = f"Task: {s.task.instruction}\n{s.task.action_hint}\n\nCurrent observation:\nStep 1 of 2.\n\nNext action:"
    memory = f"Relevant experience:\n- [memory] Task: Unlock the {device} in the dock. What worked: {' ; '.join(proc)}"
    assert mock_copier(_request("sys\n\n" + memory, user), MOCK) == proc[0]
    assert mock_copier(_request("sys\n\n" + memory, user.replace("Step 1 of 2", "Step 2 of 2")), MOCK) == proc[1]
    guesses = {mock_copier(_request(f"sys {i}", user), MOCK) for i in range(40)}
    assert guesses == set(s.gold["panel"])  # no experience: a uniform guess among the panel's controls


FRAMEWORKS = ["single", "autogen", "macnet", "agentnet"]
MEMORIES = [
    "no_memory",
    "aecg",
    "reasoningbank",
    "g_memory",
    "conmem",
    "memorybank",
    "macnet_m",
    "edv",
    "judge",
    "router",
]


def _rundir(final: dict) -> RunDir:
    labels = final["labels"]
    root = Path(final["runtime"]["results_root"])
    path = root / labels["experiment"] / labels["benchmark"] / labels["framework"] / labels["memory"] / labels["model"]
    return RunDir(path / f"seed={labels['seed']}")


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("memory", MEMORIES)
def test_every_framework_and_memory_method_runs_procedures_with_the_mock_model(make_config, framework, memory):
    model = ["model=edv_pool_mock"] if memory in ("edv", "judge", "router") else ["model=mock_aecg"]
    if memory not in ("aecg", "edv", "judge", "router"):
        model = ["model.models.mock.options.policy=baselines_memory"]
    final = run_from_config(
        make_config(
            f"framework={framework}",
            "benchmark=procedures",
            "benchmark.params.size=6",
            "benchmark.params.train_size=3",
            "benchmark.params.controls=2",  # chance 1/2: early successes, so every method has something to store
            "benchmark.params.length=1",
            f"memory={memory}",
            "protocol.maintain_every=2",
            *model,
        )
    )
    assert final["status"] == "complete", final.get("failures")
    records = _rundir(final).records()
    assert len(records) >= 6 and all(r["status"] in ("ok", "limit_exceeded") for r in records), [
        (r["status"], r.get("error")) for r in records
    ]
    if memory not in ("no_memory", "judge", "router"):  # methods whose memory reaches agents' prompts
        assert any(r["recalled_memory_ids"] for r in records if r["phase"] == "eval")


def test_memory_is_necessary_and_sufficient_for_the_mock_copier(make_config):
    """Over one stream: without memory the copier is at chance; with a memory that stores successful
    trajectories (AECG's memories) it copies the procedure and beats chance by far."""
    rates = {}
    for memory in ("no_memory", "aecg"):
        final = run_from_config(
            make_config(
                "benchmark=procedures",
                "benchmark.params.size=48",
                "benchmark.params.drift_fraction=0",
                f"memory={memory}",
                "model=mock_aecg",
                "model.models.mock.options.error_rate=0",
            )
        )
        records = _rundir(final).records()
        rates[memory] = sum(r["success"] for r in records) / len(records)
    assert rates["no_memory"] <= 0.25  # chance is 1/9
    assert rates["aecg"] >= rates["no_memory"] + 0.3, rates


def test_procedures_registers_and_its_config_matches_the_defaults(make_config):
    raw = make_config("benchmark=procedures")
    cls = registry.resolve("benchmark", "procedures")
    assert cls.Params(**raw["benchmark"]["params"]) == cls.Params()


@pytest.mark.parametrize("experiment", ["aecg_table1_smoke", "aecg_table2_smoke"])
def test_the_smoke_presets_give_procedures_a_longer_stream_and_the_others_two_samples(make_config, experiment):
    assert make_config(f"experiment={experiment}", "benchmark=procedures")["protocol"]["limit"] == 32
    assert make_config(f"experiment={experiment}", "benchmark=toy")["protocol"]["limit"] == 2
    sweep = yaml.safe_load((REPO / "conf" / "experiment" / f"{experiment}.yaml").read_text())
    assert "procedures" in sweep["hydra"]["sweeper"]["params"]["benchmark"].split(",")


def test_the_edv_contamination_smoke_injects_the_procedures_items_into_a_filled_bank(make_config):
    from aecg_bench.analysis.edv_plan import smoke_overrides
    from baselines.edv.contamination import items_path, load_items

    assert "benchmark=toy_tools,procedures" in smoke_overrides("contamination")
    assert "benchmark=toy_tools" in smoke_overrides("table1")
    raw = make_config(
        "experiment=edv_contamination", "preset=edv_smoke", "benchmark=procedures", "arm=rb_contaminated_b3"
    )
    params = raw["benchmark"]["params"]
    assert (params["size"], params["train_size"], raw["protocol"]["limit"]) == (24, 36, 36)
    # 10 % of entries injected: the 10th, 20th and 30th build tasks' entries, after nine real entries
    items = load_items(items_path(raw["memory"]["params"]["items_file"]))
    assert [i.content for i in items] == [i["content"] for i in poisoned_items(ProceduresParams())]
    toy = make_config(
        "experiment=edv_contamination", "preset=edv_smoke", "benchmark=toy_tools", "arm=rb_contaminated_b3"
    )
    assert toy["memory"]["params"]["items_file"] is None and toy["benchmark"]["params"]["size"] == 2


@pytest.mark.slow
def test_in_the_edv_contamination_smoke_a_test_task_recalls_an_injected_entry(make_config):
    """EDV's contamination smoke on procedures with the scripted pool and the run's default embedder
    (MiniLM): three injected entries among 36 and at least one test task recalls one (the embedded
    model's run recalls the same entry: docs/benchmarks/procedures.md)."""
    raw = make_config(
        "experiment=edv_contamination",
        "preset=edv_smoke",
        "benchmark=procedures",
        "arm=rb_contaminated_b3",
        "model=edv_pool_mock",
        "embedder.backend=minilm",
    )
    final = run_from_config(raw)
    assert final["status"] == "complete", final.get("failures")
    rd = _rundir(final)
    events = [json.loads(line) for line in rd.audit_file.read_text().splitlines()]
    injected = {e["memory_id"] for e in events if e.get("origin") == "contamination"}
    real = [e for e in events if e["event"] == "admit" and e.get("origin") != "contamination"]
    assert len(injected) == 3 and len(real) == 33
    recalled = [
        r
        for r in rd.records()
        if r["phase"] == "eval" and {i.rsplit("-", 1)[0] for i in r["recalled_memory_ids"]} & injected
    ]
    assert recalled, "no test task recalled an injected entry"


def test_the_memory_side_grammars_describe_what_their_parsers_read():
    from llama_cpp import LlamaGrammar

    from aecg_bench.runner.labels import _STATUS, JUDGE_GRAMMAR
    from baselines.reasoningbank import items_grammar, parse_items

    for grammar in (items_grammar(3), JUDGE_GRAMMAR):
        LlamaGrammar.from_string(grammar, verbose=False)  # compiles (a bad grammar raises)
    reply = "# Memory Item 1\n## Title Codes\n## Description The order.\n## Content Enter 317 then 582.\n\n"
    assert parse_items(reply)[0].content == "Enter 317 then 582."
    assert items_grammar(3).startswith("root ::= item item? item?")
    assert _STATUS.findall("Thoughts: done\nStatus: SUCCESS") == ["SUCCESS"]


def test_conmem_extraction_and_merge_carry_their_card_grammars_and_a_reply_in_that_shape_is_admitted():
    """The embedded model's reply under the grammar (the prompt's placeholders, copied, each string cut at
    `grammar_max_chars`) parses into a card and is admitted; a model without grammars gets none."""
    from llama_cpp import LlamaGrammar

    from aecg_bench.llm.mock import register_mock_policy
    from baselines.conmem import prompts as CP

    for grammar in (CP.cards_grammar(), CP.cards_grammar(3, 80), CP.merged_card_grammar()):
        LlamaGrammar.from_string(grammar, verbose=False)
    assert "{1,40}" in CP.cards_grammar() and "{1,80}" in CP.cards_grammar(3, 80)
    assert 'card ("," ws card){0,2}' in CP.cards_grammar(3) and "ws card)" not in CP.cards_grammar()
    reply = (
        '[{ "structured_content": { "state": "general problem type", "plan": "reusable strategy or step '
        'structure", "eval": "transferable evaluation criteria, fail-s" }, "trigger_semantics": ["when to use this '
        'card", "another activation phrase"], "summary": "one-sentence reusable pattern", "evidence": "outcome: '
        'success" }]'
    )
    seen: list[Request] = []

    def policy(request: Request, spec: ModelSpec) -> str:
        seen.append(request)
        system = str(request.messages[0]["content"])
        return reply if system == CP.EXTRACT_SYSTEM else bm.memory_policy(request, spec)

    register_mock_policy("procedures_conmem_grammar", policy)
    for capable in (True, False):
        seen.clear()
        services = bm.services(policy="procedures_conmem_grammar")
        services.llm.models["mock"] = services.llm.models["mock"].model_copy(update={"grammar": capable})
        memory = registry.build("memory", "conmem", {"merge_every": 1}, services=services)
        for i in range(3):
            memory.observe(bm.episode(bm.SORT, f"t{i}", True))
            memory.maintain(i + 1)
        extract = [r for r in seen if r.messages[0]["content"] == CP.EXTRACT_SYSTEM]
        merge = [r for r in seen if r.messages[0]["content"] == CP.MERGE_SYSTEM]
        assert len(extract) == 3
        if capable:
            assert all(r.params["grammar"] == CP.cards_grammar(1, 40) for r in extract)
            assert merge and all(r.params["grammar"] == CP.merged_card_grammar(40) for r in merge)
        else:
            assert not any("grammar" in r.params for r in seen)
        admitted = [e for e in memory.audit.events if e["event"] == "admit"]
        assert admitted and admitted[0]["summary"] == "one-sentence reusable pattern"


def test_the_report_script_pairs_each_method_with_no_memory_and_counts_audit_events(make_config, tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("procedures_report", REPO / "scripts" / "procedures_report.py")
    script = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(script)
    for memory in ("no_memory", "aecg"):
        run_from_config(
            make_config("benchmark=procedures", "benchmark.params.size=12", f"memory={memory}", "model=mock_aecg")
        )
    lines = script.report(tmp_path / "results" / "default", "no_memory")
    aecg = next(line for line in lines if "| aecg |" in line)
    assert "| 12 |" in aecg and "0.111" in aecg and "p=" in aecg and "memory_created" in aecg
    assert script.wilson(0, 10)[0] == 0.0 and script.wilson(10, 10)[1] == 1.0
    assert script.report(tmp_path / "nothing", "no_memory") == [f"no procedures runs under {tmp_path / 'nothing'}"]


# Table 2's smoke on procedures with the scripted mock (AgentNet, its 32-task limit, maintenance after every
# task): a world where every family gets early successes (two codes, two steps: chance 1/4), so skills form
# before the drift point and stale ones fail after it; the drift gate's documented floor (ours; as in
# test_aecg_end_to_end) lets 32 tasks reach reviews (with the paper's floor-free rule even 96 tasks review
# nothing: no skill here has the long good history that rule compares against).
TABLE2_MOCK = [
    "framework=agentnet",
    "benchmark=procedures",
    "benchmark.params.controls=2",
    "benchmark.params.length=2",
    "protocol.limit=32",
    "protocol.maintain_every=1",
    "model=mock_aecg",
    "memory.params.drift.reliability_floor=0.6",
]
TABLE2_ABLATIONS = ["aecg_flat_scope", "aecg_no_replay_gate", "aecg_no_governance", "aecg_cumulative_only"]


@pytest.fixture(scope="module")
def table2_mock(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import compose

    root = tmp_path_factory.mktemp("table2") / "results"
    for memory in ["aecg", *TABLE2_ABLATIONS]:
        final = run_from_config(compose([*TABLE2_MOCK, f"memory={memory}"], root))
        assert final["status"] == "complete", final.get("failures")
    return root


def _events(root: Path, memory: str) -> Counter[str]:
    path = next(p for p in root.rglob("audit.jsonl") if f"/{memory}/" in str(p))
    return Counter(json.loads(line)["event"] for line in path.read_text().splitlines())


def test_the_scope_replay_gate_governance_and_drift_ablations_change_aecgs_audit_events_on_procedures(
    table2_mock,
):
    full = _events(table2_mock, "aecg")
    assert full["promotion"] >= 3 and full["review"] >= 1 and full["replay"] >= 1  # governance has work to do
    for ablation in TABLE2_ABLATIONS:
        assert _events(table2_mock, ablation) != full, ablation
    flat, gateless = _events(table2_mock, "aecg_flat_scope"), _events(table2_mock, "aecg_no_replay_gate")
    idle, cumulative = _events(table2_mock, "aecg_no_governance"), _events(table2_mock, "aecg_cumulative_only")
    assert flat["belief_update"] != full["belief_update"]  # objects recalled (and credited) across levels
    assert gateless["activation"] >= 1 and full["activation"] == 0  # candidates go live unreplayed
    assert idle["review_round"] == idle["review"] == idle["replay"] == 0 and idle["promotion"] >= 1
    assert cumulative["review"] != full["review"]  # degradation judged on the slow belief alone


def test_the_report_script_tabulates_audit_events_per_ablation(table2_mock):
    import importlib.util

    spec = importlib.util.spec_from_file_location("procedures_report", REPO / "scripts" / "procedures_report.py")
    script = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(script)
    lines = script.ablation_table(table2_mock)
    assert lines[0] == "framework agentnet:" and "| differs from aecg |" in lines[2]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[4:]}
    assert set(rows) == {"aecg", *TABLE2_ABLATIONS} and rows["aecg"].endswith("| - |")
    assert "review_round" in rows["aecg_no_governance"].rsplit(" | ", 1)[1]
    assert not any(rows[a].endswith("| nothing |") for a in TABLE2_ABLATIONS)


@pytest.mark.slow
def test_with_the_embedded_model_aecg_stores_recalls_and_uses_experience_on_procedures(make_config):
    """SmolLM2-135M, the smoke preset's caps, a world with chance 1/2 (two codes, one step) so that a
    success comes early: AECG stores it without an LLM call, recalls it for a later task and the
    agent's decision uses it (an `observe` event lists it as used)."""
    final = run_from_config(
        make_config(
            "preset=smoke",
            "benchmark=procedures",
            "benchmark.params.controls=2",
            "benchmark.params.length=1",
            "protocol.limit=6",
            "memory=aecg",
        )
    )
    assert final["status"] == "complete", final.get("failures")
    rd = _rundir(final)
    assert len(rd.records()) == 6
    events = [json.loads(line) for line in rd.audit_file.read_text().splitlines()]
    assert any(e["event"] == "memory_created" for e in events)
    assert any(e["event"] == "observe" and e["used"] for e in events)


@pytest.mark.slow
def test_with_the_embedded_model_conmem_admits_cards_and_recalls_them_on_procedures(make_config):
    """SmolLM2-135M under the smoke preset's 96-token cap: with its card grammar every extraction parses
    (before it, none did), cards are admitted and later tasks recall them."""
    final = run_from_config(make_config("preset=smoke", "benchmark=procedures", "protocol.limit=4", "memory=conmem"))
    assert final["status"] == "complete", final.get("failures")
    rd = _rundir(final)
    events = Counter(json.loads(line)["event"] for line in rd.audit_file.read_text().splitlines())
    assert events["admit"] >= 3 and events["skip"] == 0, events
    assert sum(bool(r["recalled_memory_ids"]) for r in rd.records()) >= 2
