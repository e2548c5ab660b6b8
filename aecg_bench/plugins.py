"""Components and configs from installed packages (docs/extending.md).

A package adds a memory method, benchmark or framework by declaring an entry point in one of the
groups below (name = the registered name, value = "module:Class"), and its Hydra configs by
shipping `conf/<group>/<name>.yaml` inside the top-level package of that module. Nothing of a
plugin is imported until a run uses its name, so a broken plugin breaks only the runs that ask
for it, with one line naming its package and the error.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

ENTRY_POINT_GROUPS = {
    "benchmark": "aecg_bench.benchmark",
    "framework": "aecg_bench.framework",
    "memory": "aecg_bench.memory",
}
BUILT_IN = "aecg-bench (built in)"


@dataclass(frozen=True)
class PluginEntry:
    """One component a package registers: where it lives and which distribution declared it."""

    name: str
    target: str  # "module:attribute"
    package: str  # the distribution's name, for error messages and run.json

    @property
    def top_module(self) -> str:
        return self.target.partition(":")[0].split(".")[0]


def _package(ep: EntryPoint) -> str:
    return f"{ep.dist.name} {ep.dist.version}"  # entry points come from installed distributions


@cache
def plugin_entries(group: str) -> dict[str, tuple[PluginEntry, ...]]:
    """name -> every installed package's entry for it (more than one is a clash, refused on use)."""
    out: dict[str, list[PluginEntry]] = {}
    ep_group = ENTRY_POINT_GROUPS.get(group)
    if ep_group is None:
        return {}
    for ep in entry_points(group=ep_group):
        entry = PluginEntry(ep.name, ep.value, _package(ep))
        if entry not in out.setdefault(ep.name, []):  # one distribution seen twice on sys.path
            out[ep.name].append(entry)
    return {name: tuple(entries) for name, entries in out.items()}


@cache
def plugin_conf_dirs() -> tuple[tuple[str, Path], ...]:
    """(package, conf folder) of every installed plugin that ships Hydra configs, found without
    importing it (its top-level package's location on disk)."""
    found: dict[Path, str] = {}
    for group in ENTRY_POINT_GROUPS:
        for entries in plugin_entries(group).values():
            for entry in entries:
                try:
                    spec = importlib.util.find_spec(entry.top_module)
                except (ImportError, ValueError):
                    continue  # reported when a run uses the component
                locations = list(spec.submodule_search_locations or []) if spec else []
                for location in locations:
                    conf = Path(location) / "conf"
                    if conf.is_dir():
                        found.setdefault(conf.resolve(), entry.package)
    return tuple((package, path) for path, package in found.items())


def plugin_config_choices(group: str) -> dict[str, list[str]]:
    """name -> packages shipping `conf/<group>/<name>.yaml`."""
    out: dict[str, list[str]] = {}
    for package, conf in plugin_conf_dirs():
        for path in sorted((conf / group).glob("*.yaml")):
            out.setdefault(path.stem, []).append(package)
    return out


def clear_caches() -> None:
    """Forget what was discovered (tests install packages while running)."""
    plugin_entries.cache_clear()
    plugin_conf_dirs.cache_clear()
