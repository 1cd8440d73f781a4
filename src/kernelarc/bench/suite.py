"""A suite is a folder of tasks: KernelBench `.py` files and SOL-ExecBench problem dirs, by name.

Files and folders whose names start with `_` or `.` are ignored, as are READMEs. Imports without torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelarc.errors import UserError
from kernelarc.task.sol import DEFINITION_FILE


class SuiteError(UserError):
    """The suite folder is missing, holds no task, or `--tasks` names a task it does not hold."""


@dataclass(frozen=True)
class SuiteTask:
    """One task of a suite, not yet loaded (loading is per task, so one bad file fails only its row)."""

    name: str
    """File stem or problem-dir name: the row's key in results.json."""
    path: Path
    """The `.py` file or the problem dir."""


def discover(suite_dir: Path, only: Sequence[str] = ()) -> list[SuiteTask]:
    """The tasks of `suite_dir`, sorted by name; only those named in `only` when it is not empty.

    Raises:
        SuiteError: not a folder, no task in it, two tasks with one name, or an unknown name in `only`.
    """
    if not suite_dir.is_dir():
        raise SuiteError(f"suite {suite_dir} is not a directory (a suite is a folder of KernelBench .py files "
                         f"and SOL-ExecBench problem dirs)")
    found: dict[str, SuiteTask] = {}
    for path in sorted(suite_dir.iterdir()):
        if path.name.startswith(("_", ".")):
            continue
        is_task = (path.is_file() and path.suffix == ".py") or (path.is_dir() and (path / DEFINITION_FILE).is_file())
        if not is_task:
            continue
        name = path.stem if path.is_file() else path.name
        if name in found:
            raise SuiteError(f"suite {suite_dir} holds two tasks named {name!r}: "
                             f"{found[name].path.name} and {path.name}")
        found[name] = SuiteTask(name, path.resolve())
    if not found:
        raise SuiteError(f"suite {suite_dir} holds no task (.py files or folders with {DEFINITION_FILE})")
    unknown = [n for n in only if n not in found]
    if unknown:
        raise SuiteError(f"--tasks names {', '.join(unknown)}, not in suite {suite_dir}; it has {', '.join(found)}")
    return [t for n, t in found.items() if not only or n in only]


__all__ = ["SuiteError", "SuiteTask", "discover"]
