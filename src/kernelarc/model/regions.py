"""Which parts of a model are regions, and how long each takes: the profile of `kernelarc model`.

A region is a call of a submodule whose own submodules are all leaves, under a parent that has
deeper submodules: in a decoder, each block's RMSNorm, attention and MLP (and a top-level lm_head),
not the Linear layers inside them nor the whole block (docs/design.md says why). Regions never nest.
Each region call is timed with torch.profiler (a `record_function` scope opened and closed by module
hooks): device time of the kernels it launched on CUDA, host time on the CPU. Budget: about 130 lines.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import torch
from torch.autograd.profiler import record_function

MODEL_SCOPE = "kernelarc.model"
REGION_SCOPE = "kernelarc.region:"
CONTAINERS = (torch.nn.ModuleList, torch.nn.ModuleDict, torch.nn.Sequential)


def region_paths(model: torch.nn.Module) -> list[str]:
    """The submodules that are regions, in definition order (see the module docstring)."""
    def depth(module: torch.nn.Module) -> int:
        children = [c for c in module.children()]
        return 1 + max((depth(c) for c in children), default=0)

    out = []

    def walk(prefix: str, module: torch.nn.Module) -> None:
        for name, child in module.named_children():
            path = f"{prefix}{name}"
            if depth(child) <= 2 and not isinstance(child, CONTAINERS):
                out.append(path)
            else:
                walk(path + ".", child)

    walk("", model)
    return out


@dataclass
class RegionCall:
    """One call of a region module, as the model made it (its arguments kept for the capture)."""

    path: str
    kind: str
    """The module's class name."""
    args: tuple
    kwargs: dict


@dataclass
class Profile:
    """Per-forward times of the model and of each region path (sum of its calls), and the calls."""

    model_ms: float
    region_ms: dict[str, float]
    calls: list[RegionCall] = field(default_factory=list)
    method: str = ""
    """How the times were measured (device and clock), for the report."""


class _Hooks:
    """Forward hooks on the region modules: a profiler scope around each call, and (while
    `recording`) each call's arguments."""

    def __init__(self, model: torch.nn.Module, paths: list[str]):
        self.scopes: dict[str, list] = defaultdict(list)
        self.calls: list[RegionCall] = []
        self.recording = False
        self.handles = []
        for path in paths:
            module = model.get_submodule(path)
            self.handles.append(module.register_forward_pre_hook(self._pre(path), with_kwargs=True))
            self.handles.append(module.register_forward_hook(self._post(path), always_call=True))

    def _pre(self, path: str):
        def hook(module, args, kwargs):
            if self.recording:
                self.calls.append(RegionCall(path, type(module).__name__, args, dict(kwargs)))
            scope = record_function(REGION_SCOPE + path)
            scope.__enter__()
            self.scopes[path].append(scope)
        return hook

    def _post(self, path: str):
        def hook(module, args, output):
            self.scopes[path].pop().__exit__(None, None, None)
        return hook

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def profile(model: torch.nn.Module, inputs: list, paths: list[str], repeats: int = 3) -> Profile:
    """Run the model once to record the region calls (and warm up), then `repeats` times under
    torch.profiler; times are means per forward."""
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), torch.device("cpu"))
    cuda = device.type == "cuda"
    hooks = _Hooks(model, paths)
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    try:
        with torch.no_grad():
            hooks.recording = True
            model(*inputs)
            hooks.recording = False
            if cuda:
                torch.cuda.synchronize(device)
            with torch.profiler.profile(activities=activities) as prof:
                for _ in range(repeats):
                    with record_function(MODEL_SCOPE):
                        model(*inputs)
                if cuda:
                    torch.cuda.synchronize(device)
    finally:
        hooks.remove()
    totals: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if event.name == MODEL_SCOPE or event.name.startswith(REGION_SCOPE):
            if event.device_type == torch.autograd.DeviceType.CPU:
                totals[event.name] += _event_us(event, cuda)
    if cuda and totals[MODEL_SCOPE] == 0.0:  # no kernel was attributed: say so rather than report zeros
        raise RuntimeError("torch.profiler attributed no CUDA kernel time to the model's forward")
    method = (f"{'CUDA kernel time per scope (torch.profiler, CUPTI)' if cuda else 'host time per scope (torch.profiler)'}"
              f", mean of {repeats} forwards after one warm-up, on {device}")
    return Profile(model_ms=totals[MODEL_SCOPE] / repeats / 1e3,
                   region_ms={p: totals[REGION_SCOPE + p] / repeats / 1e3 for p in paths},
                   calls=hooks.calls, method=method)


def _event_us(event, cuda: bool) -> float:
    """Microseconds of a scope: the device time of every kernel launched inside it, or its host time."""
    if cuda:
        return getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0.0)
    return event.cpu_time_total


__all__ = ["MODEL_SCOPE", "Profile", "RegionCall", "profile", "region_paths"]
