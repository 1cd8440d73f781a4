"""Library move `library_blas`: the forward's GEMMs through another BLAS path PyTorch exposes.

cuBLAS's heuristic picks one algorithm per GEMM shape, and on the H200 no generated Triton GEMM
reached it on gemm_bf16_4096 (0.80x, docs/benchmarks.md, run 4). Two library configurations may
beat the heuristic. Each is switched on for this candidate's call only and restored after it, since
the guard times the incumbent in the same process:
- `tunableop`: PyTorch's TunableOp (`torch.cuda.tunable`) times the implementations it has for
  each GEMM shape (cuBLAS and cuBLASLt) on the first call and keeps the fastest; its results file
  goes to the temporary directory;
- `cublaslt`: `torch.backends.cuda.preferred_blas_library("cublaslt")`.
Off the GPU the forward runs plainly. Whether either beats the heuristic is for the guard to say;
neither has run on the card yet. Budget: about 100 lines.
"""

from __future__ import annotations

from typing import Any

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.facts import Patterns
from kernelarc.agents.builtin.notation import claim_text, point_text
from kernelarc.agents.builtin.pytorch_source import ON_GPU, wrapped_module

_TUNABLEOP = '''class _BlasCall:
    """Calls `fn` with TunableOp on (tuning GEMMs it has not seen), then restores the previous state."""

    def __init__(self, fn):
        self.fn = fn
        self.results_named = False

    def __call__(self, *args):
        if not _on_gpu(args):
            return self.fn(*args)
        tunable = torch.cuda.tunable
        if not self.results_named:  # not the current directory
            tunable.set_filename(os.path.join(tempfile.gettempdir(), "kernelarc_tunableop.csv"))
            self.results_named = True
        enabled, tuning = tunable.is_enabled(), tunable.tuning_is_enabled()
        tunable.enable(True)
        tunable.tuning_enable(True)
        try:
            return self.fn(*args)
        finally:
            tunable.tuning_enable(tuning)
            tunable.enable(enabled)
'''

_PREFERRED = '''class _BlasCall:
    """Calls `fn` with the preferred BLAS library set to {library}, then restores the previous one."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        if not _on_gpu(args):
            return self.fn(*args)
        previous = torch.backends.cuda.preferred_blas_library()
        torch.backends.cuda.preferred_blas_library("{library}")
        try:
            return self.fn(*args)
        finally:
            torch.backends.cuda.preferred_blas_library(previous)
'''

_WHAT = {"tunableop": "GEMMs through TunableOp: the fastest of cuBLAS and cuBLASLt timed per shape on the first call",
         "cublaslt": "GEMMs through cuBLASLt instead of cuBLAS's default heuristic"}


class LibraryBlas:
    """The reference's forward with its GEMMs through TunableOp or cuBLASLt."""

    name = "library_blas"
    strategy = "library"
    language = "pytorch"

    def applies(self, analysis: TaskAnalysis) -> str | None:
        if Patterns.of(analysis).gemm is None:  # a dual GEMM has its largest GEMM too
            return "no GEMM in the task"
        if analysis.launch_bound:
            return "launch-bound: switching the BLAS path costs host time the GEMM cannot win back"
        if not analysis.eager_source:
            return "the reference's forward could not be read for transplanting"
        return None

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        return [{"blas": "tunableop"}, {"blas": "cublaslt"}]

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        blas = params["blas"]
        wrapper = _TUNABLEOP if blas == "tunableop" else _PREFERRED.format(library=blas)
        source = wrapped_module(analysis, wrapper="_BlasCall", helpers=ON_GPU + "\n\n" + wrapper, strategy="library",
                                doc_head=f"{_WHAT[blas]} {point_text(self.name, params)}.",
                                imports="import os\nimport tempfile\n" if blas == "tunableop" else "")
        return Move(family=self.name, params=params, source=source, claim=claim_text(self.name, params, _WHAT[blas]))


register_family(LibraryBlas())

__all__ = ["LibraryBlas"]
