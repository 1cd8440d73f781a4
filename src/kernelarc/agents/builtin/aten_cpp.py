"""The captured aten graph written as C++: one `at::_ops::<op>::call(...)` statement per node.

`at::_ops` are ATen's static entry points, the C++ side of `torch.ops.aten`: a call goes through the
dispatcher (autograd, device) like the Python one, without the Python per-op overhead. Each node's
schema (from the running torch, parsed by torchgen for the native types) says how every argument
is written: tensors by name, literals in the C++ form of their schema type, missing arguments
from the schema's defaults (`::call` takes every argument); a device (the graph was traced on the
meta device) becomes the first input's. A node this cannot express (a list of tensors, a tuple
result, a layout or memory-format literal, an in-place op) raises `NotExpressible` with one line
saying which and why. Imports torch only when called. Budget: about 220 lines.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves.base import OpNode

SCALAR_TYPES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
"""torch dtype name -> `at::ScalarType` member."""
_OPTIONAL_NONE_ONLY = {"Layout?", "MemoryFormat?", "Generator?"}
"""Optional types whose only value written here is None."""
_INT_LIST = re.compile(r"^(int|SymInt)\[\d*\](\?)?$")


class NotExpressible(ValueError):
    """A node or value with no C++ form here; the message says which and why."""


@dataclass(frozen=True)
class CppStatement:
    """One node as C++: the locals it needs (list literals) and its `at::Tensor v = ...;` line."""

    locals: tuple[str, ...]
    line: str


def _schema(target: str):
    """(torch schema, torchgen schema, C++ op struct) of `aten.<name>[.<overload>]`."""
    import torch

    try:
        from torchgen.model import FunctionSchema  # ships inside torch's wheels
    except ImportError:
        raise NotExpressible("torchgen (part of torch's wheels) is not installed") from None

    parts = target.split(".")
    if len(parts) not in (2, 3) or parts[0] != "aten":
        raise NotExpressible(f"{target} is not an aten op")
    name, overload = parts[1], parts[2] if len(parts) == 3 else "default"
    try:
        schema = getattr(getattr(torch.ops.aten, name), overload)._schema
    except AttributeError:
        raise NotExpressible(f"{target}: no such aten overload in this torch") from None
    try:
        native = FunctionSchema.parse(_without_defaults(str(schema).split("::", 1)[1]))
    except Exception as e:  # a schema torchgen's parser does not read
        raise NotExpressible(f"{target}: torchgen cannot read its schema ({e})") from None
    struct = f"at::_ops::{name}" + ("" if overload == "default" else f"_{overload}")
    return schema, native, struct


def _without_defaults(schema: str) -> str:
    """The schema with its default values cut: torch prints list defaults as `[1, 1]`, which
    torchgen's parser (written for native_functions.yaml, `=1`) splits at the comma. The values
    themselves come from torch's own schema object."""
    head, _, rest = schema.partition("(")
    depth, args, current, quote = 0, [], "", ""
    for i, ch in enumerate(rest):
        if quote or ch in "'\"":  # inside a string default: nothing counts until it closes
            quote = "" if ch == quote else quote or ch
            current += ch
            continue
        if ch in "[(":
            depth += 1
        elif ch in "])":
            if depth == 0:  # the closing parenthesis of the argument list
                args.append(current)
                tail = rest[i:]
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append(current)
            current = ""
        else:
            current += ch
    else:
        raise ValueError(f"unbalanced schema {schema!r}")
    cut = [a.split("=", 1)[0].strip() for a in args if a.strip()]
    return f"{head}({', '.join(cut)}{tail}"


def _dtype_name(value: Any) -> str | None:
    text = str(value)
    return text.removeprefix("torch.") if text.startswith("torch.") else None


def _number(value: Any, kind: str) -> str:
    """A C++ literal of an int or float value for a schema type `int` or `float`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NotExpressible(f"{value!r} is not a number")
    if kind == "int":
        if not isinstance(value, int):
            raise NotExpressible(f"{value!r} is not an integer")
        return f"static_cast<int64_t>({value})"
    if math.isnan(value):
        return "std::numeric_limits<double>::quiet_NaN()"
    if math.isinf(value):
        return f"{'' if value > 0 else '-'}std::numeric_limits<double>::infinity()"
    return repr(float(value))


class _Writer:
    """Writes one node's arguments, collecting the local arrays they need."""

    def __init__(self, node: OpNode, tensors: dict[str, str], device: str | None):
        self.node, self.tensors, self.device, self.locals = node, tensors, device, []

    def value(self, kind: str, value: Any, arg: str) -> str:
        if kind.endswith("?") and value is None:
            return "::std::nullopt"
        if kind == "Device?":  # traced on the meta device: the tensors' own device at run time
            if self.device is None:
                raise NotExpressible(f"argument {arg} names a device and the forward has no tensor input")
            return f"::std::optional<at::Device>({self.device}.device())"
        if kind in _OPTIONAL_NONE_ONLY:
            raise NotExpressible(f"argument {arg} ({kind}) = {value!r}: only None is written")
        base = kind.removesuffix("?")
        text = self._required(base, value, arg)
        if kind.endswith("?") and base != "Tensor" and not _INT_LIST.match(kind):
            cpp = {"Scalar": "at::Scalar", "int": "int64_t", "SymInt": "c10::SymInt", "float": "double",
                   "bool": "bool", "str": "c10::string_view", "ScalarType": "at::ScalarType"}.get(base)
            if cpp is None:
                raise NotExpressible(f"argument {arg} has type {kind}")
            return f"::std::optional<{cpp}>({text})"
        return text

    def _required(self, kind: str, value: Any, arg: str) -> str:
        if kind == "Tensor":
            if not isinstance(value, str) or value not in self.tensors:
                raise NotExpressible(f"argument {arg} = {value!r} is not a tensor of the graph")
            return self.tensors[value]
        if kind == "Scalar":
            if isinstance(value, bool):
                return f"at::Scalar({'true' if value else 'false'})"
            return f"at::Scalar({_number(value, 'int' if isinstance(value, int) else 'float')})"
        if kind in ("int", "SymInt"):
            return _number(value, "int")
        if kind == "float":
            return _number(value, "float")
        if kind == "bool":
            if not isinstance(value, bool):
                raise NotExpressible(f"argument {arg} = {value!r} is not a bool")
            return "true" if value else "false"
        if kind == "str":
            if not isinstance(value, str) or not re.fullmatch(r"[\w.-]*", value):
                raise NotExpressible(f"argument {arg} = {value!r} is not a plain word")
            return f'"{value}"'
        if kind == "ScalarType":
            member = SCALAR_TYPES.get(_dtype_name(value) or "")
            if member is None:
                raise NotExpressible(f"argument {arg} = {value!r} is not a known dtype")
            return f"at::ScalarType::{member}"
        match = _INT_LIST.match(kind + "?") if kind.endswith("]") else None
        if match:
            items = value if isinstance(value, (list, tuple)) else [value]
            local = f"{self.node.name}_{arg}"
            self.locals.append(f"std::vector<int64_t> {local} = {{{', '.join(_number(v, 'int') for v in items)}}};")
            return (f"c10::fromIntArrayRefSlow(at::IntArrayRef({local}))" if match.group(1) == "SymInt"
                    else f"at::IntArrayRef({local})")
        raise NotExpressible(f"argument {arg} has type {kind}")


def node_statement(node: OpNode, tensors: dict[str, str], expression: str | None = None,
                   device: str | None = None) -> CppStatement:
    """`at::Tensor <node> = at::_ops::<op>::call(...);` (or `= expression;` when given).

    Args:
        tensors: graph name -> C++ name of every tensor this node may read.
        device: C++ name of a tensor on the device new tensors go to (the first tensor input).

    Raises:
        NotExpressible: the node cannot be written as one C++ call here.
    """
    if expression is not None:
        return CppStatement((), f"at::Tensor {node.name} = {expression};")
    if node.target == "getitem":
        raise NotExpressible("an op returning several tensors (getitem)")
    schema, native, struct = _schema(node.target)
    if native.is_mutable:
        raise NotExpressible(f"{node.target} writes one of its inputs")
    if [str(r.type) for r in native.returns] != ["Tensor"]:
        raise NotExpressible(f"{node.target} returns {', '.join(str(r.type) for r in native.returns)}, not one tensor")
    kinds = [str(a.type) for a in native.arguments.flat_all]
    if _number_for_tensor(node, kinds):
        return node_statement(dataclasses.replace(node, target=node.target.removesuffix(".Tensor") + ".Scalar"),
                              tensors, device=device)
    writer = _Writer(node, tensors, device)
    values = []
    for i, (arg, kind) in enumerate(zip(schema.arguments, kinds)):
        if i < len(node.args):
            value = node.args[i]
        elif arg.name in node.kwargs:
            value = node.kwargs[arg.name]
        elif arg.default_value is not None or kind.endswith("?"):
            value = arg.default_value
        else:
            raise NotExpressible(f"{node.target}: argument {arg.name} has no value")
        values.append(writer.value(kind, value, arg.name))
    return CppStatement(tuple(writer.locals), f"at::Tensor {node.name} = {struct}::call({', '.join(values)});")


def _number_for_tensor(node: OpNode, kinds: list[str]) -> bool:
    """`aten.add.Tensor(x, 2.0)`: Python wraps the number as a tensor; C++ takes the `.Scalar` overload."""
    return (node.target.endswith(".Tensor") and len(node.args) >= 2 and kinds[:2] == ["Tensor", "Tensor"]
            and isinstance(node.args[1], (int, float)) and not isinstance(node.args[1], bool))


__all__ = ["CppStatement", "NotExpressible", "SCALAR_TYPES", "node_statement"]
