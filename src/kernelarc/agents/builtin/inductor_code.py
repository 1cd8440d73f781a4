"""torch.compile's own code for a task: Inductor's output for the reference, one module per input signature.

Issue 16 item 3: the search starts where the compiler stands. This asks Inductor (torch.compile's
backend) for the code it would run for the reference, without compiling or running any of it
(`torch._inductor.utils.get_code`), so a move family can hand it to the guard as standalone source.

It runs in a child process (`python -m kernelarc.agents.builtin.inductor_code`) on the campaign's
device: Inductor writes GPU code only where it can query the card (its Triton target, SM count),
and the agents' process must not create a CUDA context on a card whose timings the guard's sides
own. The child sees only that card (`CUDA_VISIBLE_DEVICES`) and traces on fake tensors: nothing
the size of a workload is allocated, no kernel is launched. The reference is the user's own code,
loaded as the analysis loads it. The parent (`generate`) imports no torch.

Each distinct input signature (shapes, dtypes, scalar values) gets its own code, as torch.compile
specializes on first sight; parameters and buffers are traced as leading inputs, in the order
`named_parameters()` then `named_buffers()` gives them, so a generated module passes them itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any

from kernelarc.task.model import Task, TaskFormat

GENERATION_TIMEOUT_S = 300.0
"""One generation (import torch, trace and lower every signature); Inductor takes 5-30 s per graph."""
MAX_SIGNATURES = 8
"""Distinct input signatures generated at most; a task with more is left to torch.compile itself."""
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
    """(input signature as a Python literal, Inductor's output module) per distinct workload signature."""
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
                              text=True, timeout=GENERATION_TIMEOUT_S, env=env)
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

def _child(request: dict[str, Any]) -> dict[str, Any]:
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import get_code

    task = Task.model_validate(request["task"])
    device = torch.device(request["device"])
    signatures: dict[str, tuple[Any, list, int, bool]] = {}
    for workload in task.workloads:
        traced = _trace(task, workload, device)
        signatures.setdefault(traced[0], traced[1:])
        if len(signatures) > MAX_SIGNATURES:
            return {"error": f"the workloads have more than {MAX_SIGNATURES} input signatures"}
    settings = {"compile_threads": 1, "fx_graph_cache": False, **TUNING[request["tuning"]]}
    specializations = []
    for signature, (graph, args, _, _) in signatures.items():
        with inductor_config.patch(settings):
            codes = get_code(lambda: compile_fx(graph, args))
        if not codes:
            return {"error": "Inductor generated no code (the graph may have no op to compile)"}
        specializations.append((signature, codes[0]))
    _, _, inputs, (outputs, returns_tuple) = next(iter(signatures.values()))
    return {"specializations": specializations, "inputs": inputs, "outputs": outputs, "returns_tuple": returns_tuple}


def _trace(task: Task, workload, device) -> tuple[str, Any, list, int, tuple[int, bool]]:
    """(signature literal, graph, fake graph inputs, positional inputs, (outputs, returns a tuple)) of one
    workload: the forward traced with make_fx on fake tensors of `device`."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.func import functional_call

    from kernelarc.task.dtypes import torch_dtype
    from kernelarc.task.execute import load_module
    from kernelarc.task.sol import REFERENCE_ENTRY

    module = load_module(task.reference_source, f"{task.path}::inductor", task.name)
    with torch.device("meta"):
        if task.format is TaskFormat.KERNELBENCH:
            model = module.Model(*module.get_init_inputs())
            inputs = list(module.get_inputs())
            state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
        else:
            model, state = None, {}
            inputs = [spec.value if spec.is_scalar else torch.empty(spec.shape, dtype=torch_dtype(spec.dtype))
                      for spec in workload.inputs]
    with FakeTensorMode(allow_non_fake_inputs=False) as mode:
        def fake(value: Any) -> Any:
            if not isinstance(value, torch.Tensor):
                return value
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=device)
        params, inputs = [fake(t) for t in state.values()], [fake(v) for v in inputs]
    del mode
    tensor_positions = [i for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)]
    names = list(state)
    returned: dict[str, bool] = {}

    def forward(*flat: torch.Tensor) -> tuple[torch.Tensor, ...]:
        args = list(inputs)
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

    graph_inputs = params + [inputs[i] for i in tensor_positions]
    with torch.no_grad():
        graph = make_fx(forward, tracing_mode="fake")(*graph_inputs)
    outputs = len(next(n for n in graph.graph.nodes if n.op == "output").args[0])
    signature = tuple((tuple(int(d) for d in v.shape), str(v.dtype)) if isinstance(v, torch.Tensor) else v
                      for v in inputs)
    return repr(signature), graph, graph_inputs, len(inputs), (outputs, returned["tuple"])


def main() -> None:
    """Read one request on stdin, print one JSON reply line; a failure is a reply, never a traceback."""
    try:
        reply = _child(json.loads(sys.stdin.read()))
    except Exception as e:  # noqa: BLE001 - the user's reference or Inductor failing is an answer here
        reply = {"error": f"Inductor could not generate the code: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
    print(json.dumps(reply))


if __name__ == "__main__":
    main()


__all__ = ["GENERATION_TIMEOUT_S", "InductorCode", "MAX_SIGNATURES", "TUNING", "generate"]
