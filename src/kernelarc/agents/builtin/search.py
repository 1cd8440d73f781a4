"""One agent's search over its move families, guided by what the guard measured.

First every applicable family's starting point (a point recalled as a win on this kernel type, or
the family's default), then a UCB bandit picks a family by the log-speedups it earned, and inside it
coordinate descent moves one parameter at a time away from the family's best measured point. Points
the shared memory records as traps, and points a family says need more shared memory than one H200
block has, are never proposed. Ties are broken by a `random.Random(seed)`, so a search repeats
exactly given its seed and measurements. Imports without torch. Budget: about 200 lines.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Iterable

from kernelarc.agents.builtin.moves.base import MoveFamily, TaskAnalysis
from kernelarc.agents.builtin.moves.triton_common import SMEM_PER_BLOCK_BYTES
from kernelarc.agents.builtin.notation import point_key

UCB_EXPLORATION = 0.5
"""Weight of the exploration term; rewards are natural-log speedups, so 0.5 is about a 1.6x bonus."""
REJECT_REWARD = -1.0
"""Reward of a point the guard rejected (as bad as a 2.7x slowdown)."""


@dataclass
class FamilyState:
    """What the search knows about one family."""

    family: MoveFamily
    """The family."""
    points: list[dict[str, Any]]
    """Its parameter space, most promising first."""
    tried: dict[str, float] = field(default_factory=dict)
    """Point key -> reward (log speedup over the reference, or REJECT_REWARD)."""
    best: dict[str, Any] | None = None
    """The best measured point so far."""
    best_reward: float = -math.inf
    """Its reward."""

    def mean(self) -> float:
        return sum(self.tried.values()) / len(self.tried) if self.tried else 0.0



POOR_YIELD_TRAPS = 3
"""Recalled traps (with no win) after which a family is tried last on that kind of task."""


def why_not(family: MoveFamily, analysis: TaskAnalysis, device: str | None = None) -> str | None:
    """Why `family` does not apply to the task (on `device`, when given), or None when it does; its own
    bug is a reason too."""
    if device == "cpu" and getattr(family, "gpu_only", False):
        return "GPU-only: on the CPU its candidate would measure nothing of what it claims"
    try:
        return family.applies(analysis)
    except Exception as e:  # noqa: BLE001 - a family's own bug costs that family, not the agent
        return f"failed to decide whether it applies: {type(e).__name__}: {e}"

GPU_SCHEDULING_PARAMS = frozenset({"num_warps", "num_stages", "GROUP_M"})
"""Triton parameters that change how the GPU schedules a program, not how much work one program does."""


def program_size(params: dict[str, Any]) -> int:
    """The work one program of a Triton point does: the product of its integer sizes (blocks, tiles,
    rows per program), the GPU-scheduling parameters left out."""
    return math.prod(v for k, v in params.items()
                     if k not in GPU_SCHEDULING_PARAMS and isinstance(v, int) and not isinstance(v, bool) and v > 0)


def interpreter_order(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Triton family's points as the CPU's interpreter should try them: largest programs first, and
    points that differ only in GPU scheduling dropped (they run the same code there).

    The interpreter runs each program in turn, so its time follows the number of programs (and loop
    steps), not the block width: an elementwise kernel on 2^20 fp32 elements took 4.8-6.3 s with
    256-wide blocks, 1.2-1.3 s with 1024, 0.34-0.40 s with 4096 and 0.15-0.19 s with 16384
    (bench/interpreter_blocks.py, two runs on a 2-core machine, 2026-12-02); in the GPU's order
    (1024 first) CPU campaigns spent their limits on timeouts. Stable among points of one size.
    """
    seen: set[tuple] = set()
    kept = []
    for p in points:
        key = tuple(sorted((k, repr(v)) for k, v in p.items() if k not in GPU_SCHEDULING_PARAMS))
        if key not in seen:
            seen.add(key)
            kept.append(p)
    return sorted(kept, key=program_size, reverse=True)


class Search:
    """Chooses the next (family, params) to propose and learns from each measured result."""

    def __init__(self, analysis: TaskAnalysis, families: Iterable[MoveFamily], seed: int = 0,
                 device: str | None = None):
        self.analysis = analysis
        self.device = device
        """`cpu` drops GPU-only families (their `gpu_only`); None: no device known, nothing dropped."""
        self.rng = random.Random(seed)
        self.skipped: dict[str, str] = {}
        """Family name -> why it does not apply (recorded, never attempted)."""
        self.states: dict[str, FamilyState] = {}
        for family in families:
            self.add_family(family)
        self.traps: set[str] = set()
        """Point keys never to propose (recalled traps, oversized configs)."""
        self.preferred: list[tuple[str, dict[str, Any]]] = []
        """Points to try before anything else (recalled wins, the leader's point), in order."""
        self.proposed: set[str] = set()
        """Point keys handed out by `next` (measured or not: a point is proposed once)."""
        self.losses: dict[str, int] = {}
        """Family name -> recalled traps of this kernel kind with no recalled win (see `note_yield`)."""
        self.host_bound: bool | None = None
        """The incumbent measured host-bound on the card (`note_profile`); None: not measured."""

    def add_family(self, family: MoveFamily) -> bool:
        """Start searching `family` too (a borrowed one, say); False when it does not apply."""
        if family.name in self.states:
            return True
        reason = why_not(family, self.analysis, self.device)
        if reason is not None:
            self.skipped[family.name] = reason
            return False
        points = list(family.space(self.analysis))
        if self.device == "cpu" and family.language == "triton":
            points = interpreter_order(points)
        self.states[family.name] = FamilyState(family, points)
        return True

    def note_yield(self, wins: dict[str, int], traps: dict[str, int]) -> None:
        """What the memory recalls of each family on this kind of task: one that only ever lost there
        (POOR_YIELD_TRAPS traps or more, no win) gets its first try after every other family."""
        self.losses = {f: n for f, n in traps.items() if not wins.get(f)}

    def note_profile(self, host_bound: bool) -> None:
        """What the profiler measured of the incumbent: host-bound or not. It decides over the static
        estimate whether one-launch families get their first try before the others."""
        self.host_bound = host_bound

    def avoid(self, family: str, params: dict[str, Any]) -> None:
        """Never propose this point (a trap recorded in the shared memory)."""
        self.traps.add(point_key(family, params))

    def prefer(self, family: str, params: dict[str, Any]) -> None:
        """Try this point early (a win on similar shapes, or the leader's kernel)."""
        if (family, params) not in self.preferred:
            self.preferred.append((family, params))

    def record(self, family: str, params: dict[str, Any], speedup: float | None) -> None:
        """The guard's result for a point: its speedup over the reference, None if rejected."""
        state = self.states.get(family)
        if state is None:
            return
        reward = math.log(speedup) if speedup else REJECT_REWARD
        state.tried[point_key(family, params)] = reward
        if reward > state.best_reward:
            state.best, state.best_reward = dict(params), reward

    def open_points(self, state: FamilyState) -> list[dict[str, Any]]:
        """The family's points not yet proposed, not traps and within the shared-memory limit, in its order."""
        return [p for p in state.points if point_key(state.family.name, p) not in self.proposed
                and point_key(state.family.name, p) not in self.traps and self._fits(state.family, p)]

    def _fits(self, family: MoveFamily, params: dict[str, Any]) -> bool:
        resources = getattr(family, "resources", None)
        if resources is None:
            return True
        need = resources(params, self.analysis)
        smem = need.get("smem_bytes", 0) if isinstance(need, dict) else need
        return smem <= SMEM_PER_BLOCK_BYTES

    def next(self, exclude: Iterable[str] = ()) -> tuple[MoveFamily, dict[str, Any]] | None:
        """The next point to propose, from families not in `exclude`; None when all are exhausted."""
        excluded = set(exclude)
        choice = self._choose({n: s for n, s in self.states.items() if n not in excluded and self.open_points(s)})
        if choice is not None:
            self.proposed.add(point_key(choice[0].name, choice[1]))
        return choice

    def _choose(self, live: dict[str, FamilyState]) -> tuple[MoveFamily, dict[str, Any]] | None:
        if not live:
            return None
        for family, params in self.preferred:
            state = live.get(family)
            if state is not None and params in self.open_points(state):
                return state.family, dict(params)
        untried = sorted((s for s in live.values() if not s.tried), key=self._first_try_rank)
        if untried:
            state = untried[0]
            return state.family, self.open_points(state)[0]
        state = self._ucb_pick(list(live.values()))
        return state.family, self._descend(state)

    def _ucb_pick(self, states: list[FamilyState]) -> FamilyState:
        total = sum(len(s.tried) for s in states)
        scores = [max(s.best_reward, s.mean()) + UCB_EXPLORATION * math.sqrt(math.log(total) / len(s.tried))
                  for s in states]
        top = max(scores)
        return self.rng.choice([s for s, v in zip(states, scores) if v == top])

    def _descend(self, state: FamilyState) -> dict[str, Any]:
        """An open point one parameter away from the family's best, else its next open point."""
        open_points = self.open_points(state)
        best = state.best or {}
        neighbours = [p for p in open_points
                      if set(p) == set(best) and sum(p[k] != best[k] for k in p) == 1]
        return (neighbours or open_points)[0]

    def best_family(self) -> str | None:
        """The family holding the best measured point, or None before any measurement."""
        measured = [s for s in self.states.values() if s.tried]
        return max(measured, key=lambda s: s.best_reward).family.name if measured else None

    def _first_try_rank(self, state: FamilyState) -> tuple[bool, bool, bool, bool, bool]:
        """Untried families get their first try in this order (stable within a rank): a family that only
        ever lost on this kind of task goes last (issue 16: spend candidates where they pay); a family whose
        candidate computes less (`removes_work`: a GEMM whose columns are summed written as a GEMV) comes
        first, since no faster way of doing the dropped work beats not doing it; on a
        launch-bound task the families that make the whole forward one launch come first, since the
        launch is the cost there (on the H200 they ran 2.1-2.7x over eager where the next best ran 1.3x:
        docs/benchmarks.md, session 6), as measured by the profiler when it was (`note_profile`), else
        as the analysis estimates; then a family whose first point is the compiler's own result
        (`first_try`: the search starts at torch.compile's level and climbs from there); then the families
        quick to judge before the slow ones."""
        poor = self.losses.get(state.family.name, 0) >= POOR_YIELD_TRAPS
        launch_bound = self.analysis.launch_bound if self.host_bound is None else self.host_bound
        one_launch = bool(launch_bound and getattr(state.family, "one_launch", False))
        first = bool(getattr(state.family, "first_try", False))
        less = bool(getattr(state.family, "removes_work", False))
        return poor, not less, not one_launch, not first, bool(getattr(state.family, "slow_to_judge", False))


__all__ = ["FamilyState", "POOR_YIELD_TRAPS", "REJECT_REWARD", "Search", "UCB_EXPLORATION"]
