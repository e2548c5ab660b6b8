"""Registered names -> components, imported lazily.

Configs, result paths and cache keys use these names, never class paths, so a
module can move without invalidating results. Each component class carries
`name` and `version`; bump the version when its behaviour changes.
"""

from __future__ import annotations

import importlib
from typing import Any

from aecg_bench.errors import ConfigError, unknown_choice

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
    if group not in REGISTRY:
        raise unknown_choice("component group", group, REGISTRY)
    return sorted(REGISTRY[group])


def resolve(group: str, name: str) -> type:
    """The class registered as `name` in `group`, importing its module on first use."""
    table = REGISTRY.get(group)
    if table is None:
        raise unknown_choice("component group", group, REGISTRY)
    target = table.get(name)
    if target is None:
        raise unknown_choice(group, name, table)
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


def build(group: str, name: str, /, *args: Any, **kwargs: Any) -> Any:
    return resolve(group, name)(*args, **kwargs)
