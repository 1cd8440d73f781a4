"""`BuiltinAgent`: the offline agent. It proposes generated candidates chosen by a measured search.

Bound to one strategy, it searches that strategy's move families (`moves.families_for`). Every
proposal's claim starts with its point, `[family K=V ...]`, and so does every reflection, so the
findings the campaign makes from them can be read back by any built-in agent: recalled traps are
never proposed again, recalled wins on this kernel type are tried first, and on a restart the
leader's point (read from the first line of its source) is tried early. On a plateau (`must_draft`)
it switches to another family of its strategy, else borrows one from another strategy, preferring
another language. The analysis and rendering are CPU work and run in a thread. Must not import
campaign or the store. Budget: about 200 lines.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves import all_families, families_for
from kernelarc.agents.builtin.moves.base import Move, MoveFamily, TaskAnalysis
from kernelarc.agents.builtin.moves.facts import Patterns
from kernelarc.agents.builtin.notation import CLAIM_CAP, parse_points, point_key, point_text
from kernelarc.agents.builtin.search import Search, why_not
from kernelarc.agents.protocol import AgentContext, Proposal, clip_reflection
from kernelarc.guard.types import Evaluation, Verdict
from kernelarc.memory.findings import FindingKind
from kernelarc.strategies.model import Strategy
from kernelarc.task.model import Task

SOURCE_MARK = "kernelarc builtin move"
"""First-line comment of every proposed source, followed by its point (comments do not change its hash)."""
MAX_RENDER_FAILURES = 8
"""Points whose source cannot be written (recorded as rejects) skipped in one proposal before giving up."""


class BuiltinAgent:
    """A strategy-bound generator of candidates from the built-in move families."""

    @staticmethod
    def strategies_with_work(task: Task, device: str | None = None) -> frozenset[str]:
        """Strategies with a built-in family that applies to `task`. The campaign hands these out
        first: on the 4096³ bf16 GEMM the catalogue's order gave 4 agents library, fusion (nothing to
        fuse), tensor cores and scheduling, so the Hopper kernels of `arch` ran only when borrowed."""
        analysis = shared_analysis(task, device)
        kind = None if device is None else device.split(":")[0]
        return frozenset(f.strategy for f in all_families() if why_not(f, analysis, kind) is None)

    def __init__(self, agent_id: str, strategy: Strategy, task: Task, seed: int = 0, device: str | None = None) -> None:
        self.name = agent_id
        self.strategy = strategy
        self.task = task
        self.seed = seed
        self.device_name = device
        """The campaign's device (`cpu`, `cuda:0`), for families that generate code for the card."""
        self.device = None if device is None else device.split(":")[0]
        """Its kind (`cpu`, `cuda`); on the CPU GPU-only families are not proposed."""
        self.analysis: TaskAnalysis | None = None
        self.search: Search | None = None
        self.render_failures: dict[str, str] = {}
        """Point text -> why its source could not be written."""
        self._incumbent_family: str | None = None
        self._reported_skips = False

    async def propose(self, ctx: AgentContext) -> Proposal | None:
        """The next candidate from the search, or None when every family is exhausted."""
        return await asyncio.to_thread(self._propose, ctx)

    async def reflect(self, ctx: AgentContext, proposal: Proposal, evaluation: Evaluation) -> str:
        """The point, the task and its shapes, the verdict with its numbers or the guard's reason."""
        return self._reflect(ctx, proposal, evaluation)

    # --- proposing -------------------------------------------------------------------------------

    def _start(self) -> Search:
        if self.search is None:
            self.analysis = shared_analysis(self.task, self.device_name)
            name = self.strategy.builtin_moves or self.strategy.name
            self.search = Search(self.analysis, families_for(name), seed=self.seed, device=self.device)
        return self.search

    def _propose(self, ctx: AgentContext) -> Proposal | None:
        search = self._start()
        self._learn(ctx, search)
        incumbent = self._family_of(ctx.incumbent_source) or self._incumbent_family
        exclude = {incumbent} if ctx.must_draft and incumbent else set()
        for _ in range(MAX_RENDER_FAILURES):
            choice = search.next(exclude) or (self._borrow(search, incumbent, ctx.peer_strategies)
                                              and search.next(exclude))
            if not choice:
                return None
            family, params = choice
            try:
                move = family.render(self.analysis, params)
            except ValueError as e:  # a point whose source cannot be written: skipped, remembered
                self.render_failures[point_text(family.name, params)] = str(e)
                search.record(family.name, params, None)
                continue
            return self._proposal(ctx, family, move)
        return None

    def _proposal(self, ctx: AgentContext, family: MoveFamily, move: Move) -> Proposal:
        """The move as a proposal whose first line and claim name its point."""
        point = point_text(family.name, move.params)
        leader = next((e for e in ctx.leaderboard if self._family_of(e.source) == family.name), None)
        incumbent = self._family_of(ctx.incumbent_source) or self._incumbent_family
        claim = move.claim if move.claim.startswith(point) else f"{point} {move.claim}"
        return Proposal(source=f"# {SOURCE_MARK} {point}\n{move.source}", language=family.language,
                        claim=claim if len(claim) <= CLAIM_CAP else claim[: CLAIM_CAP - 3] + "...",
                        is_draft=ctx.must_draft or (incumbent is not None and family.name != incumbent),
                        parent_id=leader.candidate_id if leader is not None and ctx.incumbent_id is None else None)

    def _learn(self, ctx: AgentContext, search: Search) -> None:
        """Recalled traps are avoided and wins preferred; before its first try, the leaders' points too."""
        wins = {(f, point_text(f, p)) for finding in ctx.findings if finding.kind is FindingKind.WIN
                for f, p in parse_points(finding.reflection)}
        won, lost = Counter(f for f, _ in wins), Counter(
            f for finding in ctx.findings if finding.kind is FindingKind.TRAP
            for f, _ in parse_points(finding.reflection)[:1])
        search.note_yield(won, lost)
        if ctx.incumbent_profile is not None:
            search.note_profile(host_bound=ctx.incumbent_profile.host_bound)
        for finding in ctx.findings:
            for family, params in parse_points(finding.reflection):
                if finding.kind is FindingKind.WIN:
                    search.prefer(family, params)
                elif (family, point_text(family, params)) not in wins:
                    search.avoid(family, params)
        for note in ctx.last_verdicts:  # includes proposals the campaign found already judged (duplicates)
            for family, params in parse_points(note.claim):
                state = search.states.get(family)
                if state is not None and point_key(family, params) not in state.tried:
                    search.record(family, params, None if note.verdict is Verdict.REJECT
                                  else ctx.incumbent_speedup * (note.speedup or 1.0))
        if not any(s.tried for s in search.states.values()):
            for entry in ctx.leaderboard:
                for family, params in parse_points(_docstring_head(entry.source)):
                    search.prefer(family, params)

    def _borrow(self, search: Search, incumbent: str | None, peers: tuple[str, ...] = ()) -> bool:
        """Add an applicable family of another strategy: first one no other active agent holds (their
        moves would come back as duplicates), then another language than the incumbent's."""
        language = next((s.family.language for n, s in search.states.items() if n == incumbent), None)
        others = [f for f in all_families() if f.name not in search.states and f.name not in search.skipped]
        random.Random(self.seed).shuffle(others)  # agents borrow in different orders: fewer duplicates
        others.sort(key=lambda f: (f.strategy in peers, f.language == language))
        return any(search.add_family(f) and search.open_points(search.states[f.name]) for f in others)

    @staticmethod
    def _family_of(source: str | None) -> str | None:
        points = parse_points(_docstring_head(source)) if source else []
        return points[0][0] if points else None

    # --- reflecting ------------------------------------------------------------------------------

    def _reflect(self, ctx: AgentContext, proposal: Proposal, evaluation: Evaluation) -> str:
        points = parse_points(proposal.claim)
        family, params = points[0] if points else ("unknown", {})
        absolute = ctx.incumbent_speedup * evaluation.speedup if evaluation.speedup else None
        if self.search is not None:
            self.search.record(family, params, absolute if evaluation.verdict is not Verdict.REJECT else None)
        if evaluation.verdict is Verdict.KEEP:
            self._incumbent_family = family
        where = f"on {self.task.name} ({self.task.kernel_type}{_shape_note(self.analysis)})"
        if evaluation.verdict is Verdict.REJECT:
            outcome = f"REJECT, {evaluation.status.value}: {evaluation.reason}"
        else:
            outcome = (f"{evaluation.verdict.value}: {evaluation.speedup:.3g}x vs the incumbent"
                       f"{f', {absolute:.3g}x vs the reference' if absolute else ''}"
                       f" ({evaluation.latency_ms:.4g} ms on {evaluation.device}); {evaluation.reason}")
        note = ""
        if not self._reported_skips and self.search is not None:  # once: which of its families could not apply
            self._reported_skips = True
            own = {f.name for f in families_for(self.strategy.builtin_moves or self.strategy.name)}
            skipped = sorted((n, r) for n, r in self.search.skipped.items() if n in own)
            note = ("; not applicable here: " + "; ".join(f"{n}: {r}" for n, r in skipped)) if skipped else ""
        return clip_reflection(f"{point_text(family, params)} {where}: {outcome}{note}")


_ANALYSIS_LOCK = threading.Lock()
_ANALYSES: dict[tuple[str, str], TaskAnalysis] = {}


def shared_analysis(task: Task, device: str | None = None) -> TaskAnalysis:
    """One analysis per task for all agents of a process, computed under a lock, told `device`.

    Agents propose from threads at the same time, and graph capture (make_fx) keeps global tracing
    state: two captures at once corrupt each other (seen: patterns missing at random).
    """
    from kernelarc.agents.builtin.analysis import analyze  # torch is imported only when an agent works

    key = (str(task.path), task.reference_source)
    with _ANALYSIS_LOCK:
        if key not in _ANALYSES:
            _ANALYSES[key] = analyze(task)
        analysis = _ANALYSES[key]
    return analysis if device is None else dataclasses.replace(analysis, device=device)


def _docstring_head(source: str | None) -> str:
    """The first line of a source, where proposed candidates name their point."""
    first = (source or "").split("\n", 1)[0]
    return first if first.startswith(f"# {SOURCE_MARK}") else ""


def _shape_note(analysis: TaskAnalysis | None) -> str:
    if analysis is None:
        return ""
    gemm = Patterns.of(analysis).gemm
    if gemm:
        return f", GEMM {gemm.M}x{gemm.N}x{gemm.K} {gemm.dtype}"
    shapes = [analysis.values[n][0] for n in analysis.input_names if analysis.values.get(n, (None,))[0]]
    return f", inputs {' '.join('x'.join(map(str, s)) for s in shapes)}" if shapes else ""


@dataclass(frozen=True)
class BuiltinFactory:
    """Makes the campaign's BuiltinAgents, all told the campaign's device kind."""

    device: str | None = None
    """The campaign's device (`cpu`, `cuda:0`)."""

    def __call__(self, agent_id: str, strategy: Strategy, task: Task, seed: int = 0) -> BuiltinAgent:
        return BuiltinAgent(agent_id, strategy, task, seed, device=self.device)

    def strategies_with_work(self, task: Task) -> frozenset[str]:
        return BuiltinAgent.strategies_with_work(task, self.device)


def builtin_factory(device: str | None = None, **options: Any) -> BuiltinFactory:
    """The `builtin` backend: one BuiltinAgent per (agent id, strategy, task, seed); takes no options.
    The campaign passes its device (`cpu`, `cuda:0`): on the CPU, GPU-only families are left out."""
    if options:
        from kernelarc.agents.protocol import BackendError

        raise BackendError(f"the builtin backend takes no options, got {', '.join(sorted(options))}")
    return BuiltinFactory(None if device is None else str(device))


__all__ = ["BuiltinAgent", "BuiltinFactory", "MAX_RENDER_FAILURES", "SOURCE_MARK", "builtin_factory", "shared_analysis"]
