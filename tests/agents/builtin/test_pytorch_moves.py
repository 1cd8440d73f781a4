"""The library, precision and scheduling move families: sources that pass the real guard on the CPU,
sources the static gate accepts for every point, and the reasons a family gives where it does not apply."""

from __future__ import annotations

import pytest

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.guard import GuardSettings, Verdict, candidate_from_source, evaluate
from kernelarc.guard.gate import check_source
from kernelarc.task import load_task
from kernelarc.task.model import TaskFormat

from tests.agents.builtin.builtin_tasks import (
    CONV_TASK, FAST_GUARD, FIXTURE_TASKS, example, example_analysis, task_file,
)

MINE = ("library", "precision", "scheduling")
LOOSE_GUARD = GuardSettings(rounds=2, cpu_iterations=3, warmup=1, atol=1e-2, rtol=1e-2)
"""For the precision move: bf16 inputs are outside fp32's 1e-4 tolerance; the guard, not the move, says so."""


def _judge(task, analysis, family_name, settings=FAST_GUARD):
    family = get_family(family_name)
    assert family.applies(analysis) is None, family.applies(analysis)
    move = family.render(analysis, family.space(analysis)[0])
    assert move.family == family_name and len(move.claim) <= 160
    return evaluate(task, candidate_from_source(move.source, task), device="cpu", settings=settings)


@pytest.mark.parametrize("relative, family, settings", [
    ("kernelbench/gemm_bias_gelu_small.py", "library_gemm", FAST_GUARD),
    ("kernelbench/slow_sum.py", "library_ops", FAST_GUARD),
    ("kernelbench/gemm_bias_gelu_small.py", "precision_lowp_gemm", LOOSE_GUARD),
    ("kernelbench/relu_small.py", "cuda_graph", FAST_GUARD),
    ("sol/rmsnorm_small", "torch_compile", FAST_GUARD),
])
def test_default_point_passes_the_guard_on_cpu(relative, family, settings):
    evaluation = _judge(example(relative), example_analysis(relative), family, settings)
    assert evaluation.verdict is not Verdict.REJECT, evaluation.reason


def test_sdpa_backend_point_passes_the_guard_on_cpu():
    task = load_task(FIXTURE_TASKS / "builtin_attention.py")
    evaluation = _judge(task, analyze(task), "library_sdpa")
    assert evaluation.verdict is not Verdict.REJECT, evaluation.reason


def test_channels_last_conv_passes_the_guard_on_cpu(tmp_path):
    task = task_file(tmp_path, "conv_tiny", CONV_TASK)
    evaluation = _judge(task, analyze(task), "library_channels_last")
    assert evaluation.verdict is not Verdict.REJECT, evaluation.reason


def test_unrolled_sum_becomes_one_call():
    analysis = example_analysis("kernelbench/slow_sum.py")
    source = get_family("library_ops").render(analysis, {"ops": "sum"}).source
    assert "torch.sum(x, dim=[1], keepdim=True)" in source and "slice" not in source


@pytest.mark.parametrize("relative", ["kernelbench/gemm_bias_gelu_small.py", "kernelbench/slow_sum.py",
                                      "kernelbench/softmax_small.py", "kernelbench/relu_small.py", "sol/rmsnorm_small"])
def test_every_point_of_every_applicable_family_passes_the_static_gate(relative):
    analysis = example_analysis(relative)
    entry = "ModelNew" if analysis.task.format is TaskFormat.KERNELBENCH else "run"
    rendered = 0
    for strategy in MINE:
        for family in families_for(strategy):
            if family.applies(analysis) is None:
                for params in family.space(analysis):
                    finding = check_source(family.render(analysis, params).source, entry=entry)
                    assert finding is None, (family.name, params, finding)
                    rendered += 1
    assert rendered >= 3


@pytest.mark.parametrize("family, relative, reason", [
    ("library_gemm", "kernelbench/slow_sum.py", "no GEMM in the task"),
    ("precision_lowp_gemm", "kernelbench/relu_small.py", "no GEMM in the task"),
    ("library_sdpa", "kernelbench/softmax_small.py", "no attention"),
    ("library_channels_last", "kernelbench/gemm_bias_gelu_small.py", "no convolution in the task"),
    ("library_ops", "kernelbench/softmax_small.py", "nothing hand-written"),
])
def test_family_says_why_it_does_not_apply(family, relative, reason):
    assert get_family(family).applies(example_analysis(relative)).startswith(reason)


def test_launch_bound_and_precision_reasons(tmp_path):
    big = task_file(tmp_path, "big_relu", example("kernelbench/relu_small.py").reference_source
                    .replace("ROWS = 64", "ROWS = 4096").replace("COLS = 1000", "COLS = 4096"))
    assert get_family("cuda_graph").applies(analyze(big)).startswith("not launch-bound")
    fp16 = analyze(load_task(FIXTURE_TASKS / "builtin_gemm_skinny_fp16.py"))
    assert get_family("precision_lowp_gemm").applies(fp16) == "the GEMM already runs in float16"


GEMM_TASK = (
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.linear = nn.Linear(1024, 1024)\n\n"
    "    def forward(self, x):\n        return self.linear(x)\n\n\n"
    "def get_inputs():\n    return [torch.randn(1024, 1024)]\n\n\ndef get_init_inputs():\n    return []\n")
"""A GEMM big enough not to be launch-bound (3 M elements), small enough for the CPU."""


@pytest.mark.parametrize("blas", ["tunableop", "cublaslt"])
def test_blas_points_pass_the_guard_on_cpu_where_they_run_plainly(tmp_path, blas):
    """The BLAS switch acts on the GPU only (not run on the card yet); off it the forward must stay exact."""
    task = task_file(tmp_path, "gemm_1024", GEMM_TASK)
    analysis = analyze(task)
    family = get_family("library_blas")
    assert family.applies(analysis) is None and {"blas": blas} in family.space(analysis)
    move = family.render(analysis, {"blas": blas})
    assert ("torch.cuda.tunable" in move.source) == (blas == "tunableop")
    evaluation = evaluate(task, candidate_from_source(move.source, task), device="cpu", settings=FAST_GUARD)
    assert evaluation.verdict is not Verdict.REJECT, evaluation.reason
    assert get_family("library_blas").applies(example_analysis("kernelbench/relu_small.py")) == "no GEMM in the task"


def test_compile_modes_that_replay_graphs_come_last_unless_launch_bound(tmp_path):
    """A graph's replay copies every input: on a task that is not launch-bound the graph modes are tried
    after the others and `default`, the compile baseline's own, last; on a launch-bound one `reduce-overhead` first."""
    compile_family = get_family("torch_compile")
    big = analyze(task_file(tmp_path, "big_relu", example("kernelbench/relu_small.py").reference_source
                            .replace("ROWS = 64", "ROWS = 4096").replace("COLS = 1000", "COLS = 4096")))
    modes = [p["mode"] for p in compile_family.space(big)]
    assert modes[0] == "max-autotune-no-cudagraphs" and set(modes[1:3]) == {"max-autotune", "reduce-overhead"}
    assert modes[-1] == "default"  # the campaign's torch.compile baseline already judged it
    small = example_analysis("kernelbench/relu_small.py")
    assert small.facts["launch_bound"] and compile_family.space(small)[0] == {"mode": "reduce-overhead"}


MLP_TASK = (
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),\n"
    "                                 nn.Linear(128, 32))\n        self.w = nn.Parameter(torch.randn(32, 32))\n"
    "        self.b = nn.Parameter(torch.randn(32))\n\n"
    "    def forward(self, x):\n        y = self.net(x)\n        return torch.addmm(self.b, y, self.w, beta=0.5)\n\n\n"
    "def get_inputs():\n    return [torch.rand(16, 64)]\n\n\ndef get_init_inputs():\n    return []\n")
"""Three linears, then an addmm whose bias is scaled by 0.5: not the plain product a GEMM move writes."""


def test_every_gemm_is_listed_in_order_and_a_scaled_addmm_is_left_out(tmp_path):
    analysis = analyze(task_file(tmp_path, "mlp", MLP_TASK))
    gemms = analysis.facts["gemms"]
    assert [(g["b"], g["bias"], g["K"], g["N"]) for g in gemms] == [
        ("self.net[0].weight", "self.net[0].bias", 64, 128), ("self.net[2].weight", "self.net[2].bias", 128, 128),
        ("self.net[4].weight", "self.net[4].bias", 128, 32)]
    assert analysis.facts["gemm"]["b"] == "self.net[2].weight"  # the largest of them


def test_the_precision_move_rounds_every_gemm_first_then_the_largest_alone(tmp_path):
    task = task_file(tmp_path, "mlp", MLP_TASK.replace(", beta=0.5", ""))
    analysis = analyze(task)
    family = get_family("precision_lowp_gemm")
    assert family.space(analysis)[:2] == [{"dtype": "float16", "gemms": "all"}, {"dtype": "float16"}]
    everything = family.render(analysis, family.space(analysis)[0])
    assert everything.source.count("_lowp_matmul(") == 1 + 4  # the helper, then each GEMM of the forward
    assert "4 fp32 GEMMs on float16" in everything.claim
    largest = family.render(analysis, {"dtype": "float16"})
    assert largest.source.count("_lowp_matmul(") == 1 + 1
    evaluation = evaluate(task, candidate_from_source(everything.source, task), device="cpu", settings=LOOSE_GUARD)
    assert evaluation.verdict is not Verdict.REJECT, evaluation.reason
    single = analyze(task_file(tmp_path, "one", GEMM_TASK))
    assert family.space(single) == [{"dtype": "float16"}, {"dtype": "bfloat16x3"}, {"dtype": "bfloat16"}]  # one scope


GEMM_GROUPNORM_TASK = (
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.linear = nn.Linear(1024, 512)\n        self.norm = nn.GroupNorm(64, 512)\n\n"
    "    def forward(self, x):\n        return self.norm(self.linear(x))\n\n\n"
    "def get_inputs():\n    return [torch.rand(64, 1024)]\n\n\ndef get_init_inputs():\n    return []\n")
"""A GroupNorm over 8-channel groups of a GEMM: it divides the GEMM's rounding by small group deviations."""


def test_split_bf16_products_meet_fp32s_tolerance_where_one_fp16_product_does_not(tmp_path):
    """At KernelBench's fp32 tolerance (1e-4), the guard's default: fp16's rounding fails, the split passes."""
    task = task_file(tmp_path, "gemm_groupnorm", GEMM_GROUPNORM_TASK)
    analysis = analyze(task)
    family = get_family("precision_lowp_gemm")
    verdicts = {}
    for dtype in ("float16", "bfloat16x3"):
        move = family.render(analysis, {"dtype": dtype})
        verdicts[dtype] = evaluate(task, candidate_from_source(move.source, task), device="cpu", settings=FAST_GUARD)
    assert verdicts["float16"].status.value == "INCORRECT_NUMERICAL", verdicts["float16"].reason
    assert verdicts["bfloat16x3"].verdict is not Verdict.REJECT, verdicts["bfloat16x3"].reason


def test_split_products_on_every_gemm_pass_fp32s_tolerance_on_3d_inputs(tmp_path):
    """Another spelling of the same maths: linears over a (batch, seq, features) input and a `matmul` by a
    K x N parameter, every GEMM split, judged at the guard's default fp32 tolerance."""
    source = (MLP_TASK.replace(", beta=0.5", "").replace("torch.rand(16, 64)", "torch.rand(4, 8, 64)")
              .replace("torch.addmm(self.b, y, self.w)", "torch.matmul(y, self.w) + self.b"))
    task = task_file(tmp_path, "mlp_3d", source)
    analysis = analyze(task)
    family = get_family("precision_lowp_gemm")
    assert len(analysis.facts["gemms"]) == 4
    move = family.render(analysis, {"dtype": "bfloat16x3", "gemms": "all"})
    evaluation = evaluate(task, candidate_from_source(move.source, task), device="cpu", settings=FAST_GUARD)
    assert evaluation.verdict is not Verdict.REJECT, evaluation.reason
