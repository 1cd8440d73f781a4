"""Read a SOL-ExecBench problem dir (definition.json + workload.jsonl) into a `Task`.

Everything a malformed dir can get wrong ends in one `TaskError` line naming the file (and line) and
the problem. Each workload gets concrete input/output specs, its tolerance, and its cost (FLOPs of the
reference on meta tensors, minimal bytes). The reference is executed once, to count FLOPs. Imports
without torch (the cost step imports it when a task is loaded). Budget: about 250 lines.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from kernelarc.errors import TaskError
from kernelarc.task.axes import check_axes, resolve_axes
from kernelarc.task.classify import kernel_type
from kernelarc.task.cost import reference_flops, spec_bytes
from kernelarc.task.dtypes import SOL_DTYPES
from kernelarc.task.execute import load_module
from kernelarc.task.model import SOL_DEFAULT_TOLERANCE, Task, TaskFormat, TensorSpec, Tolerance, Workload

DEFINITION_FILE = "definition.json"
WORKLOAD_FILE = "workload.jsonl"
SOL_ROUNDS = 10
"""Correctness rounds per workload in the official harness."""
REFERENCE_ENTRY = "run"
TOLERANCE_FIELDS = {"max_atol": "atol", "max_rtol": "rtol", "required_matched_ratio": "required_matched_ratio",
                    "max_error_cap": "max_error_cap", "allow_negative_inf": "allow_negative_inf"}
"""workload.jsonl tolerance keys -> `Tolerance` fields; absent keys keep SOL-ExecBench's defaults."""
INPUT_KINDS = ("random", "scalar", "custom", "safetensors")


def _fail(where: Path | str, problem: str) -> NoReturn:
    raise TaskError(f"{where}: {' '.join(problem.splitlines())}")


def load_sol(path: str | Path) -> Task:
    """Read a SOL-ExecBench problem dir.

    Raises:
        TaskError: a file is missing or malformed, or the definition breaks a format rule.
    """
    root = Path(path).resolve()
    def_file, wl_file = root / DEFINITION_FILE, root / WORKLOAD_FILE
    definition = _read_json(def_file)
    _check_definition(definition, def_file)
    rows = _read_jsonl(wl_file)
    if not rows:
        _fail(wl_file, "no workloads")
    workloads = [_workload(definition, row, f"{wl_file}:{line}") for line, row in rows]
    uuids = [w.uuid for w in workloads]
    if len(set(uuids)) != len(uuids):
        _fail(wl_file, f"workload uuids must be unique, got {sorted(u for u in set(uuids) if uuids.count(u) > 1)}")
    run = _reference_run(definition, def_file)
    workloads = [w.model_copy(update={"flops": reference_flops(run, w.inputs)}) for w in workloads]
    task = Task(
        name=definition["name"], format=TaskFormat.SOL, path=root, reference_source=definition["reference"],
        workloads=tuple(workloads), rounds=SOL_ROUNDS, description=definition.get("description") or "",
        custom_inputs_entrypoint=definition.get("custom_inputs_entrypoint"),
        input_names=tuple(definition["inputs"]), output_names=tuple(definition["outputs"]), definition=definition,
    )
    return task.model_copy(update={"kernel_type": kernel_type(task)})


def _read_json(file: Path) -> dict[str, Any]:
    if not file.is_file():
        _fail(file, "not found")
    try:
        data = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError) as e:
        _fail(file, f"cannot read: {e}")
    except json.JSONDecodeError as e:
        _fail(file, f"invalid JSON at line {e.lineno}: {e.msg}")
    if not isinstance(data, dict):
        _fail(file, f"must hold a JSON object, got {type(data).__name__}")
    return data


def _read_jsonl(file: Path) -> list[tuple[int, dict[str, Any]]]:
    if not file.is_file():
        _fail(file, "not found")
    rows = []
    for number, line in enumerate(file.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            _fail(f"{file}:{number}", f"invalid JSON: {e.msg}")
        if not isinstance(row, dict):
            _fail(f"{file}:{number}", f"must be a JSON object, got {type(row).__name__}")
        rows.append((number, row))
    return rows


def _check_definition(d: dict[str, Any], file: Path) -> None:
    for key, kind in (("name", str), ("axes", dict), ("inputs", dict), ("outputs", dict), ("reference", str)):
        if not isinstance(d.get(key), kind) or (kind is str and not d[key].strip()):
            _fail(file, f"field {key!r} must be a non-empty {'string' if kind is str else 'object'}, "
                        f"got {d.get(key)!r:.60}")
    if not d["outputs"]:
        _fail(file, "declares no outputs")
    try:
        check_axes(d["axes"])
    except ValueError as e:
        _fail(file, str(e))
    for group in ("inputs", "outputs"):
        for name, spec in d[group].items():
            _check_tensor_decl(group, name, spec, d["axes"], file)
    both = sorted(set(d["inputs"]) & set(d["outputs"]))
    if both:
        _fail(file, f"names {both} are both inputs and outputs")
    clash = sorted(set(d["inputs"]) & set(d["axes"]))
    if clash:
        _fail(file, f"input names {clash} are also axis names")
    _check_reference(d, file)


def _check_tensor_decl(group: str, name: str, spec: Any, axes: dict[str, Any], file: Path) -> None:
    where = f"{group[:-1]} {name!r}"
    if not isinstance(spec, dict):
        _fail(file, f"{where} must be an object with shape and dtype, got {spec!r:.60}")
    if spec.get("dtype") not in SOL_DTYPES:
        _fail(file, f"{where} has unknown dtype {spec.get('dtype')!r}; known: {', '.join(SOL_DTYPES)}")
    shape = spec.get("shape", "missing")
    if shape is not None and not isinstance(shape, list):
        _fail(file, f"{where} shape must be a list or null, got {shape!r}")
    for dim in shape or ():
        if not (isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0) and not (
                isinstance(dim, str) and (dim.isdigit() or dim in axes)):
            _fail(file, f"{where} shape entry {dim!r} is neither an axis name nor a number")


def _check_reference(d: dict[str, Any], file: Path) -> None:
    try:
        tree = ast.parse(d["reference"])
    except SyntaxError as e:
        _fail(file, f"reference does not parse: line {e.lineno}: {e.msg}")
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if REFERENCE_ENTRY not in functions:
        _fail(file, f"reference defines no top-level function {REFERENCE_ENTRY!r}")
    args = functions[REFERENCE_ENTRY].args
    params = [a.arg for a in args.posonlyargs + args.args]
    if params != list(d["inputs"]) or args.vararg:
        _fail(file, f"reference {REFERENCE_ENTRY}({', '.join(params)}) must take the inputs in order: "
                    f"({', '.join(d['inputs'])})")
    entry = d.get("custom_inputs_entrypoint")
    if entry is not None and entry not in functions:
        _fail(file, f"custom_inputs_entrypoint {entry!r} is not a top-level function of the reference")


def _workload(d: dict[str, Any], row: dict[str, Any], where: str) -> Workload:
    uuid = row.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        _fail(where, f"uuid must be a non-empty string, got {uuid!r}")
    where = f"{where} ({uuid})"
    try:
        axes = resolve_axes(d["axes"], row.get("axes") or {})
    except ValueError as e:
        _fail(where, str(e))
    kinds = _input_kinds(d, row.get("inputs") or {}, where)
    inputs = tuple(_spec(name, decl, axes, kinds.get(name, {"type": "random"}))
                   for name, decl in d["inputs"].items())
    outputs = tuple(_spec(name, decl, axes, {"type": "random"}) for name, decl in d["outputs"].items())
    tolerance = _tolerance(row.get("tolerance"), where)
    return Workload(uuid=uuid, axes=axes, inputs=inputs, outputs=outputs, tolerance=(tolerance,) * len(outputs),
                    min_bytes=spec_bytes(inputs + outputs))


def _input_kinds(d: dict[str, Any], given: Any, where: str) -> dict[str, dict[str, Any]]:
    """The workload's input descriptors, checked; with any custom input, every input is custom."""
    if not isinstance(given, dict):
        _fail(where, f"inputs must be an object, got {given!r:.60}")
    for name, desc in given.items():
        if name not in d["inputs"]:
            _fail(where, f"input {name!r} is not declared; inputs: {list(d['inputs'])}")
        kind = desc.get("type") if isinstance(desc, dict) else None
        if kind not in INPUT_KINDS:
            _fail(where, f"input {name!r} has type {kind!r}; expected one of {list(INPUT_KINDS)}")
        if kind == "scalar" and not isinstance(desc.get("value"), (int, float, bool)):
            _fail(where, f"scalar input {name!r} needs a numeric or boolean value, got {desc.get('value')!r}")
        if kind == "safetensors" and not all(isinstance(desc.get(k), str) and desc[k] for k in ("path", "tensor_key")):
            _fail(where, f"safetensors input {name!r} needs a path and a tensor_key")
    custom = sorted(n for n, desc in given.items() if desc["type"] == "custom")
    if custom:
        other = sorted(set(given) - set(custom))
        if other:
            _fail(where, f"custom inputs {custom} cannot be mixed with other kinds {other}")
        if not d.get("custom_inputs_entrypoint"):
            _fail(where, f"custom inputs {custom} need the definition's custom_inputs_entrypoint")
        return {name: {"type": "custom"} for name in d["inputs"]}
    return given


def _spec(name: str, decl: dict[str, Any], axes: dict[str, int], desc: dict[str, Any]) -> TensorSpec:
    shape = None if decl["shape"] is None else tuple(
        dim if isinstance(dim, int) else int(dim) if dim.isdigit() else axes[dim] for dim in decl["shape"])
    return TensorSpec(name=name, shape=shape, dtype=decl["dtype"], kind=desc["type"], value=desc.get("value"),
                      safetensors_path=desc.get("path"), tensor_key=desc.get("tensor_key"))


def _tolerance(given: Any, where: str) -> Tolerance:
    if given is None:
        return SOL_DEFAULT_TOLERANCE
    if not isinstance(given, dict) or set(given) - set(TOLERANCE_FIELDS):
        _fail(where, f"tolerance must be an object with keys among {list(TOLERANCE_FIELDS)}, got {given!r:.80}")
    fields = SOL_DEFAULT_TOLERANCE.model_dump()
    fields.update({TOLERANCE_FIELDS[k]: v for k, v in given.items()})
    try:
        return Tolerance(**fields)
    except ValidationError as e:
        _fail(where, f"bad tolerance {given}: {e.errors()[0]['msg']}")


def _reference_run(d: dict[str, Any], file: Path) -> Callable[..., object]:
    try:
        module = load_module(d["reference"], f"{file}::reference", d["name"])
    except Exception as e:  # the task's own code: any failure makes the task unusable
        _fail(file, f"reference failed to import: {type(e).__name__}: {e}")
    return getattr(module, REFERENCE_ENTRY)


__all__ = ["load_sol", "DEFINITION_FILE", "WORKLOAD_FILE", "REFERENCE_ENTRY", "SOL_ROUNDS", "TOLERANCE_FIELDS", "INPUT_KINDS"]
