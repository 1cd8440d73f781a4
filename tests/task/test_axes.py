import pytest

from kernelarc.task.axes import MAX_EXPONENT, check_axes, evaluate_expression, expression_names, resolve_axes


@pytest.mark.parametrize("expression, expected", [
    ("a * b", 12), ("a + b - 1", 6), ("(a + b) * 2", 14), ("a // 2", 1), ("b / 2", 2), ("b % 3", 1),
    ("2 ** a", 8), ("-a + 10", 7), ("a*b//(b-a)", 12),
])
def test_expressions_evaluate_with_integer_semantics(expression, expected):
    assert evaluate_expression(expression, {"a": 3, "b": 4}) == expected


@pytest.mark.parametrize("expression, problem", [
    ("__import__('os').system('true')", "not allowed"),
    ("a.real", "not allowed"),
    ("a if a else b", "not allowed"),
    ("max(a, b)", "not allowed"),
    ("'3'", "not a number"),
    ("a +", "not valid"),
    ("", "non-empty"),
    ("a / 2", "not a whole number"),
    ("a // 0", "divides by zero"),
    (f"2 ** {MAX_EXPONENT + 1}", "exponent"),
    ("c * 2", "unknown axes ['c']"),
])
def test_bad_expressions_raise_value_error_naming_the_problem(expression, problem):
    with pytest.raises(ValueError, match=problem.replace("(", r"\(").replace("[", r"\[")):
        evaluate_expression(expression, {"a": 3, "b": 4})


def test_expression_names_lists_axes_used():
    assert expression_names("(rows * cols) // heads + 1") == {"rows", "cols", "heads"}


def test_resolve_axes_handles_const_var_and_chained_exprs():
    axes = {
        "head_dim": {"type": "const", "value": 128},
        "seq": {"type": "var"},
        "quarter": {"type": "expr", "expression": "half // 2"},  # refers to an expr defined later
        "half": {"type": "expr", "expression": "head_dim // 2"},
        "tokens": {"type": "expr", "expression": "seq * quarter"},
    }
    assert resolve_axes(axes, {"seq": 3}) == {"head_dim": 128, "seq": 3, "quarter": 32, "half": 64, "tokens": 96}


@pytest.mark.parametrize("axes, problem", [
    ({"a": {"type": "expr", "expression": "b + 1"}, "b": {"type": "expr", "expression": "a"}}, "cycle: a -> b -> a"),
    ({"a": {"type": "expr", "expression": "a * 2"}}, "cycle: a -> a"),
    ({"a": {"type": "expr", "expression": "zz"}}, "unknown axes"),
    ({"a": {"type": "konst", "value": 1}}, "type 'konst'"),
    ({"a": {"type": "const", "value": 1.5}}, "must be an integer"),
])
def test_check_axes_refuses_bad_definitions(axes, problem):
    with pytest.raises(ValueError, match=problem):
        check_axes(axes)


@pytest.mark.parametrize("values, problem", [
    ({}, "var axis 'n' has no value"),
    ({"n": 4, "m": 2}, "unknown axis 'm'"),
    ({"n": 4, "k": 2}, "k.*const, not var"),
    ({"n": -1}, "non-negative"),
    ({"n": True}, "must be an integer"),
])
def test_resolve_axes_refuses_bad_workload_values(values, problem):
    axes = {"n": {"type": "var"}, "k": {"type": "const", "value": 2}}
    with pytest.raises(ValueError, match=problem):
        resolve_axes(axes, values)
