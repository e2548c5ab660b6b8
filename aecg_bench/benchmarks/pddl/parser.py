"""A strict parser for the STRIPS-with-typing fragment of PDDL the AgentBoard domains use.

Supported: `:requirements` (read, not enforced), `:types` (single inheritance),
`:constants`, `:predicates`, `:action` with `:parameters`, a precondition that is
an atom or an `and` of atoms, and an effect that is an `and` of atoms and
`(not atom)`. Sections may come in any order (tyreworld declares its constants
after its predicates). Anything else (negative or disjunctive preconditions,
quantifiers, conditional effects, `either` types, numeric fluents) is refused with
an error naming the construct, so an unsupported domain fails loudly instead of
being misread.

Every atom in operators, initial states and goals is checked against the
predicate's declared signature (arity and argument types). A domain whose
declaration contradicts its own use can be repaired with `signature_overrides`
(tyreworld: `in` is declared `(container, obj)` but every action, init and goal
uses it as `(obj, container)`); the benchmark documents each override.

Names are case-insensitive in PDDL, so everything is lower-cased. The lexer also
splits a variable glued to the previous token (`level?l1` in barman's
`pour-shaker-to-shot`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aecg_bench.errors import DataError

Atom = tuple[str, ...]
"""A (lifted or ground) atom: predicate name followed by its arguments."""

ROOT_TYPE = "object"
_TOKEN = re.compile(r"\(|\)|\?[^\s()?]+|[^\s()?]+")
SExpr = str | list["SExpr"]


class PddlError(DataError):
    """A domain or problem file that this parser cannot read faithfully."""


@dataclass(frozen=True)
class Operator:
    name: str
    params: tuple[tuple[str, str], ...]  # (variable, type), in declaration order
    pre: tuple[Atom, ...]
    add: tuple[Atom, ...]
    delete: tuple[Atom, ...]


@dataclass(frozen=True)
class Domain:
    name: str
    types: dict[str, str]  # type -> parent type (ROOT_TYPE has none)
    constants: dict[str, str]  # constant -> type
    predicates: dict[str, tuple[str, ...]]  # predicate -> argument types
    operators: dict[str, Operator]  # in declaration order

    def is_subtype(self, sub: str, sup: str) -> bool:
        for _ in range(len(self.types) + 2):  # bounded walk up the hierarchy
            if sub == sup:
                return True
            if sub == ROOT_TYPE:
                return False
            sub = self.types.get(sub, ROOT_TYPE)
        raise PddlError(f"domain {self.name!r}: cyclic type hierarchy")


@dataclass(frozen=True)
class Problem:
    name: str
    domain: str
    objects: dict[str, str]  # object -> type, domain constants included
    init: frozenset[Atom]
    goal: tuple[Atom, ...]


def tokenize(text: str) -> list[str]:
    without_comments = re.sub(r";[^\n]*", " ", text)
    return _TOKEN.findall(without_comments.lower())


def read_sexpr(text: str, where: str) -> list[SExpr]:
    """The single top-level list of a PDDL file."""
    stack: list[list[SExpr]] = [[]]
    for tok in tokenize(text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) == 1:
                raise PddlError(f"{where}: unbalanced ')'")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1:
        raise PddlError(f"{where}: {len(stack) - 1} unclosed '('")
    top = stack[0]
    if len(top) != 1 or not isinstance(top[0], list):
        raise PddlError(f"{where}: expected exactly one (define ...) form")
    return top[0]


def _typed_list(items: list[SExpr], where: str) -> list[tuple[str, str]]:
    """`a b - t c - u d` -> [(a, t), (b, t), (c, u), (d, object)]."""
    out: list[tuple[str, str]] = []
    pending: list[str] = []
    i = 0
    while i < len(items):
        item = items[i]
        if not isinstance(item, str):
            raise PddlError(f"{where}: unsupported typed-list entry {item!r} (e.g. 'either' types)")
        if item == "-":
            if i + 1 >= len(items) or not isinstance(items[i + 1], str):
                raise PddlError(f"{where}: '-' must be followed by a type name")
            out += [(name, str(items[i + 1])) for name in pending]
            pending = []
            i += 2
            continue
        pending.append(item)
        i += 1
    return out + [(name, ROOT_TYPE) for name in pending]


def _atom(expr: SExpr, where: str) -> Atom:
    if isinstance(expr, list) and expr and expr[0] in ("and", "not", "or", "imply", "forall", "exists", "when", "="):
        raise PddlError(f"{where}: unsupported construct {expr[0]!r} where an atom is required")
    if not isinstance(expr, list) or not expr or not all(isinstance(x, str) for x in expr):
        raise PddlError(f"{where}: expected an atom, got {expr!r}")
    return tuple(str(x) for x in expr)


def _conjuncts(expr: SExpr, where: str) -> list[SExpr]:
    if isinstance(expr, list) and not expr:
        return []
    if isinstance(expr, list) and expr[0] == "and":
        return list(expr[1:])
    return [expr]


def _keyed(form: list[SExpr], where: str) -> dict[str, SExpr]:
    """`:key value :key value` pairs of an action body."""
    out: dict[str, SExpr] = {}
    for i in range(0, len(form), 2):
        key = form[i]
        if not isinstance(key, str) or not key.startswith(":") or i + 1 >= len(form):
            raise PddlError(f"{where}: malformed action body near {key!r}")
        out[key] = form[i + 1]
    return out


def _operator(form: list[SExpr], where: str) -> Operator:
    if len(form) < 2 or not isinstance(form[1], str):
        raise PddlError(f"{where}: action without a name")
    name = form[1]
    where = f"{where} action {name!r}"
    body = _keyed(form[2:], where)
    unknown = set(body) - {":parameters", ":precondition", ":effect"}
    if unknown:
        raise PddlError(f"{where}: unsupported keys {sorted(unknown)}")
    params_expr = body.get(":parameters", [])
    if not isinstance(params_expr, list):
        raise PddlError(f"{where}: :parameters must be a list")
    params = tuple(_typed_list(params_expr, where))
    pre = tuple(_atom(c, f"{where} precondition") for c in _conjuncts(body.get(":precondition", []), where))
    add: list[Atom] = []
    delete: list[Atom] = []
    for eff in _conjuncts(body.get(":effect", []), where):
        if isinstance(eff, list) and eff and eff[0] == "not":
            if len(eff) != 2:
                raise PddlError(f"{where}: malformed (not ...) effect {eff!r}")
            delete.append(_atom(eff[1], f"{where} effect"))
        else:
            add.append(_atom(eff, f"{where} effect"))
    return Operator(name=name, params=params, pre=pre, add=tuple(add), delete=tuple(delete))


def parse_domain(
    text: str, where: str = "domain", signature_overrides: dict[str, tuple[str, ...]] | None = None
) -> Domain:
    form = read_sexpr(text, where)
    if len(form) < 2 or form[0] != "define" or not (isinstance(form[1], list) and form[1][:1] == ["domain"]):
        raise PddlError(f"{where}: not a (define (domain ...)) file")
    name = str(form[1][1])
    types: dict[str, str] = {}
    constants: dict[str, str] = {}
    predicates: dict[str, tuple[str, ...]] = {}
    operators: dict[str, Operator] = {}
    for section in form[2:]:
        if not isinstance(section, list) or not section or not isinstance(section[0], str):
            raise PddlError(f"{where}: malformed section {section!r}")
        key, rest = section[0], section[1:]
        if key == ":requirements":
            continue
        if key == ":types":
            types.update(_typed_list(rest, f"{where} :types"))
        elif key == ":constants":
            constants.update(_typed_list(rest, f"{where} :constants"))
        elif key == ":predicates":
            for decl in rest:
                if not isinstance(decl, list) or not decl or not isinstance(decl[0], str):
                    raise PddlError(f"{where}: malformed predicate {decl!r}")
                predicates[decl[0]] = tuple(t for _, t in _typed_list(decl[1:], f"{where} predicate {decl[0]!r}"))
        elif key == ":action":
            op = _operator(section, where)
            operators[op.name] = op
        else:
            raise PddlError(f"{where}: unsupported section {key!r}")
    for pred, sig in (signature_overrides or {}).items():
        if pred not in predicates or len(predicates[pred]) != len(sig):
            raise PddlError(f"{where}: signature override for {pred!r} does not fit its declaration")
        predicates[pred] = tuple(sig)
    domain = Domain(name=name, types=types, constants=constants, predicates=predicates, operators=operators)
    for op in operators.values():
        for var, typ in op.params:
            if typ != ROOT_TYPE and typ not in types:
                raise PddlError(f"{where} action {op.name!r}: parameter {var!r} has unknown type {typ!r}")
        scope = {**constants, **dict(op.params)}
        for atom in (*op.pre, *op.add, *op.delete):
            check_atom(domain, atom, scope, f"{where} action {op.name!r}")
    return domain


def check_atom(domain: Domain, atom: Atom, scope: dict[str, str], where: str) -> None:
    """Arity and argument types of an atom against its predicate's signature."""
    pred, args = atom[0], atom[1:]
    if pred not in domain.predicates:
        raise PddlError(f"{where}: unknown predicate {pred!r}")
    sig = domain.predicates[pred]
    if len(sig) != len(args):
        raise PddlError(f"{where}: {pred!r} takes {len(sig)} arguments, got {len(args)} in {atom!r}")
    for arg, want in zip(args, sig, strict=True):
        if arg not in scope:
            raise PddlError(f"{where}: unknown object or variable {arg!r} in {atom!r}")
        if not domain.is_subtype(scope[arg], want):
            raise PddlError(f"{where}: {arg!r} has type {scope[arg]!r}, but {pred!r} expects {want!r} there")


def parse_problem(text: str, domain: Domain, where: str = "problem") -> Problem:
    form = read_sexpr(text, where)
    if len(form) < 2 or form[0] != "define" or not (isinstance(form[1], list) and form[1][:1] == ["problem"]):
        raise PddlError(f"{where}: not a (define (problem ...)) file")
    name = str(form[1][1])
    sections = {s[0]: s[1:] for s in form[2:] if isinstance(s, list) and s and isinstance(s[0], str)}
    unknown = set(sections) - {":domain", ":objects", ":init", ":goal"}
    if unknown:
        raise PddlError(f"{where}: unsupported sections {sorted(unknown)}")
    domain_name = str(sections.get(":domain", [""])[0])
    if domain_name != domain.name:
        raise PddlError(f"{where}: problem is for domain {domain_name!r}, not {domain.name!r}")
    objects = dict(domain.constants)
    for obj, typ in _typed_list(sections.get(":objects", []), f"{where} :objects"):
        if objects.get(obj, typ) != typ:
            raise PddlError(f"{where}: object {obj!r} redeclared with type {typ!r} (was {objects[obj]!r})")
        if typ != ROOT_TYPE and typ not in domain.types:
            raise PddlError(f"{where}: object {obj!r} has unknown type {typ!r}")
        objects[obj] = typ
    init = frozenset(_atom(a, f"{where} :init") for a in sections.get(":init", []))
    goal_forms = sections.get(":goal", [])
    if len(goal_forms) != 1:
        raise PddlError(f"{where}: expected one :goal formula")
    goal = tuple(_atom(a, f"{where} :goal") for a in _conjuncts(goal_forms[0], where))
    for atom in (*init, *goal):
        check_atom(domain, atom, objects, where)
    return Problem(name=name, domain=domain_name, objects=objects, init=init, goal=goal)
