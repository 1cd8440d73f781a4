"""PyTorch candidate sources: the captured graph written back as code, with some nodes rewritten.

The library, precision and scheduling moves change one part of the computation (a GEMM and its
activation, an attention block, a hand-written RMSNorm) and keep the rest exactly as the reference
computes it. `forward_body` writes every live graph node as a `torch.ops.aten` call, a node named in
`rewrites` as the given expression instead (nodes only the replaced ones used are dropped), so the
result is one readable forward. `pytorch_module` frames a body as the task format's entry point:
KernelBench `ModelNew` (the reference `__init__`, so weights match) or SOL-ExecBench `run`. The
frame pieces shared with the Triton families come from `moves/emit.py`. Imports without torch.
Budget: about 180 lines.
"""

from __future__ import annotations

import math
import re
from typing import Any

from kernelarc.agents.builtin.moves.base import OpNode, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import EAGER_NAME, INDENT, eval_mode_fallback, indent, init_method, literal
from kernelarc.task.model import TaskFormat

PYTORCH_IMPORTS = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
_NAME = re.compile(r"\b(v_\w+)\b")
_TORCH_ENUMS = ("torch.float", "torch.bfloat16", "torch.int", "torch.uint", "torch.bool", "torch.complex",
                "torch.strided", "torch.sparse", "torch.contiguous_format", "torch.channels_last",
                "torch.preserve_format")


def code(value: Any, analysis: TaskAnalysis, refs: set[str]) -> str:
    """A node argument as Python source: references as written, literals spelled out."""
    if isinstance(value, str):
        return value if value in refs else repr(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        return 'float("nan")' if math.isnan(value) else literal(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(code(v, analysis, refs) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    text = str(value)
    if type(value).__name__ == "device":
        return f"{device_source(analysis)}.device"
    if text.startswith(_TORCH_ENUMS):
        return text
    raise ValueError(f"cannot write the literal {value!r} ({type(value).__name__}) as source")


def source_of(analysis: TaskAnalysis, value: Any) -> str:
    """`code` with the analysis' own references."""
    return code(value, analysis, {n.name for n in analysis.nodes} | set(analysis.values))


def emit_reason(analysis: TaskAnalysis) -> str | None:
    """Why the captured graph cannot be written back as code, or None when it can."""
    if not analysis.nodes:
        return analysis.emit_blocker or "the graph is empty"
    return analysis.emit_blocker


def device_source(analysis: TaskAnalysis) -> str:
    """An expression naming a tensor on the task's device: its first tensor input."""
    for name in analysis.input_names:
        if analysis.values.get(name, (None, None))[0] is not None:
            return name
    return analysis.param_names[0] if analysis.param_names else "torch.empty(0)"


def node_line(node: OpNode, analysis: TaskAnalysis, refs: set[str]) -> str:
    """`v_gelu = torch.ops.aten.gelu(v_linear, approximate='none')`."""
    if node.target == "getitem":
        return f"{node.name} = {node.args[0]}[{node.args[1]!r}]"
    args = [code(a, analysis, refs) for a in node.args]
    args += [f"{k}={code(v, analysis, refs)}" for k, v in node.kwargs.items()]
    return f"{node.name} = torch.ops.{node.target}({', '.join(args)})"


def forward_body(analysis: TaskAnalysis, rewrites: dict[str, str] | None = None) -> str:
    """The forward's statements: live nodes in order (rewritten ones as given), then the return.

    Raises:
        ValueError: the graph cannot be re-emitted (`facts["emit_blocker"]`) or holds a literal with no source form.
    """
    blocker = analysis.emit_blocker
    if blocker:
        raise ValueError(blocker)
    rewrites = rewrites or {}
    refs = {n.name for n in analysis.nodes} | set(analysis.values)
    live = set(live_nodes(analysis, rewrites))
    lines = [f"{n.name} = {rewrites[n.name]}" if n.name in rewrites else node_line(n, analysis, refs)
             for n in analysis.nodes if n.name in live]
    outs = ", ".join(analysis.output_names)
    lines.append(f"return ({outs})" if analysis.returns_tuple else f"return {outs}")
    return "\n".join(lines)


def mutates_state(node: OpNode, analysis: TaskAnalysis) -> bool:
    """An in-place op (`aten.copy_`, `aten.add_.Tensor`) on a parameter, buffer or input: a BatchNorm's
    running statistics in training mode. No output needs it, yet the module's state does."""
    op = node.target.split(".")
    return (len(op) > 1 and op[1].endswith("_") and bool(node.args) and isinstance(node.args[0], str)
            and node.args[0] in analysis.values)


def live_nodes(analysis: TaskAnalysis, rewrites: dict[str, str], keep_state: bool = True) -> list[str]:
    """Names of the nodes the outputs need, and unless `keep_state` is False those the module's state
    needs (see `mutates_state`), in graph order; a node in `rewrites` needs only the nodes its
    replacement expression names (node names are `v_...` in Python and C++ alike)."""
    by_name = {n.name: n for n in analysis.nodes}
    live: set[str] = set()
    stack = [o for o in analysis.output_names if o in by_name]
    stack += [n.name for n in analysis.nodes if keep_state and mutates_state(n, analysis)]
    while stack:
        name = stack.pop()
        if name in live:
            continue
        live.add(name)
        node = by_name[name]
        uses = _NAME.findall(rewrites[name]) if name in rewrites else _NAME.findall(repr((node.args, node.kwargs)))
        stack.extend(n for n in uses if n in by_name)
    return [n.name for n in analysis.nodes if n.name in live]


ON_GPU = '''def _on_gpu(args):
    """True when every tensor argument is on a CUDA device."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    return bool(tensors) and all(t.is_cuda for t in tensors)
'''
"""Generated helper: wrappers that act only on the GPU call the computation plainly elsewhere."""


def wrapped_module(analysis: TaskAnalysis, *, wrapper: str, helpers: str, strategy: str, doc_head: str,
                   imports: str = "") -> str:
    """A module whose entry point calls the reference's computation, transplanted as `_eager_forward`,
    through `wrapper(_eager_forward)` (a class defined in `helpers`)."""
    doc = (f"{doc_head}\n\nGenerated by kernelarc's built-in {strategy} agent for {analysis.task.name}; the "
           f"computation is the reference's own, copied here as {EAGER_NAME}.")
    if analysis.task.format is TaskFormat.KERNELBENCH:
        init_extra = f"self._call = {wrapper}(self.{EAGER_NAME})"
        body = f"return self._call({call_args(analysis)})"
        return pytorch_module(analysis, doc=doc, body=body, helpers=helpers, init_extra=init_extra, with_eager=True,
                              imports=imports)
    helpers += f"\n\n_call = {wrapper}({EAGER_NAME})\n"
    return pytorch_module(analysis, doc=doc, body=f"return _call({call_args(analysis)})", helpers=helpers,
                          with_eager=True, imports=imports)


def call_args(analysis: TaskAnalysis) -> str:
    """The forward's inputs as a call's argument list: `x, y`."""
    return ", ".join(analysis.input_names)


def pytorch_module(analysis: TaskAnalysis, *, doc: str, body: str, helpers: str = "", init_extra: str = "",
                   imports: str = "", with_eager: bool = False) -> str:
    """A complete PyTorch candidate module.

    Args:
        doc: the module docstring (what it changes, the parameter point).
        body: the forward's (KernelBench) or `run`'s (SOL) statements.
        helpers: top-level functions and classes the body uses.
        init_extra: statements appended to `ModelNew.__init__` (KernelBench only).
        imports: import lines beyond torch, torch.nn and torch.nn.functional.
        with_eager: include the reference's computation as `_eager_forward` (a method for KernelBench,
            a function for SOL), for moves that wrap it.
    """
    doc = doc.strip().replace('"""', "'''")
    head = f'"""{doc}\n"""\n\n{PYTORCH_IMPORTS}{imports}'
    eager = (analysis.eager_source or "") if with_eager else ""
    if analysis.task.format is TaskFormat.KERNELBENCH:
        guard, fallback = ("", "") if with_eager else eval_mode_fallback(analysis)  # the reference's own code
        eager = eager or fallback  # follows the module's mode by itself
        init = init_method(analysis) + (f"\n{indent(init_extra)}" if init_extra.strip() else "")
        forward = f"def forward({analysis.forward_signature}):\n{indent(guard + body)}"
        members = [indent(init), indent(forward)] + [indent(m) for m in (analysis.helper_source, eager) if m.strip()]
        doc_line = f'{INDENT}"""The reference\'s layers; forward as the module docstring says."""\n\n'
        parts = [head, analysis.support_source, helpers,
                 "class ModelNew(nn.Module):\n" + doc_line + "\n\n".join(members)]
    else:
        parts = [head, eager, helpers, f"def run({analysis.forward_signature}):\n{indent(body)}"]
    return "\n\n\n".join(p.strip("\n") for p in parts if p.strip()) + "\n"


__all__ = ["EAGER_NAME", "PYTORCH_IMPORTS", "call_args", "code", "device_source", "emit_reason", "forward_body",
           "live_nodes", "mutates_state", "node_line", "pytorch_module", "source_of"]
