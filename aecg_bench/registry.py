"""Registered names -> components, imported lazily.

Configs, result paths and cache keys use these names, never class paths, so a
module can move without invalidating results. Each component class carries
`name` and `version`; bump the version when its behaviour changes. Installed
packages add names through entry points (aecg_bench/plugins.py).
"""

from __future__ import annotations

import importlib
from typing import Any

from aecg_bench.errors import ConfigError, one_line, unknown_choice
from aecg_bench.plugins import BUILT_IN, PluginEntry, plugin_entries

# group -> name -> "module:attribute"
REGISTRY: dict[str, dict[str, str]] = {
    "benchmark": {
        "toy": "aecg_bench.benchmarks.toy:ToyBenchmark",
        "toy_tools": "aecg_bench.benchmarks.toy_tools:ToyToolsBenchmark",
        "procedures": "aecg_bench.benchmarks.procedures:ProceduresBenchmark",
        "fever": "aecg_bench.benchmarks.fever:FeverBenchmark",
        "pddl": "aecg_bench.benchmarks.pddl:PddlBenchmark",
        "scienceworld": "aecg_bench.benchmarks.scienceworld:ScienceWorldBenchmark",
        "mbpp_plus": "aecg_bench.benchmarks.mbpp_plus:MbppPlusBenchmark",
        "mind2web": "aecg_bench.benchmarks.mind2web:Mind2WebBenchmark",
        "mmtb": "aecg_bench.benchmarks.mmtb:MmtbBenchmark",
        "tau2": "aecg_bench.benchmarks.tau2:Tau2Benchmark",
    },
    "framework": {
        "single": "frameworks.single:SingleAgentFramework",
        "autogen": "frameworks.autogen:AutoGenFramework",
        "macnet": "frameworks.macnet:MacNetFramework",
        "agentnet": "frameworks.agentnet:AgentNetFramework",
    },
    "memory": {
        "no_memory": "baselines.no_memory:NoMemory",
        "recorder": "aecg_bench.testing.memory:RecorderMemory",
        "aecg": "aecg_bench.aecg.method:AECGMemory",
        "memorybank": "baselines.memorybank:MemoryBank",
        "reasoningbank": "baselines.reasoningbank:ReasoningBank",
        "reasoningbank_contaminated": "baselines.edv.contamination:ContaminatedReasoningBank",
        "g_memory": "baselines.g_memory:GMemory",
        "conmem": "baselines.conmem:ConMem",
        "macnet_m": "baselines.macnet_m:MacNetMemory",
        "edv": "baselines.edv.method:EDVMemory",
        "judge": "baselines.edv.judge:JudgeEnsemble",
        "router": "baselines.edv.router:AbilityRouter",
    },
}


def names(group: str) -> list[str]:
    """Every name a run may use in `group`: the built-in table and installed plugins."""
    if group not in REGISTRY:
        raise unknown_choice("component group", group, REGISTRY)
    return sorted({*REGISTRY[group], *plugin_entries(group)})


def resolve(group: str, name: str) -> type:
    """The class registered as `name` in `group`, importing its module on first use. A plugin's
    failures (clash, import error, missing name/version, wrong base class) are one line naming
    its package; other names are unaffected."""
    table = REGISTRY.get(group)
    if table is None:
        raise unknown_choice("component group", group, REGISTRY)
    plugins = plugin_entries(group).get(name, ())
    owners = ([BUILT_IN] if name in table else []) + sorted(p.package for p in plugins)
    if len(owners) > 1:
        raise ConfigError(f"{group} {name!r} is registered by several packages: {', '.join(owners)}; uninstall one")
    if name in table:
        return _load_built_in(group, name, table[name])
    if not plugins:
        raise unknown_choice(group, name, names(group))
    return _load_plugin(group, plugins[0])


def _load_built_in(group: str, name: str, target: str) -> type:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ConfigError(f"{group} {name!r} is registered but not implemented ({module_name})") from exc
        raise
    cls = getattr(module, attr)
    for required in ("name", "version"):
        if not hasattr(cls, required):
            raise TypeError(f"{target} lacks the class attribute {required!r}")
    return cls


def _load_plugin(group: str, entry: PluginEntry) -> type:
    where = f"{group} {entry.name!r} from package {entry.package} ({entry.target})"
    module_name, _, attr = entry.target.partition(":")
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, attr) if attr else module
    except Exception as exc:  # anything a broken plugin raises on import is its own fault, said in one line
        raise ConfigError(f"{where} failed to import: {type(exc).__name__}: {one_line(exc)}") from None
    base = _base_class(group)
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ConfigError(f"{where} is not a subclass of {base.__module__}.{base.__name__}")
    for required in ("name", "version"):
        if not isinstance(getattr(cls, required, None), str) or not getattr(cls, required):
            raise ConfigError(f"{where} lacks the class attribute {required!r} (a non-empty string)")
    if cls.name != entry.name:
        raise ConfigError(f"{where} has name {cls.name!r}; the entry point and the class must use one name")
    return cls


def _base_class(group: str) -> type:
    from aecg_bench import contracts

    return {"benchmark": contracts.Benchmark, "framework": contracts.Framework, "memory": contracts.MemoryMethod}[group]


def package_of(group: str, name: str) -> str:
    """Who provides `name`: the built-in table or an installed package (recorded in run.json)."""
    if name in REGISTRY.get(group, {}):
        return BUILT_IN
    plugins = plugin_entries(group).get(name)
    return plugins[0].package if plugins else "unknown"


def build(group: str, name: str, /, *args: Any, **kwargs: Any) -> Any:
    return resolve(group, name)(*args, **kwargs)
