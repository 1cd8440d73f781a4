"""The contract between the campaign and any agent: what an agent sees, what it returns, how backends are found.

An agent only generates candidates. It reads an `AgentContext` (its task, strategy, incumbent, last
verdicts, recalled findings and the read-only leaderboard), returns a `Proposal`, and after the
guard's verdict writes a reflection that may become a finding. Everything here is data; the
campaign owns all state. Must not import campaign or the store. Budget: about 220 lines.
"""

from __future__ import annotations

import importlib
from typing import Callable, Protocol, runtime_checkable

from pydantic import Field, field_validator, model_validator

from kernelarc.errors import UserError
from kernelarc.guard.candidate import CPP_LANGUAGES, PYTHON_LANGUAGES, infer_language
from kernelarc.guard.scrub import scrub
from kernelarc.guard.types import Evaluation, KernelShare, Status, Verdict
from kernelarc.memory.findings import Finding
from kernelarc.memory.text import CLAIM_CAP, REFLECTION_CAP, check_cap, clip_text
from kernelarc.strategies.model import Strategy
from kernelarc.task.model import Frozen, Task

BUILTIN_BACKENDS = ("builtin", "openai", "anthropic", "cli", "replay", "scripted")
"""Backends shipped with kernelarc; backend `<name>` lives in `kernelarc.agents.<name>` and registers on import."""


class BackendError(UserError):
    """The agent backend asked for is unknown or cannot load (a missing optional package)."""


class AgentExhausted(Exception):
    """Raised from inside a backend when the agent has nothing more to propose (like returning None).

    The campaign retires the agent; for example a replayed agent whose recording has no later steps.
    """


class Proposal(Frozen):
    """One candidate an agent puts forward: the full source and what it claims to change."""

    source: str
    """Complete candidate source (a `ModelNew` module or a SOL-ExecBench `run` module), never a diff."""
    language: str
    """pytorch, triton, cuda_cpp, ... (inferred from the source when not given)."""
    claim: str
    """What the change does and why it should be faster, at most 160 characters."""
    is_draft: bool = False
    """True when written from scratch (a draft) rather than as a change to the incumbent."""
    parent_id: int | None = None
    """Store id of the candidate this one changes (the incumbent or a leaderboard entry); None for the reference."""

    @model_validator(mode="before")
    @classmethod
    def _infer_language(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("language") is None and isinstance(data.get("source"), str):
            return {**data, "language": infer_language(data["source"])}
        return data

    @field_validator("source")
    @classmethod
    def _validate_source(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("proposal source is empty")
        return v

    @field_validator("language")
    @classmethod
    def _validate_language(cls, v: str) -> str:
        if v not in PYTHON_LANGUAGES | CPP_LANGUAGES:
            raise ValueError(f"unknown language {v!r}; known: {', '.join(sorted(PYTHON_LANGUAGES | CPP_LANGUAGES))}")
        return v

    @field_validator("claim")
    @classmethod
    def _validate_claim(cls, v: str) -> str:
        """Agent-written: shown on terminals, in reports and in other agents' prompts, so secrets and control
        characters are written out (guard/scrub.py; sixth red-team pass: a claim's escape sequences cleared the
        terminal of `optimize` at its `best:` line), on one line, within the cap."""
        if not v.strip():
            raise ValueError("a proposal needs a claim: what it changes and why")
        return clip_text(scrub(check_cap("claim", v, CLAIM_CAP)), CLAIM_CAP, one_line=True)


class VerdictNote(Frozen):
    """One of the agent's recent verdicts, as it is shown the agent next turn."""

    candidate_id: int
    """Store id of the candidate judged."""
    claim: str
    """The claim the agent made for it."""
    verdict: Verdict
    """KEEP, ACCEPT, REVERT or REJECT."""
    status: Status
    """How evaluation ended (PASSED or the failure)."""
    reason: str
    """The guard's one-line reason."""
    speedup: float | None = None
    """Incumbent time / candidate time; None for a REJECT."""

    @classmethod
    def from_evaluation(cls, candidate_id: int, claim: str, evaluation: Evaluation) -> "VerdictNote":
        """The note for a candidate the guard has judged."""
        return cls(candidate_id=candidate_id, claim=claim, verdict=evaluation.verdict, status=evaluation.status,
                   reason=evaluation.reason, speedup=evaluation.speedup)


class LeaderboardEntry(Frozen):
    """Another agent's best kernel, shown read-only so agents can borrow ideas, never state."""

    agent_id: str
    """The agent that holds it."""
    strategy: str
    """That agent's strategy name."""
    candidate_id: int
    """Store id of the kernel (what a proposal borrowing it names as `parent_id`)."""
    speedup: float = Field(gt=0)
    """Its speedup over the reference."""
    latency_ms: float = Field(gt=0)
    """Its latency (geometric mean over workloads)."""
    source: str
    """Its full source."""


HOST_BOUND_RATIO = 2.0
"""Wall time per call at least this many times the kernels' span: the host, not the GPU, is the cost."""


class IncumbentProfile(Frozen):
    """What the profiler saw of the incumbent on the card, on the task's first workload (issue 16)."""

    workload: str
    device_ms: float
    """Kernel span per call (CUPTI)."""
    wall_ms: float
    """Per call with host overhead (CUDA events)."""
    kernels: tuple[KernelShare, ...]
    """Its costliest kernels per call."""
    sol_ms: float | None = None
    """The workload's speed-of-light time on this card, when known."""

    @property
    def host_bound(self) -> bool:
        """Launches and host work, not kernels, make most of a call: fewer launches is the move."""
        return self.wall_ms >= HOST_BOUND_RATIO * self.device_ms

    @classmethod
    def of(cls, evaluation: Evaluation, as_incumbent: bool) -> "IncumbentProfile | None":
        """The profile of the evaluation's candidate (or, `as_incumbent`, of the side it was timed
        against), when its first workload was profiled on a GPU."""
        w = evaluation.workloads[0] if evaluation.workloads else None
        if w is None:
            return None
        device, wall, kernels = ((w.incumbent_device_ms, w.incumbent_wall_ms, w.incumbent_kernels) if as_incumbent
                                 else (w.device_ms, w.wall_ms, w.kernels))
        if not device or not wall or not kernels:
            return None
        return cls(workload=w.uuid, device_ms=device, wall_ms=wall, kernels=kernels, sol_ms=w.sol_ms)

    def lines(self) -> list[str]:
        """The profile as a person (or a model) reads it."""
        head = (f"workload `{self.workload}`: {self.device_ms:.4g} ms of kernels per call (first start to last end), "
                f"{self.wall_ms:.4g} ms per call with host overhead")
        if self.host_bound:
            head += " (host-bound: launches cost more than the kernels)"
        if self.sol_ms:
            head += f"; speed of light {self.sol_ms:.4g} ms ({self.sol_ms / self.device_ms:.0%} reached)"
        return [head] + [f"{k.share:.0%} {k.ms_per_call:.4g} ms in {k.launches_per_call:.3g} launch(es): {k.name}"
                         for k in self.kernels]


class AgentContext(Frozen):
    """Everything an agent is shown for one step; built fresh by the campaign each time."""

    task: Task
    """The task being optimized."""
    agent_id: str
    """This agent's id in the campaign."""
    strategy: Strategy
    """The strategy this agent is bound to."""
    incumbent_id: int | None = None
    """Store id of the agent's current best kernel; None while that is still the reference."""
    incumbent_source: str | None = None
    """Source of the agent's current best kernel; None while that is still the reference."""
    incumbent_speedup: float = Field(default=1.0, gt=0)
    """The incumbent's speedup over the reference (1.0 for the reference itself)."""
    incumbent_latency_ms: float | None = Field(default=None, gt=0)
    """The incumbent's latency; None until measured."""
    incumbent_profile: IncumbentProfile | None = None
    """What the profiler saw of the incumbent on the card; None on the CPU and before a GPU measurement."""
    last_verdicts: tuple[VerdictNote, ...] = ()
    """This agent's most recent verdicts, oldest first."""
    findings: tuple[Finding, ...] = ()
    """Findings recalled from memory for this task's kernel type, most relevant first."""
    leaderboard: tuple[LeaderboardEntry, ...] = ()
    """Other agents' best kernels, fastest first."""
    must_draft: bool = False
    """True when the agent plateaued: it must write a new kernel, not a variant of its incumbent."""
    draft_instruction: str = ""
    """What the campaign asks of the draft (shown to the agent when `must_draft`)."""
    peer_strategies: tuple[str, ...] = ()
    """Strategies the campaign's other active agents hold (an agent borrowing moves avoids theirs)."""
    step: int = Field(default=0, ge=0)
    """How many proposals this agent has made before this one."""
    rng_seed: int = 0
    """Seed for any randomness in the agent, so that runs repeat."""
    compiler_seed: str | None = None
    """torch.compile's own code for the task as a standalone candidate file (campaign/compiler_seed.py),
    for code-writing agents to start from; None off the GPU, before it is rendered, or if it cannot be."""

    @model_validator(mode="after")
    def _validate_incumbent(self) -> "AgentContext":
        if (self.incumbent_id is None) != (self.incumbent_source is None):
            raise ValueError(f"incumbent_id and incumbent_source are given together or not at all, "
                             f"got incumbent_id={self.incumbent_id} and "
                             f"{'a' if self.incumbent_source is not None else 'no'} source")
        return self


@runtime_checkable
class Agent(Protocol):
    """A generator of candidates. Async because LLM calls are I/O; CPU-bound agents run work in a thread."""

    name: str
    """Label for logs and reports."""

    async def propose(self, ctx: AgentContext) -> Proposal | None:
        """The next candidate, or None when the agent has nothing more to try."""
        ...

    async def reflect(self, ctx: AgentContext, proposal: Proposal, evaluation: Evaluation) -> str:
        """What the verdict teaches (at most 1,200 characters; longer text is clipped by `clip_reflection`)."""
        ...


AgentFactory = Callable[[str, Strategy, Task, int], Agent]
"""Builds one agent from (agent id, strategy, task, seed). A factory may also have
`strategies_with_work(task) -> frozenset[str]`, the strategies it has something to propose for on
`task`; the campaign then gives those to its first agents (the built-in backend has it)."""
FactoryMaker = Callable[..., AgentFactory]
"""Called with a backend's options (for example `model=`) once per campaign; returns its AgentFactory."""

_BACKENDS: dict[str, FactoryMaker] = {}


def clip_reflection(text: str) -> str:
    """An agent's reflection fitted under the 1,200-character cap."""
    return clip_text(text, REFLECTION_CAP)


def register_backend(name: str, factory_maker: FactoryMaker) -> None:
    """Make backend `name` available to `get_backend`; a backend module calls this on import."""
    _BACKENDS[name] = factory_maker


def known_backends() -> tuple[str, ...]:
    """Every backend name `get_backend` may resolve, sorted."""
    return tuple(sorted(set(BUILTIN_BACKENDS) | set(_BACKENDS)))


def get_backend(name: str) -> FactoryMaker:
    """The factory maker of backend `name`, importing its module on first use.

    Raises:
        BackendError: the name is unknown, or its module or an optional package it needs is missing.
    """
    if name not in _BACKENDS and name in BUILTIN_BACKENDS:
        module = f"kernelarc.agents.{name}"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            why = (f"is not available in this install ({module} is missing)" if e.name == module else
                   f"needs the package {e.name!r}, which is not installed (LLM backends: pip install 'kernelarc[llm]')")
            raise BackendError(f"agent backend {name!r} {why}") from None
    try:
        return _BACKENDS[name]
    except KeyError:
        raise BackendError(f"unknown agent backend {name!r}; known: {', '.join(known_backends())}") from None


__all__ = [
    "Agent", "AgentContext", "AgentExhausted", "AgentFactory", "BackendError", "BUILTIN_BACKENDS", "FactoryMaker",
    "HOST_BOUND_RATIO", "IncumbentProfile", "LeaderboardEntry",
    "Proposal", "VerdictNote", "clip_reflection", "get_backend", "known_backends", "register_backend",
]
