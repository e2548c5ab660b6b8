"""From a model's answer to the Python solution that gets tested (EvalPlus's `sanitize`, re-done with `ast`).

EvalPlus (evalplus/sanitize.py) takes the longest syntactically valid span of
the answer, then keeps only import statements and the top-level functions,
classes and simple assignments that the entry point (transitively) refers to,
so the model's own test calls, prints and `__main__` blocks are not run. We do
the same in three steps:

1. candidate code: the markdown fenced blocks (```python, ```py, ``` ...),
   preferring one that defines the entry point; with no fence, the longest run
   of lines that parses;
2. keep imports, plus the first definition of each top-level name (functions
   need a `return`, as in EvalPlus, or a `yield`), reachable from the entry
   point through the names each definition mentions;
3. join them: imports first, then the definitions in source order.

Deviations: decorators stay attached to their function (EvalPlus's tree-sitter
pass drops decorated definitions, which fails e.g. an `@lru_cache` solution),
and generator functions count as definitions (EvalPlus drops a function with
no `return`, which fails Mbpp/630's own canonical solution, a generator helper).
"""

from __future__ import annotations

import ast
import re

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_CODE_LANGS = {"", "python", "python3", "py", "py3"}
MAX_LINES = 400  # unfenced answers are scanned span by span: bound the work
MAX_PARSE_ATTEMPTS = 2000
_CODE_START = re.compile(r"(?:async\s+def|def|class|import|from|@|[A-Za-z_]\w*\s*(?::[^=]+)?=)[\s(]?")


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _defines(text: str, name: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", text, re.M) is not None


def _longest_parsable_span(text: str) -> str:
    """Longest block of consecutive lines that parses (counting non-blank lines).

    Spans start at an unindented line that looks like code and end just before
    an unindented line (or at the end): code blocks end there, so nothing
    longer is missed, and the number of parse attempts stays bounded.
    """
    lines = text.splitlines()[:MAX_LINES]
    edges = [i for i, ln in enumerate(lines) if ln.strip() and not ln[0].isspace()] + [len(lines)]
    starts = [i for i in edges[:-1] if _CODE_START.match(lines[i])]
    best, best_len, attempts = "", 0, 0
    for i in starts:
        for j in reversed([e for e in edges if e > i]):
            size = sum(1 for ln in lines[i:j] if ln.strip())
            attempts += 1
            if size <= best_len or attempts > MAX_PARSE_ATTEMPTS:
                break
            chunk = "\n".join(lines[i:j])
            if _parses(chunk):
                best, best_len = chunk, size
                break
    return best


def candidate_code(answer: str, entry_point: str) -> str:
    """The part of an answer that is meant as the program."""
    blocks = [body for lang, body in _FENCE.findall(answer) if lang.lower() in _CODE_LANGS]
    if blocks:
        defining = [b for b in blocks if _defines(b, entry_point)]
        pool = defining or blocks
        parsable = [b for b in pool if _parses(b)] or pool
        return max(parsable, key=len)
    if _parses(answer):
        return answer
    return _longest_parsable_span(answer)


def _gives_a_value(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Return | ast.Yield | ast.YieldFrom) for n in ast.walk(node))


def _names_used(node: ast.AST) -> set[str]:
    used: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            used.add(n.id)
        elif isinstance(n, ast.Attribute):
            used.add(n.attr)
    return used


def _definition_name(node: ast.stmt) -> str | None:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return node.name if _gives_a_value(node) else None
    if isinstance(node, ast.ClassDef):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return node.target.id
    return None


def _segment(source_lines: list[str], node: ast.stmt) -> str:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "\n".join(source_lines[first - 1 : node.end_lineno])


def sanitize(answer: str, entry_point: str) -> str:
    """The solution EvalPlus would test for this answer (empty when there is no code)."""
    code = candidate_code(answer, entry_point)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code  # unparsable: executing it reports the syntax error
    lines = code.splitlines()
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    definitions: dict[str, ast.stmt] = {}
    for node in tree.body:
        name = _definition_name(node)
        if name is not None and name not in definitions:
            definitions[name] = node
    reachable, queue = {entry_point}, [entry_point]
    while queue:
        node = definitions.get(queue.pop())
        for name in _names_used(node) if node is not None else ():
            if name in definitions and name not in reachable:
                reachable.add(name)
                queue.append(name)
    kept = sorted((node for name, node in definitions.items() if name in reachable), key=lambda n: n.lineno)
    return "\n".join(_segment(lines, node) for node in [*imports, *kept])
