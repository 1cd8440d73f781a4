"""Read a KernelBench file (`Model`, `get_inputs`, `get_init_inputs`) into a one-workload `Task`.

Input and output specs are inferred without allocating real memory: the module's `get_inputs()`,
`Model(*get_init_inputs())` and the forward pass run under `torch.device("meta")` (KernelBench files
ask for tensors of several gigabytes). When that fails (data-dependent code, `.item()`, explicit
devices) the specs stay empty and the cost unknown; the task still loads. Imports without torch.

A file may state its own tolerance in a module-level `KERNELARC_TOLERANCE` dict (the fields of
`Tolerance`, applied to every output), since KernelBench's per-dtype rule (every element within 1e-2
for bf16) fails equally valid bf16 implementations over one rounding step; KernelBench ignores it.
Budget: about 150 lines.
"""

from __future__ import annotations

import ast
import types
from pathlib import Path
from typing import Any

from kernelarc.errors import TaskError
from kernelarc.task.classify import kernel_type
from kernelarc.task.cost import counted_call, module_bytes, tensor_bytes
from kernelarc.task.dtypes import dtype_name
from kernelarc.task.execute import load_module, output_list
from kernelarc.task.model import Task, TaskFormat, TensorSpec, Tolerance, Workload

KERNELBENCH_ROUNDS = 5
"""Correctness trials per task in KernelBench."""
DEFAULT_WORKLOAD = "default"
"""The uuid of a KernelBench task's single workload."""
REQUIRED_DEFINITIONS = {"Model": ast.ClassDef, "get_inputs": ast.FunctionDef, "get_init_inputs": ast.FunctionDef}
"""Top-level definitions every KernelBench file must have."""


def load_kernelbench(path: str | Path) -> Task:
    """Read a KernelBench `.py` file.

    Raises:
        TaskError: the file is missing or unreadable, does not parse, lacks `Model`, `get_inputs` or
            `get_init_inputs`, or raises when imported.
    """
    file = Path(path).resolve()
    if not file.is_file():
        raise TaskError(f"{file}: not found")
    try:
        source = file.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise TaskError(f"{file}: cannot read: {e}") from None
    tree = _parse(source, file)
    try:
        module = load_module(source, str(file), file.stem)
    except Exception as e:  # the task's own code: any failure at import makes it unusable
        raise TaskError(f"{file}: importing it failed: {type(e).__name__}: {' '.join(str(e).splitlines())}") from None
    workload = _probe_on_meta(module).model_copy(update={"tolerance": _declared_tolerance(module, file)})
    model_class = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    task = Task(name=file.stem, format=TaskFormat.KERNELBENCH, path=file, reference_source=source,
                workloads=(workload,), rounds=KERNELBENCH_ROUNDS,
                description=(ast.get_docstring(model_class) or "").strip())
    return task.model_copy(update={"kernel_type": kernel_type(task)})


def _parse(source: str, file: Path) -> ast.Module:
    try:
        tree = ast.parse(source, filename=str(file))
    except SyntaxError as e:
        raise TaskError(f"{file}:{e.lineno}: syntax error: {e.msg}") from None
    defined = {(type(node), getattr(node, "name", None)) for node in tree.body}
    missing = [name for name, kind in REQUIRED_DEFINITIONS.items() if (kind, name) not in defined]
    if missing:
        raise TaskError(f"{file}: a KernelBench file must define {', '.join(missing)} at top level")
    return tree


TOLERANCE_NAME = "KERNELARC_TOLERANCE"


def _declared_tolerance(module: types.ModuleType, file: Path) -> tuple[Tolerance, ...]:
    """The file's own tolerance, if it declares one (else empty: KernelBench's rule per output dtype)."""
    declared = getattr(module, TOLERANCE_NAME, None)
    if declared is None:
        return ()
    try:
        return (Tolerance.model_validate(declared),)
    except ValueError as e:
        first = " ".join(str(e).splitlines()[:3])
        raise TaskError(f"{file}: {TOLERANCE_NAME} is not a tolerance ({first})") from None


def _probe_on_meta(module: types.ModuleType) -> Workload:
    """The workload's specs and cost from one meta-device run; fields left empty where it fails."""
    import torch

    try:
        with torch.device("meta"):
            model = module.Model(*module.get_init_inputs())
            args = list(module.get_inputs())
    except Exception:  # the task's own code may not run on meta tensors: specs stay unknown
        return Workload(uuid=DEFAULT_WORKLOAD)
    inputs = tuple(value_spec(f"arg{i}", v) for i, v in enumerate(args))
    try:
        with torch.device("meta"):
            result, flops = counted_call(model, args)
    except Exception:  # as above: inputs known, outputs and cost not
        return Workload(uuid=DEFAULT_WORKLOAD, inputs=inputs)
    outputs = output_list(result)
    weights = module_bytes(model) if isinstance(model, torch.nn.Module) else 0
    return Workload(uuid=DEFAULT_WORKLOAD, inputs=inputs,
                    outputs=tuple(value_spec(f"out{i}", v) for i, v in enumerate(outputs)),
                    flops=flops, min_bytes=tensor_bytes(args) + weights + tensor_bytes(outputs))


_PY_DTYPES = {bool: "bool", int: "int64", float: "float64"}


def value_spec(name: str, value: Any) -> TensorSpec:
    """The spec of one argument or output value: a tensor's shape and dtype, or a scalar's value."""
    import torch

    if isinstance(value, torch.Tensor):
        return TensorSpec(name=name, shape=tuple(value.shape), dtype=dtype_name(value.dtype))
    dtype = _PY_DTYPES.get(type(value), type(value).__name__)
    return TensorSpec(name=name, shape=None, dtype=dtype, kind="scalar",
                      value=value if type(value) in _PY_DTYPES else None)


__all__ = ["load_kernelbench", "value_spec", "KERNELBENCH_ROUNDS", "DEFAULT_WORKLOAD", "REQUIRED_DEFINITIONS"]
