"""Dtype names as task files spell them, and their torch dtypes (torch imported lazily).

Budget: about 50 lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

SOL_DTYPES = (
    "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
    "float4_e2m1", "float4_e2m1fn_x2", "int64", "int32", "int16", "int8", "bool",
)
"""The dtypes a SOL-ExecBench definition may use."""

_TORCH_NAME = {"float4_e2m1": "float4_e2m1fn_x2"}
"""SOL-ExecBench stores `float4_e2m1` packed two per byte, like `float4_e2m1fn_x2`."""


def torch_dtype(name: str) -> "torch.dtype":
    """The torch dtype for a dtype name (`bfloat16`, `float4_e2m1`, ...); ValueError naming an unknown one."""
    import torch

    dtype = getattr(torch, _TORCH_NAME.get(name, name), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


def dtype_name(dtype: "torch.dtype") -> str:
    """The name of a torch dtype without the `torch.` prefix, as `TensorSpec.dtype` holds it."""
    return str(dtype).removeprefix("torch.")


__all__ = ["SOL_DTYPES", "torch_dtype", "dtype_name"]
