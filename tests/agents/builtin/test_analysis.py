"""analyze(): graph capture on meta tensors, source parts, pattern facts, failures recorded."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from kernelarc.agents.builtin.analysis import LAUNCH_BOUND_ELEMENTS, analyze
from kernelarc.agents.builtin.pytorch_source import EAGER_NAME
from kernelarc.task import load_task

from tests.agents.builtin.builtin_tasks import DATA_DEPENDENT_TASK, example_analysis, task_file


def test_linear_gelu_gives_gemm_with_bias_and_epilogue():
    a = example_analysis("kernelbench/gemm_bias_gelu_small.py")
    assert [n.target for n in a.nodes] == ["aten.linear", "aten.gelu"]
    assert a.input_names == ("x",) and a.param_names == ("self.linear.weight", "self.linear.bias")
    gemm = a.facts["gemm"]
    assert (gemm["M"], gemm["N"], gemm["K"]) == (64, 128, 128)
    assert gemm["a"] == "x" and gemm["b"] == "self.linear.weight" and gemm["trans_b"]
    assert gemm["bias"] == "self.linear.bias"
    assert [(s["op"], s["approximate"]) for s in gemm["epilogue"]] == [("gelu", "none")]
    assert gemm["out"] == a.output_names[0] == "v_gelu"
    assert "self.linear = nn.Linear(in_features, out_features)" in a.init_source
    assert a.init_signature == "self, in_features: int, out_features: int"
    assert f"def {EAGER_NAME}(self, x" in a.eager_source
    assert a.facts["launch_bound"] and a.facts["emit_blocker"] is None


def test_unrolled_column_sums_fold_into_one_reduction():
    red = example_analysis("kernelbench/slow_sum.py").facts["reduction"]
    assert (red["op"], red["input"], red["dims"], red["keepdim"], red["unrolled"]) == ("sum", "x", [1], True, 512)


@pytest.mark.parametrize("relative, key, expected", [
    ("kernelbench/softmax_small.py", "rowwise", {"op": "softmax", "form": "fused", "rows": 32, "cols": 781}),
    ("kernelbench/relu_small.py", "elementwise", {"inputs": ["x"], "numel": 64000}),
    ("sol/rmsnorm_small", "rowwise", {"op": "rms_norm", "form": "decomposed", "cols": 256, "eps": "eps"}),
])
def test_pattern_facts_of_examples(relative, key, expected):
    fact = example_analysis(relative).facts[key]
    assert {k: fact[k] for k in expected} == expected


def test_sol_float_scalar_is_traced_as_its_input_so_all_workloads_share_one_graph():
    a = example_analysis("sol/rmsnorm_small")
    assert a.facts["emit_blocker"] is None
    assert a.input_names == ("hidden_states", "weight", "eps") and a.init_source is None
    assert any("eps" in n.args for n in a.nodes)
    assert f"def {EAGER_NAME}(hidden_states" in a.eager_source


def test_untraceable_forward_is_recorded_not_raised(tmp_path):
    a = analyze(task_file(tmp_path, "data_dependent", DATA_DEPENDENT_TASK))
    assert a.nodes == () and a.capture_error
    assert a.facts["emit_blocker"].startswith("graph capture failed")
    assert a.eager_source  # the scheduling moves can still transplant it


SHARED_CASES = [
    ("level2/12_Gemm_Multiply_LeakyReLU.py", "gemm",
     {"M": 1024, "N": 8192, "K": 8192,
      "epilogue": [{"op": "mul", "scalar": 2.0, "node": "v_mul"},
                   {"op": "leaky_relu", "negative_slope": 0.1, "node": "v_leaky_relu"}]}),
    ("level1/97_ScaledDotProductAttention.py", "attention", {"form": "sdpa", "q": "Q", "shape": (32, 32, 512, 1024)}),
    ("level1/95_CrossEntropyLoss.py", "rowwise", {"op": "cross_entropy", "target": "targets", "cols": 4096}),
    ("level1/40_LayerNorm.py", "rowwise", {"op": "layer_norm", "weight": "self.ln.weight", "eps": 1e-05}),
    ("level2/1_Conv2D_ReLU_BiasAdd.py", "conv", {"dims": 2, "weight": "self.conv.weight"}),
    ("level1/19_ReLU.py", "elementwise", {"numel": 4096 * 393216}),
]


def test_shared_kernelbench_tasks_are_analysed_without_allocating_them(shared_dir):
    for relative, key, expected in SHARED_CASES:
        path = shared_dir / "kernelbench_examples" / relative
        if not path.is_file():
            pytest.skip(f"{path} is absent: ../shared is absent or partial")
        fact = analyze(load_task(path)).facts[key]
        assert {k: fact[k] for k in expected} == expected, relative
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    assert peak_gib < 3, f"peak RSS {peak_gib:.1f} GiB: a task's tensors were allocated for real"


def test_a_declared_tolerance_stays_out_of_generated_code(tmp_path):
    source = ("import torch\nSCALE = 2.0\nKERNELARC_TOLERANCE = {'atol': 0.01, 'rtol': 0.01}\n"
              "class Model(torch.nn.Module):\n    def forward(self, x):\n        return x * SCALE\n"
              "def get_inputs():\n    return [torch.randn(4, 8)]\ndef get_init_inputs():\n    return []\n")
    a = analyze(task_file(tmp_path, "declared", source))
    assert "SCALE = 2.0" in a.support_source and "KERNELARC_TOLERANCE" not in a.support_source


STEPS_TASK = (
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.cell = nn.Linear(1024 + 64, 64)\n\n"
    "    def forward(self, x, h):\n        outs = []\n        for t in range(x.shape[0]):\n"
    "            h = torch.tanh(self.cell(torch.cat((x[t], h), dim=1)))\n            outs.append(h)\n"
    "        return torch.stack(outs)\n\n\n"
    "def get_inputs():\n    return [torch.rand(160, 8, 1024), torch.rand(8, 64)]\n\n\n"
    "def get_init_inputs():\n    return []\n")
"""An RNN written as a Python loop: 1.3 M input elements, about 500 ops of a few hundred elements each."""

ONE_BIG_OP_TASK = (
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
    "    def forward(self, x):\n        return x.sum(dim=1)\n\n\n"
    "def get_inputs():\n    return [torch.rand(64, 32768)]\n\n\ndef get_init_inputs():\n    return []\n")


def test_a_loop_of_small_ops_is_launch_bound_however_large_its_inputs(tmp_path):
    steps = analyze(task_file(tmp_path, "steps", STEPS_TASK))
    assert steps.facts["total_elements"] > LAUNCH_BOUND_ELEMENTS and steps.facts["launch_bound"] is True
    one_op = analyze(task_file(tmp_path, "one_op", ONE_BIG_OP_TASK))  # a tiny output, but one op reads 2 M elements
    assert one_op.facts["total_elements"] > LAUNCH_BOUND_ELEMENTS and one_op.facts["launch_bound"] is False


def test_no_family_reads_the_raw_fact_dicts():
    """Issue 16: the move families share one typed description of a task's facts. Only the typed layer
    (moves/facts.py, `TaskAnalysis`'s properties) and the template-facts lookup (`read_facts`) index
    `analysis.facts`; a family that does so itself would parse the analysis' dicts again."""
    import ast

    moves = Path(__file__).resolve().parents[3] / "src" / "kernelarc" / "agents" / "builtin" / "moves"
    readers = {}
    for path in sorted(moves.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "facts" and isinstance(node.value, ast.Name) \
                    and node.value.id == "analysis":
                readers.setdefault(path.name, 0)
                readers[path.name] += 1
    assert set(readers) <= {"base.py", "facts.py", "triton_common.py"}, readers


def test_patterns_are_typed_as_the_analysis_found_them():
    from kernelarc.agents.builtin.moves.facts import GemmPattern, Patterns

    gemm = Patterns.of(example_analysis("kernelbench/gemm_bias_gelu_small.py")).gemm
    assert isinstance(gemm, GemmPattern) and gemm.form == "linear" and gemm.trans_b
    assert gemm.b_kn == f"{gemm.b}.t()" and gemm.epilogue[0].op == "gelu" and gemm.epilogue[0].node
    softmax = Patterns.of(example_analysis("kernelbench/softmax_small.py"))
    assert softmax.gemm is None and softmax.rowwise.op == "softmax" and softmax.rowwise.cols > 1
    assert Patterns.of(example_analysis("kernelbench/slow_sum.py")).reduction.unrolled > 1


@pytest.mark.parametrize("spelling, stored", [
    ("a.T", "a"), ("a.t()", "a"), ("a.transpose(0, 1)", "a"), ("a.transpose(-1, -2)", "a"), ("a.permute(1, 0)", "a"),
    ("a.transpose(1, 1)", None), ("a.permute(0, 1)", None),  # identities spelled as transposes
])
def test_a_gemm_operand_that_is_a_transpose_names_the_tensor_it_transposes(spelling, stored, tmp_path):
    square = "a.transpose(1, 1)" in spelling or "permute(0, 1)" in spelling
    shape = "(32, 16)" if square else "(16, 32)"  # A^T is 32 x 16 either way
    path = tmp_path / "task.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n"
                    "class Model(nn.Module):\n    def forward(self, a, b):\n"
                    f"        return torch.matmul({spelling}, b)\n\n"
                    f"def get_inputs():\n    return [torch.randn{shape}, torch.randn(16, 8)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    gemm = analyze(load_task(path)).facts["gemm"]
    assert gemm["a_stored"] == stored and (gemm["M"], gemm["N"], gemm["K"]) == (32, 8, 16)
