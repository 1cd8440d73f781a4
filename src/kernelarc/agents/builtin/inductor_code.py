"""torch.compile's own code for a task: Inductor's output for the reference, one module per input signature.

Issue 16 item 3: the search starts where the compiler stands. This asks Inductor (torch.compile's
backend) for the code it would run for the reference, without compiling or running any of it
(`torch._inductor.utils.get_code`), so a move family can hand it to the guard as standalone source.

It runs in a child process (`python -m kernelarc.agents.builtin.inductor_code`) on the campaign's
device: Inductor writes GPU code only where it can query the card (its Triton target, SM count),
and the agents' process must not create a CUDA context on a card whose timings the guard's sides
own. The child sees only that card (`CUDA_VISIBLE_DEVICES`) and traces on fake tensors: nothing
the size of a workload is allocated, no kernel is launched. The reference is the user's own code,
loaded as the analysis loads it. The parent (`generate`) imports no torch. The child runs at the lowest
CPU priority: it may run while the guard times host-bound calls (the baselines).

Workloads whose inputs differ only in some sizes share one code with those sizes symbolic, as
torch.compile compiles after its first recompile; the rest (other dtypes, ranks or scalar values) get
code of their own. Parameters and buffers are traced as leading inputs, in the order
`named_parameters()` then `named_buffers()` gives them, so a generated module passes them itself.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any

from kernelarc.guard import timing_cpus
from kernelarc.guard.sandbox import lowered_priority
from kernelarc.task.model import Task, TaskFormat

GENERATION_TIMEOUT_S = 300.0
"""One generation (import torch, trace and lower every signature); Inductor takes 5-30 s per graph."""
MAX_SIGNATURES = 8
"""Codes generated at most (see `groups`); a task needing more is left to torch.compile itself."""
TUNING = {
    "default": {},
    "coordinate_descent": {"coordinate_descent_tuning": True},
    "autotune_pointwise": {"max_autotune_pointwise": True},
    "looped_reductions": {"triton.persistent_reductions": False},
}
"""Inductor settings a point may ask for; all take effect in the generated code or at its first call
(autotuning then runs in the guard's side, under the device lock), none benchmarks while generating."""


@dataclass(frozen=True)
class InductorCode:
    """What Inductor generated for a task on one device."""

    specializations: tuple[tuple[str, str], ...]
    """(input pattern as a Python literal, Inductor's output module) per code (see `groups`)."""
    inputs: int
    """How many of the forward's positional inputs the workloads pass (traced in this order)."""
    outputs: int
    """How many tensors the forward returns."""
    returns_tuple: bool
    """The forward returns a tuple or list, not one tensor."""


_CACHE: dict[tuple[str, str, str], InductorCode] = {}
_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def generate(task: Task, device: str, tuning: str = "default") -> InductorCode:
    """Inductor's code for `task` on `device` (`cpu`, `cuda:N`), cached per process.

    Raises:
        ValueError: one line saying why no code came (the reference does not trace, Inductor failed,
            too many signatures, the child timed out).
    """
    if tuning not in TUNING:
        raise ValueError(f"unknown Inductor tuning {tuning!r}; known: {', '.join(TUNING)}")
    key = (task.reference_source + repr(task.workloads), device, tuning)
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:  # agents proposing at once wait for one generation instead of starting their own
        if key not in _CACHE:
            _CACHE[key] = _run_child(task, device, tuning)
        return _CACHE[key]


def _run_child(task: Task, device: str, tuning: str) -> InductorCode:
    kind, _, index = device.partition(":")
    env = dict(os.environ)
    if kind == "cuda":
        env["CUDA_VISIBLE_DEVICES"] = index or "0"
    request = {"task": task.model_dump(mode="json"), "device": "cuda" if kind == "cuda" else kind, "tuning": tuning}
    try:
        proc = subprocess.run([sys.executable, "-m", __name__], input=json.dumps(request), capture_output=True,
                              text=True, timeout=GENERATION_TIMEOUT_S, env=env,
                              preexec_fn=functools.partial(lowered_priority, timing_cpus.reserved()))
    except subprocess.TimeoutExpired:
        raise ValueError(f"Inductor took over {GENERATION_TIMEOUT_S:.0f} s to generate the code") from None
    try:
        reply = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ValueError(f"the generation child exited {proc.returncode}: {tail[:300]}") from None
    if "error" in reply:
        raise ValueError(reply["error"])
    return InductorCode(specializations=tuple((k, c) for k, c in reply["specializations"]),
                        inputs=reply["inputs"], outputs=reply["outputs"], returns_tuple=reply["returns_tuple"])


# --- the child -----------------------------------------------------------------------------------

Entry = tuple
"""One input of a signature: `("tensor", sizes, dtype)` or `("value", number)`; in a pattern, a size may
be a name (`"s0"`): any value, the same wherever the name recurs."""


def groups(signatures: list[tuple[Entry, ...]]) -> list[tuple[tuple[Entry, ...], int]]:
    """(pattern, index of the workload to trace) covering every signature, as torch.compile would compile
    them after its first recompile: signatures alike but for some sizes share one code whose varying sizes
    are names (sizes that vary together share a name). A signature with a 0 or 1 where its group varies
    gets code of its own: symbolic code assumes such a size is 2 or more, as Dynamo does."""
    out: list[tuple[tuple[Entry, ...], int]] = []
    families: dict[tuple, list[int]] = {}
    for i, sig in enumerate(signatures):
        shape = tuple((e[0], len(e[1]), e[2]) if e[0] == "tensor" else e for e in sig)
        families.setdefault(shape, []).append(i)
    for members in families.values():
        seen: dict[tuple, int] = {}
        distinct = [seen.setdefault(signatures[i], i) for i in members if signatures[i] not in seen]
        varying = _varying(signatures, distinct)
        small = [i for i in distinct if any(signatures[i][k][1][d] < 2 for k, d in varying)]
        rest = [i for i in distinct if i not in small]
        out += [(signatures[i], i) for i in small]
        if len(rest) == 1:
            out.append((signatures[rest[0]], rest[0]))
        elif rest:
            out.append((_pattern(signatures, rest, _varying(signatures, rest)), rest[0]))
    return out


def _varying(signatures: list[tuple[Entry, ...]], members: list[int]) -> list[tuple[int, int]]:
    """(input, dim) positions whose size differs among `members`."""
    first = signatures[members[0]]
    return [(k, d) for k, e in enumerate(first) if e[0] == "tensor" for d in range(len(e[1]))
            if len({signatures[i][k][1][d] for i in members}) > 1]


def _pattern(signatures: list[tuple[Entry, ...]], members: list[int], varying: list[tuple[int, int]]) -> tuple:
    names: dict[tuple[int, ...], str] = {}
    entries = [list(e) for e in signatures[members[0]]]
    for k, d in varying:
        values = tuple(signatures[i][k][1][d] for i in members)
        name = names.setdefault(values, f"s{len(names)}")
        sizes = list(entries[k][1])
        sizes[d] = name
        entries[k][1] = tuple(sizes)
    return tuple(tuple(e) for e in entries)


def _child(request: dict[str, Any]) -> dict[str, Any]:
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import get_code

    from kernelarc.task.execute import load_module

    task = Task.model_validate(request["task"])
    module = load_module(task.reference_source, f"{task.path}::inductor", task.name)
    built = [_meta_inputs(task, module, w) for w in task.workloads]
    signatures = [tuple(_entry(v) for v in inputs) for _, _, inputs in built]
    chosen = groups(signatures)
    if len(chosen) > MAX_SIGNATURES:
        return {"error": f"the workloads need more than {MAX_SIGNATURES} codes (input signatures)"}
    settings = {"compile_threads": 1, "fx_graph_cache": False, **TUNING[request["tuning"]]}
    specializations, shape = [], None
    for pattern, index in chosen:
        model, state, inputs = built[index]
        graph, args, shape = _trace(task, module, model, state, inputs, pattern, request["device"])
        with inductor_config.patch(settings):
            codes = get_code(lambda: compile_fx(graph, args))
        if not codes:
            return {"error": "Inductor generated no code (the graph may have no op to compile)"}
        specializations.append((repr(pattern), codes[0]))
    outputs, returns_tuple = shape
    return {"specializations": specializations, "inputs": len(signatures[0]), "outputs": outputs,
            "returns_tuple": returns_tuple}


def _entry(value: Any) -> Entry:
    import torch

    if isinstance(value, torch.Tensor):
        return "tensor", tuple(int(d) for d in value.shape), str(value.dtype)
    return "value", value


def _meta_inputs(task: Task, module, workload) -> tuple[Any, dict, list]:
    """(model or None, parameters and buffers by name, positional inputs) of one workload, on meta tensors."""
    import torch

    from kernelarc.task.dtypes import torch_dtype

    with torch.device("meta"):
        if task.format is TaskFormat.KERNELBENCH:
            model = module.Model(*module.get_init_inputs())
            return model, {**dict(model.named_parameters()), **dict(model.named_buffers())}, list(module.get_inputs())
        return None, {}, [spec.value if spec.is_scalar else torch.empty(spec.shape, dtype=torch_dtype(spec.dtype))
                          for spec in workload.inputs]


def _trace(task: Task, module, model, state: dict, inputs: list, pattern: tuple, device: str) -> tuple[
        Any, list, tuple[int, bool]]:
    """(graph, fake graph inputs, (outputs, returns a tuple)): the forward traced with make_fx on fake
    tensors of `device`, a size named in `pattern` symbolic (hinted by these inputs' size)."""
    import torch
    from torch._dynamo.source import ConstantSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv
    from torch.func import functional_call

    from kernelarc.task.sol import REFERENCE_ENTRY

    shape_env = ShapeEnv()
    symbols: dict[str, Any] = {}

    def size(name_or_int: Any, hint: int) -> Any:
        if isinstance(name_or_int, int):
            return name_or_int
        if name_or_int not in symbols:
            symbol = shape_env.create_symbol(hint, ConstantSource(name_or_int), dynamic_dim=DimDynamic.DYNAMIC)
            symbols[name_or_int] = shape_env.create_symintnode(symbol, hint=hint)
        return symbols[name_or_int]

    with FakeTensorMode(shape_env=shape_env):
        params = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=device) for t in state.values()]
        fakes = [value if entry[0] != "tensor"
                 else torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=device)
                 if all(isinstance(n, int) for n in entry[1])
                 else torch.empty([size(n, h) for n, h in zip(entry[1], value.shape)], dtype=value.dtype, device=device)
                 for entry, value in zip(pattern, inputs)]
    tensor_positions = [i for i, v in enumerate(fakes) if isinstance(v, torch.Tensor)]
    names = list(state)
    returned: dict[str, bool] = {}

    def forward(*flat: torch.Tensor) -> tuple[torch.Tensor, ...]:
        args = list(fakes)
        for position, tensor in zip(tensor_positions, flat[len(names):]):
            args[position] = tensor
        if model is not None:
            out = functional_call(model, dict(zip(names, flat[:len(names)])), tuple(args))
        else:
            out = getattr(module, REFERENCE_ENTRY)(*args)
        returned["tuple"] = isinstance(out, (tuple, list))
        outs = tuple(out) if returned["tuple"] else (out,)
        if not all(isinstance(o, torch.Tensor) for o in outs):
            raise TypeError("the forward returns something other than tensors")
        return outs

    graph_inputs = params + [fakes[i] for i in tensor_positions]
    with torch.no_grad():
        graph = make_fx(forward, tracing_mode="fake")(*graph_inputs)
    outputs = len(next(n for n in graph.graph.nodes if n.op == "output").args[0])
    return graph, graph_inputs, (outputs, returned["tuple"])


def main() -> None:
    """Read one request on stdin, print one JSON reply line; a failure is a reply, never a traceback."""
    try:
        reply = _child(json.loads(sys.stdin.read()))
    except Exception as e:  # noqa: BLE001 - the user's reference or Inductor failing is an answer here
        reply = {"error": f"Inductor could not generate the code: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
    print(json.dumps(reply))


if __name__ == "__main__":
    main()


__all__ = ["GENERATION_TIMEOUT_S", "InductorCode", "MAX_SIGNATURES", "TUNING", "generate", "groups"]
