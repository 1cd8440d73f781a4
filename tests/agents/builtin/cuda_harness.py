"""What the C++ and CUDA move families' tests share: markers for the compilers they need, the guard on a
family's first point off the GPU, and nvcc over the candidates' device code (no GPU needed)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from torch.utils.cpp_extension import COMMON_NVCC_FLAGS, include_paths

from kernelarc.agents.builtin.moves.base import MoveFamily

from .triton_harness import analysis_for, assert_guard_passes

needs_compiler = pytest.mark.skipif(not (shutil.which("c++") and shutil.which("ninja")),
                                    reason="needs a C++ compiler and ninja")
needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
HEAD = ("#include", "#define")


def assert_first_point_passes_the_guard(family: MoveFamily, fixture: str) -> None:
    """Off the GPU: the family serves the fixture (whatever the device) and its first point, built as the
    serial C++ fallback, passes the full guard."""
    analysis = analysis_for(fixture)
    assert family.facts(analysis)[1] is None
    assert_guard_passes(family.render(analysis, family.space(analysis)[0]), analysis)


def first_points(family: MoveFamily, fixtures: list[str]) -> list[str]:
    """The source of the family's first point for each fixture."""
    return [family.render(analysis_for(f), family.space(analysis_for(f))[0]).source for f in fixtures]


def compile_cuda_sides(sources: list[str], directory: Path) -> str:
    """Every candidate's `_CUDA_SOURCE` in one translation unit (each in its own namespace, heads once),
    compiled for sm_90 against torch's headers as load_inline would; returns the PTX nvcc kept."""
    heads, bodies = set(), []
    for i, source in enumerate(sources):
        lines = re.search(r'_CUDA_SOURCE = r"""\n(.*?)"""', source, re.S).group(1).splitlines()
        heads.update(line for line in lines if line.startswith(HEAD))
        body = "\n".join(line for line in lines if not line.startswith(HEAD))
        bodies.append(f"namespace case_{i} {{\n{body}\n}}\n")
    unit = directory / "cases.cu"
    unit.write_text("\n".join([*sorted(heads), *bodies]))  # no implicit head: load_inline adds none
    # A CPU build of torch ships c10's CUDA headers but not this generated one (CUDA builds make it).
    stub = directory / "stub" / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    stub.parent.mkdir(parents=True)
    stub.write_text("#pragma once\n")
    dirs = [*include_paths(), sysconfig.get_paths()["include"], str(directory / "stub")]
    done = subprocess.run(["nvcc", "-c", "-std=c++20", *COMMON_NVCC_FLAGS, "-O3", "-gencode=arch=compute_90,code=sm_90",
                           *(f"-I{d}" for d in dirs), "--keep", f"--keep-dir={directory}", str(unit),
                           "-o", str(directory / "cases.o")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    return "".join(p.read_text() for p in directory.glob("*.ptx"))
