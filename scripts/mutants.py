"""Mutation testing of the method and scoring core, one campaign per package (issue 17).

Why a driver around mutmut: mutmut 3 mutates whole source trees in ./mutants and maps every test to the
functions it calls, which on this repository means collecting the whole suite (minutes, and the embedded-model
tests). A campaign here mutates one package (a benchmark scorer, one AECG module group) and runs only the test
files that cover it, in its own work directory `.mutants/<package>/` (git-ignored), so campaigns are small,
resumable and independent. The packages and their test files are in pyproject.toml
`[tool.aecg_bench.mutation.packages]`; surviving mutants judged equivalent (no behaviour can tell them apart)
are listed with a one-line reason in `scripts/mutants_equivalent.toml` and leave the denominator.

    python scripts/mutants.py run [--fresh] [PACKAGE|PATH ...] [-- mutmut run args]  # mutate, test, score
    python scripts/mutants.py run --retry alive [PACKAGE|PATH ...]   # re-test the mutants not killed yet
    python scripts/mutants.py survivors [PACKAGE|PATH ...]                  # diffs of unexplained survivors
    python scripts/mutants.py score [PACKAGE|PATH ...]                      # scores of the last runs

Score = (killed + timeout) / (all mutants - equivalent). Mutants no selected test reaches ("no tests") count
as not killed. Campaigns run under `nice -n 19` with one mutmut worker unless told otherwise.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutants"
EQUIVALENT_FILE = ROOT / "scripts" / "mutants_equivalent.toml"
# Source trees every campaign copies (so imports work); only the package's own files are mutated.
COPY_TREES = ("aecg_bench", "baselines", "frameworks", "hydra_plugins", "conf", "data", "tests", "scripts", "examples")
COPY_FILES = ("pyproject.toml",)
KILLED = {"killed", "timeout", "caught by type check"}


@dataclass(frozen=True)
class Package:
    name: str
    mutate: tuple[str, ...]
    tests: tuple[str, ...]
    target: float
    pytest_args: tuple[str, ...] = ()  # added to the shared ones (e.g. --deselect of slow data tests)
    # mutmut mutant-name globs (`module.x_function*`): only these functions' mutants are run and scored
    # (a campaign over a few functions of a large module); empty = every mutant of the files
    only: tuple[str, ...] = ()

    def owns(self, mutant: str) -> bool:
        return not self.only or any(fnmatch.fnmatchcase(mutant, g) for g in self.only)


@dataclass
class Score:
    package: str
    statuses: dict[str, str]
    equivalent: dict[str, str]
    stale_equivalent: list[str] = field(default_factory=list)

    def count(self, *names: str) -> int:
        return sum(1 for m, s in self.statuses.items() if s in names and m not in self.equivalent)

    @property
    def killed(self) -> int:
        return self.count(*KILLED)

    @property
    def considered(self) -> int:
        return sum(1 for m in self.statuses if m not in self.equivalent)

    @property
    def survivors(self) -> list[str]:
        return sorted(m for m, s in self.statuses.items() if s not in KILLED and m not in self.equivalent)

    @property
    def score(self) -> float | None:
        return None if self.considered == 0 else self.killed / self.considered


def load_config(root: Path = ROOT) -> tuple[dict[str, Package], dict]:
    """The campaigns (`[tool.aecg_bench.mutation.packages]`) and the settings shared by all of them."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    conf = data.get("tool", {}).get("aecg_bench", {}).get("mutation", {})
    packages = {
        name: Package(
            name,
            tuple(p["mutate"]),
            tuple(p["tests"]),
            float(p.get("target", conf.get("target", 0.9))),
            tuple(p.get("pytest_args", ())),
            tuple(p.get("only", ())),
        )
        for name, p in conf.get("packages", {}).items()
    }
    return packages, conf


def select(packages: dict[str, Package], wanted: list[str]) -> list[Package]:
    """Packages named, or owning a named source path; all of them when nothing is named."""
    if not wanted:
        return list(packages.values())
    chosen: list[Package] = []
    for item in wanted:
        hits = (
            [packages[item]]
            if item in packages
            else [
                p
                for p in packages.values()
                if any(fnmatch.fnmatch(item, g) or g.startswith(item.rstrip("/") + "/") for g in p.mutate)
            ]
        )
        if not hits:
            sys.exit(f"mutants: {item!r} is no mutation package or mutated path; packages: {', '.join(packages)}")
        chosen += [p for p in hits if p not in chosen]
    return chosen


def sync_tree(src: Path, dst: Path) -> None:
    """Copy changed files only, keeping mtimes: mutmut re-mutates a file only when its source is newer."""
    for path in src.rglob("*"):
        if "__pycache__" in path.parts or path.suffix == ".pyc" or not path.is_file():
            continue
        target = dst / path.relative_to(src)
        if (
            target.exists()
            and target.stat().st_mtime == path.stat().st_mtime
            and target.stat().st_size == path.stat().st_size
        ):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def mutmut_section(pkg: Package, conf: dict) -> str:
    def arr(values: list[str] | tuple[str, ...]) -> str:
        return "[" + ", ".join(json.dumps(v) for v in values) + "]"

    # Plain mutmut settings (timeouts, ...) pass through from [tool.aecg_bench.mutation.mutmut].
    extra = [f"{key} = {json.dumps(value)}" for key, value in conf.get("mutmut", {}).items()]

    return "\n".join(
        [
            "",
            "# written by scripts/mutants.py for this campaign",
            "[tool.mutmut]",
            f"source_paths = {arr(['aecg_bench', 'baselines', 'frameworks'])}",
            f"only_mutate = {arr(pkg.mutate)}",
            f"also_copy = {arr(['conf', 'data', 'scripts', 'hydra_plugins', 'examples'])}",
            f"pytest_add_cli_args_test_selection = {arr(pkg.tests)}",
            f"pytest_add_cli_args = {arr([*conf.get('pytest_args', []), *pkg.pytest_args])}",
            "use_git_change_detection = false",
            *extra,
            "",
        ]
    )


def prepare(pkg: Package, conf: dict) -> Path:
    work = WORK / pkg.name
    for tree in COPY_TREES:
        sync_tree(ROOT / tree, work / tree)
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (work / "pyproject.toml").write_text(text + mutmut_section(pkg, conf), encoding="utf-8")
    return work


def statuses(work: Path) -> dict[str, str]:
    from mutmut.stats import status_by_exit_code  # dev extra

    out: dict[str, str] = {}
    for meta in sorted((work / "mutants").rglob("*.py.meta")):
        codes = json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {})
        out.update({name: status_by_exit_code[code] for name, code in codes.items()})
    return out


def equivalents(pkg: str) -> dict[str, str]:
    if not EQUIVALENT_FILE.exists():
        return {}
    return dict(tomllib.loads(EQUIVALENT_FILE.read_text(encoding="utf-8")).get(pkg, {}))


def score_of(pkg: Package) -> Score:
    found = {m: s for m, s in statuses(WORK / pkg.name).items() if pkg.owns(m)}
    listed = equivalents(pkg.name)
    # An equivalent mutant that a test now kills, or that no longer exists, is stale: say so. (A time-out of an
    # equivalent mutant is a slow run, not a kill.)
    stale = sorted(m for m in listed if found.get(m, "killed") in KILLED - {"timeout"})
    return Score(pkg.name, found, {m: r for m, r in listed.items() if m not in stale}, stale)


def report(scores: list[Score], packages: dict[str, Package]) -> bool:
    print(
        f"\n{'package':<22}{'mutants':>8}{'killed':>8}{'(t/o)':>7}{'equiv':>7}{'surv':>6}{'no test':>8}"
        f"{'score':>8}{'target':>8}"
    )
    ok = True
    for s in scores:
        target = packages[s.package].target
        value = s.score
        good = value is not None and value >= target
        ok &= good
        shown = "-" if value is None else f"{100 * value:.1f}%"
        print(
            f"{s.package:<22}{len(s.statuses):>8}{s.killed:>8}{s.count('timeout'):>7}{len(s.equivalent):>7}"
            f"{s.count('survived'):>6}"
            f"{s.count('no tests'):>8}{shown:>8}{100 * target:>7.0f}%{'' if good else '  BELOW TARGET'}"
        )
        for m in s.stale_equivalent:
            print(f"  stale entry in {EQUIVALENT_FILE.name}: {m} (killed or gone)")
    return ok


def run(pkgs: list[Package], conf: dict, mutmut_args: list[str]) -> int:
    mutmut = Path(sys.executable).with_name("mutmut")
    if not mutmut.exists():
        sys.exit("mutants: mutmut is not installed; run `make setup` (it is in the dev extra)")
    args = (
        mutmut_args
        if any(a.startswith("--max-children") for a in mutmut_args)
        else ["--max-children", "1", *mutmut_args]
    )
    # The copy runs from .mutants/<pkg>/mutants, where the tests' default shared-data path does not exist.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.setdefault("AECG_SHARED_DATA", str(ROOT.parent / "shared" / "data"))
    rc = 0
    for pkg in pkgs:
        work = prepare(pkg, conf)
        log = work / "mutmut.log"
        print(
            f"== mutants: {pkg.name}: mutating {', '.join(pkg.mutate)}; tests {', '.join(pkg.tests)}; log {log}",
            flush=True,
        )
        with log.open("w", encoding="utf-8") as out:
            done = subprocess.run(
                ["nice", "-n", "19", str(mutmut), "run", *args],
                cwd=work,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode:
            print(log.read_text(encoding="utf-8", errors="replace")[-3000:])
        rc = rc or done.returncode
    return rc


def survivors(pkgs: list[Package]) -> None:
    mutmut = Path(sys.executable).with_name("mutmut")
    for pkg in pkgs:
        s = score_of(pkg)
        for name in s.survivors:
            print(f"--- {pkg.name}: {name} ({s.statuses[name]})", flush=True)
            subprocess.run([str(mutmut), "show", name], cwd=WORK / pkg.name, check=False)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["run", "survivors", "score"])
    parser.add_argument("packages", nargs="*", help="mutation packages or source paths (default: all)")
    parser.add_argument("--fresh", action="store_true", help="forget earlier results (after changing tests)")
    parser.add_argument(
        "--retry",
        choices=["timeout", "survived", "alive"],
        help="test these mutants again (alive = every one not killed), e.g. after new tests or longer time-outs",
    )
    ns = parser.parse_intermixed_args(argv)
    packages, conf = load_config()
    pkgs = select(packages, ns.packages)
    if ns.command == "survivors":
        survivors(pkgs)
        return 0
    if ns.fresh and ns.command == "run":
        for pkg in pkgs:
            shutil.rmtree(WORK / pkg.name / "mutants", ignore_errors=True)
    if ns.retry and ns.command == "run":
        rc = 0
        for pkg in pkgs:
            s = score_of(pkg)
            wanted = {"timeout": {"timeout"}, "survived": {"survived"}}.get(ns.retry)
            names = [m for m, st in s.statuses.items() if (st in wanted if wanted else st not in KILLED)]
            if names:
                rc = run([pkg], conf, [*extra, *sorted(names)]) or rc  # every campaign runs, whatever one returns
    elif ns.command == "run":
        # a campaign restricted to some functions names them (mutmut then re-runs all of them each time)
        rc = 0
        for pkg in pkgs:
            rc = run([pkg], conf, [*extra, *pkg.only]) or rc
    else:
        rc = 0
    ok = report([score_of(p) for p in pkgs], packages)
    return rc or (0 if ok else 1)


if __name__ == "__main__":
    raise SystemExit(main())
