"""`python -m aecg_bench.run framework=... benchmark=... memory=... model=... seed=...`

The Hydra entry point for single runs and multirun sweeps (`-m`). Config group
choices are checked before Hydra starts, so `benchmark=pddll` fails with one
line naming the valid choices and the closest match. Errors that would fail
every sample the same way (bad config, missing data, bad key) stop a single
run with exit code 2 and one line; inside a multirun sweep they are recorded in
that run's run.json and the sweep goes on, then prints every run's outcome and
exits 2 if any run failed, was refused or was stopped. Everything printed is
redacted against the configured API keys (see runner/logs.py).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

from aecg_bench.errors import AecgBenchError, BudgetExceededError, ConfigError, RunRefused, one_line, unknown_choice

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
GROUPS = ("framework", "benchmark", "memory", "model", "runtime", "experiment", "preset", "arm")
log = logging.getLogger("aecg_bench.run")


def group_choices(group: str) -> list[str]:
    """The config names of a group: the project's `conf/<group>/` and installed plugins' (aecg_bench/plugins.py)."""
    from aecg_bench.plugins import plugin_config_choices

    return sorted({p.stem for p in (CONF_DIR / group).glob("*.yaml")} | set(plugin_config_choices(group)))


def check_config_owner(group: str, choice: str) -> None:
    """A config name shipped by a plugin and by the project (or by two plugins) is refused: Hydra would
    silently take the first on its search path."""
    from aecg_bench.plugins import BUILT_IN, plugin_config_choices

    owners = ([BUILT_IN] if (CONF_DIR / group / f"{choice}.yaml").exists() else []) + plugin_config_choices(group).get(
        choice, []
    )
    if len(owners) > 1:
        raise ConfigError(f"{group} config {choice!r} is shipped by several packages: {', '.join(owners)}; rename one")


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
            check_config_owner(key, choice.strip())


def resolve(cfg: Any) -> dict[str, Any]:
    """The config as a plain dict; an unresolvable interpolation (a missing `${oc.env:...}`)
    becomes one line naming the key instead of OmegaConf's traceback."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        raw = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = re.sub(r"^\w+ raised while resolving interpolation: ", "", first).strip("\"'")
        key = getattr(exc, "full_key", None)
        where = f" (config key {key!r})" if key else ""
        hint = "; set it, or give the interpolation a default: ${oc.env:NAME,default}" if "nvironment" in first else ""
        raise ConfigError(f"{first}{where}{hint}") from None
    assert isinstance(raw, dict)
    return raw


def secret_envs(raw: dict[str, Any]) -> list[str]:
    """The environment variables the configured models read their keys from."""
    models = (raw.get("model") or {}).get("models") or {}
    return sorted({m["api_key_env"] for m in models.values() if isinstance(m, dict) and m.get("api_key_env")})


def precheck(argv: list[str]) -> dict[str, Any]:
    """Compose and validate the command's config (first value of each sweep) before Hydra runs,
    so a typo fails in one line (with the valid keys) instead of a Hydra error block.
    Returns that config (its key variables redact the console; it says whether to serve the model)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import ConfigCompositionException, OverrideParseException

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
        return resolve(cfg)

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
    return raw


def launcher_jobs(argv: list[str]) -> int | None:
    """How many runs of this command may share the machine, as conf/hydra/launcher/local.yaml decides
    (`hydra.launcher.n_jobs=`, else $AECG_JOBS, else 2), also for a single run (whether a command
    sweeps can be set in its experiment config; an unused server slot costs only its KV memory);
    None when the runs execute elsewhere (runtime=slurm|ray), where each job serves its own model."""
    if any(a.startswith("runtime=") and a.split("=", 1)[1] != "local" for a in argv):
        return None
    given = next((a.split("=", 1)[1] for a in argv if a.startswith("hydra.launcher.n_jobs=")), None)
    try:
        return int(given or os.environ.get("AECG_JOBS") or 2)
    except ValueError:
        return 1


def run_from_config(raw: dict[str, Any], *, in_sweep: bool = False) -> dict[str, Any] | None:
    """Validate, build and run one configuration (Hydra-free, used by tests too).

    The run's own errors are recorded in its run.json by `run_plan` (only by the process that
    holds its lock); here they are reported. In a sweep they become the run's outcome line and
    the sweep goes on; otherwise they propagate (the CLI prints one line, exit 2).
    """
    from aecg_bench.errors import io_error
    from aecg_bench.runner import lifecycle
    from aecg_bench.runner.batch import run_plan
    from aecg_bench.runner.build import build
    from aecg_bench.runner.config import parse_run_config
    from aecg_bench.runner.identity import Redactor
    from aecg_bench.runner.logs import setup_logging

    redactor = Redactor(secret_envs(raw))
    where = _describe(raw)
    try:
        cfg = parse_run_config(raw)
        try:
            plan, services, audit = build(cfg)
        except OSError as exc:
            raise io_error(exc) from None
        where = str(plan.run_dir)

        def on_locked() -> None:
            setup_logging(plan.run_dir, cfg.runtime.log_level, quiet_console=cfg.runtime.progress, redact=redactor)

        final = run_plan(plan, services, audit, on_locked=on_locked)
    except AecgBenchError as exc:
        if not in_sweep:
            raise
        status = (
            "refused"
            if isinstance(exc, RunRefused)
            else "stopped"
            if isinstance(exc, BudgetExceededError)
            else "failed"
        )
        _sweep_report(where, status, redactor(one_line(exc)))
        return None
    except KeyboardInterrupt:
        if in_sweep:
            lifecycle.record_outcome(where, "interrupted", "stopped by a signal")
        raise
    except Exception as exc:  # a bug: in a sweep, the other runs still go on
        if not in_sweep:
            raise
        log.exception("run %s failed", where)
        _sweep_report(where, "failed", redactor(one_line(f"{type(exc).__name__}: {exc}")))
        return None
    ev = final["eval"]
    rate = "-" if ev["success_rate"] is None else f"{ev['success_rate']:.3f}"
    resumed = ""
    if final.get("resumes"):
        last = final["resumes"][-1]
        resumed = f" (resumed: found it {last.get('found')}, {last.get('done', '?')}/{final['n_items']} done)"
    print(
        f"{final['status']}: {plan.run_dir} success={rate} scored={ev['scored']}/{ev['n']} "
        f"infra_errors={final['failures']['infra_error']} cost=${final['cost']:.4f}{resumed}"
    )
    if in_sweep:
        lifecycle.record_outcome(where, final["status"])
    return final


def _describe(raw: dict[str, Any]) -> str:
    """A run's name before its directory is known (its config may not even validate)."""
    parts = [raw.get("experiment_name")]
    for group in ("benchmark", "framework", "memory", "model"):
        value = raw.get(group)
        parts.append((value.get("label") or value.get("name")) if isinstance(value, dict) else None)
    return "/".join(str(p) for p in parts) + f"/seed={raw.get('seed')}"


def _sweep_report(where: str, status: str, detail: str) -> None:
    from aecg_bench.runner import lifecycle

    print(f"{status}: {where}: {detail}", file=sys.stderr)
    lifecycle.record_outcome(where, status, detail)


def _hydra_entry() -> None:
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import DictConfig

    from aecg_bench.llm.threads import run_in_flight, set_concurrent_jobs
    from aecg_bench.runner import lifecycle
    from aecg_bench.runner.identity import Redactor
    from aecg_bench.runner.logs import redact_console

    @hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
    def _main(cfg: DictConfig) -> None:
        in_sweep = HydraConfig.get().mode == RunMode.MULTIRUN
        lifecycle.install_sigterm()  # again: a joblib worker is a fresh process
        if in_sweep:
            lifecycle.watch_parent()
            # the launcher's parallel jobs share the cores (sequential launchers have no n_jobs)
            set_concurrent_jobs(HydraConfig.get().launcher.get("n_jobs"))
        try:
            raw = resolve(cfg)
            redact_console(Redactor(secret_envs(raw)))
            with run_in_flight():  # counted among the runs sharing the cores (llm/threads.py)
                run_from_config(raw, in_sweep=in_sweep)
        except AecgBenchError as exc:
            if in_sweep:  # a config that does not resolve for this sweep point only
                _sweep_report(f"sweep job {HydraConfig.get().job.num}", "failed", one_line(exc))
                return
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)
        except KeyboardInterrupt:
            print(
                "interrupted: the run is recorded as 'interrupted'; rerun the same command to resume", file=sys.stderr
            )
            if in_sweep and lifecycle.in_worker():
                lifecycle.exit_worker(130)
            sys.exit(130)

    _main()


def main() -> None:
    from aecg_bench.llm import embedded_server
    from aecg_bench.llm.threads import sweep_flight
    from aecg_bench.runner import lifecycle
    from aecg_bench.runner.identity import Redactor
    from aecg_bench.runner.logs import redact_console

    redact_console(Redactor())
    lifecycle.install_sigterm()
    try:
        check_overrides(sys.argv[1:])
        raw = precheck(sys.argv[1:])
    except AecgBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    redact_console(Redactor(secret_envs(raw)))
    outcomes = lifecycle.start_sweep()
    jobs = launcher_jobs(sys.argv[1:])
    try:
        # one llama-server for the whole command when the config serves the embedded model
        with embedded_server.serving(raw if jobs else None, jobs or 1), sweep_flight():
            _hydra_entry()
        found = lifecycle.read_outcomes(outcomes)
    except AecgBenchError as exc:  # the server did not start
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted: runs in progress are recorded as 'interrupted'; rerun to resume", file=sys.stderr)
        sys.exit(130)
    finally:
        outcomes.unlink(missing_ok=True)
    if found:  # a multirun: every run reported its outcome here
        lines, code = lifecycle.summarise_sweep(found)
        print("\n".join(lines))
        sys.exit(code)


if __name__ == "__main__":
    main()
