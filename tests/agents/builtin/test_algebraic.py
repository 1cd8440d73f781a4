"""The `algebraic` family and agents/builtin/algebra.py: which identities are found, that the work they
drop is gone from the candidate's source, and that every rewritten candidate passes the real guard
on the CPU (fresh inputs each round, the reference in its own process)."""

from __future__ import annotations

import pytest

from kernelarc.agents.builtin.algebra import simplify
from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.agents.builtin.search import Search
from kernelarc.guard import Verdict, candidate_from_source, evaluate

from tests.agents.builtin.builtin_tasks import FAST_GUARD, task_file

FAMILY = get_family("algebraic")


def _task_source(init: str, forward: str, inputs: str, init_inputs: str = "") -> str:
    return (f"import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
            f"    def __init__(self):\n        super().__init__()\n{init}\n\n"
            f"    def forward(self, x):\n{forward}\n\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n\ndef get_init_inputs():\n    return [{init_inputs}]\n")


GEMM_SUM = _task_source(
    "        self.weight = nn.Parameter(torch.randn(48, 40))",
    "        x = torch.matmul(x, self.weight.T)\n        x = x / 2\n        x = torch.sum(x, dim=1, keepdim=True)\n"
    "        return x * 1.5",
    "torch.rand(24, 40)")
"""A GEMM, a scale, a keepdim sum over its columns, a scale: the GEMM is a GEMV on the weight's column sums."""

LINEAR_SIZE1_TAIL = _task_source(
    "        self.linear = nn.Linear(40, 48)",
    "        x = self.linear(x)\n        x = torch.sum(x, dim=1, keepdim=True)\n"
    "        x = torch.max(x, dim=1, keepdim=True)[0]\n        x = torch.mean(x, dim=1, keepdim=True)\n"
    "        x = torch.logsumexp(x, dim=1, keepdim=True)\n        return torch.logsumexp(x, dim=1, keepdim=True)",
    "torch.rand(24, 40)")
"""Every reduction after the sum runs over a dim of size 1."""

MAX_MINUS_MEAN = _task_source(
    "        self.gemm = nn.Linear(40, 48)",
    "        x = self.gemm(x)\n        x = torch.max(x, dim=1, keepdim=True).values\n"
    "        x = x - x.mean(dim=1, keepdim=True)\n        return torch.nn.functional.gelu(x)",
    "torch.rand(24, 40)")
"""x - x.mean over a size-1 dim is zero whatever the GEMM computed: the GEMM is dead."""

CONV_SOFTMAX_ONE = _task_source(
    "        self.conv = nn.ConvTranspose3d(3, 8, 3)\n        self.bias = nn.Parameter(torch.randn(1, 1, 1, 1, 1))",
    "        x = self.conv(x)\n        x = torch.mean(x, dim=1, keepdim=True)\n        x = x + self.bias\n"
    "        x = torch.softmax(x, dim=1)\n        return torch.tanh(x) * 2.0",
    "torch.rand(2, 3, 4, 5, 5)")
"""A softmax over the one channel a keepdim mean left is ones: the convolution is dead."""

AFFINE_MEAN = _task_source(
    "        self.linear = nn.Linear(40, 48)\n        self.shift = nn.Parameter(torch.randn(48))\n"
    "        self.rows = nn.Parameter(torch.randn(24, 1))",
    "        y = self.linear(x) - self.shift\n        y = -(y * self.rows) + 0.25\n        y = 3.0 - y\n"
    "        return y.mean(dim=-1) + x[:, :1].squeeze(1)",
    "torch.rand(24, 40)")
"""A mean over the columns through a per-row scale, a vector subtracted, a negation, a reversed subtraction."""

COLUMN_SUM = _task_source(
    "        self.weight = nn.Parameter(torch.randn(40, 48))\n        self.cols = nn.Parameter(torch.randn(48))",
    "        y = torch.mm(x, self.weight) * self.cols + 1.0\n        return y.sum(dim=0)",
    "torch.rand(24, 40)")
"""A sum over the rows of a 2-D product, scaled per column: A's column sums times B."""

BF16_SUM = _task_source(
    "        self.linear = nn.Linear(64, 96).to(torch.bfloat16)",
    "        return self.linear(x).sum(dim=-1)",
    "torch.rand(32, 64, dtype=torch.bfloat16)")
"""A bf16 GEMM summed over its columns."""


@pytest.mark.parametrize("name, source, rules, gone", [
    ("gemm_sum", GEMM_SUM, {"linear_reduction"}, "aten.matmul("),
    ("linear_tail", LINEAR_SIZE1_TAIL, {"linear_reduction", "size1_reduction"}, "aten.logsumexp("),
    ("max_minus_mean", MAX_MINUS_MEAN, {"constant", "size1_reduction"}, "aten.linear("),
    ("conv_softmax_one", CONV_SOFTMAX_ONE, {"constant"}, "aten.conv_transpose3d("),
    ("affine_mean", AFFINE_MEAN, {"linear_reduction"}, "aten.linear("),
    ("column_sum", COLUMN_SUM, {"linear_reduction"}, "aten.mm("),
])
def test_the_rewrite_drops_the_work_and_passes_the_guard(tmp_path, name, source, rules, gone):
    task = task_file(tmp_path, name, source)
    analysis = analyze(task)
    assert FAMILY.applies(analysis) is None
    found = simplify(analysis)
    assert rules <= {r.rule for r in found.rewrites}
    move = FAMILY.render(analysis, FAMILY.space(analysis)[0])
    forward = move.source[move.source.index("def forward"):]
    assert gone not in forward, forward
    assert len(move.claim) <= 160
    evaluation = evaluate(task, candidate_from_source(move.source, task), device="cpu", settings=FAST_GUARD)
    assert evaluation.verdict is not Verdict.REJECT, evaluation.reason


def test_in_a_graph_that_writes_in_place_an_identity_is_a_copy(tmp_path):
    """`x.sum(1, keepdim=True)` over a size-1 dim is x, but the reference's result was a fresh tensor: an
    in-place add on it must not write into the input."""
    source = _task_source("", "        y = torch.sum(x, dim=1, keepdim=True)\n        y.add_(1.0)\n        return y * 2.0",
                          "torch.rand(16, 1, 8)")
    task = task_file(tmp_path, "in_place", source)
    move = FAMILY.render(analyze(task), {"rules": "all"})
    assert "x.clone()" in move.source
    evaluation = evaluate(task, candidate_from_source(move.source, task), device="cpu", settings=FAST_GUARD)
    assert evaluation.verdict is not Verdict.REJECT, evaluation.reason


def test_low_precision_gemm_sums_are_left_alone(tmp_path):
    """In bf16 the reference rounds each product before summing: a GEMV does not reproduce that noise."""
    assert FAMILY.applies(analyze(task_file(tmp_path, "bf16_sum", BF16_SUM))).startswith("no algebraic identity")


@pytest.mark.parametrize("name, forward, reason", [
    ("relu_then_sum", "        return torch.relu(self.linear(x)).sum(dim=1)", "no algebraic identity"),
    ("gemm_also_returned", "        y = self.linear(x)\n        return y, y.sum(dim=1)", "no algebraic identity"),
    ("scale_varies_along_n", "        return (self.linear(x) * self.scale).sum(dim=1)", "no algebraic identity"),
    ("sum_over_rows_of_3d", "        return self.linear(x.unsqueeze(0)).sum(dim=1)", "no algebraic identity"),
])
def test_no_rewrite_where_the_identity_does_not_hold_or_saves_nothing(tmp_path, name, forward, reason):
    source = _task_source("        self.linear = nn.Linear(40, 48)\n        self.scale = nn.Parameter(torch.randn(48))",
                          forward, "torch.rand(24, 40)")
    assert FAMILY.applies(analyze(task_file(tmp_path, name, source))).startswith(reason)


def test_constants_are_written_only_for_a_task_of_one_shape(tmp_path):
    """SOL-ExecBench tasks have many workloads: a constant written with the traced shape would be
    wrong on the others, so the softmax over one element is left as it is there."""
    problem = tmp_path / "softmax_one"
    problem.mkdir()
    (problem / "definition.json").write_text(
        '{"name": "softmax_one", "op_type": "softmax", "axes": {"B": {"type": "var"}, "D": {"type": "const", '
        '"value": 8}}, "inputs": {"x": {"shape": ["B", "D"], "dtype": "float32"}}, "outputs": {"y": {"shape": '
        '["B", "D"], "dtype": "float32"}}, "reference": "import torch\\n\\ndef run(x):\\n    return '
        'torch.softmax(x.sum(dim=1, keepdim=True), dim=1) * x\\n"}')
    (problem / "workload.jsonl").write_text(
        '{"uuid": "a", "axes": {"B": 4}, "inputs": {"x": {"type": "random"}}}\n'
        '{"uuid": "b", "axes": {"B": 6}, "inputs": {"x": {"type": "random"}}}\n')
    from kernelarc.task import load_task

    analysis = analyze(load_task(problem))
    assert "constant" not in {r.rule for r in simplify(analysis).rewrites}


def test_without_reassociation_only_the_bit_exact_rules_apply(tmp_path):
    analysis = analyze(task_file(tmp_path, "linear_tail", LINEAR_SIZE1_TAIL))
    assert FAMILY.space(analysis) == [{"rules": "all"}, {"rules": "exact"}]
    move = FAMILY.render(analysis, {"rules": "exact"})
    forward = move.source[move.source.index("def forward"):]
    assert "aten.linear(" in forward and "aten.logsumexp(" not in forward and "aten.mean" not in forward
    only_exact = analyze(task_file(tmp_path, "conv_softmax_one", CONV_SOFTMAX_ONE))
    assert FAMILY.space(only_exact) == [{"rules": "all"}]


def test_the_fusion_agent_tries_the_rewrite_before_anything_else(tmp_path):
    analysis = analyze(task_file(tmp_path, "gemm_sum", GEMM_SUM))
    search = Search(analysis, families_for("fusion"), seed=0, device="cpu")
    family, params = search.next()
    assert family.name == "algebraic" and FAMILY.removes_work
