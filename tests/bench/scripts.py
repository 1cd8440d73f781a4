"""The bench's scripts (bench/, bench/gpu/) loaded as modules, for tests of their own arithmetic."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_script(path: str) -> ModuleType:
    """The script at `path` (relative to the repository), imported afresh under its file's stem."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
