"""The MBPP+ v0.2.0 file: where it comes from, its pinned hash, and its rows as Python values.

JSON cannot say "tuple", "complex" or "set", so EvalPlus restores the argument
types of some tasks after loading (`mbpp_deserialize_inputs` in
evalplus/data/mbpp.py); without that a correct solution that indexes a tuple
argument still passes but one that hashes it (`set(tup)`) or compares it
(`tup == (1, 2)`) would not. `_CONVERSIONS` records, for the tasks of v0.2.0
that need it, which conversion EvalPlus applies; `restore_inputs` applies it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aecg_bench.benchmarks.data import DataFile, fetch
from aecg_bench.errors import DataError

MBPP_PLUS = DataFile(
    relpath="MbppPlus-v0.2.0.jsonl",
    sha256="09a19eaaed052f79ff8bc519d9a253ce75d7b57f5c9803bedf4edc96b5a8aef2",
    url="https://github.com/evalplus/mbppplus_release/releases/download/v0.2.0/MbppPlus.jsonl.gz",
    source="the EvalPlus release asset MbppPlus.jsonl.gz v0.2.0 (github.com/evalplus/mbppplus_release), gunzipped",
    compression="gzip",
)
FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "base_input", "plus_input", "atol", "assertion")

Args = list[Any]


def _tuple_args(args: Args) -> Args:
    return [tuple(a) for a in args]


def _tuples_inside_args(args: Args) -> Args:
    return [[tuple(x) for x in a] for a in args]


def _tuples_inside_first(args: Args) -> Args:
    return [[tuple(x) for x in args[0]], *args[1:]]


def _tuple_second(args: Args) -> Args:
    return [args[0], tuple(args[1]), *args[2:]]


def _tuple_first(args: Args) -> Args:
    return [tuple(args[0]), *args[1:]]


def _tuple_of_tuples_args(args: Args) -> Args:
    return [tuple(tuple(x) for x in a) for a in args]


def _tuple_of_mixed_first(args: Args) -> Args:
    return [tuple(tuple(x) if isinstance(x, list) else x for x in args[0]), *args[1:]]


def _dict_values_tuples_first(args: Args) -> Args:
    return [{k: tuple(v) for k, v in args[0].items()}, *args[1:]]


def _float_complex(args: Args) -> Args:
    return [float(args[0]), complex(args[1])]


def _complex_first(args: Args) -> Args:
    return [complex(args[0])]


def _deep_tuples(args: Args) -> Args:
    def deep(x: Any) -> Any:
        return tuple(deep(v) for v in x) if isinstance(x, list) else x

    return [deep(a) for a in args]


_GROUPS: list[tuple[Callable[[Args], Args], tuple[int, ...]]] = [
    (_tuple_args, (2, 116, 132, 222, 261, 273, 394, 421, 424, 429, 470, 560, 579, 596, 616, 630, 726, 740, 744, 809)),
    (_tuples_inside_args, (63, 64, 70, 94, 120, 237, 272, 299, 409, 473, 614, 780)),
    (_tuples_inside_first, (75, 413, 753)),
    (_tuple_second, (106, 750)),
    (_tuple_first, (250, 405, 446, 720, 763, 808)),
    (_tuple_of_tuples_args, (259, 445)),
    (_tuple_of_mixed_first, (278,)),
    (_dict_values_tuples_first, (722,)),
    (_float_complex, (124,)),
    (_complex_first, (252,)),
    (_deep_tuples, (580, 615, 791)),
]
_CONVERSIONS: dict[int, Callable[[Args], Args]] = {n: fn for fn, ids in _GROUPS for n in ids}


def task_number(task_id: str) -> int:
    return int(task_id.rsplit("/", 1)[-1])


def restore_inputs(task_id: str, inputs: list[Args]) -> list[Args]:
    """EvalPlus's argument types for one task's inputs (JSON gives only lists)."""
    convert = _CONVERSIONS.get(task_number(task_id))
    return [convert(list(args)) for args in inputs] if convert else [list(args) for args in inputs]


@dataclass(frozen=True)
class Problem:
    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    base_inputs: list[Args]
    plus_inputs: list[Args]  # empty for Mbpp/793: EvalPlus's plus run then only loads the code
    atol: float
    assertion: str

    @property
    def first_test(self) -> str:
        """The first assertion of the original MBPP tests (shown to the model, as EvalPlus does)."""
        return next((ln.strip() for ln in self.assertion.splitlines() if ln.strip().startswith("assert")), "")


def load_problems(data_dir: Path | None, *, download: bool = True) -> list[Problem]:
    """All tasks of the pinned file, in file order, with EvalPlus's input types restored."""
    path = fetch(data_dir, MBPP_PLUS, download=download)
    problems = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            missing = [f for f in FIELDS if f not in row]
            if missing:
                raise KeyError(", ".join(missing))
        except (json.JSONDecodeError, KeyError) as exc:
            raise DataError(f"{path}: line {n} is not an MBPP+ record ({exc})") from None
        problems.append(
            Problem(
                task_id=row["task_id"],
                prompt=row["prompt"],
                entry_point=row["entry_point"],
                canonical_solution=row["canonical_solution"],
                base_inputs=restore_inputs(row["task_id"], row["base_input"]),
                plus_inputs=restore_inputs(row["task_id"], row["plus_input"]),
                atol=float(row["atol"]),
                assertion=row["assertion"],
            )
        )
    return problems
