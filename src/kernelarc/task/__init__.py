"""kernelarc.task: reading KernelBench files and SOL-ExecBench problem dirs into one `Task`, input
generation, FLOP and byte counts.

Importing the package does not import torch: `TaskRuntime` and the input generators (the only parts
that need it at import) load on first access. Nothing here imports other kernelarc packages except
`kernelarc.errors`.
"""

from __future__ import annotations

import importlib
from typing import Any

from kernelarc.task.axes import check_axes, evaluate_expression, expression_names, resolve_axes
from kernelarc.task.classify import KernelType, classify_source, kernel_type
from kernelarc.task.kernelbench import load_kernelbench
from kernelarc.task.loader import load_task
from kernelarc.task.model import (
    EXACT,
    KERNELBENCH_TOLERANCE_BY_DTYPE,
    SOL_DEFAULT_TOLERANCE,
    InputKind,
    Task,
    TaskFormat,
    TensorSpec,
    Tolerance,
    Workload,
    dtype_bits,
    kernelbench_tolerance,
)
from kernelarc.task.sol import load_sol

_LAZY = {"TaskRuntime": "kernelarc.task.runtime", "INIT_SEED": "kernelarc.task.runtime"}
"""Names whose modules import torch at import time, loaded on first access."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Task", "TaskFormat", "TensorSpec", "Tolerance", "Workload", "InputKind",
    "EXACT", "KERNELBENCH_TOLERANCE_BY_DTYPE", "SOL_DEFAULT_TOLERANCE", "dtype_bits", "kernelbench_tolerance",
    "load_task", "load_sol", "load_kernelbench",
    "KernelType", "classify_source", "kernel_type",
    "check_axes", "evaluate_expression", "expression_names", "resolve_axes",
    "TaskRuntime", "INIT_SEED",
]
