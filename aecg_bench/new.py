"""`python -m aecg_bench.new memory|benchmark|framework NAME [--out DIR]`: a working plugin package.

It writes `aecg-<name>/` with a small real component (a recency-window memory, an addition
benchmark, a planner-actor framework), its Hydra config, the entry point that registers it, and a
test file that runs aecg-bench's conformance kit on it. `pip install -e aecg-<name>` and
`<kind>=<name>` runs (docs/extending.md).
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
KINDS = {
    "memory": "A recency-window memory method",
    "benchmark": "An addition benchmark",
    "framework": "A planner-actor framework",
}
RUN_EXAMPLES = {
    "memory": "benchmark=toy framework=autogen model=mock",
    "benchmark": "memory=no_memory model=mock",
    "framework": "benchmark=toy memory=no_memory model=mock",
}
NAME = re.compile(r"[a-z][a-z0-9_]*")


def files_for(kind: str, name: str) -> dict[str, str]:
    """Relative path -> content of the package for `name` (pure: no disk writes)."""
    from aecg_bench.errors import ConfigError, unknown_choice

    if kind not in KINDS:
        raise unknown_choice("plugin kind", kind, KINDS)
    if not NAME.fullmatch(name) or keyword.iskeyword(name):
        raise ConfigError(f"plugin name {name!r} must be lower-case letters, digits and _, starting with a letter")
    subs = {
        "__KIND__": kind,
        "__NAME__": name,
        "__DIST__": name.replace("_", "-"),
        "__CLASS__": "".join(part.capitalize() for part in name.split("_")) + kind.capitalize(),
        "__SUMMARY__": f"{KINDS[kind]} for aecg-bench, registered as {kind}={name}.",
        "__RUN_EXAMPLE__": RUN_EXAMPLES[kind],
    }

    def fill(template: str) -> str:
        text = (TEMPLATES / template).read_text()
        for key, value in subs.items():
            text = text.replace(key, value)
        return text

    package = f"aecg_{name}"
    return {
        "pyproject.toml": fill("pyproject.toml.tmpl"),
        "README.md": fill("README.md.tmpl"),
        f"{package}/__init__.py": fill("init.py.tmpl"),
        f"{package}/{kind}.py": fill(f"{kind}/module.py.tmpl"),
        f"{package}/conf/{kind}/{name}.yaml": fill(f"{kind}/config.yaml.tmpl"),
        f"tests/test_{name}.py": fill(f"{kind}/test.py.tmpl"),
    }


def write_package(kind: str, name: str, out: Path) -> Path:
    """Write the package under `out`; refuses to overwrite an existing folder."""
    from aecg_bench.errors import ConfigError

    target = out / f"aecg-{name.replace('_', '-')}"
    if target.exists():
        raise ConfigError(f"{target} exists; pick another --out or NAME")
    for rel, text in files_for(kind, name).items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return target


def main(argv: list[str] | None = None) -> int:
    from aecg_bench.errors import AecgBenchError

    parser = argparse.ArgumentParser(prog="python -m aecg_bench.new", description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", help="memory | benchmark | framework")
    parser.add_argument("name", help="the registered name, e.g. my_memory (used as memory=my_memory)")
    parser.add_argument("--out", type=Path, default=Path("."), help="folder to write aecg-<name>/ into")
    args = parser.parse_args(argv)
    try:
        target = write_package(args.kind, args.name, args.out)
    except (AecgBenchError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"wrote {target}\nnext:\n  pip install -e {target}\n  python -m pytest {target / 'tests'}\n"
        f"  python -m aecg_bench.run {args.kind}={args.name} {RUN_EXAMPLES[args.kind]}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
