"""The baselines as candidates: PyTorch eager (the reference itself) and torch.compile of it.

They are judged by the same guard as every agent's kernel, so the campaign's result can never be
slower than what the user already had: if no agent beats them, a baseline is the winner.
They are kernelarc's own code (trusted), so they skip the static gate (which refuses any
candidate that reuses the reference's `Model`).

A SOL-ExecBench task's torch.compile baseline compiles one static graph per workload (`dynamic=False`,
the recompile limit raised to hold them all). With torch.compile's default, the second shape it meets
recompiles the function with symbolic sizes, and that graph then serves every later call it fits: which kernel a
workload is timed with depends on the order the workloads ran in (SOL-ExecBench's driver compiles and
times one workload at a time; the guard checks every workload before it times any), and a symbolic
kernel is the weaker baseline for a fixed shape. A KernelBench task has one shape, where both agree.
"""

from __future__ import annotations

from kernelarc.guard.candidate import Candidate, candidate_from_source
from kernelarc.task.model import Task, TaskFormat

EAGER, COMPILE = "eager", "torch.compile"

_KB_EAGER = '''

# --- kernelarc baseline: PyTorch eager, the reference unchanged ---
class ModelNew(Model):
    pass
'''

_KB_COMPILE = '''

# --- kernelarc baseline: torch.compile (default mode) of the reference ---
class ModelNew(Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._compiled = torch.compile(Model.forward.__get__(self))

    def forward(self, *args):
        return self._compiled(*args)
'''

_SOL_COMPILE = '''

# --- kernelarc baseline: torch.compile (default mode) of the reference, one static graph per workload ---
torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, {workloads})
_kernelarc_reference_run = run
run = torch.compile(_kernelarc_reference_run, dynamic=False)
'''


def baseline_candidates(task: Task, include_compile: bool = True) -> dict[str, Candidate]:
    """Eager and (optionally) torch.compile baselines of `task`, as candidates in the task's format."""
    src = task.reference_source
    header = "" if "import torch\n" in src else "import torch\n"
    if task.format is TaskFormat.KERNELBENCH:
        out = {EAGER: candidate_from_source(header + src + _KB_EAGER, task, name="baseline_eager")}
        if include_compile:
            out[COMPILE] = candidate_from_source(header + src + _KB_COMPILE, task, name="baseline_compile")
    else:
        out = {EAGER: candidate_from_source(header + src, task, name="baseline_eager")}
        if include_compile:
            compile_section = _SOL_COMPILE.format(workloads=len(task.workloads))
            out[COMPILE] = candidate_from_source(header + src + compile_section, task, name="baseline_compile")
    return out


__all__ = ["EAGER", "COMPILE", "baseline_candidates"]
