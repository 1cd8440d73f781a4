"""One region call as a standalone KernelBench task: the module's forward captured with make_fx as
a pure function of its tensor arguments and its parameters, written as `Model.forward` with the real
shapes and dtypes, and inputs drawn like the values the model passed (mean and spread).

A region that cannot be captured (data-dependent ops, a constant tensor made inside the forward,
arguments the patch could not match) raises `CaptureError` with one line naming the op or argument
and the user's source line; the rest of the run goes on. Budget: about 170 lines.
"""

from __future__ import annotations

import inspect
import keyword
import re
import traceback
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import functional_call

from kernelarc.model.regions import RegionCall

CONSTANT_TYPES = (bool, int, float, str, type(None))
"""Non-tensor arguments a region may take: baked into its task, matched by the patch with `==`."""


class CaptureError(Exception):
    """A region that cannot be written as a task; the message is one line naming what stopped it."""


@dataclass(frozen=True)
class TensorInfo:
    """One input of a region task: where it comes from, its spec, and how its values were spread."""

    name: str
    source: str
    """`arg` (a forward argument), `parameter` or `buffer`."""
    key: str
    """The argument's position or keyword, or the parameter's or buffer's name in the module."""
    shape: tuple[int, ...]
    dtype: str
    mean: float
    std: float
    low: float
    high: float


@dataclass(frozen=True)
class RegionGraph:
    """A captured region call."""

    call: RegionCall
    forward: str
    """`def forward(self, ...)` of the task's Model, from the FX graph."""
    inputs: tuple[TensorInfo, ...]
    args: tuple
    """The call's positional arguments: ("tensor", shape, dtype) or ("const", value)."""
    kwargs: dict
    outputs: str
    """`tensor`, `tuple` or `list`: how the op's results are handed back."""

    @property
    def signature(self) -> str:
        """What makes two calls the same task (one campaign serves both)."""
        return repr((self.call.kind, self.forward, [(i.source, i.shape, i.dtype) for i in self.inputs]))


def _where(error: BaseException) -> str:
    """The last line of the model's own code in the traceback (`file:line: code`), if any."""
    libraries = (str(Path(torch.__file__).parent), str(Path(__file__).resolve().parents[1]))
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith(libraries)]
    return f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}: `{frames[-1].line}`" if frames else ""


def _describe(value) -> tuple:
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype).removeprefix("torch."))
    if isinstance(value, CONSTANT_TYPES):
        return ("const", value)
    raise CaptureError(f"an argument is a {type(value).__name__}, which the patch cannot match (tensors and "
                       "bool/int/float/str/None only)")


def _stats(t: torch.Tensor) -> tuple[float, float, float, float]:
    x = t.detach().double()
    if x.numel() == 0:
        return 0.0, 0.0, 0.0, 0.0
    return float(x.mean()), float(x.std()) if x.numel() > 1 else 0.0, float(x.min()), float(x.max())


def _identifier(text: str, taken: set[str]) -> str:
    name = re.sub(r"\W", "_", text).strip("_") or "x"
    name = f"x_{name}" if name[0].isdigit() or keyword.iskeyword(name) or name == "self" else name
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def capture(call: RegionCall, module: torch.nn.Module) -> RegionGraph:
    """The region call as an FX graph of aten ops over (its tensor arguments, its parameters and buffers).

    Raises:
        CaptureError: one line naming the op or argument that stopped the capture.
    """
    args = tuple(_describe(a) for a in call.args)
    kwargs = {k: _describe(v) for k, v in call.kwargs.items()}
    arg_names = list(inspect.signature(module.forward).parameters)
    taken: set[str] = set()
    tensors: list[tuple[TensorInfo, torch.Tensor]] = []
    for key, value in [*enumerate(call.args), *call.kwargs.items()]:
        if isinstance(value, torch.Tensor):
            label = arg_names[key] if isinstance(key, int) and key < len(arg_names) else str(key)
            tensors.append((TensorInfo(_identifier(label, taken), "arg", str(key), tuple(value.shape),
                                       str(value.dtype).removeprefix("torch."), *_stats(value)), value))
    state = [("parameter", n, t) for n, t in module.named_parameters()] + [("buffer", n, t) for n, t in module.named_buffers()]
    for source, key, value in state:
        tensors.append((TensorInfo(_identifier(key, taken), source, key, tuple(value.shape),
                                   str(value.dtype).removeprefix("torch."), *_stats(value)), value))
    n_args = sum(1 for info, _ in tensors if info.source == "arg")

    def region(*flat):
        it = iter(flat[:n_args])
        call_args = [next(it) if isinstance(a, torch.Tensor) else a for a in call.args]
        call_kwargs = {k: next(it) if isinstance(v, torch.Tensor) else v for k, v in call.kwargs.items()}
        params = {info.key: t for (info, _), t in zip(tensors[n_args:], flat[n_args:])}
        out = functional_call(module, params, tuple(call_args), call_kwargs)
        structure.append(_structure(out))
        return out

    structure: list[str] = []

    try:
        with torch.no_grad():
            graph = make_fx(region, tracing_mode="fake", pre_dispatch=True)(*[t.detach() for _, t in tensors])
    except CaptureError:
        raise
    except Exception as e:  # the model's own code: any failure of the capture is this region's one line
        message = " ".join(str(e).split()).split(". ")[0][:300]
        raise CaptureError(f"capture stopped{_where(e)}: {type(e).__name__}: {message}") from None
    for node in graph.graph.nodes:
        if node.op == "get_attr":
            raise CaptureError(f"the forward makes a constant tensor ({node.target}); pass it in as an argument "
                               "or a buffer")
    outputs = structure[-1]
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    for node, (info, _) in zip(placeholders, tensors):
        node.name = node.target = info.name
    _portable_devices(graph, placeholders[0] if placeholders else None)
    graph.recompile()
    forward = graph.code.strip()
    return RegionGraph(call, forward, tuple(info for info, _ in tensors), args, kwargs, outputs)


def _structure(out) -> str:
    """How the forward's results are structured: a tensor, or a tuple or list of tensors."""
    if isinstance(out, torch.Tensor):
        return "tensor"
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, torch.Tensor) for o in out):
        return type(out).__name__
    raise CaptureError(f"the forward returns a {type(out).__name__}, not a tensor or a tuple of tensors")


def _portable_devices(graph: torch.fx.GraphModule, anchor) -> None:
    """A `device=` the trace fixed (a tensor made in the forward) becomes the first input's device,
    so the task runs wherever its inputs are."""
    if anchor is None:
        return
    device_node = None
    for node in list(graph.graph.nodes):
        if isinstance(node.kwargs.get("device"), torch.device):
            if device_node is None:
                with graph.graph.inserting_after(anchor):
                    device_node = graph.graph.call_function(getattr, (anchor, "device"))
            node.kwargs = {**node.kwargs, "device": device_node}


def _draw(info: TensorInfo) -> str:
    """An expression drawing an input like the model's values: floats around their mean with their
    spread (a constant, like a norm's unit weight, gets a tenth of its size, so a kernel that ignores
    it fails), integers in their range, booleans as they were (all true, or half)."""
    shape, dtype = info.shape, f"torch.{info.dtype}"
    if info.dtype == "bool":
        return f"torch.ones({shape}, dtype=torch.bool)" if info.low == 1.0 else f"torch.rand({shape}) < 0.5"
    if info.dtype.startswith(("int", "uint")):
        return f"torch.randint({int(info.low)}, {int(info.high) + 1}, {shape}, dtype={dtype})"
    spread = info.std if info.std > 0 else 0.1 * max(abs(info.mean), 1.0)
    return f"torch.randn({shape}, dtype={dtype}) * {spread:.4g} + {info.mean:.4g}"


def task_source(graph: RegionGraph, model_name: str) -> str:
    """The region call as a KernelBench file: `Model.forward` is the captured graph, the parameters
    are inputs (so the winner becomes an op of tensors, weights included), shapes and dtypes real."""
    call = graph.call
    inputs = "\n        ".join(f"{_draw(i)},  # {i.name}: {i.source} {i.key}" for i in graph.inputs)
    body = "\n".join("    " + line if line else line for line in graph.forward.splitlines())
    return f'''"""Region `{call.path}` ({call.kind}) of {model_name}, captured by `kernelarc model`.

The module's forward as aten ops (torch.fx, make_fx), a pure function of its tensor arguments and its
parameters, at the shapes and dtypes the model ran it with. Inputs are drawn like the model's values.
"""

import torch
import torch.nn as nn
from torch import device  # noqa: F401  (the captured code may name devices)

inf, nan = float("inf"), float("nan")


class Model(nn.Module):
    """`{call.path}` ({call.kind}): {", ".join(i.name for i in graph.inputs)}."""

{body}


def get_inputs():
    return [
        {inputs}
    ]


def get_init_inputs():
    return []
'''


__all__ = ["CaptureError", "RegionGraph", "TensorInfo", "capture", "task_source"]
