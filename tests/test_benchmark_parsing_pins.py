"""Pins of the parsing that turns a model's reply into what gets scored, written against the mutants of
`make mutants PATHS=benchmark_parsing` (docs/quality.md):

- MBPP+ (`mbpp_plus/extract.py`): the program EvalPlus's `sanitize` would test for a reply (evalplus/sanitize.py:
  the longest parsable span or a fenced block, then imports and the definitions the entry point reaches);
- PDDL (`pddl/text.py`): AgentBoard's `text_to_action` (the first token naming an applicable action, then the
  object names in order, cut to the arity) and the words states and goals are shown in.

Pure functions on hand-written replies; no data files, no network.
"""

from __future__ import annotations

import pytest

from aecg_bench.benchmarks.mbpp_plus.extract import candidate_code, sanitize
from aecg_bench.benchmarks.pddl.text import parse_action, render, render_atom, render_facts, render_goal, words


def fence(code: str, lang: str = "python") -> str:
    return f"Here you go:\n```{lang}\n{code}\n```\nDone."


# --- MBPP+: which code is the program -------------------------------------------------------------------------


def test_a_fenced_block_defining_the_entry_point_wins_over_a_longer_one():
    other = "def helper_with_a_long_name(x):\n    return [x, x, x, x, x, x, x, x, x, x]\n"
    answer = fence(other) + "\n" + fence("import os\n\ndef f(x):\n    return x")
    assert candidate_code(answer, "f") == "import os\n\ndef f(x):\n    return x\n"


def test_the_entry_point_may_be_defined_on_any_line_of_a_block_and_async():
    answer = fence("x = 1\ny = 2\nz = 3\nw = 4\nv = 5") + fence("import os\n  async   def f (a):\n    return a")
    assert candidate_code(answer, "f").startswith("import os")
    assert candidate_code(fence("def ff(x):\n    return x") + fence("def g():\n    return 1"), "f") == (
        "def ff(x):\n    return x\n"  # 'ff' is not 'f': no block defines f, so the longest block is taken
    )


def test_fences_of_other_languages_are_ignored_and_python_tags_are_case_blind():
    answer = fence("def f(x):\n    return 'js'", "javascript") + fence("def f(x):\n    return 1", "Python3")
    assert candidate_code(answer, "f") == "def f(x):\n    return 1\n"
    assert candidate_code(fence("def f():\n    return 2", ""), "f") == "def f():\n    return 2\n"
    assert candidate_code(fence("def f():\n    return 3", "py"), "f") == "def f():\n    return 3\n"


def test_among_blocks_a_parsable_one_wins_over_a_longer_broken_one():
    broken = "def f(x):\n    return (x +\n    # a long unfinished expression ............................."
    answer = fence(broken) + fence("def f(x):\n    return x")
    assert candidate_code(answer, "f") == "def f(x):\n    return x\n"
    only_broken = fence(broken) + fence("def f(x):\n    return (")
    assert candidate_code(only_broken, "f") == broken + "\n"  # none parses: the longest is tested (and fails)


def test_an_unfenced_answer_that_parses_is_the_program():
    code = "import math\ndef f(x):\n    return math.floor(x)"
    assert candidate_code(code, "f") == code


def test_an_unfenced_answer_gives_its_longest_parsable_span():
    answer = "Sure, here it is:\ndef f(x):\n    y = x + 1\n\n    return y\nThis adds one.\nprint(f(1))"
    assert candidate_code(answer, "f") == "def f(x):\n    y = x + 1\n\n    return y"


def test_the_longer_span_wins_and_the_first_one_on_a_tie():
    answer = "Text.\nx = 1\nMore text.\ndef f():\n    a = 1\n    return a\nEnd."
    assert candidate_code(answer, "f") == "def f():\n    a = 1\n    return a"
    tie = "Text.\ndef f():\n    return 1\nMore text.\ndef g():\n    return 2\nEnd."
    assert candidate_code(tie, "f") == "def f():\n    return 1"
    assert candidate_code("Text.\nx = 1\nMore text.\ny = 2\nEnd.", "f") == "x = 1"


def test_a_span_starts_at_an_unindented_code_line_and_takes_the_longest_parsable_end():
    # the span from 'def' over the indented body and the following assignment parses whole
    answer = "Look:\n    indented prose\ndef f():\n    return 1\nF = f()\nnot code at all\n"
    assert candidate_code(answer, "f") == "def f():\n    return 1\nF = f()"
    assert candidate_code("@cache\ndef f():\n    return 1\n?", "f") == "@cache\ndef f():\n    return 1"
    assert candidate_code("from os import path\n!", "f") == "from os import path"
    assert candidate_code("class A:\n    pass\n!", "f") == "class A:\n    pass"
    assert candidate_code("n: int = 3\n!", "f") == "n: int = 3"
    assert candidate_code("Nothing here.\nOr here.", "f") == ""


def test_code_after_the_four_hundredth_line_is_not_looked_at():
    prose = ["words"] * 399
    assert candidate_code("\n".join([*prose, "x = 1", "!"]), "f") == "x = 1"
    assert candidate_code("\n".join([*prose, "words", "x = 1", "!"]), "f") == ""


def test_a_null_byte_is_unparsable_not_a_crash():
    assert sanitize("def f():\n    return 1\n\x00", "f") == "def f():\n    return 1"
    assert sanitize(fence("def f():\n    return '\x00'"), "f") == "def f():\n    return '\x00'\n"


# --- MBPP+: what of the program is kept --------------------------------------------------------------------


def test_imports_come_first_then_the_reachable_definitions_in_source_order():
    code = (
        "def f(x):\n    return helper(x) + K\n"
        "import math\n"
        "K = 2\n"
        "def helper(x):\n    return math.floor(x) + inner(x)\n"
        "def inner(x):\n    return x\n"
        "def unused():\n    return 0\n"
        "from os import path\n"
        "print(f(1))\n"
    )
    assert sanitize(fence(code), "f") == (
        "import math\nfrom os import path\ndef f(x):\n    return helper(x) + K\nK = 2\n"
        "def helper(x):\n    return math.floor(x) + inner(x)\ndef inner(x):\n    return x"
    )


def test_names_reached_as_attributes_are_kept():
    code = "class Box:\n    pass\ndef size(b):\n    return 1\ndef f(b):\n    return b.size() + Box.n\n"
    assert sanitize(code, "f") == code.rstrip("\n")


def test_a_function_without_return_or_yield_is_no_definition():
    code = "def noop():\n    pass\ndef gen():\n    yield from range(3)\ndef f():\n    noop()\n    return list(gen())\n"
    assert sanitize(code, "f") == "def gen():\n    yield from range(3)\ndef f():\n    noop()\n    return list(gen())"
    assert sanitize("async def f():\n    return 1\n", "f") == "async def f():\n    return 1"


def test_only_simple_assignments_and_annotated_values_are_definitions():
    code = (
        "A, B = 1, 2\nC = D = 3\nE: int\nF: int = 4\nG = 5\nH += 1\n"
        "def f():\n    return A + B + C + D + E + F + G + H\n"
    )
    assert sanitize(code, "f") == "F: int = 4\nG = 5\ndef f():\n    return A + B + C + D + E + F + G + H"


def test_a_decorator_stays_with_its_function_and_the_first_definition_wins():
    code = "import functools\n@functools.lru_cache(None)\n@staticmethod\ndef f(n):\n    return n\ndef f(n):\n    return 0\n"
    assert sanitize(code, "f") == "import functools\n@functools.lru_cache(None)\n@staticmethod\ndef f(n):\n    return n"


def test_definitions_reachable_through_a_chain_and_a_cycle_are_kept_once():
    code = "def a():\n    return b()\ndef b():\n    return a()\ndef f():\n    return a()\n"
    assert sanitize(code, "f") == code.rstrip("\n")


def test_without_the_entry_point_only_the_imports_are_kept():
    assert sanitize("import os\ndef g():\n    return 1\n", "f") == "import os"


def test_an_unparsable_program_is_returned_as_is_to_fail_when_run():
    assert sanitize(fence("def f(:\n    return"), "f") == "def f(:\n    return\n"


# --- PDDL: free text to a ground action ---------------------------------------------------------------------

ARITY = {"pickup": 1, "stack": 2, "put-down": 1, "noop": 0}
OBJECTS = {"b1", "b2", "b3", "table_1"}


def test_the_first_applicable_action_word_and_the_objects_in_order():
    assert parse_action("Stack b2 on b1.", {"stack", "pickup"}, ARITY, OBJECTS) == ("stack", ("b2", "b1"))
    assert parse_action("PICKUP B3", {"pickup"}, ARITY, OBJECTS) == ("pickup", ("b3",))
    # 'pickup' is not applicable: the first applicable action named is stack; objects count from the start
    assert parse_action("pickup b1 then stack b3 b2", {"stack"}, ARITY, OBJECTS) == ("stack", ("b1", "b3"))


def test_extra_objects_are_cut_to_the_arity_and_too_few_is_no_action():
    assert parse_action("pickup b1 b2 b3", {"pickup"}, ARITY, OBJECTS) == ("pickup", ("b1",))
    assert parse_action("stack b1", {"stack"}, ARITY, OBJECTS) is None
    assert parse_action("stack b1 b1", {"stack"}, ARITY, OBJECTS) == ("stack", ("b1", "b1"))
    assert parse_action("noop", {"noop"}, ARITY, OBJECTS) == ("noop", ())


def test_no_applicable_action_named_is_no_action():
    assert parse_action("stack b1 b2", {"pickup"}, ARITY, OBJECTS) is None
    assert parse_action("", {"pickup"}, ARITY, OBJECTS) is None


def test_words_keep_hyphens_and_underscores_inside_names():
    assert words("Put-down B1, then table_1! -x") == ["put-down", "b1", "then", "table_1", "x"]
    assert parse_action("put-down table_1", {"put-down"}, ARITY, OBJECTS) == ("put-down", ("table_1",))
    assert parse_action("put down b1", {"put-down"}, ARITY, OBJECTS) is None


def test_atoms_and_actions_render_with_agentboards_templates():
    assert render("on", ["b1", "b2"]) == "b1 is on b2."
    assert render("unknown-pred", iter(["a", "b"])) == "unknown-pred a b"
    assert render("arm-empty", []) == "Your arm is empty."
    assert render_atom(("stack", "b1", "b2")) == "Stack b1 on b2."
    assert render_facts([("on", "b2", "b1"), ("clear", "b2"), ("arm-empty",)]) == (
        "B2 is on b1. The b2 is clear. Your arm is empty."
    )
    assert render_facts([]) == ""
    assert render_goal([("on", "b2", "b1"), ("clear", "b1")]) == (
        "The goal is to satisfy the following conditions: The b1 is clear., b2 is on b1."
    )


@pytest.mark.parametrize("name", ["holding", "used"])
def test_surplus_arguments_of_a_template_are_dropped(name):
    assert render(name, ["left", "shaker1", "x"]).count("x") == 0


def _unclosed_answer(prose_after: int) -> str:
    """61 unfenced code-like lines that never parse (an open bracket each), one prose line after the first
    `prose_after` of them, then one line that parses. Each start line tries every end edge after it, longest
    first, so the parsable last line is tried at attempt 1953 + prose_after (see `_longest_parsable_span`)."""
    bad = ["x = ("] * 61
    return "\n".join([*bad[:prose_after], "just words", *bad[prose_after:], "y = 1"])


def test_the_scan_of_an_unfenced_answer_stops_after_two_thousand_parse_attempts():
    assert candidate_code(_unclosed_answer(46), "f") == "y = 1"  # reached at attempt 1999
    assert candidate_code(_unclosed_answer(47), "f") == "y = 1"  # reached at attempt 2000, the last allowed
    assert candidate_code(_unclosed_answer(48), "f") == ""  # attempt 2001: the scan has stopped
