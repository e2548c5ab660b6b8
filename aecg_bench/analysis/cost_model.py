"""What a paper preset will cost before anyone pays: a cost model calibrated by a rehearsal's records.

A rehearsal (aecg_bench/rehearsal.py) runs the paper preset's exact configuration on a few samples
per cell. From every sample record it reads, per role group (the agents; tau2's user simulator; the
memory side: construction, consolidation, distillation, judging, replay; maintenance rounds, kept
apart in `maintain_usage`), the calls and the prompt and completion tokens, and the steps taken
against the step budget. Each cell (experiment, benchmark, framework, memory, phase, build epoch) of
the paper preset then costs its paper sample count times the per-sample figures, priced per role
from the paper's price table (input and output separately):

- expected: the measured mean per sample;
- high: every sample runs its full step budget: agent and user-simulator calls and tokens scale
  with budget / steps taken (tokens per call as measured), memory-side tokens too (its prompts
  carry the trajectory), memory-side calls at the cell's largest sample;
- low: agents and user simulator stop at half the steps measured (at least one), the memory side
  at the cell's smallest sample;
- maintenance: per round (smallest / mean / largest measured) at the preset's cadence (one round per
  `maintain_every` samples), since a rehearsal maintains after every sample.

Counted once: a build epoch (or eval stream) whose calls another run of the priced set repeats
exactly (same configuration apart from the experiment name, the results label and the number of
build epochs; same epoch and samples) is served from the response cache in the paid run, so its
second occurrence costs nothing (Figure 4's epoch-k run replays epochs 1..k-1; Table 1's EDV row
is Table 5's EDV-Full). A method that called no memory-side model in a cell borrows its figures from
its rehearsed cells of the same phase; cells of an AECG table's grid the rehearsal left out are
priced from their benchmark's rehearsed cells; fixture benchmarks are rescaled to the real tasks'
length (`FIXTURE_TASK_STEPS`). Wall time: every call's latency (a fixed overhead plus prompt and
completion tokens at the given rates), runs in parallel `jobs` at a time, and never faster than the
configured requests- and tokens-per-minute limits allow.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from aecg_bench.analysis.paper import AGENT_ROLES, ENVIRONMENT_ROLES
from aecg_bench.results_format import Run
from aecg_bench.runner.identity import stable_hash

GROUPS = ("agent", "user", "memory", "maintenance")
STEP_GROUPS = ("agent", "user")  # what a longer episode multiplies
MEMORY_GROUPS = ("memory", "maintenance")
NO_MEMORY = ("no_memory", "nm_b1", "nm_b2", "nm_b3")  # rows that call no memory-side model
LEVELS = ("low", "expected", "high")
QUANTITIES = ("calls", "input_tokens", "output_tokens", "dollars", "seconds")
USAGE = ("calls", "input_tokens", "output_tokens")
# identity keys that change where a run's results go or how many epochs follow, not its calls
NOT_IN_CALLS = ("experiment_name",)
CELL = ["experiment", "benchmark", "framework", "memory", "phase", "epoch"]  # a build epoch is its own cell
MECHANISMS = ("aecg_rq", "aecg_mechanisms_warmup")  # the mechanism tests' experiments and their shared warm-up
MECHANISM_WARMUP = 0.6  # paper C.3 (conf/experiment/aecg_rq*.yaml warmup_fraction)
# Mean steps of the real tasks where a rehearsal reads a shorter fixture: Mind2Web's tasks take 7.3 actions
# on average (Deng et al., 2023, sec. 2); the fixture's take 1-2. MMTB's fixture missions are not rescaled
# (the real entries' mean length is not documented here).
FIXTURE_TASK_STEPS = {f"mind2web_cross_{s}": 7.3 for s in ("task", "website", "domain")}


@dataclass(frozen=True)
class Throughput:
    """Seconds a call takes: overhead plus prompt and completion tokens at these rates (an
    assumption for hosted APIs: ~0.5 s to first token, tens of completion tokens a second)."""

    overhead_s: float = 0.5
    prompt_tps: float = 5000.0
    output_tps: float = 80.0

    def seconds(self, calls: float, prompt: float, output: float) -> float:
        return calls * self.overhead_s + prompt / self.prompt_tps + output / self.output_tps


@dataclass(frozen=True)
class Limits:
    """How fast the paid run may go: runs in parallel, and the provider's per-minute limits."""

    jobs: int = 8
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None


def role_group(role: str) -> str:
    if role in AGENT_ROLES:
        return "agent"
    if role in ENVIRONMENT_ROLES:
        return "user"
    return "memory"


def share_key(header: dict[str, Any], phase: str, epoch: int, sample_id: str) -> str:
    """What makes two runs' calls for one sample the same calls (the response cache's view): the
    configuration minus the experiment name and the results label, and for a build phase minus the
    number of epochs (epoch e of a 4-epoch build is epoch e of a 2-epoch one)."""
    config = json.loads(json.dumps((header.get("identity") or {}).get("config") or {}))
    for key in NOT_IN_CALLS:
        config.pop(key)
    config["memory"].pop("label")
    if phase == "build":
        config["protocol"].pop("build_epochs")
    return stable_hash([config, phase, epoch, str(sample_id)])


def sample_rows(
    runs: Iterable[Run], price: Callable[[str], tuple[float, float]], throughput: Throughput, suffix: str
) -> pd.DataFrame:
    """One row per sample record: cell labels, steps, and per role group calls, tokens, dollars and
    seconds; `price(role)` gives (input, output) dollars per million tokens for a role's calls."""
    rows = []
    for run in runs:
        labels = run.header["labels"]
        experiment = str(labels["experiment"]).removesuffix(suffix)
        window = prompt_window(run.header)
        for rec in run.records:
            if rec.get("status") == "infra_error":  # cut short by the infrastructure: its usage is partial
                continue
            row: dict[str, Any] = {
                "experiment": experiment,
                "benchmark": labels["benchmark"],
                "framework": labels["framework"],
                "memory": labels["memory"],
                "seed": labels["seed"],
                "phase": rec["phase"],
                "epoch": rec["epoch"],
                "steps": rec["steps"],
                "step_limit": rec.get("step_limit") or rec["steps"],  # records before step_limit: as taken
                "share": share_key(run.header, rec["phase"], rec["epoch"], rec["sample_id"]),
                "maintained": rec.get("maintain_round") is not None,
                "window": window,
            }
            for g in GROUPS:
                for q in QUANTITIES:
                    row[f"{g}_{q}"] = 0.0
            rounds = rec.get("maintain_usage", {}).get("by_role", {})  # empty unless a round ran
            for role, u in rec["usage"]["by_role"].items():
                m = rounds.get(role) or {}
                _add(row, role_group(role), role, {k: u[k] - m.get(k, 0) for k in USAGE}, price, throughput)
                if m:
                    _add(row, "maintenance", role, m, price, throughput)
            rows.append(row)
    return pd.DataFrame(rows)


def prompt_window(header: dict[str, Any]) -> float:
    """The longest prompt the rehearsal's models accept (an embedded model's n_ctx less its reply
    cap); inf where none is configured. Prompts cut to it are shorter than the paper models'."""
    sizes = [
        int(spec["options"]["n_ctx"]) - _number(spec.get("max_output_tokens") or spec.get("max_tokens"))
        for spec in (header.get("models") or {}).values()
        if (spec.get("options") or {}).get("n_ctx")
    ]
    return float(min(sizes)) if sizes else math.inf


def _number(value: Any) -> int:
    """A reply cap as run.json holds it; 0 when absent or masked (the secret scrubber masks keys
    that contain "token", so older and current headers may show '***')."""
    return value if isinstance(value, int) else 0


def _add(
    row: dict[str, Any],
    group: str,
    role: str,
    u: dict[str, float],
    price: Callable[[str], tuple[float, float]],
    throughput: Throughput,
) -> None:
    p_in, p_out = price(role)
    row[f"{group}_calls"] += u["calls"]
    row[f"{group}_input_tokens"] += u["input_tokens"]
    row[f"{group}_output_tokens"] += u["output_tokens"]
    row[f"{group}_dollars"] += (u["input_tokens"] * p_in + u["output_tokens"] * p_out) / 1e6
    row[f"{group}_seconds"] += throughput.seconds(u["calls"], u["input_tokens"], u["output_tokens"])


def per_sample(cell: pd.DataFrame, maintain_every: int, task_steps: float | None = None) -> dict[str, dict[str, float]]:
    """low / expected / high per-sample figures of one cell's sample rows (see the module doc);
    maintenance: per round (the smallest, mean, largest measured) over `maintain_every` samples.
    `task_steps`: the real tasks' mean length where the rehearsal ran a shorter fixture (its tasks are
    as long as their gold paths): agents and user simulator scale to it, which is also the budget."""
    steps = cell["steps"].clip(lower=1)
    if task_steps:  # expected: the fixture's usage per step at the real tasks' length, which is their budget
        scale, limit = task_steps / steps, float(task_steps)
    else:
        scale, limit = 1.0, cell["step_limit"]
    high_f = (limit / steps).clip(lower=1.0)  # every sample at its full budget
    low_f = (steps * scale / 2).clip(lower=1.0) / steps  # half the expected steps, at least one
    out: dict[str, dict[str, float]] = {level: {} for level in LEVELS}
    rounds = cell[cell["maintained"]]
    for q in QUANTITIES:
        per_round = rounds[f"maintenance_{q}"]
        for level, value in zip(LEVELS, (per_round.min(), per_round.mean(), per_round.max()), strict=True):
            out[level][f"maintenance_{q}"] = float(value) / maintain_every if len(rounds) else 0.0
        for g in GROUPS[:-1]:
            col = cell[f"{g}_{q}"]
            out["expected"][f"{g}_{q}"] = float((col * scale).mean()) if g in STEP_GROUPS else float(col.mean())
            if g in STEP_GROUPS:
                out["low"][f"{g}_{q}"] = float((col * low_f).mean())
                out["high"][f"{g}_{q}"] = float((col * high_f).mean())
            elif q == "calls":
                out["low"][f"{g}_{q}"] = float(col.min())
                out["high"][f"{g}_{q}"] = float(col.max())
            else:
                out["low"][f"{g}_{q}"] = float(col.min())
                out["high"][f"{g}_{q}"] = float((col * high_f).max())
    return out


def estimate(
    samples: pd.DataFrame,
    counts: Callable[[str, str, str], int],
    *,
    seeds: int | None = None,
    maintain_every: int = 10,
    grid: dict[str, list[tuple[str, str, str, str]]] | None = None,
    task_steps: dict[str, float] | None = None,
) -> pd.DataFrame:
    """Per cell: paper samples and low / expected / high calls, tokens, dollars, seconds.

    `counts(experiment, benchmark, phase)` is the paper preset's samples per run of that phase (per
    epoch for a build phase: each epoch is a cell); `seeds` its runs per cell (default: the seeds the
    rehearsal ran);
    `maintain_every` its samples per memory maintenance round (protocol.maintain_every).
    A cell whose calls an earlier cell repeats exactly is kept with `shared_with` set and zero cost.
    `grid` (experiment -> its (benchmark, framework, memory, phase) cells) adds the cells the rehearsal
    left out, `measured` False: agents as in the same benchmark x framework (else the benchmark) under
    the memory methods rehearsed there, the memory side as the method's rehearsed cells.
    `task_steps` (benchmark -> the real tasks' mean steps) rescales benchmarks rehearsed on fixtures."""
    if samples.empty:
        return pd.DataFrame()
    lengths = task_steps or {}
    cells = [
        (key, cell, per_sample(cell, maintain_every, lengths.get(key[1])))
        for key, cell in samples.groupby(CELL, sort=False)
    ]
    borrowed = memory_side_by_method(cells)
    builders = constructs(cells)
    extra = _unrehearsed(cells, grid or {})
    rows, seen = [], {}
    for key, cell, figures in [*cells, *extra]:
        exp, bench, _, memory, phase, _ = key
        n_seeds = seeds or max(cell["seed"].nunique(), 1)
        # one seed's stream decides sharing: the other seeds repeat it with their own calls
        first = cell[cell["seed"] == cell["seed"].min()]
        shares = tuple(sorted(first["share"]))
        shared_with = seen.get(shares)
        if shares:  # an unrehearsed cell shares nothing
            seen.setdefault(shares, "/".join(map(str, key)))
        paper_n = counts(exp, bench, phase) * n_seeds
        if memory in NO_MEMORY:
            source = "none (no memory)"
        elif len(cell) and _memory_calls(figures):
            source = "measured"
        elif (memory, phase) in borrowed:  # a rehearsed cell without memory-side calls, or a left-out one
            figures, source = _with_memory_side(figures, borrowed[(memory, phase)]), "other cells of the method"
        elif memory in builders:
            source = "none in this phase"
        else:
            source = "none measured"
        row: dict[str, Any] = dict(zip(CELL, key, strict=True))
        row.update(
            measured=bool(len(cell)),
            samples=paper_n,
            measured_samples=len(cell),
            steps=lengths.get(bench) or (float(cell["steps"].mean()) if len(cell) else figures["steps"]),
            step_limit=float(cell["step_limit"].max()) if len(cell) else figures["step_limit"],
            shared_with=shared_with or "",
            memory_side=source,
            at_window=bool(len(cell)) and at_window(cell),
        )
        factor = 0 if shared_with else paper_n
        for level in LEVELS:
            f = figures[level]
            for q in QUANTITIES:
                for g in GROUPS:
                    row[f"{level}_{g}_{q}"] = factor * f[f"{g}_{q}"]
                row[f"{level}_{q}"] = sum(row[f"{level}_{g}_{q}"] for g in GROUPS)
        rows.append(row)
    return pd.DataFrame(rows)


def at_window(cell: pd.DataFrame, share: float = 0.8) -> bool:
    """Whether a cell's agent prompts reached the rehearsal model's window (mean prompt per agent call
    at `share` of it or more): the paper's models read them uncut, so they cost more than measured."""
    if "window" not in cell:
        return False
    per_call = cell["agent_input_tokens"] / cell["agent_calls"].where(cell["agent_calls"] > 0)
    return bool((per_call >= share * cell["window"]).any())


def _unrehearsed(
    cells: list[tuple[Any, pd.DataFrame, dict]],
    grid: dict[str, list[tuple[str, str, str, str]]],
) -> list[tuple[Any, pd.DataFrame, dict]]:
    """Figures for the grid cells no rehearsal record covers (see `estimate`); a cell with no
    rehearsed benchmark to borrow from is left out (the printout says which)."""
    have = {key for key, _, _ in cells}
    out = []
    for experiment, wanted in grid.items():
        for bench, framework, memory, phase in wanted:
            key = (experiment, bench, framework, memory, phase, 0)
            if key in have:
                continue
            same = [(k, c, f) for k, c, f in cells if k[0] == experiment and k[1] == bench and k[4] == phase]
            sources = [s for s in same if s[0][2] == framework] or same
            if not sources:
                continue
            figures: dict[str, Any] = {
                level: {
                    f"{g}_{q}": sum(f[level][f"{g}_{q}"] for _, _, f in sources) / len(sources)
                    for g in STEP_GROUPS
                    for q in QUANTITIES
                }
                for level in LEVELS
            }
            for level in LEVELS:  # the memory side: estimate borrows the method's rehearsed figures
                figures[level].update({f"{g}_{q}": 0.0 for g in MEMORY_GROUPS for q in QUANTITIES})
            figures["steps"] = sum(float(c["steps"].mean()) for _, c, _ in sources) / len(sources)
            figures["step_limit"] = max(float(c["step_limit"].max()) for _, c, _ in sources)
            empty = sources[0][1].head(0)
            out.append((key, empty, figures))
    return out


def _memory_calls(figures: dict[str, dict[str, float]]) -> float:
    return figures["expected"]["memory_calls"] + figures["expected"]["maintenance_calls"]


def memory_side_by_method(
    cells: list[tuple[Any, pd.DataFrame, dict]],
) -> dict[tuple[str, str], dict[str, dict[str, float]]]:
    """Per memory method and phase, its memory-side per-sample figures averaged over the cells where the
    rehearsal saw it call a model. A cell of that method and phase where it called none (AECG abstracts
    and judges only after a success, which a small model may never have) is priced with these, so a
    method that calls a model never costs $0; a phase it never calls one in (a frozen evaluation) is not."""
    out: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for memory, phase in {(key[3], key[4]) for key, _, _ in cells}:  # estimate never reads no-memory rows
        measured_cells = [f for key, _, f in cells if key[3:5] == (memory, phase) and _memory_calls(f) > 0]
        if measured_cells:
            out[(memory, phase)] = {
                level: {
                    f"{g}_{q}": sum(f[level][f"{g}_{q}"] for f in measured_cells) / len(measured_cells)
                    for g in MEMORY_GROUPS
                    for q in QUANTITIES
                }
                for level in LEVELS
            }
    return out


def constructs(cells: list[tuple[Any, pd.DataFrame, dict]]) -> set[str]:
    """Methods the rehearsal saw call a model for their memory: a memory-side call anywhere, or any call
    in a build phase (EDV's Router builds its ability matrix from executor probes)."""
    return {
        key[3]
        for key, _, f in cells
        if _memory_calls(f) > 0 or (key[4] == "build" and f["expected"]["agent_calls"] > 0)
    }


def _with_memory_side(figures: dict[str, dict[str, float]], memory: dict[str, dict[str, float]]) -> dict:
    return {**figures, **{level: {**figures[level], **memory[level]} for level in LEVELS}}


def measured(samples: pd.DataFrame) -> pd.DataFrame:
    """The rehearsal's own totals per cell (what `estimate` predicts for the rehearsal's sizes)."""
    by = samples.groupby(CELL)
    out = {q: by[[f"{g}_{q}" for g in GROUPS]].sum().sum(axis=1) for q in ("calls", "input_tokens", "output_tokens")}
    return pd.DataFrame(out).reset_index()


def wall_seconds(est: pd.DataFrame, level: str, limits: Limits) -> float:
    """The preset's wall time at `limits`: call latencies over `jobs` parallel runs, never faster than
    the per-minute request and token limits allow."""
    if est.empty:
        return 0.0
    bounds = [float(est[f"{level}_seconds"].sum()) / max(limits.jobs, 1)]
    if limits.requests_per_minute:
        bounds.append(60.0 * float(est[f"{level}_calls"].sum()) / limits.requests_per_minute)
    if limits.tokens_per_minute:
        tokens = float(est[f"{level}_input_tokens"].sum() + est[f"{level}_output_tokens"].sum())
        bounds.append(60.0 * tokens / limits.tokens_per_minute)
    return max(bounds)


def paper_samples(experiment: str, benchmark: str, phase: str, edv_sizes: dict[str, tuple[int, int]]) -> int:
    """Samples per run of a paper preset's phase (per epoch for a build phase)."""
    from aecg_bench.analysis.paper import PAPER_SIZES

    if experiment.startswith("edv_"):
        if benchmark not in edv_sizes:
            raise KeyError(f"no paper size for EDV benchmark {benchmark!r}; pass --size {benchmark}=BUILD,EVAL")
        build, ev = edv_sizes[benchmark]
        return build if phase == "build" else ev
    n = PAPER_SIZES[benchmark]
    if experiment.startswith(MECHANISMS):  # one stream, its first 60% a warm-up shared by every variant
        warm = round(n * MECHANISM_WARMUP)
        return warm if phase == "warmup" else n - warm
    return n


def role_prices(
    models: dict[str, dict[str, Any]], roles: dict[str, str], fallback: tuple[float, float]
) -> tuple[Callable[[str], tuple[float, float]], dict[str, tuple[float, float, bool]]]:
    """`price(role)` for a model assignment: a role names its model (agents' framework roles use
    `agent`, others `default`); prices from the versioned table, a spec's own `price`, litellm's map,
    else `fallback`. Also each model's (input, output, from_fallback) for the printout."""
    from aecg_bench.llm.pricing import price_for
    from aecg_bench.llm.spec import ModelSpec, Price

    table: dict[str, tuple[float, float, bool]] = {}
    for label, raw in models.items():
        own = raw.get("price")
        spec = ModelSpec(label=label, model=str(raw["model"]), price=Price(**own) if own else None)
        found = price_for(spec)
        table[label] = (found.input, found.output, False) if found else (*fallback, True)

    def price(role: str) -> tuple[float, float]:
        label = roles.get(role) or (roles.get("agent") if role in AGENT_ROLES else None) or roles["default"]
        return table[label][:2]

    return price, table
