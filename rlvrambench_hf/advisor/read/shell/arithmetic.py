"""Shell arithmetic as a launch script's shell computes it, over integers and the script's own values: ``$(( ))``,
``(( ))``, ``expr``. Bounded by construction: a name's value is evaluated once per expression (a chain of names that
doubles at each step costs its length, not 2^n), and an expression takes at most :data:`MAX_STEPS` steps."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence

#: Most nested names (a name whose value names another) evaluated.
MAX_DEPTH = 32
#: Most operations one expression takes (its names' values included).
MAX_STEPS = 10_000
#: Longest expression text read; integers longer than :data:`MAX_DIGITS` digits are no count of any setting.
MAX_TEXT = 4096
MAX_DIGITS = 40
_LOGICAL = re.compile(r"&&|\|\||!(?!=)")


class TooManySteps(Exception):
    """An expression that takes more than :data:`MAX_STEPS` operations."""


class _Budget:
    def __init__(self) -> None:
        self.steps = 0
        self.memo: dict[str, int] = {}

    def spend(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise TooManySteps


def integer_expression(text: str, variables: Mapping[str, str], depth: int = 0, budget: _Budget | None = None) -> int:
    """The value of a shell arithmetic expression of integers, names (their values, themselves expressions),
    ``+ - * / % **``, comparisons, ``&& || !`` and parentheses; ``/`` and ``%`` truncate toward zero as the shell's
    do. ValueError for anything else (an unset name, an assignment, an integer beyond :data:`MAX_DIGITS` digits);
    :class:`TooManySteps` past the budget."""
    budget = budget or _Budget()
    if depth > MAX_DEPTH or len(text) > MAX_TEXT or re.search(rf"[0-9]{{{MAX_DIGITS + 1},}}", text):
        raise ValueError(text)
    source = _LOGICAL.sub(lambda m: {"&&": " and ", "||": " or "}.get(m.group(0), " not "), text.strip() or "0")
    try:
        tree = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise ValueError(text) from None
    return _evaluate(tree, variables, depth, budget)


def _evaluate(node: object, variables: Mapping[str, str], depth: int, budget: _Budget) -> int:
    budget.spend()
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in budget.memo:
            if node.id not in variables:
                raise ValueError(node.id)
            budget.memo[node.id] = integer_expression(variables[node.id], variables, depth + 1, budget)
        return budget.memo[node.id]
    if isinstance(node, (ast.UnaryOp, ast.BoolOp, ast.Compare)):
        return _logical(node, variables, depth, budget)
    if not isinstance(node, ast.BinOp):
        raise ValueError(type(node).__name__)
    result = _binary(
        type(node.op).__name__,
        _evaluate(node.left, variables, depth, budget),
        _evaluate(node.right, variables, depth, budget),
    )
    if abs(result) >= 2**63:
        raise ValueError("overflow")
    return result


def _logical(node: ast.UnaryOp | ast.BoolOp | ast.Compare, variables: Mapping[str, str], depth: int,
             budget: _Budget) -> int:  # fmt: skip
    """A sign, ``!``, ``&&`` / ``||`` or one comparison (1 for true, 0 for false, as the shell has them)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        value = _evaluate(node.operand, variables, depth, budget)
        return -value if isinstance(node.op, ast.USub) else int(not value) if isinstance(node.op, ast.Not) else value
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v, variables, depth, budget) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        a, b = _evaluate(node.left, variables, depth, budget), _evaluate(node.comparators[0], variables, depth, budget)
        compare = {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b, ast.Eq: a == b, ast.NotEq: a != b}
        if type(node.ops[0]) in compare:
            return int(compare[type(node.ops[0])])
    raise ValueError(type(node).__name__)


def _binary(operator: str, a: int, b: int) -> int:
    """One shell arithmetic operation by its Python AST name; ``/`` and ``%`` truncate toward zero."""
    if operator in ("Div", "FloorDiv", "Mod"):
        quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return a - b * quotient if operator == "Mod" else quotient
    if operator == "Pow" and not 0 <= b <= 64:
        raise ValueError("exponent")
    results: dict[str, Callable[[], int]] = {
        "Add": lambda: a + b,
        "Sub": lambda: a - b,
        "Mult": lambda: a * b,
        "Pow": lambda: a**b,
    }
    if operator not in results:
        raise ValueError(operator)
    return results[operator]()


#: ``expr``'s operators that shell arithmetic writes the same way (``\*`` is ``*`` once the shell unquoted it).
_EXPR_OPERATORS = frozenset({"+", "-", "*", "/", "%", "(", ")", "<", "<=", ">", ">=", "=", "!="})


def expr_value(words: Sequence[str]) -> int | None:
    """What ``expr`` prints for ``words`` of integers and arithmetic or comparison operators, or None for anything
    else (strings, ``match``, ``length``)."""
    if not words or any(not (w in _EXPR_OPERATORS or re.fullmatch(r"[+-]?[0-9]{1,40}", w)) for w in words):
        return None
    text = " ".join("==" if w == "=" else w for w in words)
    try:
        return integer_expression(text, {})
    except (ValueError, ZeroDivisionError, TooManySteps):
        return None
