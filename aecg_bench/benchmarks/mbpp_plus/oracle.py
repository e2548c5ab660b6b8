"""Is one output right? EvalPlus's MBPP+ checks, re-implemented.

Source: evalplus/eval/__init__.py (`unsafe_execute`, `is_floats`) and
evalplus/eval/_special_oracle.py, EvalPlus v0.3.1 (the release that reads
MBPP+ v0.2.0). For each input, in order:

- `out == exp` (exact match), except for the special tasks:
  `surface_Area` (Mbpp/581) also accepts the pyramid area computed with the
  perpendicular height, `digit_distance_nums` (Mbpp/558) also accepts the
  zero-padded digit distance, the set-equality tasks compare `set(out)` with
  `set(exp)`, and the "not None" tasks (whose canonical outputs are regex
  matches) compare `out is not None` (or `out` itself when it is a bool);
- an expected float (or a non-empty list/tuple of floats) with `atol == 0`
  raises the run's tolerance to 1e-6, and (as in EvalPlus, where the variable
  is reused) the raised tolerance stays for the run's later inputs;
- with a tolerance and no exact match, the types must be equal, lists/tuples
  equally long, and `numpy.allclose(out, exp, rtol=1e-07, atol=atol)` true.

Any exception while comparing counts as a mismatch. EvalPlus's oracles for
Mbpp/164 and Mbpp/295 are not needed: v0.2.0 removed those tasks.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

OUTPUT_NOT_NONE_TASKS = frozenset({"check_str", "text_match_three", "text_starta_endb"})
OUTPUT_SET_EQ_TASKS = frozenset(
    {
        "similar_elements",
        "find_char_long",
        "common_in_nested_lists",
        "extract_singly",
        "larg_nnum",
        "intersection_array",
        "find_dissimilar",
        "Diff",
    }
)
FLOAT_ATOL = 1e-6
RTOL = 1e-07


def is_floats(x: Any) -> bool:
    """A float, a non-empty list/tuple of floats, or a float numpy array."""
    if isinstance(x, float):
        return True
    if isinstance(x, list | tuple) and x:
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return x.dtype in (np.float64, np.float32)
    return False


def pyramid_surface_area(base_edge: float, height: float) -> int:
    """Square pyramid area with `height` the perpendicular height (Mbpp/581's alternative reading)."""
    slant = math.sqrt((base_edge / 2) ** 2 + height**2)
    return round(base_edge**2 + 2 * base_edge * slant)


def padded_digit_distance(a: int, b: int) -> int:
    """Sum of per-digit differences after zero-padding to equal length (Mbpp/558's alternative reading)."""
    sa, sb = str(a), str(b)
    width = max(len(sa), len(sb))
    return sum(abs(int(x) - int(y)) for x, y in zip(sa.zfill(width), sb.zfill(width), strict=True))


class Comparator:
    """Checks the outputs of one run (base or plus), input by input, in order."""

    def __init__(self, entry_point: str, atol: float) -> None:
        self.entry_point = entry_point
        self.atol = atol

    def __call__(self, out: Any, expected: Any, args: list[Any]) -> bool:
        try:
            return self._matches(out, expected, args)
        except Exception:
            return False

    def _matches(self, out: Any, exp: Any, args: list[Any]) -> bool:
        exact = out == exp
        name = self.entry_point
        if name == "surface_Area":
            exact = exact or abs(out - pyramid_surface_area(*args)) <= self.atol
        elif name == "digit_distance_nums":
            exact = exact or out == padded_digit_distance(*args)
        elif name in OUTPUT_SET_EQ_TASKS:
            exact = set(out) == set(exp)
        elif name in OUTPUT_NOT_NONE_TASKS:
            exact = out == exp if isinstance(out, bool) else exp == (out is not None)
        if self.atol == 0 and is_floats(exp):
            self.atol = FLOAT_ATOL
        if not exact and self.atol != 0:
            if type(out) is not type(exp):
                return False
            if isinstance(exp, list | tuple) and len(out) != len(exp):
                return False
            return bool(np.allclose(out, exp, rtol=RTOL, atol=self.atol))
        return bool(exact)
