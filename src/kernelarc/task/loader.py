"""`load_task`: one entry point that picks the reader by what the path is. Imports without torch."""

from __future__ import annotations

from pathlib import Path

from kernelarc.errors import TaskError
from kernelarc.task.kernelbench import load_kernelbench
from kernelarc.task.model import Task
from kernelarc.task.sol import DEFINITION_FILE, load_sol


def load_task(path: str | Path) -> Task:
    """Read a task: a directory holding definition.json (SOL-ExecBench) or a `.py` file (KernelBench).

    Raises:
        TaskError: the path is neither, or the task it holds is malformed.
    """
    p = Path(path)
    if p.is_dir():
        if not (p / DEFINITION_FILE).is_file():
            raise TaskError(f"{p}: a SOL-ExecBench problem dir needs {DEFINITION_FILE}")
        return load_sol(p)
    if p.suffix == ".py":
        return load_kernelbench(p)
    if not p.exists():
        raise TaskError(f"{p}: no such file or directory")
    raise TaskError(f"{p}: a task is a KernelBench .py file or a SOL-ExecBench problem dir")


__all__ = ["load_task"]
