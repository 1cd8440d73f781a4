"""The one task model both formats load into. Imports without torch.

A `Task` is what kernelarc optimizes: a reference computation plus the shapes (workloads) it must be
correct and fast on, with the tolerance each workload is judged by and its cost (FLOPs, bytes) for
the speed-of-light bound. Loaders live in `kernelbench.py` and `sol.py`; running a task (building
inputs, calling the reference) lives in `runtime.py`, the only module here that needs torch.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class TaskFormat(str, Enum):
    """Where a task came from; the winning kernel is exported in the same format."""

    KERNELBENCH = "kernelbench"
    """A `.py` file with `Model`, `get_inputs` and `get_init_inputs`."""
    SOL = "sol"
    """A SOL-ExecBench problem dir: `definition.json` + `workload.jsonl`."""


class Frozen(BaseModel):
    """Base for immutable task data: unknown fields are refused, instances are hashable."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Tolerance(Frozen):
    """How close a candidate's output must be to the reference's.

    An element matches when |x - y| <= atol + rtol * |y| (both cast to fp32). A workload passes when
    the matched fraction reaches `required_matched_ratio` and no error exceeds `max_error_cap`.
    """

    atol: float = Field(ge=0)
    """Absolute tolerance."""
    rtol: float = Field(ge=0)
    """Relative tolerance."""
    required_matched_ratio: float = Field(default=1.0, gt=0, le=1)
    """Fraction of elements that must match (KernelBench: all of them; SOL-ExecBench: 0.99)."""
    max_error_cap: float | None = Field(default=None, ge=0)
    """If set, no element may differ by more than this, matched ratio or not."""
    allow_negative_inf: bool = False
    """If true, -inf in both outputs at the same place is a match rather than a failure."""


# KernelBench's current tolerances, per output dtype (atol = rtol).
KERNELBENCH_TOLERANCE_BY_DTYPE: dict[str, float] = {
    "float64": 1e-4,
    "float32": 1e-4,
    "float16": 1e-2,
    "bfloat16": 1e-2,
}
# Outputs of other dtypes (integers, bools, fp8) must match exactly unless the user overrides.
EXACT = Tolerance(atol=0.0, rtol=0.0)
SOL_DEFAULT_TOLERANCE = Tolerance(atol=1e-2, rtol=1e-2, required_matched_ratio=0.99)


def kernelbench_tolerance(dtype: str) -> Tolerance:
    """KernelBench's tolerance for an output of `dtype` (all elements must match)."""
    tol = KERNELBENCH_TOLERANCE_BY_DTYPE.get(dtype)
    return EXACT if tol is None else Tolerance(atol=tol, rtol=tol)


InputKind = Literal["random", "scalar", "custom", "safetensors"]


class TensorSpec(Frozen):
    """One input or output of a workload: a tensor (shape a tuple, `()` for 0-d) or a Python scalar (shape None)."""

    name: str
    """The parameter name (SOL-ExecBench) or `arg<i>` / `out<i>` (KernelBench)."""
    shape: tuple[int, ...] | None
    """Concrete shape for this workload; None for a Python scalar."""
    dtype: str
    """torch dtype name without the `torch.` prefix, for example `bfloat16`."""
    kind: InputKind = "random"
    """How the input is generated (outputs are always `random`, meaning produced by the computation)."""
    value: float | int | bool | None = None
    """The value of a `scalar` input."""
    safetensors_path: str | None = None
    """For `safetensors` inputs: the file, relative to the problem dir."""
    tensor_key: str | None = None
    """For `safetensors` inputs: the key inside the file."""

    @property
    def is_scalar(self) -> bool:
        """True for a Python scalar (shape None), false for tensors including 0-d ones."""
        return self.shape is None

    @property
    def numel(self) -> int:
        """Number of elements (1 for scalars and 0-d tensors)."""
        n = 1
        for d in self.shape or ():
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        """Bytes this tensor occupies in device memory (0 for a Python scalar)."""
        if self.is_scalar:
            return 0
        return (self.numel * dtype_bits(self.dtype) + 7) // 8


_DTYPE_BITS = {
    "float64": 64, "float32": 32, "float16": 16, "bfloat16": 16,
    "float8_e4m3fn": 8, "float8_e5m2": 8, "float4_e2m1": 4, "float4_e2m1fn_x2": 8,
    "int64": 64, "int32": 32, "int16": 16, "int8": 8, "uint8": 8, "bool": 8,
    "complex64": 64, "complex128": 128,
}


def dtype_bits(dtype: str) -> int:
    """Storage bits per element of a dtype name; raises ValueError naming an unknown dtype."""
    try:
        return _DTYPE_BITS[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(sorted(_DTYPE_BITS))}") from None


class Workload(Frozen):
    """One shape the candidate must be correct and fast on."""

    uuid: str
    """Stable id (SOL-ExecBench's uuid; `default` for a KernelBench file)."""
    axes: dict[str, int] = Field(default_factory=dict)
    """Values of every axis (const, var and expr) for this workload."""
    inputs: tuple[TensorSpec, ...] = ()
    """Inputs in call order (empty when the loader could not infer them without running)."""
    outputs: tuple[TensorSpec, ...] = ()
    """Outputs in return order (empty when unknown)."""
    tolerance: tuple[Tolerance, ...] = ()
    """One tolerance per output, in output order; empty means: decide per output dtype at run time."""
    flops: float | None = None
    """FLOPs of the reference on this workload by `torch.utils.flop_counter` (matmul-class ops), None if unknown."""
    min_bytes: int | None = None
    """Fewest bytes any implementation must move: inputs (and weights) read once, outputs written once."""

    def tolerance_for(self, output_index: int, dtype: str, fmt: TaskFormat) -> Tolerance:
        """The tolerance for one output: the workload's own, else the format's default for its dtype."""
        if self.tolerance:
            return self.tolerance[min(output_index, len(self.tolerance) - 1)]
        return kernelbench_tolerance(dtype) if fmt is TaskFormat.KERNELBENCH else SOL_DEFAULT_TOLERANCE


class Task(Frozen):
    """A reference computation and the workloads it is judged on."""

    name: str
    """Short name, for reports and the memory's keys."""
    format: TaskFormat
    """KernelBench file or SOL-ExecBench problem dir."""
    path: Path
    """The file (KernelBench) or directory (SOL-ExecBench) it was read from, absolute."""
    reference_source: str
    """Python source of the reference: the KernelBench file, or the definition's `reference`."""
    workloads: tuple[Workload, ...]
    """At least one workload."""
    kernel_type: str = "other"
    """Coarse family (gemm, attention, norm, ...) used to key shared findings; see `classify.py`."""
    rounds: int = Field(default=5, ge=1)
    """Correctness rounds per workload: KernelBench 5, SOL-ExecBench 10 by default."""
    description: str = ""
    """What the operator does, as the task states it."""
    custom_inputs_entrypoint: str | None = None
    """SOL-ExecBench: the reference's function that builds inputs, when inputs are `custom`."""
    input_names: tuple[str, ...] = ()
    """SOL-ExecBench: the reference `run`'s parameters in order (KernelBench: empty)."""
    output_names: tuple[str, ...] = ()
    """SOL-ExecBench: output names in order (KernelBench: empty)."""
    definition: dict[str, Any] | None = Field(default=None, exclude=True)
    """SOL-ExecBench: the raw definition.json, kept to export solutions that name it."""

    @field_validator("workloads")
    @classmethod
    def _validate_workloads(cls, v: tuple[Workload, ...]) -> tuple[Workload, ...]:
        if not v:
            raise ValueError("a task needs at least one workload, got none")
        uuids = [w.uuid for w in v]
        if len(set(uuids)) != len(uuids):
            raise ValueError(f"workload uuids must be unique, got {uuids}")
        return v

    def __hash__(self) -> int:  # definition is a dict; identity is name + path
        return hash((self.name, str(self.path)))

    def workload(self, uuid: str) -> Workload:
        """The workload with this uuid; raises KeyError naming the known ones."""
        for w in self.workloads:
            if w.uuid == uuid:
                return w
        raise KeyError(f"no workload {uuid!r}; known: {[w.uuid for w in self.workloads]}")


__all__ = [
    "TaskFormat", "Tolerance", "TensorSpec", "Workload", "Task", "InputKind",
    "KERNELBENCH_TOLERANCE_BY_DTYPE", "EXACT", "SOL_DEFAULT_TOLERANCE",
    "kernelbench_tolerance", "dtype_bits",
]
