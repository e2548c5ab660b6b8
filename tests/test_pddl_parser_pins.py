"""Pins of the PDDL reader (`pddl/parser.py`): the operators, initial state and goal that PDDL progress is
computed from, and the one-line refusals of what it cannot read faithfully. Written against the mutants of
`make mutants PATHS=pddl_parser` (docs/quality.md). Small hand-written domains and problems; no data files.
"""

from __future__ import annotations

import pytest

from aecg_bench.benchmarks.pddl.parser import (
    Domain,
    Operator,
    PddlError,
    check_atom,
    parse_domain,
    parse_problem,
    read_sexpr,
    tokenize,
)

DOMAIN = """
; a comment (with parentheses) that is ignored
(define (domain Shop)
  (:requirements :strips :typing)
  (:predicates (at ?x - item ?r - room) (Holding ?x - item) (open ?d - door) (free))
  (:types fruit tool - item item door room)
  (:constants Basket - tool hall - room)
  (:action Take
    :parameters (?x - item ?r - room)
    :precondition (and (at ?x ?r) (free))
    :effect (and (holding ?x) (not (at ?x ?r)) (not (free))))
  (:action open-door
    :parameters (?d - door)
    :precondition (free)
    :effect (open ?d))
  (:action drop-basket
    :effect (and (at basket hall) (free)))
)
"""

PROBLEM = """
(define (problem P1) (:domain shop)
  (:objects apple pear - fruit kitchen - room front - door)
  (:init (at apple kitchen) (at pear kitchen) (free))
  (:goal (and (holding apple) (open front))))
"""


@pytest.fixture
def domain() -> Domain:
    return parse_domain(DOMAIN, "shop")


# --- what is read -------------------------------------------------------------------------------------------


def test_the_lexer_lowercases_drops_comments_and_splits_glued_variables():
    assert tokenize("(Pour ?S level?l1) ; gone (x)\n(b)") == ["(", "pour", "?s", "level", "?l1", ")", "(", "b", ")"]
    assert tokenize("a;b\nc") == ["a", "c"]


def test_a_file_is_one_nested_list():
    assert read_sexpr("(define (a b) (c (d)))", "f") == ["define", ["a", "b"], ["c", ["d"]]]
    assert read_sexpr("(x)", "f") == ["x"]


def test_the_domain_has_its_types_constants_predicates_and_operators(domain):
    assert domain.name == "shop"
    assert domain.types == {"fruit": "item", "tool": "item", "item": "object", "door": "object", "room": "object"}
    assert domain.constants == {"basket": "tool", "hall": "room"}
    assert domain.predicates == {"at": ("item", "room"), "holding": ("item",), "open": ("door",), "free": ()}
    assert list(domain.operators) == ["take", "open-door", "drop-basket"]
    assert domain.operators["take"] == Operator(
        name="take",
        params=(("?x", "item"), ("?r", "room")),
        pre=(("at", "?x", "?r"), ("free",)),
        add=(("holding", "?x"),),
        delete=(("at", "?x", "?r"), ("free",)),
    )
    assert domain.operators["open-door"] == Operator(
        "open-door", (("?d", "door"),), (("free",),), (("open", "?d"),), ()
    )
    assert domain.operators["drop-basket"] == Operator("drop-basket", (), (), (("at", "basket", "hall"), ("free",)), ())


def test_the_problem_has_its_objects_init_and_goal(domain):
    p = parse_problem(PROBLEM, domain, "p1")
    assert p.name == "p1" and p.domain == "shop"
    assert p.objects == {
        "basket": "tool",
        "hall": "room",
        "apple": "fruit",
        "pear": "fruit",
        "kitchen": "room",
        "front": "door",
    }
    assert p.init == frozenset({("at", "apple", "kitchen"), ("at", "pear", "kitchen"), ("free",)})
    assert p.goal == (("holding", "apple"), ("open", "front"))


def test_a_single_atom_goal_and_an_empty_init(domain):
    text = "(define (problem q) (:domain shop) (:objects d - door) (:init) (:goal (open d)))"
    p = parse_problem(text, domain)
    assert p.goal == (("open", "d"),) and p.init == frozenset()
    assert (
        parse_problem(text.replace("(:objects d - door) ", "(:objects d - door x) "), domain).objects["x"] == "object"
    )
    empty_goal = parse_problem(text.replace("(:goal (open d))", "(:goal ())"), domain)
    assert empty_goal.goal == ()


def test_an_object_may_repeat_a_constant_with_the_same_type(domain):
    text = "(define (problem q) (:domain shop) (:objects hall - room) (:init) (:goal (free)))"
    assert parse_problem(text, domain).objects["hall"] == "room"


def test_subtypes_walk_up_to_object(domain):
    assert domain.is_subtype("fruit", "item") and domain.is_subtype("fruit", "object")
    assert domain.is_subtype("item", "item") and not domain.is_subtype("item", "fruit")
    assert not domain.is_subtype("room", "item") and domain.is_subtype("unknown", "object")
    assert not domain.is_subtype("object", "item")


def test_a_cyclic_type_hierarchy_is_refused():
    d = Domain("c", {"a": "b", "b": "a"}, {}, {}, {})
    with pytest.raises(PddlError, match="domain 'c': cyclic type hierarchy"):
        d.is_subtype("a", "object")
    deep = Domain("d", {"a": "b", "b": "c", "c": "object"}, {}, {}, {})
    assert deep.is_subtype("a", "c") and deep.is_subtype("a", "object")


def test_atoms_are_checked_against_the_signature(domain):
    scope = {"apple": "fruit", "k": "room", "f": "door"}
    check_atom(domain, ("at", "apple", "k"), scope, "w")
    with pytest.raises(PddlError, match=r"w: unknown predicate 'nope'"):
        check_atom(domain, ("nope", "apple"), scope, "w")
    with pytest.raises(PddlError, match=r"w: 'at' takes 2 arguments, got 1 in \('at', 'apple'\)"):
        check_atom(domain, ("at", "apple"), scope, "w")
    with pytest.raises(PddlError, match=r"w: unknown object or variable 'x' in"):
        check_atom(domain, ("at", "x", "k"), scope, "w")
    with pytest.raises(PddlError, match=r"w: 'f' has type 'door', but 'at' expects 'item' there"):
        check_atom(domain, ("at", "f", "k"), scope, "w")


def test_a_signature_override_replaces_the_declared_one():
    text = DOMAIN.replace("(at ?x - item ?r - room)", "(at ?r - room ?x - item)")
    with pytest.raises(PddlError, match="'\\?x' has type 'item', but 'at' expects 'room' there"):
        parse_domain(text, "shop")
    fixed = parse_domain(text, "shop", {"at": ("item", "room")})
    assert fixed.predicates["at"] == ("item", "room")
    with pytest.raises(PddlError, match="signature override for 'at' does not fit its declaration"):
        parse_domain(DOMAIN, "shop", {"at": ("item",)})
    with pytest.raises(PddlError, match="signature override for 'gone' does not fit"):
        parse_domain(DOMAIN, "shop", {"gone": ()})


# --- what is refused, in one line ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(a))", r"^f: unbalanced '\)'$"),
        ("((a)", r"^f: 1 unclosed '\('$"),
        ("(((a)", r"^f: 2 unclosed '\('$"),
        ("(a) (b)", r"^f: expected exactly one \(define \.\.\.\) form$"),
        ("a", r"^f: expected exactly one \(define"),
        ("", r"^f: expected exactly one \(define"),
    ],
)
def test_files_that_are_not_one_balanced_form(text, message):
    with pytest.raises(PddlError, match=message):
        read_sexpr(text, "f")


def _domain_error(text: str, message: str) -> None:
    with pytest.raises(PddlError, match=message):
        parse_domain(text, "d")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(define)", r"^d: not a \(define \(domain \.\.\.\)\) file$"),
        ("(defin (domain x))", r"^d: not a \(define \(domain"),
        ("(define (problem x))", r"^d: not a \(define \(domain"),
        ("(define x)", r"^d: not a \(define \(domain"),
        ("(define (domain x) y)", r"^d: malformed section 'y'$"),
        ("(define (domain x) ())", r"^d: malformed section \[\]$"),
        ("(define (domain x) ((a)))", r"^d: malformed section"),
        ("(define (domain x) (:functions (f)))", r"^d: unsupported section ':functions'$"),
        ("(define (domain x) (:predicates p))", r"^d: malformed predicate 'p'$"),
        ("(define (domain x) (:predicates ()))", r"^d: malformed predicate \[\]$"),
        ("(define (domain x) (:predicates ((p))))", r"^d: malformed predicate"),
        ("(define (domain x) (:types a - (either b c)))", r"^d :types: '-' must be followed by a type name$"),
        ("(define (domain x) (:types a -))", r"^d :types: '-' must be followed by a type name$"),
        ("(define (domain x) (:types (either a b)))", r"^d :types: unsupported typed-list entry .*either"),
        (
            "(define (domain x) (:predicates (p ?a - (either b c))))",
            r"^d predicate 'p': '-' must be followed by a type name$",
        ),
        ("(define (domain x) (:action))", r"^d: action without a name$"),
        ("(define (domain x) (:action (a)))", r"^d: action without a name$"),
        ("(define (domain x) (:action a :parameters))", r"^d action 'a': malformed action body near ':parameters'$"),
        ("(define (domain x) (:action a parameters ()))", r"^d action 'a': malformed action body near 'parameters'$"),
        ("(define (domain x) (:action a (x) ()))", r"^d action 'a': malformed action body near \['x'\]$"),
        ("(define (domain x) (:action a :cost 1))", r"^d action 'a': unsupported keys \[':cost'\]$"),
        ("(define (domain x) (:action a :parameters x))", r"^d action 'a': :parameters must be a list$"),
        (
            "(define (domain x) (:predicates (p)) (:action a :effect (not (p) (p))))",
            r"^d action 'a': malformed \(not \.\.\.\) effect",
        ),
        (
            "(define (domain x) (:predicates (p)) (:action a :precondition (not (p))))",
            r"^d action 'a' precondition: unsupported construct 'not' where an atom is required$",
        ),
        (
            "(define (domain x) (:predicates (p)) (:action a :precondition (or (p) (p))))",
            r"unsupported construct 'or'",
        ),
        ("(define (domain x) (:predicates (p)) (:action a :effect (= a b)))", r"unsupported construct '='"),
        (
            "(define (domain x) (:predicates (p)) (:action a :effect (and (p) (forall (?x) (p)))))",
            r"^d action 'a' effect: unsupported construct 'forall'",
        ),
        (
            "(define (domain x) (:predicates (p)) (:action a :effect (and p)))",
            r"^d action 'a' effect: expected an atom, got 'p'$",
        ),
        ("(define (domain x) (:predicates (p)) (:action a :effect (and ())))", r"expected an atom, got \[\]$"),
        ("(define (domain x) (:predicates (p)) (:action a :effect ((p))))", r"expected an atom, got \[\['p'\]\]$"),
        (
            "(define (domain x) (:predicates (p ?a)) (:action a :parameters (?v - thing) :effect (p ?v)))",
            r"^d action 'a': parameter '\?v' has unknown type 'thing'$",
        ),
        ("(define (domain x) (:predicates (p)) (:action a :effect (q)))", r"^d action 'a': unknown predicate 'q'$"),
    ],
)
def test_domains_it_cannot_read_faithfully(text, message):
    _domain_error(text, message)


def test_or_imply_exists_when_are_refused_where_an_atom_is_required():
    for construct in ("imply", "exists", "when"):
        _domain_error(
            f"(define (domain x) (:predicates (p)) (:action a :precondition ({construct} (p) (p))))",
            f"unsupported construct '{construct}'",
        )


def test_requirements_are_read_not_enforced_and_sections_come_in_any_order():
    d = parse_domain(
        "(define (domain x) (:predicates (p ?a - t)) (:requirements :adl :fluents) (:types t)"
        " (:action a :parameters (?v - t) :precondition () :effect ()))"
    )
    assert d.operators["a"].pre == () and d.operators["a"].add == () and d.operators["a"].delete == ()
    assert d.types == {"t": "object"}


def _problem_error(domain: Domain, text: str, message: str) -> None:
    with pytest.raises(PddlError, match=message):
        parse_problem(text, domain, "p")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(define)", r"^p: not a \(define \(problem \.\.\.\)\) file$"),
        ("(define (domain x))", r"^p: not a \(define \(problem"),
        ("(definex (problem x))", r"^p: not a \(define \(problem"),
        ("(define x)", r"^p: not a \(define \(problem"),
        ("(define (problem q) (:domain shop) (:metric 1) (:goal (free)))", r"^p: unsupported sections \[':metric'\]$"),
        ("(define (problem q) (:domain other) (:goal (free)))", r"^p: problem is for domain 'other', not 'shop'$"),
        ("(define (problem q) (:goal (free)))", r"^p: problem is for domain '', not 'shop'$"),
        (
            "(define (problem q) (:domain shop) (:objects hall - door) (:goal (free)))",
            r"^p: object 'hall' redeclared with type 'door' \(was 'room'\)$",
        ),
        (
            "(define (problem q) (:domain shop) (:objects a - b a - c) (:goal (free)))",
            r"^p: object 'a' has unknown type 'b'$",
        ),
        ("(define (problem q) (:domain shop) (:objects a b - (x)) (:goal (free)))", r"^p :objects: '-' must be"),
        ("(define (problem q) (:domain shop) (:init))", r"^p: expected one :goal formula$"),
        ("(define (problem q) (:domain shop) (:goal (free) (free)))", r"^p: expected one :goal formula$"),
        ("(define (problem q) (:domain shop) (:init (not (free))) (:goal (free)))", r"^p :init: unsupported construct"),
        ("(define (problem q) (:domain shop) (:goal (or (free) (free))))", r"^p :goal: unsupported construct 'or'"),
        (
            "(define (problem q) (:domain shop) (:init (at x hall)) (:goal (free)))",
            r"^p: unknown object or variable 'x'",
        ),
        ("(define (problem q) (:domain shop) (:goal (at hall hall)))", r"^p: 'hall' has type 'room', but 'at' expects"),
    ],
)
def test_problems_it_cannot_read_faithfully(domain, text, message):
    _problem_error(domain, text, message)


def test_an_object_redeclared_with_its_own_type_is_fine_but_a_second_type_is_not(domain):
    ok = "(define (problem q) (:domain shop) (:objects a - fruit a - fruit) (:init) (:goal (free)))"
    assert parse_problem(ok, domain).objects["a"] == "fruit"
    _problem_error(
        domain,
        "(define (problem q) (:domain shop) (:objects a - fruit a - tool) (:goal (free)))",
        r"object 'a' redeclared with type 'tool' \(was 'fruit'\)",
    )


def test_stray_non_sections_in_a_problem_are_skipped(domain):
    text = "(define (problem q) (:domain shop) junk () ((x)) (:goal (free)))"
    assert parse_problem(text, domain).goal == (("free",),)


# --- written against the survivors of the first run ---------------------------------------------------------


def test_an_action_with_only_a_name_does_nothing_and_needs_nothing():
    d = parse_domain("(define (domain x) (:predicates (p)) (:action noop))")
    assert d.operators["noop"] == Operator("noop", (), (), (), ())


def test_a_nested_and_is_refused_where_an_atom_is_required():
    _domain_error(
        "(define (domain x) (:predicates (p)) (:action a :precondition (and (and p p))))",
        r"^d action 'a' precondition: unsupported construct 'and' where an atom is required$",
    )


def test_a_bad_parameter_list_names_its_action():
    _domain_error(
        "(define (domain x) (:predicates (p)) (:action a :parameters (?v -)))",
        r"^d action 'a': '-' must be followed by a type name$",
    )


def test_a_problem_is_named_problem_in_errors_by_default_and_its_own_name_otherwise(domain):
    with pytest.raises(PddlError, match=r"^problem: 1 unclosed '\('$"):
        parse_problem("((define (problem q))", domain)
    with pytest.raises(PddlError, match=r"^p7: 1 unclosed '\('$"):
        parse_problem("((define (problem q))", domain, "p7")
    with pytest.raises(PddlError, match=r"^problem: problem is for domain '', not 'shop'$"):
        parse_problem("(define (problem q))", domain)  # a bare problem form is read, then its domain checked


def test_a_domain_is_named_domain_in_errors_by_default_and_its_own_name_otherwise():
    with pytest.raises(PddlError, match=r"^domain: 1 unclosed '\('$"):
        parse_domain("((define (domain x))")
    with pytest.raises(PddlError, match=r"^d: 1 unclosed '\('$"):
        parse_domain("((define (domain x))", "d")
    with pytest.raises(PddlError, match=r"^domain :constants: '-' must be followed by a type name$"):
        parse_domain("(define (domain x) (:constants a -))")


def test_a_bare_domain_form_is_an_empty_domain():
    assert parse_domain("(define (domain x))") == Domain("x", {}, {}, {}, {})


def test_a_bad_deleted_atom_names_its_action_and_effect():
    _domain_error(
        "(define (domain x) (:predicates (p)) (:action a :effect (not (and (p)))))",
        r"^d action 'a' effect: unsupported construct 'and' where an atom is required$",
    )
