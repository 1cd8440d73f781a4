"""Source emission shared by the generated candidates: the module frame and its entry point.

A generated candidate is one self-contained Python file: a docstring (what it computes, the bytes and
FLOPs it moves), imports, the kernels and host wrappers a family writes, then the entry point the
task's format asks for. KernelBench: `class ModelNew(nn.Module)` whose `__init__` is the reference's
(same signature, same body, so layers are created in the same order and get the same weights) and
whose `forward` returns the wrapper's call. SOL-ExecBench: `def run(...)` with the definition's
parameters. Generated code never imports kernelarc. Must not import torch or triton. Budget: 150 lines.
"""

from __future__ import annotations

import ast
import math
import re
import textwrap

from kernelarc.agents.builtin.moves.base import TaskAnalysis
from kernelarc.task.model import TaskFormat

INDENT = "    "
_SUPER_OF_MODEL = re.compile(r"super\(\s*Model\s*,\s*self\s*\)")
"""`super(Model, self)` in a transplanted `__init__` would name the reference class (the gate refuses that)."""

TRITON_IMPORTS = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"


def literal(value: float | int | bool) -> str:
    """A Python/Triton literal for a constant: floats keep full precision, infinities spelled out."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return repr(value)
    if math.isinf(value):
        return 'float("inf")' if value > 0 else '-float("inf")'
    if math.isnan(value):
        raise ValueError(f"cannot emit a NaN constant, got {value!r}")
    return repr(float(value))


def indent(source: str, level: int = 1) -> str:
    """`source` indented by `level` steps (blank lines stay empty)."""
    return textwrap.indent(source, INDENT * level, lambda line: bool(line.strip()))


def torch_dtype(dtype: str) -> str:
    """`torch.bfloat16` for `bfloat16`."""
    return f"torch.{dtype}"


def init_signature(analysis: TaskAnalysis) -> str:
    """The reference `Model.__init__` parameter list as source (`self, in_features, out_features`)."""
    tree = ast.parse(analysis.task.reference_source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return ast.unparse(item.args)
    return "self"


def init_method(analysis: TaskAnalysis) -> str:
    """`def __init__` for ModelNew: the reference's signature and `analysis.init_source`.

    `init_source` may be the body only or the whole `def __init__(...)`; `super(Model, self)` becomes
    `super()` and a missing `super().__init__()` is added, so ModelNew never names the reference.
    """
    body = textwrap.dedent(analysis.init_source or "").strip("\n")
    body = _SUPER_OF_MODEL.sub("super()", body)
    if body.lstrip().startswith("def __init__"):
        return body
    if "super().__init__()" not in body:
        body = "super().__init__()\n" + body
    return f"def __init__({init_signature(analysis)}):\n{indent(body)}"


def entry_point(analysis: TaskAnalysis, call: str) -> str:
    """The task format's entry point returning `call` (an expression over the forward's inputs)."""
    if analysis.task.format is TaskFormat.KERNELBENCH:
        forward = f"def forward({analysis.forward_signature}):\n{INDENT}return {call}"
        return (f"class ModelNew(nn.Module):\n"
                f'{INDENT}"""The reference\'s layers, forward computed by the Triton kernels above."""\n\n'
                f"{indent(init_method(analysis))}\n\n{indent(forward)}\n")
    return f"def run({analysis.forward_signature}):\n{INDENT}return {call}\n"


def module_source(analysis: TaskAnalysis, *, doc: str, body: str, call: str) -> str:
    """A complete candidate module.

    Args:
        doc: the module docstring (formula, bytes and FLOPs, the parameter point).
        body: kernels and host wrappers, top-level source.
        call: the expression the entry point returns.
    """
    doc = doc.strip().replace('"""', "'''")
    return f'"""{doc}\n"""\n\n{TRITON_IMPORTS}\n\n{body.strip()}\n\n\n{entry_point(analysis, call)}'


__all__ = ["INDENT", "TRITON_IMPORTS", "entry_point", "indent", "init_method", "init_signature", "literal",
           "module_source", "torch_dtype"]
