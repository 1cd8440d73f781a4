"""Helpers for the Triton move tests: analyse a fixture task, load a rendered candidate in-process,
compare it with the reference on fresh inputs, and run it through the full guard on the CPU.

The Triton kernels run in the interpreter (tests/conftest.py sets TRITON_INTERPRET=1).
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import torch

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.guard import GuardSettings, Verdict, candidate_from_source, evaluate
from kernelarc.guard.gate import check_source
from kernelarc.task import load_task
from kernelarc.task.model import TaskFormat
from kernelarc.task.runtime import TaskRuntime

TASKS = Path(__file__).resolve().parents[2] / "fixtures" / "tasks"
GUARD_SETTINGS = GuardSettings(rounds=2, cpu_iterations=3, warmup=1)
_counter = itertools.count()


@functools.lru_cache(maxsize=None)
def analysis_for(fixture: str) -> TaskAnalysis:
    """The analysis of tests/fixtures/tasks/<fixture>.py (cached: loading probes the task)."""
    return analyze(load_task(TASKS / f"{fixture}.py"))


def load_generated(source: str, directory: Path) -> ModuleType:
    """Import a rendered candidate from a file (Triton needs real source files to JIT)."""
    path = directory / f"generated_{next(_counter)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_gate_passes(move: Move, analysis: TaskAnalysis) -> None:
    entry = "ModelNew" if analysis.task.format is TaskFormat.KERNELBENCH else "run"
    finding = check_source(move.source, entry=entry)
    assert finding is None, finding.message


def assert_matches_reference(move: Move, analysis: TaskAnalysis, directory: Path,
                             seeds: tuple[int, ...] = (3,)) -> None:
    """The candidate's outputs equal the reference's within the task's tolerance, on fresh inputs."""
    assert_gate_passes(move, analysis)
    module = load_generated(move.source, directory)
    task = analysis.task
    runtime = TaskRuntime(task, "cpu")
    candidate = runtime.build_module(module.ModelNew) if task.format is TaskFormat.KERNELBENCH else module.run
    workload = task.workloads[0]
    for seed in seeds:
        inputs = runtime.make_inputs(workload, seed)
        with torch.no_grad():
            expected = runtime.as_output_list(runtime.reference()(*inputs))
            got = runtime.as_output_list(candidate(*inputs))
        assert len(got) == len(expected)
        for i, (g, e) in enumerate(zip(got, expected)):
            assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
            tol = workload.tolerance_for(i, str(e.dtype).removeprefix("torch."), task.format)
            err = (g.float() - e.float()).abs()
            bad = err > tol.atol + tol.rtol * e.float().abs()
            assert not bad.any(), (f"{int(bad.sum())} of {e.numel()} elements off, first at "
                                   f"{bad.nonzero()[0].tolist()}, max error {err.max().item():.3g}")


def assert_guard_passes(move: Move, analysis: TaskAnalysis) -> None:
    """The full guard (gate, worker, correctness rounds, timing) does not reject the candidate."""
    result = evaluate(analysis.task, candidate_from_source(move.source, analysis.task, name=move.family),
                      device="cpu", settings=GUARD_SETTINGS)
    assert result.verdict is not Verdict.REJECT, f"{result.status}: {result.reason}\n{result.log_tail}"


HOPPER_COMPILE = """
import importlib.util, json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
spec = importlib.util.spec_from_file_location("generated", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
ptx = []
for name, constexprs, pointer_dtype in json.loads(sys.argv[2]):
    kernel = getattr(module, name)
    signature = {p.name: "constexpr" if p.is_constexpr else pointer_dtype if p.name.endswith("_ptr") else "i32"
                 for p in kernel.params}
    values = {(kernel.arg_names.index(k),): v for k, v in constexprs.items()}
    compiled = triton.compile(ASTSource(kernel, signature, constexprs=values), target=GPUTarget("cuda", 90, 32))
    ptx.append(compiled.asm["ptx"])
print(json.dumps(ptx))
"""


def hopper_ptx(source: str, directory: Path, jobs: list[tuple[str, dict]], pointer_dtype: str = "*fp32") -> list[str]:
    """The PTX of generated kernels compiled for sm_90, the H200's architecture, by Triton's own compiler
    and bundled ptxas, with no GPU: one (kernel name, constexpr values) per job, integer arguments typed
    i32, pointers `pointer_dtype`. Catches what the interpreter cannot: code that does not compile for the
    card. In a process of its own without TRITON_INTERPRET: Triton's modules imported with the interpreter
    on (the tests') do not compile, and a kernel rebuilt from an interpreted one failed on valid code."""
    path = directory / f"compilable_{next(_counter)}.py"
    path.write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", HOPPER_COMPILE, str(path),
                           json.dumps([(name, constexprs, pointer_dtype) for name, constexprs in jobs])],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)
