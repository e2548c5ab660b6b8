"""`python -m aecg_bench.run framework=... benchmark=... memory=... model=... seed=...`

The Hydra entry point for single runs and multirun sweeps (`-m`). Config group
choices are checked before Hydra starts, so `benchmark=pddll` fails with one
line naming the valid choices and the closest match. Errors that would fail
every sample the same way (bad config, missing data, bad key) stop a single
run with exit code 2; inside a multirun sweep they are recorded in that run's
run.json and the sweep goes on.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

from aecg_bench.errors import AecgBenchError, unknown_choice

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
GROUPS = ("framework", "benchmark", "memory", "model", "runtime", "experiment", "preset")
log = logging.getLogger("aecg_bench.run")


def group_choices(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def check_overrides(argv: list[str]) -> None:
    """Fail fast, in one line, on a config group choice that does not exist."""
    for arg in argv:
        if "=" not in arg or arg.startswith("-"):
            continue
        key, _, value = arg.partition("=")
        key = key.lstrip("+~")
        if key not in GROUPS or value.strip() in ("", "null"):
            continue
        if any(token in value for token in ("(", "*", "[")):  # range(), glob(), lists: Hydra's syntax
            continue
        choices = group_choices(key)
        for choice in value.split(","):
            if choice.strip() not in choices:
                raise unknown_choice(key, choice.strip(), choices)


def precheck(argv: list[str]) -> None:
    """Compose and validate the command's config (first value of each sweep) before Hydra runs,
    so a typo fails in one line (with the valid keys) instead of a Hydra error block."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import ConfigCompositionException, OverrideParseException
    from omegaconf import OmegaConf

    from aecg_bench.errors import ConfigError
    from aecg_bench.runner.config import parse_run_config, validate_components

    args = [a for a in argv if not a.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(args)
    except OverrideParseException as exc:
        raise ConfigError(f"cannot parse overrides: {str(exc).splitlines()[0]}") from None
    first = []
    for ov in parsed:
        if ov.get_key_element().startswith("hydra"):
            continue
        value = next(iter(ov.sweep_string_iterator())) if ov.is_sweep_override() else ov.get_value_element_as_str()
        first.append(f"{ov.get_key_element()}={value}")

    def _compose(overrides: list[str]) -> dict[str, Any]:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="config", overrides=overrides)
        raw = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(raw, dict)
        return raw

    try:
        raw = _compose(first)
    except ConfigCompositionException as exc:
        key = re.search(r"Could not override '([^']+)'", str(exc))
        if key is None:
            raise ConfigError(str(exc).strip().splitlines()[0]) from None
        # Let the schema name the valid keys: re-add the unknown key and validate.
        forced = [f"+{o}" if o.split("=", 1)[0] == key.group(1) else o for o in first]
        validate_components(parse_run_config(_compose(forced)))
        raise ConfigError(f"unknown key {key.group(1)!r}") from None
    validate_components(parse_run_config(raw))


def run_from_config(raw: dict[str, Any], *, in_sweep: bool = False) -> dict[str, Any] | None:
    """Validate, build and run one configuration (Hydra-free, used by tests too)."""
    from aecg_bench.runner.batch import run_plan
    from aecg_bench.runner.build import build
    from aecg_bench.runner.config import parse_run_config
    from aecg_bench.runner.logs import setup_logging

    cfg = parse_run_config(raw)
    plan, services, audit = build(cfg)
    setup_logging(plan.run_dir, cfg.runtime.log_level, quiet_console=cfg.runtime.progress)
    try:
        final = run_plan(plan, services, audit)
    except AecgBenchError as exc:
        _record_failure(plan.run_dir, exc)
        if in_sweep:
            log.error("run %s failed: %s", plan.run_dir, exc)
            return None
        raise
    ev = final["eval"]
    rate = "-" if ev["success_rate"] is None else f"{ev['success_rate']:.3f}"
    print(
        f"{final['status']}: {plan.run_dir} success={rate} scored={ev['scored']}/{ev['n']} "
        f"infra_errors={final['failures']['infra_error']} cost=${final['cost']:.4f}"
    )
    return final


def _record_failure(run_dir: Path, exc: Exception) -> None:
    from aecg_bench.runner.records import RunDir

    rd = RunDir(run_dir)
    header = rd.read_header()
    if header is not None:
        header.update(status="failed", error=str(exc)[:2000])
        rd.write_header(header)


def _hydra_entry() -> None:
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import DictConfig, OmegaConf

    from aecg_bench.llm.threads import set_concurrent_jobs

    @hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
    def _main(cfg: DictConfig) -> None:
        in_sweep = HydraConfig.get().mode == RunMode.MULTIRUN
        if in_sweep:  # the launcher's parallel jobs share the cores (sequential launchers have no n_jobs)
            set_concurrent_jobs(HydraConfig.get().launcher.get("n_jobs"))
        raw = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(raw, dict)
        try:
            run_from_config(raw, in_sweep=in_sweep)
        except AecgBenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)

    _main()


def main() -> None:
    try:
        check_overrides(sys.argv[1:])
        precheck(sys.argv[1:])
    except AecgBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    _hydra_entry()


if __name__ == "__main__":
    main()
