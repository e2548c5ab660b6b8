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

from aecg_bench.errors import AecgBenchError, ConfigError, one_line, unknown_choice

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
    """The environment variables the configured models and the embedder read their keys from."""
    models = (raw.get("model") or {}).get("models") or {}
    sources = [m for m in models.values() if isinstance(m, dict)]
    if isinstance(raw.get("embedder"), dict):
        sources.append(raw["embedder"])
    return sorted({str(m["api_key_env"]) for m in sources if m.get("api_key_env")})


MAX_SWEEP_CHECKS = 100  # composes spent checking the other values of a sweep (each ~50 ms)


def precheck(argv: list[str]) -> dict[str, Any]:
    """Compose and validate the command's config before Hydra runs, so a typo fails in one line (with
    the valid keys) instead of a Hydra error block: the first value of every sweep, then each other
    value of each sweep in turn (an override valid for only some runs of a sweep is named with the
    run it breaks). Returns the first configuration (its key variables redact the console; it says
    whether to serve the model)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    args = [a for a in argv if not a.startswith("-")]
    try:
        parsed = [
            ov for ov in OverridesParser.create().parse_overrides(args) if not ov.get_key_element().startswith("hydra")
        ]
    except OverrideParseException as exc:
        raise ConfigError(f"cannot parse overrides: {str(exc).splitlines()[0]}") from None
    values = [
        list(ov.sweep_string_iterator()) if ov.is_sweep_override() else [ov.get_value_element_as_str()] for ov in parsed
    ]
    keys = [ov.get_key_element() for ov in parsed]
    first = [f"{k}={v[0]}" for k, v in zip(keys, values, strict=True)]
    raw = compose_checked(first)
    variants = [(i, v) for i, vs in enumerate(values) for v in vs[1:]][:MAX_SWEEP_CHECKS]
    for i, value in variants:
        try:
            compose_checked([*first[:i], f"{keys[i]}={value}", *first[i + 1 :]])
        except ConfigError as exc:
            advice = ""
            if isinstance(exc, MissingKeyError):
                advice = "; an override must apply to every run of a sweep: sweep the runs that need it on their own"
            raise ConfigError(f"with {keys[i].lstrip('+~')}={value} (one run of the sweep): {exc}{advice}") from None
    return raw


class MissingKeyError(ConfigError):
    """An override names a key the composed config does not have."""


def _compose(overrides: list[str]) -> dict[str, Any]:
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    return resolve(cfg)


def _validate(raw: dict[str, Any]) -> None:
    """The schema's checks, models included, without building anything."""
    from aecg_bench.runner.config import parse_run_config, validate_components

    cfg = parse_run_config(raw)
    validate_components(cfg)
    cfg.model.specs()


def compose_checked(overrides: list[str]) -> dict[str, Any]:
    """One composed, validated configuration; every problem is one ConfigError line. A key the schema
    knows but the YAML lacks is named with the `+` that adds it; one that does not exist is named with
    where the path stops and what is there (or the schema's valid keys)."""
    from hydra.errors import ConfigCompositionException

    forced, missing = list(overrides), []
    while True:
        try:
            raw = _compose(forced)
            break
        except ConfigCompositionException as exc:
            found = re.search(r"Could not override '([^']+)'", str(exc))
            if found is None or found.group(1) in missing:
                raise ConfigError(one_line(str(exc).strip().splitlines()[0])) from None
            missing.append(found.group(1))
            forced = [f"+{o}" if o.split("=", 1)[0] == found.group(1) else o for o in forced]
    if not missing:
        _validate(raw)
        return raw
    given = {o.split("=", 1)[0]: o for o in overrides}
    try:
        _validate(raw)
    except ConfigError as exc:
        if "unknown key" in str(exc):  # the schema names the valid keys and the closest match
            raise
        as_composed = _compose_without(raw, missing)
        stops = [_where_it_stops(as_composed, key) for key in missing]
        raise MissingKeyError(next((s for s in stops if s), str(exc))) from None
    adds = " ".join(f"+{given[key]}" for key in missing)
    raise MissingKeyError(
        f"{'keys' if len(missing) > 1 else 'key'} {', '.join(repr(k) for k in missing)} "
        f"{'are' if len(missing) > 1 else 'is'} not in the composed config; add with a '+': {adds}"
    )


def _where_it_stops(raw: dict[str, Any], key: str) -> str:
    """'model.models.served.timeout_s' when model=mock: where the path leaves the composed config."""
    node: Any = raw
    parts = key.split(".")
    for depth, part in enumerate(parts[:-1]):
        if not isinstance(node, dict) or part not in node:
            where = ".".join(parts[:depth]) or "the config"
            there = ", ".join(sorted(node)) if isinstance(node, dict) else "no keys"
            return f"{key!r} does not exist here: {where!r} has no {part!r} (it has: {there})"
        node = node[part]
    return ""


def _compose_without(raw: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """`raw` without what forced `+key=value` overrides put there (the paths as the YAML composed them)."""
    import copy

    out = copy.deepcopy(raw)
    for key in keys:
        parts = key.split(".")
        chain = [out]
        for part in parts[:-1]:
            nxt = chain[-1].get(part) if isinstance(chain[-1], dict) else None
            if not isinstance(nxt, dict):
                break
            chain.append(nxt)
        else:
            chain[-1].pop(parts[-1], None)
            for depth in range(len(parts) - 2, -1, -1):  # drop the dicts the '+' created and nothing else holds
                if chain[depth + 1] == {}:
                    chain[depth].pop(parts[depth], None)
    return out


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
    from aecg_bench.runner.batch import end_status, run_plan
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
        _sweep_report(where, end_status(exc), redactor(one_line(exc)))
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
