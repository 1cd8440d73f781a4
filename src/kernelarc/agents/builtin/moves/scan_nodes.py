"""Scan nodes of a lowered graph (`aten.cumsum`, `aten.cumprod`) as one generated Triton kernel each.

The host moves the scanned dim last (a copy only when it is not already contiguous there); a program
scans one row in blocks of BLOCK_SIZE with Triton's own `tl.cumsum` / `tl.cumprod`, in fp32, and
carries the running total from block to block. Used by triton_lowered_regions. Imports neither torch
nor triton. Budget: 90 lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves.base import OpNode, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, jit_kernel, launch
from kernelarc.agents.builtin.moves.triton_common import launch_keywords

SCANS = {"aten.cumsum": "sum", "aten.cumprod": "prod"}
SCAN_DTYPES = frozenset({"float32", "float16", "bfloat16"})


@dataclass(frozen=True)
class Scan:
    node: OpNode
    op: str
    x: str
    dim: int

    @property
    def kernel(self) -> str:
        return f"_scan_{self.node.name}"

    @property
    def call(self) -> str:
        return f"{self.kernel}_call({self.x})"


def find_scans(analysis: TaskAnalysis) -> list[Scan]:
    """The scans of floats along one literal dim, in the input's own dtype."""
    values = analysis.typed_refs()
    found = []
    for node in analysis.nodes:
        op = SCANS.get(node.target)
        if op is None or node.dtype not in SCAN_DTYPES or len(node.args) < 2 or node.kwargs.get("dtype"):
            continue
        x, dim = node.args[0], node.args[1]
        shape, dtype = values.get(x, (None, None)) if isinstance(x, str) else (None, None)
        if shape is None or dtype != node.dtype or not isinstance(dim, int):
            continue
        found.append(Scan(node, op, x, dim % max(len(shape), 1)))
    return found


def kernel_source(s: Scan) -> str:
    """One program per row: blocks scanned in order, each offset by the total of the blocks before."""
    identity, scan, combine = (("0.0", "tl.cumsum(x, axis=0)", "carry + tl.sum(x, axis=0)") if s.op == "sum" else
                               ("1.0", "tl.cumprod(x, axis=0)", "carry * tl.reduce(x, 0, _scan_mul)"))
    apply = "y + carry" if s.op == "sum" else "y * carry"
    body = "\n".join(["row = tl.program_id(0).to(tl.int64)", f"carry = tl.full([], {identity}, tl.float32)",
                      "for start in range(0, n_cols, BLOCK_SIZE):", "    cols = start + tl.arange(0, BLOCK_SIZE)",
                      "    mask = cols < n_cols",
                      f"    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other={identity}).to(tl.float32)",
                      f"    y = {scan}",
                      f"    tl.store(out_ptr + row * n_cols + cols, ({apply}).to(out_ptr.dtype.element_ty), mask=mask)",
                      f"    carry = {combine}"])
    kernel = jit_kernel(s.kernel, ["out_ptr, x_ptr,", "n_cols,", "BLOCK_SIZE: tl.constexpr,"],
                        f"cum{s.op} of {s.x} along dim {s.dim}.", body)
    if s.op == "prod":
        kernel = "@triton.jit\ndef _scan_mul(a, b):\n    return a * b\n\n\n" + kernel
    return kernel


def wrapper_source(s: Scan, params: dict[str, Any]) -> str:
    """Host function: the scanned dim moved last and back, one program per row."""
    lines = [f"x_moved = x.movedim({s.dim}, -1).contiguous()", "n_cols = x_moved.shape[-1] if x.dim() else 1",
             "out = torch.empty_like(x_moved)", "rows = x_moved.numel() // max(n_cols, 1)",
             "if x_moved.numel():", indent(launch(s.kernel, "(rows,)", ["out, x_moved", "n_cols",
                                                                          launch_keywords(params)])),
             f"return out.movedim(-1, {s.dim}) if x.dim() else out"]
    return (f"def {s.kernel}_call(x):\n    \"\"\"cum{s.op} as one kernel launch.\"\"\"\n"
            f"{indent(chr(10).join(lines))}\n")


__all__ = ["SCANS", "Scan", "find_scans", "kernel_source", "wrapper_source"]
