"""The `cpp_forward` family: reference graphs written as C++ ATen calls, built for real with the C++
compiler (no CUDA compiler), run on the CPU against the reference, and one candidate through the guard."""

from __future__ import annotations

import operator
import os
import subprocess
import sysconfig
from pathlib import Path

import pytest
import torch
from torch.utils.cpp_extension import CUDA_HOME, include_paths

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.agents.builtin.moves.cpp_forward import cpp_function, graph_sources
from kernelarc.agents.builtin.moves.extension_headers import HOST_INCLUDES
from kernelarc.guard import Verdict, candidate_from_source, evaluate
from kernelarc.task.execute import load_module

from tests.agents.builtin.builtin_tasks import CONV_TASK, EXAMPLES, FAST_GUARD, example_analysis, task_file
from tests.agents.builtin.cuda_harness import needs_compiler

def _task(body: str, init: str = "", inputs: str = "torch.randn(4, 32)") -> str:
    return (f"import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
            f"    def __init__(self):\n        super().__init__()\n{init}\n"
            f"    def forward(self, x):\n        {body}\n\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n\ndef get_init_inputs():\n    return []\n")


SLOW_SUM = (EXAMPLES / "kernelbench" / "slow_sum.py").read_text()
"""769 aten nodes: zeros on the input's device, slices, sums, adds."""

GRAPHS = {
    "linear_relu": _task("return torch.relu(self.linear(x))", "        self.linear = nn.Linear(32, 8)\n"),
    "layernorm_gelu": _task("return self.act(self.norm(x))", "        self.norm = nn.LayerNorm(32)\n"
                                                              "        self.act = nn.GELU(approximate='tanh')\n"),
    "rmsnorm": _task("h = x.to(torch.float32)\n        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
                     "        return self.weight * h.to(torch.bfloat16)",
                     "        self.weight = nn.Parameter(torch.ones(32, dtype=torch.bfloat16))\n",
                     "torch.randn(4, 32, dtype=torch.bfloat16)"),
    "softmax_scaled": _task("return torch.softmax(x * 2.0, dim=-1)"),
    "two_outputs": _task("return x + 1, x.sum(dim=[0, 1])"),
    "slow_sum": SLOW_SUM,
    "conv_relu": CONV_TASK,
}


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cpp_graphs")
    return {name: analyze(task_file(directory, name, source)) for name, source in GRAPHS.items()}


def test_each_node_becomes_one_static_aten_call(graphs):
    source, args = cpp_function(graphs["linear_relu"])
    assert args == ["x", "self.linear.weight", "self.linear.bias"]
    assert "at::Tensor forward(const at::Tensor& x, const at::Tensor& linear_weight, const at::Tensor& linear_bias)" in source
    assert "at::_ops::linear::call(x, linear_weight, linear_bias)" in source and "at::_ops::relu::call(v_linear)" in source
    fused, _ = cpp_function(graphs["linear_relu"], "addmm_activation")
    assert "_addmm_activation::call(linear_bias, x, at::_ops::t::call(linear_weight)" in fused
    assert "at::_ops::linear::call" not in fused  # the GEMM node is folded into the fused call
    layernorm, _ = cpp_function(graphs["layernorm_gelu"])
    assert "c10::fromIntArrayRefSlow" in layernorm and 'at::_ops::gelu::call(v_layer_norm, "tanh")' in layernorm
    rms, _ = cpp_function(graphs["rmsnorm"])
    assert "at::_ops::add_Scalar::call" in rms and "at::ScalarType::BFloat16" in rms  # a number operand: Scalar overload
    pair, _ = cpp_function(graphs["two_outputs"])
    assert pair.startswith("std::vector<at::Tensor> forward(")
    slices, _ = cpp_function(graphs["slow_sum"])
    assert "::std::optional<at::Device>(x.device())" in slices  # traced on meta: the input's device at run time
    assert "at::_ops::slice_Tensor::call(x, static_cast<int64_t>(1)" in slices  # a number for an int, not a Scalar
    conv, _ = cpp_function(graphs["conv_relu"])  # torch prints its list defaults as [1, 1], torchgen reads them cut
    assert "at::_ops::conv2d::call(x, conv_weight, conv_bias" in conv


def test_where_it_does_not_apply_it_says_why(tmp_path, graphs):
    family = get_family("cpp_forward")
    assert family.applies(example_analysis("sol/rmsnorm_small")).startswith("SOL-ExecBench refuses C++ builds")
    big = analyze(task_file(tmp_path, "big", _task("return torch.relu(x)", inputs="torch.randn(2048, 2048)")))
    assert family.applies(big).startswith("not launch-bound")
    tuple_op = analyze(task_file(tmp_path, "max_dim", _task("return torch.max(x, dim=1).values")))
    assert family.applies(tuple_op).startswith("no C++ form")
    assert family.space(graphs["linear_relu"]) == [{"ops": "addmm_activation", "graph": True},
                                                   {"ops": "as_captured", "graph": True},
                                                   {"ops": "addmm_activation", "graph": False},
                                                   {"ops": "as_captured", "graph": False}]
    assert family.space(graphs["layernorm_gelu"]) == [{"ops": "as_captured", "graph": True},
                                                      {"ops": "as_captured", "graph": False}]


@needs_compiler
@pytest.mark.slow
@pytest.mark.heavy
def test_the_cpp_of_several_graphs_builds_in_one_extension_and_matches_eager(graphs, tmp_path):
    from torch.utils.cpp_extension import load_inline

    cases = [(name, ops) for name in GRAPHS for ops in ("as_captured", "addmm_activation")
             if ops == "as_captured" or name == "linear_relu"]
    sources, calls = [], {}
    for i, (name, ops) in enumerate(cases):
        source, args = cpp_function(graphs[name], ops)
        sources.append(source.replace("forward(", f"forward_{i}(", 1))
        calls[f"forward_{i}"] = (name, args)
    ext = load_inline(name="kernelarc_test_cpp_graphs", cpp_sources="\n".join(sources), functions=list(calls),
                      build_directory=str(tmp_path))
    for function, (name, args) in calls.items():
        module = load_module(GRAPHS[name], str(tmp_path / f"{name}.py"), name)
        torch.manual_seed(0)
        model = module.Model(*module.get_init_inputs())
        inputs = module.get_inputs()
        values = {"x": inputs[0]} | {a: operator.attrgetter(a.removeprefix("self."))(model) for a in args[1:]}
        expected = model(*inputs)
        actual = getattr(ext, function)(*[values[a] for a in args])
        if name == "linear_relu":  # forward only: no autograd history, though the weights require grad
            assert expected.requires_grad and not actual.requires_grad
        expected, actual = (list(expected), list(actual)) if isinstance(expected, tuple) else ([expected], [actual])
        for e, a in zip(expected, actual, strict=True):
            torch.testing.assert_close(a, e, msg=f"{function} ({name})")


@needs_compiler
@pytest.mark.slow
@pytest.mark.heavy
def test_the_fused_graph_point_passes_the_guard_on_the_cpu(graphs):
    """Off the GPU the graph point builds and calls the plain C++ forward."""
    analysis = graphs["linear_relu"]
    family = get_family("cpp_forward")
    move = family.render(analysis, {"ops": "addmm_activation", "graph": True})
    assert "load_inline(" in move.source and "graphed_forward" in move.source and len(move.claim) <= 160
    evaluation = evaluate(analysis.task, candidate_from_source(move.source, analysis.task), device="cpu",
                          settings=FAST_GUARD)
    assert evaluation.verdict is not Verdict.REJECT, evaluation.reason


CUDA_INCLUDE = next((Path(d) / "include" for d in (CUDA_HOME, os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                                                   "/usr/local/cuda") if d and (Path(d) / "include" / "cuda_runtime_api.h").is_file()),
                    Path("/nonexistent"))
"""CUDA headers, where a CUDA toolkit is installed (torch's CPU build does not look for one)."""


@needs_compiler
@pytest.mark.slow
@pytest.mark.skipif(not (CUDA_INCLUDE / "cuda_runtime_api.h").is_file(), reason="needs the CUDA headers")
@pytest.mark.heavy
def test_the_graph_replay_compiles_against_torchs_cuda_headers(graphs, tmp_path):
    """The CUDA-graph C++ (single and tuple outputs) through the compiler's front end: it cannot be linked
    or run without a CUDA build of torch, which only the GPU machine has (docs/benchmarks.md)."""
    cases = []
    for i, name in enumerate(("linear_relu", "two_outputs")):
        forward, _ = cpp_function(graphs[name])
        head, tail = graph_sources(graphs[name])
        cases.append(f"namespace case_{i} {{\n{head}\n{forward}\n{tail}\n}}\n")
    includes = [line for line in cases[0].splitlines() if line.startswith("#include")]
    source = tmp_path / "graphs.cpp"
    source.write_text("\n".join([HOST_INCLUDES, *includes, *cases]))  # as load_inline writes it: no implicit head
    # A CPU build of torch ships c10's CUDA headers but not this generated one (CUDA builds make it).
    stub = tmp_path / "stub" / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    stub.parent.mkdir(parents=True)
    stub.write_text("#pragma once\n")
    dirs = [*include_paths(), str(CUDA_INCLUDE), sysconfig.get_paths()["include"], str(tmp_path / "stub")]
    done = subprocess.run(["c++", "-fsyntax-only", "-std=c++17", *(f"-I{d}" for d in dirs), str(source)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]


def test_schema_defaults_are_cut_at_top_level_commas_only():
    from kernelarc.agents.builtin.aten_cpp import _without_defaults

    printed = 'f(Tensor self, str mode="a,b", SymInt[2] k=[1, 1], *, bool x=False) -> Tensor'
    assert _without_defaults(printed) == "f(Tensor self, str mode, SymInt[2] k, *, bool x) -> Tensor"
