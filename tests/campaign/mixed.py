"""The mixed campaign: three scripted agents on slow_sum earning every verdict, a duplicate, a budget stop.

    round 1: a0 fast (KEEP)       a1 wrong (REJECT, numbers)    a2 loop_rows (REVERT)
    round 2: a0 fast_alt (vs fast: KEEP, ACCEPT or REVERT as noise decides)
             a1 fast (duplicate of a0's: not evaluated, not counted)
             a2 gated (REJECT, static gate)
    budget 5 is then spent: every agent's third step is never asked for.
Retention 8/1 keeps every win and only the newest trap. Long-term memory is on (KERNELARC_HOME = the
run's home), so `kernelarc memory` tests read what it absorbed. Agents propose only once all three are
proposing (a rendezvous), so a campaign that asked them one at a time would fail.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kernelarc.agents import AgentContext, Proposal, ScriptedAgent
from kernelarc.campaign import start
from kernelarc.guard import Evaluation

from campaign.runs import SLOW_SUM, options, proposal, scripted_backend

AGENTS = 3
BUDGET = 5
RETENTION = "8/1"
RENDEZVOUS_S = 30.0
"""How long an agent waits for the others to be proposing too (the campaign asks them at once)."""
LONG_REFLECTION = "The static gate refused the process spawn. " * 100
"""a2's reflection: far over the 1,200-character cap, so its finding must be clipped."""
SCRIPTS = (
    [proposal("fast"), proposal("fast_alt"), proposal("loop_twice")],
    [proposal("wrong"), proposal("fast", "the same vectorized sum, proposed again"), proposal("slow_stack")],
    [proposal("loop_rows"), proposal("gated"), proposal("loop_twice")],
)


class RendezvousAgent(ScriptedAgent):
    """A scripted agent that proposes only once every agent of the round is proposing."""

    def __init__(self, steps: list[Proposal], rendezvous: asyncio.Barrier, reflection: str | None = None) -> None:
        super().__init__(steps)
        self.rendezvous = rendezvous
        self.reflection = reflection

    async def propose(self, ctx: AgentContext) -> Proposal | None:
        await asyncio.wait_for(self.rendezvous.wait(), RENDEZVOUS_S)
        return await super().propose(ctx)

    async def reflect(self, ctx: AgentContext, proposal: Proposal, evaluation: Evaluation) -> str:
        return self.reflection if self.reflection is not None else await super().reflect(ctx, proposal, evaluation)


def seen(ctx: AgentContext) -> dict:
    """What an agent was shown, as JSON (tests in other xdist workers read it from disk)."""
    return {"step": ctx.step, "incumbent_id": ctx.incumbent_id, "must_draft": ctx.must_draft,
            "leaderboard": [[e.agent_id, e.candidate_id] for e in ctx.leaderboard],
            "findings": [[f.kind.value, f.candidate_id] for f in ctx.findings],
            "last_verdicts": [[n.candidate_id, n.verdict.value] for n in ctx.last_verdicts]}


def contexts_path(run_dir: Path) -> Path:
    return run_dir.parent / "contexts.json"


def build_mixed(run_dir: Path, home: Path) -> None:
    """Run the mixed campaign into `run_dir` with long-term memory under `home`; save what agents saw."""
    barrier = asyncio.Barrier(AGENTS)
    agents = [RendezvousAgent(steps, barrier, LONG_REFLECTION if i == 2 else None) for i, steps in enumerate(SCRIPTS)]
    backend = scripted_backend(agents)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KERNELARC_HOME", str(home))
        start(SLOW_SUM, options(agents=AGENTS, backend=backend, budget=BUDGET, memory=RETENTION, longterm=True,
                                strategies=("reduction", "memory", "fusion")), run_dir)
    contexts_path(run_dir).write_text(json.dumps([[seen(c) for c in agent.contexts] for agent in agents]))
