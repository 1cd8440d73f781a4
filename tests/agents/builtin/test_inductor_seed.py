"""The `inductor_seed` family: Inductor's output made standalone, one `call` per input signature.

The CUDA form (Triton kernels) is generated only where a card is visible; the GPU test below skips
without one and its H200 result is in docs/benchmarks.md (session 12). On the CPU, Inductor writes C++ kernels:
the same path (child process, transformation, guard) runs for real here on those.
"""

from __future__ import annotations

import ast
import json

import pytest
import torch

from kernelarc.agents.builtin.agent import shared_analysis
from kernelarc.agents.builtin.inductor_code import InductorCode, generate, groups
from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.agents.builtin.moves.inductor_seed import module_body, standalone
from kernelarc.agents.builtin.search import Search
from kernelarc.guard import Status, Verdict, candidate_from_source, check_source, evaluate
from kernelarc.task import load_task
from kernelarc.task.execute import load_module

from tests.agents.builtin.builtin_tasks import DATA_DEPENDENT_TASK, EXAMPLES, FAST_GUARD, example, task_file
from tests.agents.builtin.cuda_harness import needs_compiler

LINEAR_GELU = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.linear = nn.Linear(features, 24)
        self.scale = scale

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x)).sum(dim=-1) * self.scale


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return [32, 0.5]
'''

KERNEL = '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 1024},
    filename=__file__,
    triton_meta={'device': DeviceProperties(type='cuda', index=0, cc=90)},
)
@triton.jit
def triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    tmp0 = tl.load(in_ptr0 + (xindex), None)
    tl.store(out_ptr0 + (xindex), tmp0 + 1.0, None)
'''
CUDA_OUTPUT = f'''# AOT ID: ['0_inference']
from ctypes import c_void_p, c_long, c_int
import torch
import os
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.async_compile import AsyncCompile
from torch._C import _cuda_getCurrentRawStream as get_raw_stream

aten = torch.ops.aten
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
async_compile = AsyncCompile()


triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', \'\'\'{KERNEL}\'\'\', device_str='cuda')


async_compile.wait(globals())
del async_compile

def call(args):
    arg0_1, = args
    args.clear()
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf0 = empty_strided_cuda((1024, ), (1, ), torch.float32)
        # the kernel Inductor wrote
        stream0 = get_raw_stream(0)
        triton_poi_fused_add_0.run(arg0_1, buf0, 1024, stream=stream0)
    return (buf0, )


def benchmark_compiled_module(times=10, repeat=10):
    return None


if __name__ == "__main__":
    benchmark_compiled_module()
'''
"""The shape of Inductor's CUDA output module (torch 2.11-2.13): imports, allocator aliases, each
Triton kernel as a source string compiled by the async pool, `call`, the benchmark harness."""


def test_the_cuda_form_becomes_plain_source_with_names_per_signature():
    imports, shared, specialized = standalone(CUDA_OUTPUT, "s1_")
    text = "\n\n".join(specialized)
    assert "async_compile" not in text and "benchmark_compiled_module" not in text and "__main__" not in text
    assert "def s1_triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):" in text
    assert "@triton_heuristics.pointwise(" in text  # Inductor's own autotuner kept
    assert "s1_triton_poi_fused_add_0.run(arg0_1, buf0, 1024, stream=stream0)" in text and "def s1_call(args):" in text
    assert "# the kernel Inductor wrote" in text  # its layout and comments kept
    assert "_DeviceGuard(torch.cuda.current_device())" in text and "get_raw_stream(torch.cuda.current_device())" in text
    assert "DeviceProperties(type='cuda', index=torch.cuda.current_device(), cc=90)" in text
    assert "set_driver_to_gpu" not in text
    assert set(shared) == {"aten", "empty_strided_cuda"}
    assert "from torch._inductor.runtime import triton_helpers, triton_heuristics" in imports


def test_two_signatures_live_side_by_side_and_unused_imports_go():
    code = InductorCode(specializations=(("(('tensor', (1024,), 'torch.float32'),)", CUDA_OUTPUT),
                                         ("(('tensor', (2048,), 'torch.float32'),)", CUDA_OUTPUT.replace("1024", "2048"))),
                        inputs=1, outputs=1, returns_tuple=False)
    body = module_body(code)
    tree = ast.parse(body)
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"s0_triton_poi_fused_add_0", "s1_triton_poi_fused_add_0", "s0_call", "s1_call"} <= defined
    assert "((('tensor', (2048,), 'torch.float32'),), s1_call)," in body and body.count("\naten = torch.ops.aten") == 0
    assert "ctypes" not in body and "import os" not in body and "run_intermediate_hooks" not in body
    assert check_source(f"import torch\nimport triton\nimport triton.language as tl\n{body}\n"
                        "def run(x):\n    return _compiled_forward([], (x,))\n", entry="run") is None


def test_workloads_alike_but_for_sizes_share_one_code_with_those_sizes_named():
    x = lambda rows, cols=256: ("tensor", (rows, cols), "torch.bfloat16")  # noqa: E731
    w = ("tensor", (256,), "torch.bfloat16")
    signatures = [(x(7), w, ("value", 1e-6)), (x(33), w, ("value", 1e-6)), (x(1), w, ("value", 1e-6)),
                  (x(7), w, ("value", 1e-5)), (x(9), w, ("value", 1e-6)), (x(7), w, ("value", 1e-6))]
    chosen = groups(signatures)
    assert (signatures[2], 2) in chosen  # a size of 1 where the group varies: code of its own
    assert (signatures[3], 3) in chosen  # another eps: another code
    assert ((("tensor", ("s0", 256), "torch.bfloat16"), w, ("value", 1e-6)), 0) in chosen and len(chosen) == 3
    pair = [(("tensor", (4, 8), "torch.float32"), ("tensor", (4, 8), "torch.float32")),
            (("tensor", (6, 8), "torch.float32"), ("tensor", (6, 8), "torch.float32"))]
    (pattern, _), = groups(pair)  # sizes that vary together share a name
    assert pattern == (("tensor", ("s0", 8), "torch.float32"), ("tensor", ("s0", 8), "torch.float32"))


def test_another_async_compile_kind_is_refused_with_its_name():
    other = CUDA_OUTPUT.replace("async_compile.triton('triton_poi_fused_add_0', ", "async_compile.cuda(")
    with pytest.raises(ValueError, match=r"async_compile\.cuda"):
        standalone(other, "s0_")


def test_the_gate_refuses_inductors_loaders_to_hand_written_code():
    run = "\ndef run(x):\n    return x\n"
    assert check_source("from torch._inductor.codecache import PyCodeCache\nPyCodeCache.load('x = 1')" + run,
                        entry="run").rule == "dynamic-code"
    cpp = "import torch._inductor.codecache as c\nf = c.CppPythonBindingsCodeCache.load_pybinding([], 's')" + run
    assert check_source(cpp, entry="run", allow_jit_build=False).rule == "jit-build"
    assert check_source(cpp, entry="run") is None  # KernelBench allows C++ builds (load_inline too)


def test_it_applies_only_with_a_device_and_goes_first_among_fusion_families(tmp_path):
    family = get_family("inductor_seed")
    task = task_file(tmp_path, "linear_gelu", LINEAR_GELU)
    assert family.applies(shared_analysis(task)).startswith("no device known")
    on_card = shared_analysis(task, "cuda:0")
    assert family.applies(on_card) is None and family.gpu_only
    assert family.space(on_card)[0] == {"tuning": "default"} and len(family.space(on_card)) == 4
    assert family.space(shared_analysis(task, "cpu")) == [{"tuning": "default"}]
    search = Search(on_card, families_for("fusion"), seed=0)
    assert search.next()[0].name == "inductor_seed"
    assert "inductor_seed" in Search(shared_analysis(task, "cpu"), families_for("fusion"), device="cpu").skipped


def test_a_reference_that_does_not_trace_is_one_line_not_a_traceback(tmp_path):
    task = task_file(tmp_path, "data_dependent", DATA_DEPENDENT_TASK)
    with pytest.raises(ValueError, match="Inductor could not generate the code") as caught:
        generate(task, "cpu")
    assert "\n" not in str(caught.value) and "Traceback" not in str(caught.value)


@needs_compiler
@pytest.mark.heavy
def test_on_the_cpu_the_seed_passes_the_guard(tmp_path):
    analysis = shared_analysis(task_file(tmp_path, "linear_gelu", LINEAR_GELU), "cpu")
    move = get_family("inductor_seed").render(analysis, {"tuning": "default"})
    assert "CppPythonBindingsCodeCache.load_pybinding(" in move.source and len(move.claim) <= 160
    candidate = candidate_from_source(move.source, analysis.task)
    assert check_source(move.source, entry="ModelNew") is None
    evaluation = evaluate(analysis.task, candidate, device="cpu", settings=FAST_GUARD)
    assert evaluation.verdict is not Verdict.REJECT and evaluation.status is Status.PASSED, evaluation.reason


@needs_compiler
@pytest.mark.heavy
def test_each_workload_signature_gets_its_own_code_and_an_unknown_one_is_refused():
    analysis = shared_analysis(example("sol/rmsnorm_small"), "cpu")
    move = get_family("inductor_seed").render(analysis, {"tuning": "default"})
    signatures = {(w.axes["batch_size"], w.inputs[-1].value) for w in analysis.task.workloads}
    assert move.source.count("_call),\n") == len(signatures) >= 2
    module = load_module(move.source, "seed.py", "seed")
    reference = load_module(analysis.task.reference_source, "reference.py", "reference")
    for batch, eps in sorted(signatures):
        x, w = torch.randn(batch, 256, dtype=torch.bfloat16), torch.randn(256, dtype=torch.bfloat16)
        torch.testing.assert_close(module.run(x, w, eps), reference.run(x, w, eps))
    with pytest.raises(ValueError, match="no compiled code for inputs"):
        module.run(torch.randn(5, 256, dtype=torch.bfloat16), torch.randn(256, dtype=torch.bfloat16), 1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_the_card_the_triton_seed_passes_the_guard(tmp_path):
    analysis = shared_analysis(task_file(tmp_path, "linear_gelu", LINEAR_GELU), "cuda:0")
    move = get_family("inductor_seed").render(analysis, {"tuning": "default"})
    assert "@triton.jit" in move.source and "async_compile" not in move.source
    evaluation = evaluate(analysis.task, candidate_from_source(move.source, analysis.task), device="cuda:0",
                          settings=FAST_GUARD)
    assert evaluation.status is Status.PASSED, evaluation.reason


@needs_compiler
@pytest.mark.heavy
def test_sizes_that_vary_between_workloads_are_symbolic_in_one_code(tmp_path):
    problem = tmp_path / "rmsnorm_rows"
    problem.mkdir()
    source = EXAMPLES / "sol" / "rmsnorm_small"
    (problem / "definition.json").write_text((source / "definition.json").read_text().replace("rmsnorm_small", "rmsnorm_rows"))
    (problem / "workload.jsonl").write_text("".join(
        json.dumps({"uuid": f"rows-{b}", "axes": {"batch_size": b}, "inputs": {"eps": {"type": "scalar", "value": 1e-6}}})
        + "\n" for b in (7, 9, 33)))
    analysis = shared_analysis(load_task(problem), "cpu")
    move = get_family("inductor_seed").render(analysis, {"tuning": "default"})
    assert move.source.count("_call),\n") == 1 and "('tensor', ('s0', 256), 'torch.bfloat16')" in move.source
    module = load_module(move.source, "seed_rows.py", "seed_rows")
    reference = load_module(analysis.task.reference_source, "reference_rows.py", "reference_rows")
    for batch in (7, 9, 33, 12):  # 12: no workload has it, the symbolic code serves it too
        x, w = torch.randn(batch, 256, dtype=torch.bfloat16), torch.randn(256, dtype=torch.bfloat16)
        torch.testing.assert_close(module.run(x, w, 1e-6), reference.run(x, w, 1e-6))
    with pytest.raises(ValueError, match="no compiled code"):  # symbolic sizes start at 2, as in Dynamo
        module.run(torch.randn(1, 256, dtype=torch.bfloat16), torch.randn(256, dtype=torch.bfloat16), 1e-6)
