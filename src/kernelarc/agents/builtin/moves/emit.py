"""Source emission shared by the generated candidates: the module frame and its entry point.

A generated candidate is one self-contained Python file: a docstring (what it computes, the bytes and
FLOPs it moves), imports, the kernels and host wrappers a family writes, then the entry point the
task's format asks for. KernelBench: the reference module's support code (imports, constants, helper
classes), then `class ModelNew(nn.Module)` whose `__init__` is the reference's (same signature, same
body, so layers are created in the same order and get the same weights) and whose `forward` returns
the wrapper's call. SOL-ExecBench: `def run(...)` with the definition's parameters. Generated code
never imports kernelarc. Must not import torch or triton. Budget: 120 lines.
"""

from __future__ import annotations

import math
import textwrap

from kernelarc.agents.builtin.moves.base import TaskAnalysis
from kernelarc.task.model import TaskFormat

INDENT = "    "
EAGER_NAME = "_eager_forward"
"""What the reference's forward (KernelBench) or `run` (SOL) is renamed to when transplanted."""
TRITON_IMPORTS = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
TRIPLE_QUOTES = '"' * 3
IS_STRICT_UPPER_TRIANGLE = "bool(torch.equal(masked, torch.ones_like(masked).triu(1)))"
"""Generated-code test that a boolean `masked` (True = filled with -inf) is exactly the causal mask.
Candidates evaluate it on the mask's values every call, never cached: another mask, another answer."""


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


def jit_kernel(name: str, args: list[str], doc: str, body: str) -> str:
    """A `@triton.jit` function: one argument group per line (outputs, inputs, sizes, constexpr tiles,
    each ending in a comma), a one-line docstring, the body."""
    return (f"@triton.jit\ndef {name}(\n{indent(chr(10).join(args))}\n):\n"
            f"{INDENT}{TRIPLE_QUOTES}{doc}{TRIPLE_QUOTES}\n{indent(body)}\n")


def launch(kernel: str, grid: str, args: list[str]) -> str:
    """`kernel[grid](...)` with one argument group per line."""
    return f"{kernel}[{grid}](\n{indent(f',{chr(10)}'.join(args))},\n)"


def init_method(analysis: TaskAnalysis) -> str:
    """`def __init__` for ModelNew: the reference's signature and body (`super().__init__()` alone if none)."""
    body = textwrap.dedent(analysis.init_source or "super().__init__()").strip("\n")
    return f"def __init__({analysis.init_signature}):\n{indent(body)}"


def eval_mode_fallback(analysis: TaskAnalysis) -> tuple[str, str]:
    """(the forward's first statements, the method they call) for a KernelBench module that computes
    otherwise in eval mode (`facts["mode_dependent"]`: BatchNorm, Dropout): the generated code is the
    training-mode graph, as the guard judged it, so after `model.eval()` the module computes as the
    reference does, transplanted as `_eager_forward`. ("", "") where nothing depends on the mode."""
    if not analysis.mode_dependent or not analysis.eager_source:
        return "", ""
    inputs = ", ".join(analysis.input_names)
    return (f"if not self.training:  # generated from (and judged in) training mode\n"
            f"{INDENT}return self.{EAGER_NAME}({inputs})\n",
            analysis.eager_source)


def entry_point(analysis: TaskAnalysis, call: str) -> str:
    """The task format's entry point returning `call` (an expression over the forward's inputs)."""
    if analysis.task.format is TaskFormat.KERNELBENCH:
        guard, eager = eval_mode_fallback(analysis)
        forward = f"def forward({analysis.forward_signature}):\n{indent(guard)}{INDENT}return {call}"
        helpers = "".join(f"{indent(m)}\n\n" for m in (analysis.helper_source, eager) if m.strip())
        return (f"class ModelNew(nn.Module):\n"
                f"{INDENT}{TRIPLE_QUOTES}The reference's layers, forward computed by the Triton kernels above."
                f"{TRIPLE_QUOTES}\n\n{indent(init_method(analysis))}\n\n{helpers}{indent(forward)}\n")
    return f"def run({analysis.forward_signature}):\n{INDENT}return {call}\n"


def module_source(analysis: TaskAnalysis, *, doc: str, body: str, call: str) -> str:
    """A complete candidate module.

    Args:
        doc: the module docstring (formula, bytes and FLOPs, the parameter point).
        body: kernels and host wrappers, top-level source.
        call: the expression the entry point returns.
    """
    doc = doc.strip().replace(TRIPLE_QUOTES, "'''")
    support = analysis.support_source.strip() if analysis.task.format is TaskFormat.KERNELBENCH else ""
    support = "\n".join(line for line in support.splitlines() if line not in TRITON_IMPORTS.splitlines()).strip()
    if support:  # the reference's imports, constants and helper classes its __init__ may use
        support = f"# From the reference module.\n{support}\n\n\n"
    return (f"{TRIPLE_QUOTES}{doc}\n{TRIPLE_QUOTES}\n\n{TRITON_IMPORTS}\n{support}\n{body.strip()}\n\n\n"
            f"{entry_point(analysis, call)}")


__all__ = ["EAGER_NAME", "INDENT", "IS_STRICT_UPPER_TRIANGLE", "TRITON_IMPORTS", "entry_point", "eval_mode_fallback", "indent", "init_method", "jit_kernel", "launch", "literal",
           "module_source"]
