"""Components and configs from installed packages (issue 31): entry points beside the built-in table,
their configs in the config groups, one-line errors for broken plugins, the conformance kit (passing
on the example plugin and the scaffolds, failing on a planted defect of each kind), and the scaffolder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import plugin_fixtures as pf
import pytest
from conftest import REPO

from aecg_bench import plugins, registry
from aecg_bench.errors import ConfigError
from aecg_bench.new import files_for
from aecg_bench.run import check_overrides, run_from_config
from aecg_bench.testing import conformance

EXAMPLE = REPO / "examples" / "aecg-recency-window"

GOOD_MEMORY = """
from aecg_bench.testing.memory import RecorderMemory

class Mine(RecorderMemory):
    name = "mine"
    version = "1"
"""


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path that installed packages land in; discovery caches cleared around the test."""
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    plugins.clear_caches()
    yield path
    plugins.clear_caches()
    for name in [m for m in sys.modules if m.split(".")[0] in {"mine_pkg", "broken_pkg", "other_pkg", "defects"}]:
        del sys.modules[name]


def _cli(*args: str, extra_path: Path | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    path = os.pathsep.join(str(p) for p in (REPO, extra_path) if p)
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(
        [sys.executable, "-m", "aecg_bench.run", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


# --- discovery ----------------------------------------------------------------------------------


def test_a_plugin_method_resolves_composes_runs_and_joins_the_choices(site, make_config):
    pf.install_fake(
        site,
        "mine-pkg",
        "mine_pkg",
        entry_points={"memory": {"mine": "mine_pkg.method:Mine"}},
        modules={"method.py": GOOD_MEMORY},
        configs=pf.configs_for("memory", ["mine"], "{k: 1}"),
    )
    assert "mine" in registry.names("memory")
    assert registry.resolve("memory", "mine").__name__ == "Mine"
    assert registry.package_of("memory", "mine") == "mine-pkg 0.1"
    raw = make_config("memory=mine", "benchmark.params.size=3")
    assert raw["memory"] == {"name": "mine", "params": {"k": 1}}
    final = run_from_config(raw)
    assert final["status"] == "complete"
    assert final["component_packages"] == {
        "benchmark": "aecg-bench (built in)",
        "framework": "aecg-bench (built in)",
        "memory": "mine-pkg 0.1",
    }
    with pytest.raises(ConfigError, match=r"unknown memory 'mien'; valid choices: .*\bmine\b.*did you mean 'mine'"):
        check_overrides(["memory=mien"])


BROKEN = {
    "import_error": (
        "broken_pkg.method:Mine",
        "raise RuntimeError('missing dependency foo')",
        r"failed to import: "
        r"RuntimeError: missing dependency foo",
    ),
    "no_version": (
        "broken_pkg.method:Mine",
        GOOD_MEMORY.replace('    version = "1"\n', "    version = ''\n"),
        "lacks the class attribute 'version'",
    ),
    "name_mismatch": (
        "broken_pkg.method:Mine",
        GOOD_MEMORY.replace('name = "mine"', 'name = "other"'),
        "has name 'other'",
    ),
    "not_a_memory": (
        "broken_pkg.method:Mine",
        "class Mine:\n    name = 'mine'\n    version = '1'\n",
        "not a subclass of aecg_bench.contracts.MemoryMethod",
    ),
    "missing_class": ("broken_pkg.method:Nope", GOOD_MEMORY, "failed to import: AttributeError"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_plugin_is_one_line_naming_its_package_and_spares_other_runs(case, site, make_config):
    target, source, expected = BROKEN[case]
    pf.install_fake(
        site,
        "broken-pkg",
        "broken_pkg",
        entry_points={"memory": {"mine": target}},
        modules={"method.py": source},
        configs=pf.configs_for("memory", ["mine"]),
    )
    with pytest.raises(ConfigError, match=expected) as err:
        registry.resolve("memory", "mine")
    assert "broken-pkg 0.1" in str(err.value) and "\n" not in str(err.value)
    assert run_from_config(make_config("memory=no_memory", "benchmark.params.size=2"))["status"] == "complete"


def test_the_cli_says_a_broken_plugin_in_one_line_without_a_traceback(site, tmp_path):
    pf.install_fake(
        site,
        "broken-pkg",
        "broken_pkg",
        entry_points={"memory": {"mine": "broken_pkg.method:Mine"}},
        modules={"method.py": "import not_installed_dependency\n"},
        configs=pf.configs_for("memory", ["mine", "orphan"]),
    )
    out = _cli("memory=mine", f"runtime.results_root={tmp_path / 'r'}", extra_path=site)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: memory 'mine' from package broken-pkg 0.1 (broken_pkg.method:Mine) failed to import: "
        "ModuleNotFoundError: No module named 'not_installed_dependency'"
    ]
    orphan = _cli("memory=orphan", f"runtime.results_root={tmp_path / 'r'}", extra_path=site)  # a config, no class
    assert orphan.returncode == 2 and "Traceback" not in orphan.stderr
    assert orphan.stderr.startswith("error: unknown memory 'orphan'; valid choices: ")
    assert len(orphan.stderr.strip().splitlines()) == 1


def test_broken_benchmark_and_framework_plugins_name_their_contract(site):
    pf.install_fake(
        site,
        "broken-pkg",
        "broken_pkg",
        entry_points={
            "benchmark": {"b": "broken_pkg.m:Mine"},
            "framework": {"f": "broken_pkg.m:Mine"},
            "memory": {"m": "broken_pkg.m"},
        },
        modules={"m.py": GOOD_MEMORY},
    )
    for group, name, contract in (
        ("benchmark", "b", "Benchmark"),
        ("framework", "f", "Framework"),
        ("memory", "m", "MemoryMethod"),
    ):
        with pytest.raises(
            ConfigError,
            match=rf"{group} '{name}' from package broken-pkg 0.1 .* not a subclass of aecg_bench.contracts.{contract}$",
        ):
            registry.resolve(group, name)


def test_the_registry_names_unknown_groups_and_names_and_builds_with_params(tmp_path):
    from aecg_bench.audit import AuditLog
    from aecg_bench.contracts import MemoryServices

    for call in (lambda: registry.names("memroy"), lambda: registry.resolve("memroy", "x")):
        with pytest.raises(
            ConfigError,
            match=r"^unknown component group 'memroy'; valid choices: benchmark, framework, memory; did you mean 'memory'\?$",
        ):
            call()
    with pytest.raises(ConfigError, match=r"^unknown memory 'aecgg'; valid choices: .*did you mean 'aecg'\?$"):
        registry.resolve("memory", "aecgg")
    services = MemoryServices(llm=None, embedder=None, audit=AuditLog(tmp_path / "a.jsonl"))
    assert registry.build("memory", "recorder", {"k": 5}, services=services).params.k == 5
    assert (registry.package_of("memory", "aecg"), registry.package_of("memory", "nope")) == (
        "aecg-bench (built in)",
        "unknown",
    )
    assert registry.package_of("nogroup", "x") == "unknown"


def test_a_built_in_whose_module_is_missing_or_broken_says_so(monkeypatch, site):
    monkeypatch.setitem(registry.REGISTRY["memory"], "ghost", "baselines.no_such_module:Ghost")
    with pytest.raises(
        ConfigError, match=r"^memory 'ghost' is registered but not implemented \(baselines.no_such_module\)$"
    ):
        registry.resolve("memory", "ghost")
    (site / "probe_needs_dep.py").write_text("import not_installed_dependency\n")
    monkeypatch.setitem(registry.REGISTRY["memory"], "needs_dep", "probe_needs_dep:X")
    with pytest.raises(
        ModuleNotFoundError, match="not_installed_dependency"
    ):  # a missing dependency is not "not implemented"
        registry.resolve("memory", "needs_dep")
    monkeypatch.setitem(registry.REGISTRY["memory"], "nameless", "aecg_bench.contracts:Params")
    with pytest.raises(TypeError, match=r"^aecg_bench.contracts:Params lacks the class attribute 'name'$"):
        registry.resolve("memory", "nameless")


def test_two_packages_with_one_name_are_refused_naming_both(site):
    for dist, package in (("mine-pkg", "mine_pkg"), ("other-pkg", "other_pkg")):
        pf.install_fake(
            site,
            dist,
            package,
            entry_points={"memory": {"mine": f"{package}.method:Mine"}},
            modules={"method.py": GOOD_MEMORY},
        )
    with pytest.raises(ConfigError, match=r"memory 'mine' is registered by several packages: mine-pkg 0.1, other-pkg"):
        registry.resolve("memory", "mine")
    pf.install_fake(
        site, "shadow-pkg", "shadow_pkg", entry_points={"memory": {"aecg": "shadow_pkg.m:X"}}, modules={"m.py": ""}
    )
    plugins.clear_caches()
    with pytest.raises(ConfigError, match=r"'aecg' is registered by several packages: aecg-bench \(built in\), shadow"):
        registry.resolve("memory", "aecg")
    assert registry.resolve("memory", "no_memory").name == "no_memory"  # other names unaffected


def test_a_plugin_config_cannot_replace_a_built_in_one(site):
    pf.install_fake(
        site,
        "mine-pkg",
        "mine_pkg",
        entry_points={"memory": {"mine": "mine_pkg.method:Mine"}},
        modules={"method.py": GOOD_MEMORY},
        configs=pf.configs_for("memory", ["mine", "aecg"]),
    )
    with pytest.raises(ConfigError, match=r"memory config 'aecg' is shipped by several packages: aecg-bench"):
        check_overrides(["memory=aecg"])
    check_overrides(["memory=mine"])


# --- the example plugin, installed with pip --------------------------------------------------------


@pytest.fixture(scope="module")
def example_site(tmp_path_factory):
    """examples/aecg-recency-window installed with pip into its own folder (no network: build
    dependencies from the venv)."""
    work = tmp_path_factory.mktemp("example")
    shutil.copytree(EXAMPLE, work / "src")
    site = work / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run([*pip, "--target", str(site), str(work / "src")], check=True, capture_output=True, timeout=300)
    return site


def test_the_example_plugin_installs_with_pip_and_runs_from_the_cli(example_site, tmp_path):
    out = _cli(
        "memory=recency_window",
        "framework=autogen",
        "benchmark=toy",
        "+model.models.mock.options.error_rate=0.3",
        f"runtime.results_root={tmp_path / 'r'}",
        "runtime.progress=false",
        extra_path=example_site,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "complete:" in out.stdout and "/recency_window/mock/seed=0" in out.stdout


def test_the_conformance_kit_passes_on_the_example_plugin(example_site, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(example_site)])}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:]
    assert f"{len(conformance.MEMORY_CHECKS) + 1} passed" in out.stdout


def test_the_example_is_what_the_scaffolder_writes():
    written = files_for("memory", "recency_window")
    on_disk = {str(p.relative_to(EXAMPLE)): p.read_text() for p in EXAMPLE.rglob("*") if p.is_file()}
    assert on_disk == written


# --- the scaffolder ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["benchmark", "framework"])
def test_a_scaffolded_package_passes_the_kit_once_installed(kind, site, tmp_path):
    name = f"my_{kind}"
    for rel, text in files_for(kind, name).items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    target = f"aecg_{name}.{kind}:My{kind.capitalize()}{kind.capitalize()}"
    pf.install_fake(site, f"aecg-{name}", f"aecg_{name}", entry_points={kind: {name: target}})
    (site / f"aecg_{name}" / "__init__.py").write_text(files_for(kind, name)[f"aecg_{name}/__init__.py"])
    checks = conformance.BENCHMARK_CHECKS if kind == "benchmark" else conformance.FRAMEWORK_CHECKS
    for check in checks:
        check(tmp_path / check.__name__, **{kind: name})


def test_the_scaffolder_refuses_bad_names_and_kinds_in_one_line(tmp_path, capsys):
    from aecg_bench.new import main

    assert main(["storage", "x", "--out", str(tmp_path)]) == 2
    assert (
        capsys.readouterr().err == "error: unknown plugin kind 'storage'; valid choices: benchmark, framework, memory\n"
    )
    assert main(["memory", "Bad-Name", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "error: plugin name 'Bad-Name' must be lower-case letters, digits and _, starting with a letter\n"
    )
    assert main(["memory", "class", "--out", str(tmp_path)]) == 2, "a Python keyword cannot name a package"
    assert not list(tmp_path.iterdir())


def test_the_scaffolder_writes_into_the_current_folder_and_never_overwrites(tmp_path, capsys, monkeypatch):
    from aecg_bench.new import main

    monkeypatch.chdir(tmp_path)
    assert main(["memory", "my_mem"]) == 0
    target = Path("aecg-my-mem")
    assert (tmp_path / target / "aecg_my_mem" / "memory.py").is_file()
    assert capsys.readouterr().out.splitlines() == [
        f"wrote {target}",
        "next:",
        f"  pip install -e {target}",
        f"  python -m pytest {target / 'tests'}",
        "  python -m aecg_bench.run memory=my_mem benchmark=toy framework=autogen model=mock",
    ]
    assert main(["memory", "my_mem"]) == 2
    assert capsys.readouterr().err == f"error: {target} exists; pick another --out or NAME\n"


def test_the_scaffolders_help_names_the_kinds_and_the_output_folder(capsys):
    from aecg_bench.new import main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert text.startswith("usage: python -m aecg_bench.new [-h] [--out OUT] kind name")
    for phrase in (
        "kind memory | benchmark | framework",
        "name the registered name, e.g. my_memory (used as memory=my_memory)",
        "--out OUT folder to write aecg-<name>/ into",
        "a working plugin package",
    ):
        assert phrase in text
    assert "It writes" not in text, "the description is the docstring's first paragraph"


# --- the kit catches a planted defect of each kind ---------------------------------------------------

DEFECTS = [
    ("memory", "forgets_in_snapshot", conformance.memory_resume_after_kill),
    ("memory", "forgets_in_snapshot", conformance.memory_state_round_trips),
    ("memory", "global_random", conformance.memory_is_deterministic),
    ("memory", "reads_gold", conformance.memory_reads_no_gold),
    ("memory", "calls_litellm", conformance.memory_calls_go_through_the_client),
    ("memory", "accepts_typos", conformance.memory_params_are_validated),
    ("benchmark", "raises_on_bad_action", conformance.benchmark_env_survives_bad_actions),
    ("benchmark", "unseeded_samples", conformance.benchmark_samples_are_stable),
    ("benchmark", "noisy_score", conformance.benchmark_runs_end_to_end),
    ("benchmark", "accepts_typos_bench", conformance.benchmark_params_are_validated),
    ("framework", "acts_without_deciding", conformance.framework_records_decisions_and_recalls),
    ("framework", "global_random_fw", conformance.framework_is_deterministic),
    ("framework", "peeks_at_gold", conformance.framework_reads_no_gold),
    ("framework", "forgets_learning", conformance.framework_resume_after_kill),
    ("framework", "accepts_typos_fw", conformance.framework_params_are_validated),
]
HEALTHY = {"memory": "healthy", "benchmark": "healthy_bench", "framework": "healthy_fw"}


@pytest.fixture
def defects(site):
    sources = {"memory": pf.DEFECTIVE_MEMORY, "benchmark": pf.DEFECTIVE_BENCHMARK, "framework": pf.DEFECTIVE_FRAMEWORK}
    classes = {
        "memory": {
            "healthy": "Healthy",
            "forgets_in_snapshot": "ForgetsInSnapshot",
            "global_random": "GlobalRandom",
            "reads_gold": "ReadsGold",
            "calls_litellm": "CallsLitellm",
            "accepts_typos": "AcceptsTypos",
        },
        "benchmark": {
            "healthy_bench": "Healthy",
            "raises_on_bad_action": "RaisesOnBadAction",
            "unseeded_samples": "UnseededSamples",
            "noisy_score": "NoisyScore",
            "accepts_typos_bench": "AcceptsTyposBench",
        },
        "framework": {
            "healthy_fw": "Healthy",
            "acts_without_deciding": "ActsWithoutDeciding",
            "global_random_fw": "GlobalRandomFw",
            "peeks_at_gold": "PeeksAtGold",
            "forgets_learning": "ForgetsLearning",
            "accepts_typos_fw": "AcceptsTyposFw",
        },
    }
    configs: dict[str, str] = {}
    for kind, names in classes.items():
        configs.update(pf.configs_for(kind, list(names)))
    pf.install_fake(
        site,
        "defects",
        "defects",
        entry_points={kind: {n: f"defects.{kind}:{c}" for n, c in names.items()} for kind, names in classes.items()},
        modules={f"{kind}.py": source for kind, source in sources.items()},
        configs=configs,
    )
    return site


@pytest.mark.parametrize(("kind", "name", "check"), DEFECTS, ids=[f"{n}-{c.__name__}" for _, n, c in DEFECTS])
def test_the_kit_fails_a_planted_defect_and_passes_the_healthy_twin(kind, name, check, defects, tmp_path):
    check(tmp_path / "healthy", **{kind: HEALTHY[kind]})
    with pytest.raises(conformance.ConformanceError):
        check(tmp_path / "defect", **{kind: name})


# --- every built-in component passes (slow: ~3 minutes) ---------------------------------------------

# EDV and its Router draw executors from a pool of models (n_executors=2); the Judge runs with one
SPECIAL = {"edv": ["model=edv_pool_mock"], "router": ["model=edv_pool_mock"], "judge": []}


@pytest.mark.slow
@pytest.mark.parametrize("check", conformance.MEMORY_CHECKS, ids=conformance.check_id)
@pytest.mark.parametrize("name", registry.names("memory"))
def test_every_built_in_memory_method_passes_the_kit(name, check, tmp_path):
    check(tmp_path, memory=name, overrides=SPECIAL.get(name, []))


@pytest.mark.slow
@pytest.mark.parametrize("check", conformance.FRAMEWORK_CHECKS, ids=conformance.check_id)
@pytest.mark.parametrize("name", registry.names("framework"))
def test_every_built_in_framework_passes_the_kit(name, check, tmp_path):
    check(tmp_path, framework=name)


@pytest.mark.slow
@pytest.mark.parametrize("check", conformance.BENCHMARK_CHECKS, ids=conformance.check_id)
@pytest.mark.parametrize("name", registry.names("benchmark"))
def test_every_built_in_benchmark_passes_the_kit(name, check, tmp_path, monkeypatch):
    data_root = _benchmark_data(name, tmp_path, monkeypatch)
    check(tmp_path, benchmark=name, data_root=data_root, overrides=_offline(name))


def _offline(name: str) -> list[str]:
    return ["benchmark.params.download=false"] if name in ("mind2web", "mmtb") else []


def _benchmark_data(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared data, or the tests' fixtures for the benchmarks whose data comes from a hub."""
    from conftest import SHARED_DATA

    if name == "mind2web":
        from test_mind2web import make_data

        make_data(tmp_path / "data")
        return tmp_path / "data"
    if name == "mmtb":
        from test_mmtb import ENTRY_1, ENTRY_2, write_entries

        from aecg_bench.benchmarks.mmtb import data

        _, blob = write_entries(tmp_path / "data", [ENTRY_1, ENTRY_2])
        monkeypatch.setattr(data, "BLOB_SHA1", blob)
        return tmp_path / "data"
    if name in ("toy", "toy_tools", "procedures"):  # generated, no data files
        return tmp_path / "data"
    if not (SHARED_DATA / "README.md").exists():
        pytest.skip(f"shared benchmark data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.mark.slow
def test_a_table1_sweep_with_the_plugin_added_renders_its_row_in_the_table_and_the_report(example_site, tmp_path):
    """Table 1's sweep (the paper experiment's config, on toy with the mock model to stay offline and short)
    with the plugin's column added as `make reproduce-table1 METHODS=+recency_window` adds it."""
    root = tmp_path / "results"
    sweep = _cli(
        "experiment=aecg_table1",
        "model=mock",
        "memory=no_memory,recency_window",
        "framework=autogen",
        "benchmark=toy",
        "seed=0,1",
        "protocol.limit=4",
        f"runtime.results_root={root}",
        "runtime.progress=false",
        "hydra.launcher.n_jobs=1",
        extra_path=example_site,
    )
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(example_site)])}
    for cmd in (
        [sys.executable, "scripts/make_table1.py", str(root / "aecg_table1")],
        [sys.executable, "-m", "aecg_bench.analysis.site", "--results", str(root), "--out", str(tmp_path / "report")],
    ):
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
    tables = list((root / "aecg_table1" / "tables").glob("table1*.md"))
    assert any("recency_window" in t.read_text() for t in tables), [t.name for t in tables]
    assert "recency_window" in (tmp_path / "report" / "report.md").read_text()
