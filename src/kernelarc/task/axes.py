"""SOL-ExecBench axes: safe evaluation of `expr` axes and resolution of every axis for a workload.

Axis expressions come from task files, so they are parsed with `ast` and only integer arithmetic on
numbers and other axes' names is evaluated; anything else (calls, attributes, strings) is refused.
Semantics follow SOL-ExecBench: `/` is true division and the result must be a whole number.
Imports without torch. Budget: about 180 lines.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

_BINARY_OPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY_OPS: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}

MAX_EXPONENT = 64
"""Largest exponent `**` accepts: enough for any shape, small enough that `10**10**10` cannot hang."""

AXIS_TYPES = ("const", "var", "expr")
"""The axis kinds a definition may declare."""


def _parse(expression: str) -> ast.expr:
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError(f"axis expression must be a non-empty string, got {expression!r}")
    try:
        return ast.parse(expression.strip(), mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"axis expression {expression!r} is not valid: {e.msg}") from None


def expression_names(expression: str) -> set[str]:
    """The axis names an expression refers to; raises ValueError if it uses anything but arithmetic."""
    names: set[str] = set()

    def visit(node: ast.expr) -> None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise ValueError(f"axis expression {expression!r}: constant {node.value!r} is not a number")
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPS:
            visit(node.left)
            visit(node.right)
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY_OPS:
            visit(node.operand)
        else:
            raise ValueError(
                f"axis expression {expression!r}: {ast.unparse(node)!r} is not allowed "
                "(only numbers, axis names, + - * / // % ** and parentheses)"
            )

    visit(_parse(expression))
    return names


def evaluate_expression(expression: str, values: Mapping[str, int]) -> int:
    """Evaluate an axis expression given the values of the axes it names.

    Raises:
        ValueError: the expression uses a forbidden construct or an unknown axis, divides by zero,
            has an exponent above `MAX_EXPONENT`, or does not come out a whole number.
    """
    unknown = sorted(expression_names(expression) - set(values))
    if unknown:
        raise ValueError(f"axis expression {expression!r} names unknown axes {unknown}")

    def ev(node: ast.expr) -> int | float:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.UnaryOp):
            return _UNARY_OPS[type(node.op)](ev(node.operand))
        assert isinstance(node, ast.BinOp)  # expression_names refused everything else
        left, right = ev(node.left), ev(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ValueError(f"axis expression {expression!r}: exponent {right} exceeds {MAX_EXPONENT}")
        try:
            return _BINARY_OPS[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ValueError(f"axis expression {expression!r} divides by zero") from None

    result = ev(_parse(expression))
    if isinstance(result, float):
        if not result.is_integer():
            raise ValueError(f"axis expression {expression!r} gives {result}, not a whole number")
        result = int(result)
    return result


def check_axes(axes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Validate a definition's `axes` map and return its expr axes in an order that evaluates each after
    the axes it names.

    Raises:
        ValueError: an axis has an unknown type, a const has no whole value, an expression is invalid
            or names unknown axes, or expressions form a cycle.
    """
    deps: dict[str, set[str]] = {}
    for name, axis in axes.items():
        kind = axis.get("type") if isinstance(axis, Mapping) else None
        if kind not in AXIS_TYPES:
            raise ValueError(f"axis {name!r} has type {kind!r}; expected one of {list(AXIS_TYPES)}")
        if kind == "const":
            _whole(name, axis.get("value"))
        elif kind == "expr":
            deps[name] = expression_names(axis.get("expression"))
            unknown = sorted(deps[name] - set(axes))
            if unknown:
                raise ValueError(f"axis {name!r} = {axis['expression']!r} names unknown axes {unknown}")
    order: list[str] = []

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in order or name not in deps:
            return
        if name in chain:
            raise ValueError(f"axis expressions form a cycle: {' -> '.join(chain[chain.index(name):] + (name,))}")
        for dep in sorted(deps[name]):
            visit(dep, chain + (name,))
        order.append(name)

    for name in deps:
        visit(name, ())
    return order


def resolve_axes(axes: Mapping[str, Mapping[str, Any]], var_values: Mapping[str, int]) -> dict[str, int]:
    """Values of every axis (const, var and expr) of a definition for one workload, in definition order.

    Args:
        axes: the definition's `axes` map, name -> {"type": ..., "value"/"expression": ...}.
        var_values: the workload's values for the `var` axes.

    Raises:
        ValueError: the axes are invalid (see `check_axes`), a var axis has no value, a value is given
            for a non-var or unknown axis, or an expression does not evaluate to a whole number.
    """
    expr_order = check_axes(axes)
    for name in var_values:
        if name not in axes:
            raise ValueError(f"workload gives a value for unknown axis {name!r}; axes: {sorted(axes)}")
        if axes[name]["type"] != "var":
            raise ValueError(f"workload gives a value for axis {name!r}, which is {axes[name]['type']}, not var")
    resolved: dict[str, int] = {}
    for name, axis in axes.items():
        if axis["type"] == "const":
            resolved[name] = axis["value"]
        elif axis["type"] == "var":
            if name not in var_values:
                raise ValueError(f"var axis {name!r} has no value in the workload")
            resolved[name] = _whole(name, var_values[name])
    for name in expr_order:
        resolved[name] = _whole(name, evaluate_expression(axes[name]["expression"], resolved))
    return {name: resolved[name] for name in axes}


def _whole(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"axis {name!r} must be an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"axis {name!r} must be non-negative, got {value}")
    return value


__all__ = ["expression_names", "evaluate_expression", "check_axes", "resolve_axes", "MAX_EXPONENT", "AXIS_TYPES"]
