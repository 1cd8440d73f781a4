"""Turning a candidate (or the reference) into something the worker can call (needs torch).

Every side is a `Callee`: `bind(inputs)` does the untimed preparation (allocating poisoned
destination outputs) and returns a zero-argument call that runs the kernel and returns its outputs
as a list. Candidate code is imported from files in the worker's private directory, so Triton can
read its source and tracebacks name real lines.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from kernelarc.guard.candidate import CPP_LANGUAGES, Candidate, CandidateKind, Solution
from kernelarc.guard.correctness import poisoned_like
from kernelarc.task.model import TaskFormat
from kernelarc.task.runtime import TaskRuntime

OutputSpec = tuple[tuple[int, ...], torch.dtype]


class Callee:
    """One callable side (reference, incumbent or candidate)."""

    def __init__(self, fn: Callable, destination_passing: bool, device: torch.device):
        self._fn = fn
        self._dps = destination_passing
        self._device = device

    def bind(self, inputs: list, output_specs: list[OutputSpec]) -> Callable[[], list]:
        """A zero-argument call on these inputs; destination outputs are allocated (poisoned) now."""
        fn = self._fn
        if not self._dps:
            return lambda: TaskRuntime.as_output_list(fn(*inputs))
        outs = [poisoned_like(shape, dtype, self._device) for shape, dtype in output_specs]

        def call() -> list:
            fn(*inputs, *outs)
            return outs

        return call


def import_file(path: Path, module_name: str):
    """Import a Python file as a fresh module (its directory first on sys.path for sibling imports)."""
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def reference_callee(runtime: TaskRuntime, device: torch.device) -> Callee:
    return Callee(runtime.reference(), destination_passing=False, device=device)


def load_callee(candidate: Candidate, runtime: TaskRuntime, workdir: Path, label: str) -> Callee:
    """Write the candidate's files under `workdir/label`, import or build them, and wrap the entry point.

    Exceptions propagate: the worker maps them to COMPILE_ERROR.
    """
    device = runtime.device
    root = workdir / label
    root.mkdir(parents=True, exist_ok=True)
    if candidate.kind is CandidateKind.MODULE:
        path = root / f"{label}_{candidate.hash[:12]}.py"
        path.write_text(candidate.source)
        module = import_file(path, path.stem)
        if runtime.task.format is TaskFormat.KERNELBENCH:
            cls = getattr(module, "ModelNew")
            model = runtime.build_module(cls)
            return Callee(model, destination_passing=False, device=device)
        return Callee(getattr(module, "run"), destination_passing=candidate.destination_passing, device=device)
    solution = Solution.model_validate(json.loads(candidate.source))
    for src in solution.sources:
        target = root / src.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(src.content)
    entry_file, func = solution.spec.entry_point.split("::", 1)
    if solution.spec.languages[0] in CPP_LANGUAGES:
        fn = getattr(_build_extension(solution, root, label, candidate.hash[:12]), func)
    else:
        fn = getattr(import_file(root / entry_file, f"{label}_{candidate.hash[:12]}"), func)
    return Callee(fn, destination_passing=solution.spec.destination_passing_style, device=device)


def _build_extension(solution: Solution, root: Path, label: str, tag: str):
    """Build a C++-family solution's top-level .cu/.cpp files as a torch extension exporting `run`."""
    from torch.utils.cpp_extension import load

    sources = [str(root / s.path) for s in solution.sources
               if "/" not in s.path and s.path.endswith((".cu", ".cpp", ".cc"))]
    opts = getattr(solution.spec, "compile_options", None) or {}
    build_dir = root / "build"
    build_dir.mkdir(exist_ok=True)
    kwargs = {"extra_cflags": opts.get("cflags", ["-O3"]), "extra_cuda_cflags": opts.get("cuda_cflags", ["-O3"]),
              "extra_ldflags": opts.get("ld_flags", [])}
    return load(name=f"{label}_{tag}", sources=sources, build_directory=str(build_dir), verbose=False, **kwargs)


__all__ = ["Callee", "OutputSpec", "import_file", "load_callee", "reference_callee"]
