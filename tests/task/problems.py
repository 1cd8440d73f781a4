"""A minimal valid SOL-ExecBench definition that malformed-problem tests change one field at a time."""

from __future__ import annotations

from typing import Any

ADD_REFERENCE = "import torch\n\ndef run(x, y):\n    return x + y\n"


def base_definition(**changes: Any) -> dict[str, Any]:
    """z = x + y over a var axis n, with top-level fields replaced by `changes`."""
    d = {
        "name": "add",
        "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}},
        "outputs": {"z": {"shape": ["n"], "dtype": "float32"}},
        "reference": ADD_REFERENCE,
    }
    d.update(changes)
    return d
