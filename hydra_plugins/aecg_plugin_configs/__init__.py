"""Hydra search-path plugin: installed aecg-bench plugins' `conf/` folders join the config groups, so
`memory=<a plugin's name>` composes like a built-in choice (aecg_bench/plugins.py, docs/extending.md).
The project's own `conf/` stays first: a plugin can add choices, never replace one."""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class AecgPluginConfigs(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from aecg_bench.plugins import plugin_conf_dirs

        for package, conf in plugin_conf_dirs():
            search_path.append(provider=f"aecg-plugin {package}", path=f"file://{conf}")
