"""Compiling generated CUDA candidates' device code with nvcc where a CUDA toolkit exists (no GPU needed)."""

from __future__ import annotations

import re
import subprocess
import sysconfig
from pathlib import Path

from torch.utils.cpp_extension import COMMON_NVCC_FLAGS, include_paths

HEAD = ("#include", "#define")


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
    unit.write_text("\n".join(["#include <torch/types.h>", *sorted(heads), *bodies]))
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
