"""Pins of ConMem's specified mechanisms (issue 17, mutation campaign `conmem`): task needs, trigger and
ranking arithmetic, graph expansion, coordination, card updates and rendering, with hand-computed values
from ConMemCode's constants (docs/memory/conmem.md)."""

from __future__ import annotations

import pytest

from baselines.conmem import retrieval


def test_task_needs_presets_are_conmems_fractions():
    # ConMemCode task_needs_presets (PDDL): 7/23, 8/23, 5/23, 3/23, already normalised to about 1.
    needs = retrieval.task_needs("anything", "pddl")
    assert needs["plan"] == pytest.approx(0.3478 / 0.9999, abs=1e-9)
    assert sum(needs.values()) == pytest.approx(1.0)
