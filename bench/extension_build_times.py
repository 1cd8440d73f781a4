"""How long a built-in C++/CUDA family's candidate takes to compile, with the headers it names and with the
umbrella headers `load_inline` would otherwise prepend (`<torch/extension.h>` on the host translation
unit, `<torch/types.h>` on the CUDA one, ahead of the named ones, which they contain): each unit compiled
once, one after the other (ninja compiles the two at once: a build takes about the slower one).

    python bench/extension_build_times.py cuda_rowwise builtin_rmsnorm_cast_bf16

Needs a C++ compiler and, for the CUDA unit, nvcc (no GPU: it compiles for sm_90). A CPU build of torch
lacks one generated CUDA header, which a stub replaces, as the tests' harness does. Compile times only:
they say nothing about the kernel's speed. Results: docs/benchmarks.md "Session 26".
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from torch.utils.cpp_extension import COMMON_NVCC_FLAGS, include_paths

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernelarc.agents.builtin.moves import get_family  # noqa: E402
from tests.agents.builtin.triton_harness import analysis_for  # noqa: E402

UMBRELLA = {"host": "#include <torch/extension.h>\n",
            "cuda": "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"}


def sources(family: str, fixture: str) -> tuple[str, str | None, str]:
    """(host unit, CUDA unit or None, bound function) of the family's first point on the fixture."""
    move = get_family(family)
    analysis = analysis_for(fixture)
    source = move.render(analysis, move.space(analysis)[0]).source
    cuda = re.search(r'_CUDA_SOURCE = r"""\n(.*?)"""', source, re.S)
    clause = source.split("functions=", 1)[1].split("extra_cflags", 1)[0]
    function = re.findall(r'\["(\w+)"\]', clause)[-1]  # the one built off the GPU where it has two
    host = re.search(r'_CPP_SOURCE = r"""\n(.*?)"""', source, re.S).group(1)
    return host, cuda.group(1) if cuda else None, function


def compile_seconds(command: list[str]) -> float:
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"compile failed: {done.stderr[-2000:]}")
    return time.monotonic() - start


def main(family: str, fixture: str) -> None:
    host, cuda, function = sources(family, fixture)
    work = Path(tempfile.mkdtemp(prefix="kernelarc_build_times_"))
    stub = work / "stub" / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    stub.parent.mkdir(parents=True)
    stub.write_text("#pragma once\n")
    includes = [f"-I{d}" for d in (*include_paths(), sysconfig.get_paths()["include"], str(work / "stub"))]
    binding = f'\nPYBIND11_MODULE(m, mm) {{ mm.def("{function}", torch::wrap_pybind_function({function})); }}\n'
    for heads in ("named", "umbrella"):
        prefix = (lambda unit: UMBRELLA[unit]) if heads == "umbrella" else (lambda unit: "")
        (work / "main.cpp").write_text(prefix("host") + host + binding)
        row = {"host_s": compile_seconds(["c++", "-c", "-O2", "-std=c++20", "-fPIC", "-DKERNELARC_WITH_CUDA",
                                          *includes, str(work / "main.cpp"), "-o", str(work / "main.o")])}
        if cuda is not None:
            (work / "cuda.cu").write_text(prefix("cuda") + cuda)
            row["cuda_s"] = compile_seconds(["nvcc", "-c", "-std=c++20", *COMMON_NVCC_FLAGS, "-O3",
                                             "-gencode=arch=compute_90,code=sm_90", "-Xcompiler", "-fPIC",
                                             *includes, str(work / "cuda.cu"), "-o", str(work / "cuda.o")])
        print(f"{family} {fixture} {heads} headers: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items()))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python bench/extension_build_times.py FAMILY FIXTURE")
    main(*sys.argv[1:])
