"""The contract between the built-in search agents and the code generators ("moves").

A `MoveFamily` knows one way to write a candidate (a Triton GEMM template, a cuBLASLt epilogue, a
CUDA-graph wrapper, ...). Given the `TaskAnalysis` of a task it says whether it applies (and if not,
why: the reason is recorded, the move is not attempted blindly), which parameters it has, and how
to render a full candidate source for one parameter point. Generated sources never import
kernelarc: the exported winner must run anywhere with torch (and triton).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from kernelarc.task.model import Task


@dataclass(frozen=True)
class OpNode:
    """One op of the reference's captured graph, in execution order."""

    target: str
    """Normalized op name, e.g. `aten.mm`, `aten.addmm`, `aten.gelu`, `aten._softmax`, `aten.add.Tensor`."""
    args: tuple[Any, ...]
    """Arguments: names of earlier nodes/inputs (str) or literals."""
    kwargs: dict[str, Any]
    shape: tuple[int, ...] | None
    """Output shape on the task's (first) workload, when known."""
    dtype: str | None
    name: str
    """This node's name, referenced by later nodes' args."""
    pointwise: bool = False
    """The aten op carries the `pointwise` tag (elementwise maths; fusable into an epilogue)."""


@dataclass(frozen=True)
class TaskAnalysis:
    """What the built-in agents know about a task before proposing anything."""

    task: Task
    kernel_type: str
    """From kernelarc.task.classify."""
    nodes: tuple[OpNode, ...]
    """The reference's forward as a flat aten-level graph (empty if capture failed)."""
    input_names: tuple[str, ...]
    """Graph placeholders for the forward's positional inputs, in order."""
    param_names: tuple[str, ...]
    """KernelBench: the module's parameters/buffers as `self.<path>` accessors, in creation order."""
    output_names: tuple[str, ...]
    """Graph nodes returned, in order."""
    init_source: str | None
    """KernelBench: the reference `Model.__init__` body transplanted into `ModelNew` (same layers, same
    creation order, so weights match under the guard's seed); None for SOL-ExecBench tasks."""
    forward_signature: str
    """The forward's (KernelBench) or run's (SOL) parameter list as source, e.g. `self, x, y`."""
    capture_error: str | None = None
    """Why graph capture failed, when it did."""
    facts: dict[str, Any] = field(default_factory=dict)
    """Pattern facts found by the analysis, e.g. {"gemm": {"M":..,"N":..,"K":..,"epilogue":[...]}};
    the keys and their fields are listed in agents/builtin/patterns.py. Families read them typed:
    `moves/facts.py` (`Patterns.of(analysis)`, the template facts) and the properties below."""
    init_signature: str = "self"
    """KernelBench: the reference `Model.__init__` parameter list as source, e.g. `self, in_features`."""
    eager_source: str | None = None
    """The reference's computation to transplant: KernelBench, `Model.forward` (dedented to class level)
    renamed `_eager_forward`; SOL, the whole reference module with `run` renamed `_eager_forward`. None
    if it could not be read."""
    helper_source: str = ""
    """KernelBench: the `Model` class attributes and methods other than `__init__` and `forward`
    (dedented to class level), which every ModelNew carries: its transplanted `__init__` may use them
    (ResNet's `_make_layer`, a block's `expansion = 1`)."""
    support_source: str = ""
    """KernelBench: the reference module's top-level code other than `Model`, `get_inputs` and
    `get_init_inputs` (imports, constants, helper classes the transplanted code may use)."""
    returns_tuple: bool = False
    """The forward returns several outputs (a tuple), not one tensor."""
    values: dict[str, tuple[tuple[int, ...] | None, str | None]] = field(default_factory=dict)
    """(shape, dtype) of each graph input and parameter, by the name nodes use for it."""
    lowered: TaskAnalysis | None = None
    """The same forward traced through ATen's decompositions (norms and softmax as reductions and
    pointwise maths), with its own nodes, outputs and values; None where that trace fails."""
    device: str | None = None
    """The campaign's device (`cpu`, `cuda:0`) when an agent works for one; None for an analysis alone.
    Families that generate code for a card (Inductor's) need it; the rest read shapes only."""

    @property
    def launch_bound(self) -> bool:
        """The analysis estimates launches, not bytes or FLOPs, bound the forward on a GPU (`facts`)."""
        return bool(self.facts.get("launch_bound"))

    @property
    def total_elements(self) -> int:
        """Input plus output elements of the first workload."""
        return int(self.facts.get("total_elements") or 0)

    @property
    def emit_blocker(self) -> str | None:
        """Why the graph cannot be written back as code, or None when it can."""
        return self.facts.get("emit_blocker")

    @property
    def mode_dependent(self) -> bool:
        """A KernelBench module that computes otherwise in eval mode (BatchNorm, Dropout)."""
        return bool(self.facts.get("mode_dependent"))

    def typed_refs(self) -> dict[str, tuple[tuple[int, ...] | None, str | None]]:
        """(shape, dtype) of everything a node can name: graph nodes, inputs and parameters."""
        return {n.name: (n.shape, n.dtype) for n in self.nodes} | self.values


@dataclass(frozen=True)
class Move:
    """One concrete candidate: which family, which parameter point, the source, a short claim."""

    family: str
    params: dict[str, Any]
    source: str
    claim: str
    """At most 160 characters: what this candidate changes and why it should be faster."""


class MoveFamily(Protocol):
    """A generator of candidates for one strategy."""

    name: str
    """Unique id, e.g. `triton_gemm_epilogue`."""
    strategy: str
    """The catalogue strategy it serves: library, memory, tensor_cores, fusion, precision, reduction, scheduling, arch."""
    language: str
    """pytorch, triton or cuda_cpp: a change of family language counts as a draft."""
    # Optional: `slow_to_judge = True` on a family whose candidates take far longer than others to
    # build (torch.compile); the search then gives the other families their first try before it.
    # Optional: `one_launch = True` on a family whose candidate is the whole forward as one kernel launch;
    # on a launch-bound task the search gives it its first try before every other family.
    # Optional: `gpu_only = True` on a family whose candidate means nothing off the GPU (CUDA graphs,
    # TMA, CUTLASS): a campaign on the CPU does not propose it.
    # Optional: `removes_work = True` on a family whose candidate computes less than the reference (algebraic
    # identities): where it applies, the search gives it the first try, before every other family.
    # Optional: `first_try = True` on a family whose first point is the best known start (torch.compile's
    # own code): after one-launch families on a launch-bound task, it is tried before the others.

    def applies(self, analysis: TaskAnalysis) -> str | None:
        """None if this family can produce candidates for the task; else one line saying why not."""
        ...

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        """Parameter points to search, most promising first (the default point first)."""
        ...

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        """A full candidate source for one parameter point."""
        ...
