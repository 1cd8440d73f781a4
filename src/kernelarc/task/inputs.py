"""SOL-ExecBench input generation: the official rules, reproduced so that candidates see the same
value distributions the official harness feeds them (not plain randn).

Per dtype: floats randn; fp8 randn clamped to +-2 then cast; fp4 randn packed two per byte; int8 in
[-128, 128), other ints in [-1024, 1024); bool {0, 1}. Per name (float tensors only): norm weights
ones, norm biases zeros, square attention/causal masks causal with the dtype's min, masks {0, 1},
rope cos/sin caches cos/sin of clamped randn, rstd/std/var |randn| + 0.1, SSM decays uniform in their
ranges, attention/routing weights softmax(randn), 2-d+ weights and projections randn / sqrt(fan_in).
Every draw uses a `torch.Generator` (or, for the task's own code, a forked global RNG), so inputs
depend only on the seed. Needs torch. Budget: about 250 lines.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernelarc.errors import TaskError
from kernelarc.task.dtypes import torch_dtype
from kernelarc.task.model import Task, TensorSpec, Workload

_FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
_FP8_CLAMP = 2.0
_INT_RANGES = {torch.int8: (-128, 128), torch.int16: (-1024, 1024), torch.int32: (-1024, 1024),
               torch.int64: (-1024, 1024)}
_POSITIVE_OFFSET = 0.1
_FP4_CUTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
"""Midpoints between the E2M1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0..7; +8 for negatives)."""


def random_tensor(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """A tensor drawn by the official per-dtype rule."""
    if dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        return torch.randn(shape, dtype=dtype, generator=gen, device=device)
    if dtype in _FP8:
        return torch.randn(shape, generator=gen, device=device).clamp_(-_FP8_CLAMP, _FP8_CLAMP).to(dtype)
    if dtype == torch.float4_e2m1fn_x2:
        return _pack_fp4(torch.randn(shape, generator=gen, device=device))
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.bool, generator=gen, device=device)
    if dtype in _INT_RANGES:
        low, high = _INT_RANGES[dtype]
        return torch.randint(low, high, shape, dtype=dtype, generator=gen, device=device)
    raise ValueError(f"no random rule for dtype {dtype}")


def _pack_fp4(x: torch.Tensor) -> torch.Tensor:
    """Round to the nearest FP4 E2M1 value and pack pairs along the last dim (low nibble first)."""
    cuts = torch.tensor(_FP4_CUTS, device=x.device)
    codes = torch.bucketize(x.abs(), cuts).to(torch.uint8) + (x < 0).to(torch.uint8) * 8
    return (codes[..., ::2] + codes[..., 1::2] * 16).view(torch.float4_e2m1fn_x2)


def _has_suffix(name: str, suffixes: tuple[str, ...]) -> bool:
    """True if `name`, or `name` without trailing digits (`w1` -> `w`), ends with one of `suffixes`."""
    return name.endswith(suffixes) or name.rstrip("0123456789").endswith(suffixes)


def _is_norm_param(name: str, kind: str) -> bool:
    if name == f"norm_{kind}":
        return True
    suffix = f"_{kind}"
    return name.endswith(suffix) and name[: -len(suffix)].rstrip("0123456789").endswith(("norm", "layernorm"))


def _described(description: str, *words: str) -> bool:
    return any(w in description for w in words)


def _causal_mask(shape, dtype, gen, device) -> torch.Tensor:
    n = shape[-1]
    above = torch.ones(n, n, dtype=torch.bool, device=device).triu(1)
    return torch.zeros(shape, dtype=dtype, device=device).masked_fill(above, torch.finfo(dtype).min)


def _rope(trig: Callable[[torch.Tensor], torch.Tensor]):
    def make(shape, dtype, gen, device) -> torch.Tensor:
        angles = torch.randn(shape, generator=gen, device=device).clamp_(-math.pi, math.pi)
        return trig(angles).to(dtype)
    return make


def _uniform(low: float, high: float, cumulative: bool = False):
    def make(shape, dtype, gen, device) -> torch.Tensor:
        t = torch.empty(shape, dtype=dtype, device=device).uniform_(low, high, generator=gen)
        return t.cumsum(dim=-1) if cumulative else t
    return make


_Rule = tuple[Callable[[str, tuple[int, ...], str], bool], Callable[..., torch.Tensor]]
_RULES: tuple[_Rule, ...] = (
    # (applies(name, shape, lowercase description), make(shape, dtype, gen, device)), first match wins
    (lambda n, s, d: _is_norm_param(n, "weight"),
     lambda shape, dtype, gen, device: torch.ones(shape, dtype=dtype, device=device)),
    (lambda n, s, d: _is_norm_param(n, "bias"),
     lambda shape, dtype, gen, device: torch.zeros(shape, dtype=dtype, device=device)),
    (lambda n, s, d: len(s) >= 2 and s[-1] == s[-2]
     and (n in ("attention_mask", "causal_mask") or (_described(d, "attention mask") and "causal" in d)),
     _causal_mask),
    (lambda n, s, d: n in ("x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask")
     or (n.endswith("_mask") and _described(d, "binary", "{0, 1}", "0 or 1", "1.0 for valid", "0.0 for masked")),
     lambda shape, dtype, gen, device: torch.randint(0, 2, shape, generator=gen, device=device).to(dtype)),
    (lambda n, s, d: n in ("cos", "cos_cached", "rope_cos"), _rope(torch.cos)),
    (lambda n, s, d: n in ("sin", "sin_cached", "rope_sin"), _rope(torch.sin)),
    (lambda n, s, d: n.endswith(("_rstd", "_std", "_variance", "_var")) or _has_suffix(n, ("_rstd", "_std", "_var"))
     or n.rstrip("0123456789") in ("rstd", "std", "variance", "var"),
     lambda shape, dtype, gen, device: torch.randn(shape, dtype=dtype, generator=gen, device=device).abs()
     + _POSITIVE_OFFSET),
    (lambda n, s, d: n == "A_cumsum", _uniform(-0.1, 0.0, cumulative=True)),
    (lambda n, s, d: n == "A_log", _uniform(-5.0, -1.0)),
    (lambda n, s, d: n == "A", _uniform(-1.0, -0.001)),
    (lambda n, s, d: n == "g", _uniform(-5.0, 0.0)),
    (lambda n, s, d: n in ("attn_weights", "attention_weights", "routing_weights")
     or ("softmax" in d and "output" in d),
     lambda shape, dtype, gen, device: torch.randn(shape, generator=gen, device=device).softmax(dim=-1).to(dtype)),
    (lambda n, s, d: len(s) >= 2 and (n.rstrip("0123456789") == "weight" or _has_suffix(
        n, ("_weight", "_weights", "_proj", "_projs", "_proj_weight", "_proj_weights", "_weight_matrix"))),
     lambda shape, dtype, gen, device: torch.randn(shape, dtype=dtype, generator=gen, device=device)
     / math.sqrt(shape[-1])),
)


def named_tensor(name: str, shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator,
                 device: torch.device, description: str | None = None) -> torch.Tensor | None:
    """The tensor the official name rules give this input, or None when no rule applies (then the
    dtype rule does). Only float dtypes other than fp8/fp4 have name rules."""
    if not dtype.is_floating_point or dtype in _FP8 or dtype == torch.float4_e2m1fn_x2:
        return None
    lowered = (description or "").lower()
    for applies, make in _RULES:
        if applies(name, shape, lowered):
            return make(shape, dtype, gen, device)
    return None


def random_input(spec: TensorSpec, gen: torch.Generator, device: torch.device,
                 description: str | None = None) -> torch.Tensor | float | int | bool:
    """A `random` input: name rule first, else dtype rule; a Python scalar when the shape is None."""
    dtype = torch_dtype(spec.dtype)
    if spec.is_scalar:
        return random_tensor((), dtype, gen, device).item()
    named = named_tensor(spec.name, spec.shape, dtype, gen, device, description)
    return named if named is not None else random_tensor(spec.shape, dtype, gen, device)


def load_safetensors_input(spec: TensorSpec, problem_dir: Path, device: torch.device) -> torch.Tensor:
    """A `safetensors` input, read from its file relative to the problem dir and checked against the spec.

    Raises:
        TaskError: the file or key is missing, or the tensor's shape or dtype differs from the spec.
    """
    from safetensors import safe_open

    path = problem_dir / (spec.safetensors_path or "")
    if not path.is_file():
        raise TaskError(f"input {spec.name!r}: safetensors file {path} not found "
                        "(paths are relative to the problem dir; fetch the dataset's blobs there)")
    with safe_open(str(path), framework="pt") as f:
        if spec.tensor_key not in f.keys():
            raise TaskError(f"input {spec.name!r}: key {spec.tensor_key!r} not in {path}; keys: {sorted(f.keys())}")
        tensor = f.get_tensor(spec.tensor_key)
    if tuple(tensor.shape) != spec.shape or tensor.dtype != torch_dtype(spec.dtype):
        raise TaskError(f"input {spec.name!r}: {path}[{spec.tensor_key!r}] is {tuple(tensor.shape)} "
                        f"{tensor.dtype}, expected {spec.shape} {spec.dtype}")
    return tensor.to(device)


def custom_inputs(task: Task, workload: Workload, fn: Callable[..., Any], device: torch.device) -> list[Any]:
    """Inputs built by the reference's own entrypoint, `fn(axes_and_scalars, device) -> {name: value}`,
    put in call order and checked against the specs. The caller seeds the global RNG it uses.

    Raises:
        TaskError: the entrypoint returns something other than the inputs the definition declares.
    """
    scalars = {s.name: s.value for s in workload.inputs if s.kind == "scalar"}
    produced = fn({**workload.axes, **scalars}, device)
    where = f"{task.custom_inputs_entrypoint}() of {task.name}"
    if not isinstance(produced, dict) or set(produced) != {s.name for s in workload.inputs}:
        got = sorted(produced) if isinstance(produced, dict) else type(produced).__name__
        raise TaskError(f"{where} must return a dict of the inputs {list(task.input_names)}, got {got}")
    values = []
    for spec in workload.inputs:
        value = produced[spec.name]
        if spec.is_scalar:
            if isinstance(value, torch.Tensor):
                raise TaskError(f"{where}: input {spec.name!r} must be a Python scalar, got a tensor")
        elif not isinstance(value, torch.Tensor) or tuple(value.shape) != spec.shape:
            got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise TaskError(f"{where}: input {spec.name!r} must be a tensor of shape {spec.shape}, got {got}")
        else:
            value = value.to(device)
        values.append(value)
    return values


def explicit_inputs(task: Task, workload: Workload, seed: int, device: torch.device) -> list[Any]:
    """Random, scalar and safetensors inputs of a SOL-ExecBench workload, in call order."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    declared = (task.definition or {}).get("inputs", {})
    values: list[Any] = []
    for spec in workload.inputs:
        if spec.kind == "scalar":
            values.append(spec.value)
        elif spec.kind == "safetensors":
            values.append(load_safetensors_input(spec, task.path, device))
        else:
            value = random_input(spec, gen, device, declared.get(spec.name, {}).get("description"))
            if spec.name == "probs" and (task.definition or {}).get("op_type") == "sampling":
                value = value.softmax(dim=-1)  # sampling problems take probabilities, not logits
            values.append(value)
    return values


__all__ = ["random_tensor", "named_tensor", "random_input", "load_safetensors_input", "custom_inputs",
           "explicit_inputs"]
