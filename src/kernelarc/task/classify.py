"""The coarse kernel family of a task (gemm, attention, norm, ...), the key under which findings are shared.

Read from the names the reference source uses (calls, attributes, `nn` classes, the `@` operator),
the task's name and description, and whether the FLOP counter saw matmul-class work. When several
families appear, the one that usually dominates the cost wins (a GEMM followed by GELU is a gemm).
Imports without torch. Budget: about 120 lines.
"""

from __future__ import annotations

import ast
from enum import Enum

from kernelarc.task.model import Task


class KernelType(str, Enum):
    """Kernel families, in the order they win when a reference mixes several."""

    ATTENTION = "attention"
    """Softmax(QK^T)V in any form: SDPA, flash/paged attention, or matmul + softmax named attention."""
    CONV = "conv"
    """Convolutions and transposed convolutions."""
    GEMM = "gemm"
    """Matrix products: matmul, linear, bmm, einsum, `@`."""
    LOSS = "loss"
    """Loss functions (cross entropy, MSE, ...), usually a softmax or reduction to a scalar."""
    NORM = "norm"
    """Layer, RMS, group, batch and instance normalization."""
    SOFTMAX = "softmax"
    """Softmax and log-softmax along a dimension."""
    POOLING = "pooling"
    """Max, average and adaptive pooling."""
    SCAN = "scan"
    """Prefix operations: cumsum, cumprod, cummax."""
    REDUCTION = "reduction"
    """Sums, means, maxima and other reductions over a dimension."""
    ELEMENTWISE = "elementwise"
    """Pointwise maths and activations."""
    OTHER = "other"
    """Nothing above recognised."""


_MARKERS: dict[KernelType, frozenset[str]] = {
    KernelType.ATTENTION: frozenset({
        "scaled_dot_product_attention", "flash_attn_func", "flash_attn_varlen_func", "MultiheadAttention",
        "multi_head_attention_forward", "flex_attention",
    }),
    KernelType.CONV: frozenset({
        "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
        "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    }),
    KernelType.GEMM: frozenset({
        "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "linear", "Linear", "Bilinear", "einsum",
        "tensordot", "mv", "dot", "scaled_mm", "_scaled_mm", "@",
    }),
    KernelType.LOSS: frozenset({
        "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
        "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
        "margin_ranking_loss", "triplet_margin_loss", "hinge_embedding_loss", "CrossEntropyLoss",
        "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "BCELoss", "BCEWithLogitsLoss",
        "TripletMarginLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
    }),
    KernelType.NORM: frozenset({
        "layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm", "LayerNorm", "RMSNorm",
        "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
        "InstanceNorm3d", "rsqrt", "normalize", "local_response_norm",
    }),
    KernelType.SOFTMAX: frozenset({"softmax", "log_softmax", "Softmax", "LogSoftmax", "softmin"}),
    KernelType.POOLING: frozenset({
        "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
        "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
        "adaptive_max_pool2d", "adaptive_max_pool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d",
        "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
        "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "lp_pool2d",
    }),
    KernelType.SCAN: frozenset({"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"}),
    KernelType.REDUCTION: frozenset({
        "sum", "mean", "amax", "amin", "max", "min", "prod", "argmax", "argmin", "logsumexp", "norm",
        "var", "std", "all", "any", "nansum",
    }),
    KernelType.ELEMENTWISE: frozenset({
        "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "abs", "clamp", "where", "leaky_relu",
        "elu", "selu", "softplus", "hardtanh", "hardswish", "mish", "pow", "mul", "add", "sub", "div",
        "ReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "LeakyReLU", "ELU", "Hardtanh", "+", "-", "*", "/", "**",
    }),
}
_ATTENTION_WORDS = ("attention", "attn")
_BINOP_SYMBOLS = {ast.MatMult: "@", ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def used_names(source: str) -> set[str]:
    """Names, attribute names and operator symbols a Python source uses (empty if it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOP_SYMBOLS:
            names.add(_BINOP_SYMBOLS[type(node.op)])
    return names


def classify_source(source: str, name: str = "", description: str = "", flops: float | None = None) -> KernelType:
    """The kernel family of a reference source; see the module docstring for the rules."""
    names = used_names(source)
    found = [kind for kind, markers in _MARKERS.items() if names & markers]
    text = f"{name} {description}".lower()
    if KernelType.SOFTMAX in found and KernelType.GEMM in found and any(w in text for w in _ATTENTION_WORDS):
        return KernelType.ATTENTION
    if flops and not {KernelType.ATTENTION, KernelType.CONV, KernelType.GEMM} & set(found):
        found.append(KernelType.GEMM)  # matmul-class work the names did not reveal (e.g. a custom nn class)
    order = list(KernelType)
    return min(found, key=order.index) if found else KernelType.OTHER


def kernel_type(task: Task) -> str:
    """The kernel family of a task, as the string stored in `Task.kernel_type`."""
    flops = max((w.flops or 0.0 for w in task.workloads), default=0.0)
    return classify_source(task.reference_source, task.name, task.description, flops).value


__all__ = ["KernelType", "classify_source", "kernel_type", "used_names"]
