"""What each memory method did on the `procedures` benchmark: success against chance, a paired test
against No-Memory, and the audit events that show it stored, recalled and used experience.

    python scripts/procedures_report.py results/procedures-accept [--baseline no_memory]
    python scripts/procedures_report.py results/procedures-table2 --ablations [--reference aecg]

`--ablations`: one row per memory config (AECG and its Table 2 ablations), the count of each audit event
kind, and the kinds whose count differs from the reference config's (full AECG) on the same framework.

Reads only what runs wrote (samples.jsonl, run.json, memory/audit.jsonl); prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from aecg_bench.analysis.load import load
from aecg_bench.analysis.stats import paired_stats


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (sound at 0 and n successes)."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def audit_counts(run_dir: Path) -> Counter[str]:
    path = run_dir / "memory" / "audit.jsonl"
    if not path.exists():
        return Counter()
    events: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        try:
            events[json.loads(line)["event"]] += 1
        except (json.JSONDecodeError, KeyError):
            continue  # a torn last line of a killed run
    return events


def report(root: Path, baseline: str) -> list[str]:
    df = load(root, phases=("eval",))
    df = df[df["benchmark"] == "procedures"]
    if df.empty:
        return [f"no procedures runs under {root}"]
    lines = [
        "| framework | memory | n | success | 95% CI | chance | vs "
        + baseline
        + " (diff, p) | recalled | audit events |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (framework, memory), run in df.groupby(["framework", "memory"], sort=True):
        header = json.loads((Path(run["run_dir"].iloc[0]) / "run.json").read_text())
        chance = header.get("backends", {}).get("procedures", {}).get("chance_rate", float("nan"))
        k, n = int(run["success"].sum()), len(run)
        low, high = wilson(k, n)
        base = df[(df["framework"] == framework) & (df["memory"] == baseline)].set_index("sample_id")["success"]
        mine = run.set_index("sample_id")["success"]
        both = mine.to_frame("a").join(base.to_frame("b"), how="inner")
        test = "-"
        if memory != baseline and len(both):
            s = paired_stats((both["a"].astype(float) - both["b"].astype(float)).to_numpy(dtype=float))
            test = f"{s['mean_diff']:+.3f}, p={s['p_value']:.3f} (n={s['n']})"
        recalled = int(run["recalled_memory_ids"].map(lambda ids: bool(len(ids))).sum())
        events = audit_counts(Path(run["run_dir"].iloc[0]))
        shown = ", ".join(f"{e} {c}" for e, c in sorted(events.items()))
        lines.append(
            f"| {framework} | {memory} | {n} | {k / n:.3f} | [{low:.3f}, {high:.3f}] | {chance:.3f} | {test} "
            f"| {recalled}/{n} | {shown or '-'} |"
        )
    return lines


def ablation_table(root: Path, reference: str = "aecg") -> list[str]:
    """Audit-event counts per memory config (rows) and event kind (columns), per framework, with the kinds
    whose count differs from `reference`'s: what an ablation changed in the method's behaviour."""
    df = load(root, phases=("eval",))
    df = df[df["benchmark"] == "procedures"] if not df.empty else df
    if df.empty:
        return [f"no procedures runs under {root}"]
    lines: list[str] = []
    for framework, runs in df.groupby("framework", sort=True):
        counts = {
            memory: audit_counts(Path(run["run_dir"].iloc[0])) for memory, run in runs.groupby("memory", sort=True)
        }
        kinds = sorted(set().union(*counts.values()))
        ref = counts.get(reference)
        order = sorted(counts, key=lambda m: (m != reference, m))
        lines += [
            f"framework {framework}:",
            "",
            "| memory | n | success | " + " | ".join(kinds) + f" | differs from {reference} |",
            "|---|---|---|" + "---|" * len(kinds) + "---|",
        ]
        for memory in order:
            run = runs[runs["memory"] == memory]
            c = counts[memory]
            differs = "-" if memory == reference or ref is None else ", ".join(k for k in kinds if c[k] != ref[k])
            cells = " | ".join(str(c[k]) for k in kinds)
            lines.append(f"| {memory} | {len(run)} | {int(run['success'].sum())} | {cells} | {differs or 'nothing'} |")
        lines.append("")
    return lines[:-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--baseline", default="no_memory")
    parser.add_argument("--ablations", action="store_true", help="audit-event counts per AECG ablation")
    parser.add_argument("--reference", default="aecg", help="--ablations: the config the others are compared to")
    args = parser.parse_args(argv)
    if not args.root.exists():
        print(f"no results at {args.root}", file=sys.stderr)
        return 1
    np.seterr(all="ignore")
    lines = ablation_table(args.root, args.reference) if args.ablations else report(args.root, args.baseline)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
