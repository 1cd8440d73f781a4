"""What a workload costs at least: matmul-class FLOPs and the fewest bytes any kernel must move.

Both feed the speed-of-light bound. FLOPs come from `torch.utils.flop_counter.FlopCounterMode`
around the reference run on meta tensors, so gigabyte-sized workloads cost no memory; minimal bytes
are every input, weight and output read or written once. torch is imported inside functions so the
loaders that use this module import without it. Budget: about 100 lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kernelarc.task.dtypes import torch_dtype
from kernelarc.task.model import TensorSpec

if TYPE_CHECKING:
    import torch

META_SCALAR = 1
"""Stand-in for a random Python-scalar input when the reference runs on meta tensors."""


def counted_call(fn: Callable[..., Any], args: Sequence[Any]) -> tuple[Any, float]:
    """Call `fn(*args)` without autograd under a FLOP counter; return its result and the FLOPs counted.

    Exceptions from `fn` propagate: the caller decides what an uncountable reference means.
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        result = fn(*args)
    return result, float(counter.get_total_flops())


def meta_args(specs: Iterable[TensorSpec]) -> list[Any]:
    """Meta tensors (and scalar values) standing in for a workload's inputs; nothing is allocated."""
    import torch

    return [
        (META_SCALAR if spec.value is None else spec.value) if spec.is_scalar
        else torch.empty(spec.shape, dtype=torch_dtype(spec.dtype), device="meta")
        for spec in specs
    ]


def reference_flops(fn: Callable[..., Any], inputs: Sequence[TensorSpec]) -> float | None:
    """FLOPs of `fn` on meta stand-ins for `inputs`, or None when it cannot run on meta tensors
    (data-dependent control flow such as `.item()`, unsupported ops)."""
    try:
        return counted_call(fn, meta_args(inputs))[1]
    except Exception:  # any failure of the task's own code means "unknown", never a crash
        return None


def tensor_bytes(values: Iterable[Any]) -> int:
    """Bytes of the tensors among `values` (other values count 0); works on meta tensors."""
    import torch

    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def module_bytes(module: "torch.nn.Module") -> int:
    """Bytes of a module's parameters and buffers, each shared tensor counted once."""
    return tensor_bytes(module.parameters()) + tensor_bytes(module.buffers())


def spec_bytes(specs: Iterable[TensorSpec]) -> int:
    """Bytes of the tensors a list of specs describes (Python scalars count 0)."""
    return sum(spec.nbytes for spec in specs)


__all__ = ["counted_call", "meta_args", "reference_flops", "tensor_bytes", "module_bytes", "spec_bytes",
           "META_SCALAR"]
