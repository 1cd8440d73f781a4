"""The baselines as candidates: PyTorch eager (the reference itself) and torch.compile of it.

They are judged by the same guard as every agent's kernel, so the campaign's result can never be
slower than what the user already had: if no agent beats them, a baseline is the winner.
They are kernelarc's own code (trusted), so they skip the static gate (which refuses any
candidate that reuses the reference's `Model`).
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

# --- kernelarc baseline: torch.compile (default mode) of the reference ---
_kernelarc_reference_run = run
run = torch.compile(_kernelarc_reference_run)
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
            out[COMPILE] = candidate_from_source(header + src + _SOL_COMPILE, task, name="baseline_compile")
    return out


__all__ = ["EAGER", "COMPILE", "baseline_candidates"]
