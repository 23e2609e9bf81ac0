"""Shell syntax for :mod:`.launch`: where a ``${...}`` or ``$(( ... ))`` closes, and arithmetic as a launch script's
shell computes it, over integers and the script's own values."""

from __future__ import annotations

from collections.abc import Callable, Mapping

#: Most nested names (a name whose value names another) evaluated.
MAX_DEPTH = 32


def closing_parens(rest: str) -> int | None:
    """The index of the ``))`` that closes ``rest[:2] == '(('``, nested parentheses counted; None when none does."""
    depth = 0
    for j, char in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return j - 1 if j > 0 and rest[j - 1] == ")" and _balanced(rest[2 : j - 1]) else None
    return None


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def integer_expression(text: str, variables: Mapping[str, str], depth: int = 0) -> int:
    """The value of a shell arithmetic expression of integers, names (their values, themselves expressions),
    ``+ - * / % **`` and parentheses; ``/`` and ``%`` truncate toward zero as the shell's do. ValueError for
    anything else (an unset name, a comparison, an assignment)."""
    import ast

    if depth > MAX_DEPTH or len(text) > 4096:
        raise ValueError(text)
    try:
        tree = ast.parse(text.strip() or "0", mode="eval").body
    except SyntaxError:
        raise ValueError(text) from None
    return _evaluate(tree, variables, depth)


def _evaluate(node: object, variables: Mapping[str, str], depth: int) -> int:
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in variables:
            raise ValueError(node.id)
        return integer_expression(variables[node.id], variables, depth + 1)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand, variables, depth)
        return -value if isinstance(node.op, ast.USub) else value
    if not isinstance(node, ast.BinOp):
        raise ValueError(type(node).__name__)
    result = _binary(
        type(node.op).__name__, _evaluate(node.left, variables, depth), _evaluate(node.right, variables, depth)
    )
    if abs(result) >= 2**63:
        raise ValueError("overflow")
    return result


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


def closing_brace(rest: str) -> int | None:
    """The index of the ``}`` that closes ``rest[0] == '{'``, nested ``${...}`` counted; None when none does."""
    depth, j = 1, 1
    while j < len(rest):
        if rest[j] == "\\":
            j += 2
            continue
        if rest.startswith("${", j):
            depth, j = depth + 1, j + 2
            continue
        if rest[j] == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return None
