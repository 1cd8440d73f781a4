"""The `cutlass_gemm` family: where it applies, the candidate's CPU path through the guard, and the
CUDA source through nvcc for sm_90a where nvcc and the CUTLASS headers exist (it cannot run here)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from torch.utils.cpp_extension import COMMON_NVCC_FLAGS

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.agents.builtin.moves.cutlass_gemm import POINTS, cpp_source, cuda_source
from kernelarc.guard import Verdict, candidate_from_source, evaluate

from tests.agents.builtin.builtin_tasks import FAST_GUARD, example_analysis, task_file

HAS_CUTLASS = importlib.util.find_spec("cutlass_library") is not None


def _gemm_task(body: str, dtype: str = "torch.bfloat16", init: str = "", b_shape: str = "64, 32", m: int = 128) -> str:
    return (f"import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
            f"    def __init__(self):\n        super().__init__()\n{init}\n"
            f"    def forward(self, a, b):\n        {body}\n\n\n"
            f"def get_inputs():\n    return [torch.randn({m}, 64, dtype={dtype}), torch.randn({b_shape}, dtype={dtype})]\n\n\n"
            f"def get_init_inputs():\n    return []\n")


@pytest.fixture(scope="module")
def analyses(tmp_path_factory):
    d = tmp_path_factory.mktemp("cutlass")
    sources = {
        "bf16": _gemm_task("return torch.matmul(a, b)"),
        "fp32": _gemm_task("return torch.matmul(a, b)", dtype="torch.float32"),
        "with_relu": _gemm_task("return torch.relu(torch.matmul(a, b))"),
        "linear_bf16": _gemm_task("return torch.nn.functional.linear(a, b)", b_shape="32, 64", m=16),  # decode-sized
    }
    return {name: analyze(task_file(d, name, src)) for name, src in sources.items()}


def test_it_applies_to_a_plain_16_bit_gemm_and_says_why_not_elsewhere(analyses):
    family = get_family("cutlass_gemm")
    reason = family.applies(analyses["bf16"])
    if not HAS_CUTLASS:
        assert reason == "the CUTLASS headers are missing (pip install nvidia-cutlass)"
    elif not torch.cuda.is_available():
        assert reason == "needs an sm_90 GPU (Hopper): no CUDA device is visible"
    else:
        assert reason is None or reason.startswith("needs an sm_90 GPU (Hopper), not sm_")
    assert family.facts(analyses["fp32"])[1].startswith("float32 GEMM: this template is for 16-bit")
    assert family.facts(analyses["with_relu"])[1].startswith("the GEMM has an epilogue")
    assert family.applies(example_analysis("sol/rmsnorm_small")).startswith("SOL-ExecBench refuses C++ builds")
    assert family.space(analyses["bf16"])[0] == {"tile": "256x128x64", "cluster": "2x1", "schedule": "cooperative",
                                                 "raster": "AlongN", "scheduler": "persistent", "swap_ab": False}


def _layouts(source: str) -> tuple[str, ...]:
    return tuple(next(line.split("::")[-1].rstrip(";") for line in source.splitlines()
                      if line.startswith(f"using Layout{x} =")) for x in "ABC")


def test_b_layout_decides_cutlass_layouts_and_a_skinny_gemm_is_swapped(analyses):
    family = get_family("cutlass_gemm")
    matmul, linear = family.facts(analyses["bf16"])[0], family.facts(analyses["linear_bf16"])[0]
    assert _layouts(cuda_source(matmul, POINTS[0])) == ("RowMajor", "RowMajor", "RowMajor")  # B [K, N]: N-major
    assert _layouts(cuda_source(linear, POINTS[0])) == ("RowMajor", "ColumnMajor", "RowMajor")  # B [N, K]: K-major
    source = cuda_source(matmul, {"tile": "64x256x64", "cluster": "2x1", "schedule": "pingpong"})
    assert "Shape<_64, _256, _64>" in source and "KernelTmaWarpSpecializedPingpong" in source
    assert "ELEMENT" not in source and "cutlass::bfloat16_t" in source
    # 16 rows: C^T = B^T A^T, the weight on the wgmma M side, a 16-wide N tile, C^T column-major
    skinny = family.space(analyses["linear_bf16"])
    assert skinny[0] == {"tile": "128x16x128", "cluster": "1x1", "schedule": "cooperative", "scheduler": "streamk",
                         "swap_ab": True}
    swapped = cuda_source(linear, skinny[0])
    assert _layouts(swapped) == ("RowMajor", "ColumnMajor", "ColumnMajor") and "StreamKScheduler" in swapped
    assert _layouts(cuda_source(matmul, skinny[0])) == ("ColumnMajor", "ColumnMajor", "ColumnMajor")
    assert "kernelarc_gemm_run(b2.data_ptr(), a2.data_ptr(), c.data_ptr(), n, m, k" in cpp_source(linear, skinny[0])
    assert "kernelarc_gemm_run(a2.data_ptr(), b2.data_ptr(), c.data_ptr(), m, n, k" in cpp_source(linear, POINTS[0])



def test_swizzle_and_raster_order_reach_the_tile_scheduler(analyses):
    matmul = get_family("cutlass_gemm").facts(analyses["bf16"])[0]
    plain = cuda_source(matmul, {"tile": "128x256x64", "cluster": "1x2", "schedule": "cooperative"})
    swizzled = cuda_source(matmul, {"tile": "256x128x64", "cluster": "2x1", "schedule": "cooperative", "swizzle": 8,
                                    "raster": "AlongN"})
    assert "max_swizzle_size = 1;" in plain and "RasterOrderOptions::Heuristic;" in plain
    assert "max_swizzle_size = 8;" in swizzled and "RasterOrderOptions::AlongN;" in swizzled
    with pytest.raises(ValueError, match="raster order 'Diagonal'"):
        cuda_source(matmul, {**POINTS[0], "raster": "Diagonal"})

@pytest.mark.slow
def test_off_the_gpu_the_candidate_passes_the_guard_with_the_references_computation(analyses):
    analysis = analyses["linear_bf16"]
    move = get_family("cutlass_gemm").render(analysis, get_family("cutlass_gemm").space(analysis)[0])  # swapped
    assert "load_inline(" in move.source and "compute_90a" in move.source and len(move.claim) <= 160
    evaluation = evaluate(analysis.task, candidate_from_source(move.source, analysis.task), device="cpu",
                          settings=FAST_GUARD)
    assert evaluation.verdict is not Verdict.REJECT, evaluation.reason


@pytest.mark.slow
@pytest.mark.skipif(not (HAS_CUTLASS and shutil.which("nvcc")), reason="needs nvcc and nvidia-cutlass")
def test_the_kernels_compile_for_sm90a(analyses, tmp_path):
    """nvcc builds a cooperative and a swapped stream-K kernel (about 3 minutes on 2 cores); running them
    needs an H100/H200. Each translation unit is compiled exactly as rendered, one nvcc per unit at the
    same time: wrapping units in namespaces once hid a host-stub error that load_inline then hit."""
    import cutlass_library

    family = get_family("cutlass_gemm")
    cases = [(analyses["bf16"], POINTS[0]), (analyses["linear_bf16"], family.space(analyses["linear_bf16"])[0])]
    root = Path(cutlass_library.__file__).parent / "source"
    builds = []
    for i, (analysis, params) in enumerate(cases):
        source = tmp_path / f"gemm_{i}.cu"
        source.write_text(cuda_source(family.facts(analysis)[0], params))
        # torch's own nvcc flags for extensions come first, as load_inline passes them (torch 2.13 adds -std=c++20)
        builds.append(subprocess.Popen(
            ["nvcc", "-c", "-std=c++20", *COMMON_NVCC_FLAGS, "-O3", "--expt-relaxed-constexpr", "-DNDEBUG",
             "-gencode=arch=compute_90a,code=sm_90a", f"-I{root / 'include'}",
             f"-I{root / 'tools' / 'util' / 'include'}", str(source), "-o", str(source.with_suffix(".o"))],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for build in builds:
        output = build.communicate()[0]
        assert build.returncode == 0, output[-4000:]
