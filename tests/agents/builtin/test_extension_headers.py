"""The built-in C++ and CUDA families build with the headers they name, never torch's umbrella headers:
those cost about 20 s of each build on 2 cores (extension_headers.py; bench/extension_build_times.py).
That the named headers suffice is what the families' build tests check (they build and run the host
code here, and compile the CUDA code for sm_90 where nvcc is)."""

from __future__ import annotations

import re

import pytest

from kernelarc.agents.builtin.moves import get_family
from kernelarc.guard import Verdict, candidate_from_source, evaluate

from .triton_harness import GUARD_SETTINGS, analysis_for

UMBRELLAS = ("torch/extension.h", "torch/types.h", "torch/torch.h", "torch/all.h", "ATen/ATen.h")
CASES = [("cuda_rowwise", "builtin_rmsnorm_cast_bf16"), ("cuda_small_gemm", "builtin_gemm_bias_gelu"),
         ("cpp_forward", "builtin_attention")]


@pytest.mark.parametrize(("family", "fixture"), CASES)
def test_every_point_builds_without_the_umbrella_headers(family, fixture):
    move, analysis = get_family(family), analysis_for(fixture)
    for point in move.space(analysis):
        source = move.render(analysis, point).source
        calls = re.findall(r"load_inline\((.*?)\)(?:\.\w+|, \"|\n)", source, re.S)
        assert calls and all("no_implicit_headers=True" in call for call in calls), point
        assert not [h for h in UMBRELLAS if h in source], point
        assert "#include <ATen/core/Tensor.h>" in source


@pytest.mark.gpu
@pytest.mark.parametrize(("family", "fixture"), CASES)
def test_on_a_gpu_the_first_point_builds_links_and_passes_the_guard(family, fixture):
    """What the CPU cannot show: the CUDA build (nvcc, torch's CUDA libraries) links and loads with the named
    headers, and its kernel is correct on the card."""
    move, analysis = get_family(family), analysis_for(fixture)
    source = move.render(analysis, move.space(analysis)[0]).source
    result = evaluate(analysis.task, candidate_from_source(source, analysis.task, name=family), device="cuda",
                      settings=GUARD_SETTINGS)
    assert result.verdict is not Verdict.REJECT, f"{result.status}: {result.reason}\n{result.log_tail}"
