"""`python -m aecg_bench.mechanisms experiment=aecg_rq2_scope [overrides]`: run one mechanism test."""

from __future__ import annotations

import sys

from aecg_bench.errors import AecgBenchError


def main(argv: list[str]) -> int:
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from aecg_bench.mechanisms.protocol import run_mechanism
    from aecg_bench.run import CONF_DIR, check_overrides

    try:
        check_overrides(argv)
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="config", overrides=argv)
        raw = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(raw, dict)
        if not raw.get("mechanism"):
            raise AecgBenchError("no mechanism test configured: pass experiment=aecg_rq2_scope|aecg_rq3_drift|...")
        path = run_mechanism(raw)
    except AecgBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (HydraException, OmegaConfBaseException) as exc:  # a bad override: one line, no traceback
        why = [str(e).splitlines()[0] for e in (exc, exc.__cause__) if e is not None and str(e)]
        print(f"error: {': '.join(why)}", file=sys.stderr)
        return 2
    print(f"measures: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
