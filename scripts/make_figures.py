"""Every figure one experiment folder can fill, as PNG + PDF, one set per configuration:
`python scripts/make_figures.py results/aecg_table1 [--out DIR]` (default DIR: <folder>/figures).

Figure 5 heatmap (score by framework x benchmark x method), the learning curve (success over the
task stream per method) and tokens per sample by role. `make report` draws the same figures.
"""

import argparse
import sys
from pathlib import Path

from aecg_bench.analysis.aecg_sections import config_frame, slug
from aecg_bench.analysis.load import load
from aecg_bench.analysis.paper import KEYS, banner, configurations, preset_of
from aecg_bench.analysis.plots import learning_curve, role_cost_bars, score_heatmap
from aecg_bench.analysis.stats import summarize

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    df = load(args.results)
    if df.empty:
        sys.exit(f"no results under {args.results}: run the experiment first")
    out = args.out or args.results / "figures"
    for config in configurations(df):
        sub = config_frame(df, config)
        prefix = banner(preset_of(config))
        name = slug(config)
        paths = [
            *score_heatmap(
                summarize(sub, by=KEYS, metric="success", n_boot=1),
                out / f"heatmap_{name}",
                title=f"{prefix}Score by framework, benchmark and method",
            ),
            *learning_curve(sub, out / f"learning_curve_{name}", title=f"{prefix}Learning curve per method"),
            *role_cost_bars(sub, out / f"role_cost_{name}", title=f"{prefix}Tokens per sample by role"),
        ]
        print(f"{config}:\n  " + "\n  ".join(map(str, paths)))
