"""Scheduling moves: run the reference's own computation with less launch overhead.

- `cuda_graph`: for launch-bound shapes, the whole forward captured once per input signature into a
  CUDA graph and replayed: inputs are copied into the graph's static buffers, the graph replays,
  and the outputs are returned as fresh clones. Cloning costs one small copy per output, but the
  static outputs are overwritten by the next replay, and a caller (the guard included) may still
  hold the previous ones. Off the GPU the forward runs eagerly.
- `torch_compile`: the forward through `torch.compile` in one of its modes (on the GPU only; off it
  eagerly, since the CPU backend needs a C++ toolchain and a CPU timing says nothing of the GPU).
  `reduce-overhead` uses CUDA graphs too, so its outputs are cloned for the same reason.
The computation is the reference's forward (or `run`), transplanted, not imported. Budget: about 150 lines.
"""

from __future__ import annotations

from typing import Any

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.notation import claim_text, point_text
from kernelarc.agents.builtin.pytorch_source import ON_GPU, wrapped_module

_CLONE = '''def _clone(out):
    """Fresh copies of a call's outputs, so that later calls cannot overwrite them."""
    if isinstance(out, torch.Tensor):
        return out.clone()
    return type(out)(_clone(o) for o in out) if isinstance(out, (tuple, list)) else out


''' + ON_GPU

_GRAPHED = '''class _CudaGraphCall:
    """Calls `fn` by replaying one captured CUDA graph per input signature; plain calls off the GPU."""

    def __init__(self, fn):
        self.fn = fn
        self.graphs = {{}}

    def __call__(self, *args):
        if not _on_gpu(args):
            return self.fn(*args)
        key = tuple((tuple(a.shape), a.dtype, a.stride(), a.device) if isinstance(a, torch.Tensor) else a
                    for a in args)
        if key not in self.graphs:
            self.graphs[key] = self._capture(args)
        graph, static_args, static_out = self.graphs[key]
        for dst, src in zip(static_args, args):
            if isinstance(dst, torch.Tensor):
                dst.copy_(src)
        graph.replay()
        return _clone(static_out)

    def _capture(self, args):
        static_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range({warmup}):
                self.fn(*static_args)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = self.fn(*static_args)
        return graph, static_args, static_out
'''

_COMPILED = '''class _CompiledCall:
    """Calls `fn` compiled by torch.compile(mode="{mode}") on the GPU; plain calls off it."""

    def __init__(self, fn):
        self.fn = fn
        self.compiled = None

    def __call__(self, *args):
        if not _on_gpu(args):
            return self.fn(*args)
        if self.compiled is None:
            self.compiled = torch.compile(self.fn, mode="{mode}", dynamic=False)
        return {result}
'''

COMPILE_MODES = ("max-autotune-no-cudagraphs", "reduce-overhead", "max-autotune", "default")
"""Tried in this order on a launch-bound task, `reduce-overhead` first; the modes that capture CUDA graphs
have their outputs cloned. `default` comes last: a campaign already judges it as its torch.compile baseline."""
_CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
GRAPHS_LAST = ("max-autotune-no-cudagraphs", "max-autotune", "reduce-overhead", "default")
"""The order on a task that is not launch-bound. A graph's replay copies every input into its static
buffers: on big inputs that copy costs what the op costs, and nothing launch-bound is left to save
(`reduce-overhead` read 0.48-0.55x on an 8192 x 8192 softmax in three campaigns and
0.81x on a Conv2d chain, each evaluation 10-17 s of compiling on the H200, docs/benchmarks.md session 14).
`default` still comes after them: it is the campaign's torch.compile baseline again (on the H100 an agent's
`default` candidate re-judged it for 2.2-2.9 s of first call under the lock, session 40), so it is worth a
place only where the baseline was left out (`--no-compile-baseline`)."""


def _wrapped(analysis: TaskAnalysis, family: str, params: dict[str, Any], wrapper: str, helpers: str,
             what: str) -> Move:
    source = wrapped_module(analysis, wrapper=wrapper, helpers=helpers, strategy="scheduling",
                            doc_head=f"{what} {point_text(family, params)}.")
    return Move(family=family, params=params, source=source, claim=claim_text(family, params, what))


def _transplant_reason(analysis: TaskAnalysis) -> str | None:
    return None if analysis.eager_source else "the reference's forward could not be read for transplanting"


class CudaGraph:
    """The whole forward replayed from a CUDA graph."""

    name = "cuda_graph"
    strategy = "scheduling"
    language = "pytorch"
    gpu_only = True
    """Off the GPU its candidate is the reference called plainly: nothing to measure."""

    def applies(self, analysis: TaskAnalysis) -> str | None:
        if not analysis.launch_bound:
            return (f"not launch-bound: {analysis.total_elements} input and output elements "
                    "(CUDA graphs pay off below about a million)")
        return _transplant_reason(analysis)

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        return [{"warmup": 3}, {"warmup": 1}]

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        helpers = _CLONE + "\n\n" + _GRAPHED.format(warmup=int(params["warmup"]))
        return _wrapped(analysis, self.name, params, "_CudaGraphCall", helpers,
                        "whole forward captured in one CUDA graph and replayed: one launch instead of many")


class TorchCompile:
    """The forward through torch.compile."""

    name = "torch_compile"
    strategy = "scheduling"
    language = "pytorch"
    slow_to_judge = True
    """Inductor compiles for 10 s to minutes per candidate: the search tries cheaper families first.
    One static graph per shape (`dynamic=False`), as the SOL compile baseline; unlike that trusted baseline a
    candidate may not raise torch's recompile limit (the static gate refuses global settings), so past 8
    workloads the rest run eagerly, and the guard times them so."""

    def applies(self, analysis: TaskAnalysis) -> str | None:
        return _transplant_reason(analysis)

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        if not analysis.launch_bound:
            return [{"mode": m} for m in GRAPHS_LAST]
        modes = list(COMPILE_MODES)
        modes.remove("reduce-overhead")
        modes.insert(0, "reduce-overhead")
        return [{"mode": m} for m in modes]

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        mode = params["mode"]
        result = "_clone(self.compiled(*args))" if mode in _CUDAGRAPH_MODES else "self.compiled(*args)"
        helpers = _CLONE + "\n\n" + _COMPILED.format(mode=mode, result=result)
        return _wrapped(analysis, self.name, params, "_CompiledCall", helpers,
                        f"forward compiled by torch.compile mode={mode}: fused kernels, fewer launches")


for _family in (CudaGraph(), TorchCompile()):
    register_family(_family)

__all__ = ["COMPILE_MODES", "CudaGraph", "GRAPHS_LAST", "TorchCompile"]
