"""A task's kernel kind read from what its captured graph computes, not from the names its source uses.

`task.classify` reads names (imports without torch, so it works before anything runs); it calls a
row sum written as a loop of slice-adds `elementwise`, and a loss written out by hand a `reduction`.
Here the kind comes from the pre-dispatch aten graph of `analysis.analyze`, in the same precedence
as `KernelType` (the family that usually dominates the cost wins): attention from the attention
fact (matmul, softmax, matmul in any spelling), then convolutions, GEMMs, losses (a loss op, or a
0-d result computed from two or more tensor inputs), norms and softmaxes (the row-wise facts, fused
or decomposed), poolings, scans, reductions (a reduction op, or fewer output than input elements
reached through pointwise ops and views alone), and elementwise when every op is pointwise or a view.
None when the graph was not captured or shows none of these: the caller keeps the name-based kind.
"""

from __future__ import annotations

import math

from kernelarc.agents.builtin.moves.base import TaskAnalysis
from kernelarc.agents.builtin.moves.facts import Patterns
from kernelarc.agents.builtin.patterns import CONV_OPS, GEMM_OPS, REDUCTION_OPS
from kernelarc.task.classify import KernelType
from kernelarc.task.model import Task

_LOSS_WORDS = ("loss", "cross_entropy", "kl_div", "binary_cross_entropy", "nll")
_NORM_WORDS = ("layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm")
_POOL_WORDS = ("pool",)
_SCAN_WORDS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
_REDUCTION_WORDS = ("sum", "mean", "amax", "amin", "aten.max", "aten.min", "argmax", "argmin", "prod", "logsumexp",
                    "aten.var", "aten.std", "norm", "aten.all", "aten.any")
_LAYOUT_WORDS = ("zeros", "ones", "full", "empty", "arange", "scalar_tensor", "fill", "copy", "cat", "stack",
                 "view", "reshape", "permute", "transpose", "expand", "slice", "select", "squeeze", "unsqueeze",
                 "clone", "contiguous", "_to_copy", "to.", "alias", "t.default", "flatten", "unflatten", "detach")
"""Ops that create, move or view data without computing: they leave an elementwise graph elementwise."""


def graph_kind(analysis: TaskAnalysis) -> KernelType | None:
    """The kind of the analysed task from its graph; None when there is no graph to read."""
    nodes = analysis.nodes
    if not nodes:
        return None
    targets = [n.target for n in nodes]
    patterns = Patterns.of(analysis)
    row = patterns.rowwise.op if patterns.rowwise else None
    if patterns.attention or any("scaled_dot_product_attention" in t for t in targets):
        return KernelType.ATTENTION
    if any(t in CONV_OPS or "conv" in t for t in targets):  # conv_transpose3d.input and other overloads
        return KernelType.CONV
    if any(t in GEMM_OPS for t in targets):
        return KernelType.GEMM
    if row == "cross_entropy" or any(w in t for t in targets for w in _LOSS_WORDS) or _scalar_of_several(analysis):
        return KernelType.LOSS
    if row in ("layer_norm", "rms_norm") or any(w in t for t in targets for w in _NORM_WORDS):
        return KernelType.NORM
    if row in ("softmax", "log_softmax"):
        return KernelType.SOFTMAX
    if any(w in t for t in targets for w in _POOL_WORDS):
        return KernelType.POOLING
    if any(w in t for t in targets for w in _SCAN_WORDS):
        return KernelType.SCAN
    if any(t in REDUCTION_OPS or any(w in t for w in _REDUCTION_WORDS) for t in _non_pointwise(analysis)):
        return KernelType.REDUCTION
    if all(n.pointwise or any(w in n.target for w in _LAYOUT_WORDS) for n in nodes):
        return KernelType.REDUCTION if _shrinks(analysis) else KernelType.ELEMENTWISE
    return None


def _non_pointwise(analysis: TaskAnalysis) -> set[str]:
    """Targets of the ops that are not pointwise (`aten.maximum` is elementwise, `aten.max.dim` not)."""
    return {n.target for n in analysis.nodes if not n.pointwise}


def _shrinks(analysis: TaskAnalysis) -> bool:
    """Fewer output elements than the largest input has (a reduction written as pointwise ops)."""
    workload = analysis.task.workloads[0]
    largest_in = max((math.prod(s.shape) for s in workload.inputs if not s.is_scalar), default=0)
    outputs = [n.shape for n in analysis.nodes if n.name in analysis.output_names and n.shape is not None]
    return bool(outputs) and largest_in > 1 and max(math.prod(s) for s in outputs) < largest_in


def _scalar_of_several(analysis: TaskAnalysis) -> bool:
    """One 0-d result computed from two or more tensor inputs: a loss, whatever its ops are called."""
    workload = analysis.task.workloads[0]
    tensors = [s for s in workload.inputs if not s.is_scalar and math.prod(s.shape) > 1]
    outputs = [n.shape for n in analysis.nodes if n.name in analysis.output_names]
    return len(tensors) >= 2 and len(outputs) == 1 and outputs[0] == ()




def with_graph_kind(task: Task) -> Task:
    """`task` with its kernel kind read from its graph where the graph says one (see the module docstring)."""
    from kernelarc.agents.builtin.agent import shared_analysis  # the agents' own copy: captured once

    kind = graph_kind(shared_analysis(task))
    return task if kind is None else task.model_copy(update={"kernel_type": kind.value})


__all__ = ["graph_kind", "with_graph_kind"]
