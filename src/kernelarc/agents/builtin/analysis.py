"""What the built-in agents know about a task before proposing: its graph, its source parts, its patterns.

`analyze(task)` captures the reference's forward as a flat aten graph with `make_fx` in fake mode
(pre-dispatch, so `linear`, `matmul`, `softmax`, `layer_norm`, `rms_norm`,
`scaled_dot_product_attention` and `cross_entropy_loss` stay whole ops), on meta tensors: nothing the
size of a real workload is allocated. KernelBench modules are built under `torch.device("meta")` and
called through `functional_call`, so parameters arrive as named graph inputs; SOL-ExecBench inputs
come from the workload specs, float scalars replaced by sentinels that are written back as their
input's name. Every workload is traced; when their graphs differ (shapes baked into views, say)
the graph cannot be re-emitted as code and `facts["emit_blocker"]` says so. The pattern facts live
in `patterns.py`. Needs torch. Budget: about 250 lines.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import operator
import textwrap
from typing import Any

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import functional_call

from kernelarc.agents.builtin.moves.base import OpNode, TaskAnalysis
from kernelarc.agents.builtin.patterns import find_facts
from kernelarc.agents.builtin.pytorch_source import EAGER_NAME
from kernelarc.task.dtypes import dtype_name, torch_dtype
from kernelarc.task.execute import load_module
from kernelarc.task.kernelbench import TOLERANCE_NAME
from kernelarc.task.model import Task, TaskFormat, Workload
from kernelarc.task.sol import REFERENCE_ENTRY

MAX_TRACED_WORKLOADS = 8
"""Workloads traced to decide whether one graph serves them all."""
_SENTINEL_BASE = 0.7359124
"""Float scalar inputs are traced as this value plus a small per-input offset, then found by value."""
_REFERENCE_HELPERS = {"Model", "get_inputs", "get_init_inputs"}


def analyze(task: Task) -> TaskAnalysis:
    """Everything the moves need about `task`; a failed graph capture is recorded, never raised."""
    if task.format is TaskFormat.KERNELBENCH:
        parts = _kernelbench_parts(task.reference_source)
    else:
        parts = _sol_parts(task)
    nodes: tuple[OpNode, ...] = ()
    output_names: tuple[str, ...] = ()
    param_names: tuple[str, ...] = ()
    returns_tuple = False
    values: dict[str, Any] = {}
    error = None
    blocker = None
    try:
        traces = [_trace(task, w, parts["input_names"]) for w in task.workloads[:MAX_TRACED_WORKLOADS]]
        nodes, output_names, param_names, returns_tuple, blocker, values = traces[0]
        if any(_structure(t[0]) != _structure(nodes) for t in traces[1:]):
            blocker = "the workloads trace to different graphs (shapes are baked into its ops)"
    except Exception as e:  # the reference's own code may not trace on meta tensors: recorded, not fatal
        error = f"{type(e).__name__}: {' '.join(str(e).splitlines())[:300]}"
        blocker = f"graph capture failed: {error}"
    analysis = TaskAnalysis(
        task=task, kernel_type=task.kernel_type, nodes=nodes, input_names=parts["input_names"],
        param_names=param_names, output_names=output_names, init_source=parts["init_source"],
        forward_signature=parts["forward_signature"], capture_error=error,
        init_signature=parts["init_signature"], eager_source=parts["eager_source"],
        helper_source=parts["helper_source"], support_source=parts["support_source"], returns_tuple=returns_tuple,
        values=values,
    )
    facts = find_facts(analysis)
    facts["emit_blocker"] = blocker
    facts["mode_dependent"] = bool(nodes) and _mode_dependent(task, parts, nodes)
    facts["launch_bound"], facts["total_elements"] = _launch_bound(task.workloads[0], nodes)
    return dataclasses.replace(analysis, facts=facts, lowered=_lowered(analysis, parts, facts) if nodes else None)


def _lowered(analysis: TaskAnalysis, parts: dict[str, Any], facts: dict[str, Any]) -> TaskAnalysis | None:
    """The same forward traced through the core ATen decompositions and those of norms and softmax:
    a GroupNorm becomes its reductions and pointwise maths, which a generic code generator can write.
    None when it does not trace (recorded nowhere: the captured graph is the analysis' own)."""
    try:
        nodes, outputs, params, returns_tuple, blocker, values = _trace(
            analysis.task, analysis.task.workloads[0], parts["input_names"], decompose=True)
    except Exception:  # noqa: BLE001 - a forward may trace plainly but not through every decomposition
        return None
    return dataclasses.replace(analysis, nodes=nodes, output_names=outputs, param_names=params,
                               returns_tuple=returns_tuple, values=values,
                               facts={**facts, "emit_blocker": blocker}, lowered=None)


def _mode_dependent(task: Task, parts: dict[str, Any], nodes: tuple[OpNode, ...]) -> bool:
    """Whether the KernelBench module computes otherwise in eval mode (BatchNorm's batch statistics,
    Dropout): the graph is traced in training mode, as the guard runs the module, so code written from
    it would be wrong after `model.eval()`; generated modules then compute as the reference does there."""
    if task.format is not TaskFormat.KERNELBENCH:
        return False
    try:
        evaluated = _trace(task, task.workloads[0], parts["input_names"], training=False)[0]
    except Exception:  # noqa: BLE001 - a forward that does not trace in eval mode: assume it differs
        return True
    return _structure(evaluated) != _structure(nodes)


def _decompositions() -> dict:
    from torch._decomp import core_aten_decompositions, get_decompositions

    aten = torch.ops.aten
    return {**core_aten_decompositions(), **get_decompositions([
        aten._softmax, aten._log_softmax, aten.native_group_norm, aten.native_layer_norm, aten.native_batch_norm,
        aten._native_batch_norm_legit, aten._native_batch_norm_legit_no_training,
        aten._native_batch_norm_legit_functional, aten.var_mean.correction])}


LAUNCH_BOUND_ELEMENTS = 1 << 20
"""Below this many input plus output elements, launch overhead dominates a GPU forward."""
LAUNCH_BOUND_ELEMENTS_PER_OP = 1 << 16
"""Below this many elements read or written per launching op (256 KiB of fp32, well under a microsecond of
the H200's bandwidth against 5-20 us of launch and host work per op), so does it, however large the inputs:
level3 34's Python loop of 256 RNN steps runs about 1,000 ops on 2.4 M input elements (4 k elements per op
output), and was timed at 15-24 ms of host-bound wall on the H200 (docs/benchmarks.md, session 15)."""


def _launch_bound(workload: Workload, nodes: tuple[OpNode, ...]) -> tuple[bool, int]:
    total = sum(s.numel for s in workload.inputs + workload.outputs if not s.is_scalar)
    if 0 < total < LAUNCH_BOUND_ELEMENTS:
        return True, total
    launching = [n for n in nodes if n.shape is not None and _launches(n.target)]
    per_op = (total + sum(math.prod(n.shape) for n in launching)) / len(launching) if launching else math.inf
    return per_op < LAUNCH_BOUND_ELEMENTS_PER_OP, total


def _launches(target: str) -> bool:
    """Whether the op runs a kernel: an aten op that does not return a view of an input (its schema's alias
    annotation says so); `getitem` and other Python-level nodes run none."""
    if not target.startswith("aten."):
        return False
    _, name, *overload = target.split(".")
    op = getattr(getattr(torch.ops.aten, name, None), overload[0] if overload else "default", None)
    alias = op._schema.returns[0].alias_info if op is not None and op._schema.returns else None
    return alias is None or alias.is_write


# --- source parts --------------------------------------------------------------------------------

def _kernelbench_parts(source: str) -> dict[str, Any]:
    """init signature and body, the forward's signature and inputs, the methods and module code to transplant."""
    tree = ast.parse(source)
    lines = source.splitlines()
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    init, forward = methods.get("__init__"), methods["forward"]
    init_signature, init_source = "self", None
    if init is not None:
        init_signature = ast.unparse(init.args)
        body = init.body[1:] if ast.get_docstring(init) else init.body
        init_source = textwrap.dedent(_segment(lines, body[0], body[-1]))
        init_source = init_source.replace("super(Model, self).__init__()", "super().__init__()")
    eager, helpers = "", []
    for node in model.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):  # a class attribute (`expansion = 1`)
            helpers.append(textwrap.dedent(_segment(lines, node, node)))
        elif isinstance(node, ast.FunctionDef) and node.name != "__init__":
            text = textwrap.dedent(_segment(lines, node.decorator_list[0] if node.decorator_list else node, node))
            if node.name == "forward":
                eager = text.replace("def forward(", f"def {EAGER_NAME}(", 1)
            else:
                helpers.append(text)
    support = [_segment(lines, n, n) for n in tree.body
               if not (getattr(n, "name", None) in _REFERENCE_HELPERS or _is_main_guard(n) or _is_docstring(n)
                       or _is_tolerance(n))]
    args = forward.args
    names = tuple(a.arg for a in args.posonlyargs + args.args)[1:]
    return {"init_signature": init_signature, "init_source": init_source,
            "forward_signature": ast.unparse(args), "input_names": names,
            "eager_source": eager, "helper_source": "\n\n".join(helpers), "support_source": "\n".join(support)}


def _sol_parts(task: Task) -> dict[str, Any]:
    tree = ast.parse(task.reference_source)
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == REFERENCE_ENTRY)
    lines = task.reference_source.splitlines()
    line = lines[run.lineno - 1]
    lines[run.lineno - 1] = line.replace(f"def {REFERENCE_ENTRY}(", f"def {EAGER_NAME}(", 1)
    return {"init_signature": "", "init_source": None, "forward_signature": ast.unparse(run.args),
            "input_names": tuple(task.input_names), "eager_source": "\n".join(lines), "helper_source": "",
            "support_source": ""}


def _segment(lines: list[str], first: ast.AST, last: ast.AST) -> str:
    return "\n".join(lines[first.lineno - 1:last.end_lineno])


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__name__" in ast.unparse(node.test)


def _is_tolerance(node: ast.stmt) -> bool:
    """The task's tolerance declaration: for the guard, not for the candidate's code."""
    return isinstance(node, ast.Assign) and any(getattr(t, "id", None) == TOLERANCE_NAME for t in node.targets)


# --- graph capture -------------------------------------------------------------------------------

_Trace = tuple[tuple[OpNode, ...], tuple[str, ...], tuple[str, ...], bool, str | None, dict[str, Any]]


def _trace(task: Task, workload: Workload, input_names: tuple[str, ...], decompose: bool = False,
           training: bool = True) -> _Trace:
    """(nodes, outputs, parameter accessors, returns a tuple, emit blocker, values) of one workload's forward;
    `decompose` traces below the dispatcher through `_decompositions()` instead of keeping PyTorch's ops;
    a KernelBench module in training mode (as built, and as the guard calls it) unless `training` is False."""
    sentinels: dict[float, str] = {}
    module = load_module(task.reference_source, f"{task.path}::analysis", task.name)
    with torch.device("meta"):
        if task.format is TaskFormat.KERNELBENCH:
            model = module.Model(*module.get_init_inputs()).train(training)
            args = list(module.get_inputs())
            state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
            fn, call_args = (lambda p, *a: functional_call(model, p, a)), [state, *args]
        else:
            args = []
            for i, spec in enumerate(workload.inputs):
                if spec.is_scalar and spec.dtype.startswith("float"):
                    value = _SENTINEL_BASE + i * 1e-4
                    sentinels[value] = spec.name
                    args.append(value)
                elif spec.is_scalar:
                    args.append(spec.value)
                else:
                    args.append(torch.empty(spec.shape, dtype=torch_dtype(spec.dtype)))
            state, fn, call_args = {}, getattr(module, REFERENCE_ENTRY), args
        with torch.no_grad():
            if decompose:
                graph = make_fx(fn, decomposition_table=_decompositions(), tracing_mode="fake")(*call_args).graph
            else:
                graph = make_fx(fn, tracing_mode="fake", pre_dispatch=True)(*call_args).graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    params = tuple(_accessor(p) for p in state)
    inputs = tuple(input_names[i] if i < len(input_names) else f"arg{i}" for i in range(len(args)))
    names = {p.name: r for p, r in zip(placeholders, params + inputs)}
    values = {r: _value_spec(v) for r, v in zip(params + inputs, [*state.values(), *args])}
    nodes, blocker = _flatten(graph, names, sentinels)
    out = next(n for n in graph.nodes if n.op == "output").args[0]
    outs = out if isinstance(out, (list, tuple)) else [out]
    if not all(isinstance(o, torch.fx.Node) and o.name in names for o in outs):
        blocker = blocker or "the forward returns something other than computed tensors"
    returns_tuple = isinstance(out, (list, tuple)) and len(outs) != 1
    outputs = tuple(names.get(getattr(o, "name", ""), "") for o in outs)
    return nodes, outputs, params, returns_tuple, blocker, values


def _value_spec(value: Any) -> tuple[tuple[int, ...] | None, str | None]:
    if isinstance(value, torch.Tensor):
        return tuple(int(d) for d in value.shape), dtype_name(value.dtype)
    return None, type(value).__name__


def _accessor(path: str) -> str:
    """`self.layers[0].weight` for the parameter path `layers.0.weight`."""
    return "self" + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path.split("."))


def _flatten(graph: torch.fx.Graph, names: dict[str, str], sentinels: dict[float, str]) -> tuple[
        tuple[OpNode, ...], str | None]:
    nodes: list[OpNode] = []
    blocker = None
    for n in graph.nodes:
        if n.op in ("placeholder", "output"):
            continue
        if n.op == "get_attr":
            blocker = blocker or f"the forward uses a tensor constant ({n.target}) the graph cannot name"
            continue
        if n.target is operator.getitem:
            target, pointwise = "getitem", False
        elif isinstance(n.target, torch._ops.OpOverload):
            overload = n.target._overloadname
            target = f"aten.{n.target._opname}" + ("" if overload == "default" else f".{overload}")
            if n.target.namespace != "aten":
                target = f"{n.target.namespace}.{n.target._opname}.{overload}"
            pointwise = torch.Tag.pointwise in n.target.tags
        else:
            if n.users:
                blocker = blocker or f"the graph calls {n.target}, which cannot be re-emitted"
            continue
        names[n.name] = f"v_{n.name}"
        val = n.meta.get("val")
        shape = tuple(int(d) for d in val.shape) if isinstance(val, torch.Tensor) else None
        dtype = dtype_name(val.dtype) if isinstance(val, torch.Tensor) else None
        nodes.append(OpNode(target=target, args=_convert(n.args, names, sentinels),
                            kwargs={k: _convert(v, names, sentinels) for k, v in n.kwargs.items()},
                            shape=shape, dtype=dtype, name=names[n.name], pointwise=pointwise))
    return tuple(nodes), blocker


def _convert(value: Any, names: dict[str, str], sentinels: dict[float, str]) -> Any:
    """fx arguments -> OpNode arguments: nodes become their names, float sentinels their input's name."""
    if isinstance(value, torch.fx.Node):
        return names[value.name]
    if isinstance(value, (list, tuple)):
        return type(value)(_convert(v, names, sentinels) for v in value)
    if isinstance(value, float) and value in sentinels:
        return sentinels[value]
    return value


def _structure(nodes: tuple[OpNode, ...]) -> list[tuple[Any, ...]]:
    """What must agree between workloads for one emitted graph to serve them all."""
    return [(n.target, n.args, sorted(n.kwargs.items(), key=lambda kv: kv[0])) for n in nodes]


__all__ = ["analyze", "LAUNCH_BOUND_ELEMENTS"]
