"""A deterministic agent that plays back a script: drives the campaign and its tests offline.

Registers the `scripted` backend on import. Must not import campaign or the store. Budget: 80 lines.
"""

from __future__ import annotations

from collections import deque
import json
from pathlib import Path
from typing import Callable, Iterable, Sequence

from kernelarc.agents.protocol import AgentContext, AgentFactory, Proposal, clip_reflection, register_backend
from kernelarc.errors import UserError
from kernelarc.guard.types import Evaluation
from kernelarc.strategies.model import Strategy
from kernelarc.task.model import Task

Step = Proposal | Callable[[AgentContext], Proposal | None]
"""A fixed proposal, or a function of the context (returning None ends the script early)."""


class ScriptedAgent:
    """Proposes its steps in order, then None; reflects with a fixed summary of the verdict."""

    def __init__(self, steps: Iterable[Step] = (), name: str = "scripted") -> None:
        self.name = name
        self._steps: deque[Step] = deque(steps)
        self.contexts: list[AgentContext] = []
        """Every context `propose` was given, in order, for tests to inspect."""

    def enqueue(self, step: Step) -> None:
        """Add a step at the end of the script."""
        self._steps.append(step)

    async def propose(self, ctx: AgentContext) -> Proposal | None:
        """The next step's proposal, or None when the script is exhausted."""
        self.contexts.append(ctx)
        if not self._steps:
            return None
        step = self._steps.popleft()
        return step if isinstance(step, Proposal) else step(ctx)

    async def reflect(self, ctx: AgentContext, proposal: Proposal, evaluation: Evaluation) -> str:
        """`<verdict> <speedup or reason> for: <claim>`, clipped to the reflection cap."""
        outcome = f"{evaluation.speedup:.3g}x" if evaluation.speedup is not None else evaluation.reason
        return clip_reflection(f"{evaluation.verdict.value} {outcome} for: {proposal.claim}")


class FileScriptAgent:
    """Plays a JSON script indexed by the context's step, so a resumed campaign continues it exactly."""

    def __init__(self, steps: Sequence[dict], name: str) -> None:
        self.name = name
        self._steps = list(steps)

    async def propose(self, ctx: AgentContext) -> Proposal | None:
        """Step `ctx.step` of the script, or None past its end."""
        return Proposal(**self._steps[ctx.step]) if ctx.step < len(self._steps) else None

    reflect = ScriptedAgent.reflect


def scripted_factory(steps: Sequence[Step] = (), script: str | None = None) -> AgentFactory:
    """The `scripted` backend: every agent plays its own copy of `steps`, named after its id; or, with
    `script`, a JSON file {"agents": {agent_id: [proposal, ...]}, "default": [proposal, ...]} where a
    proposal is {"source" or "source_file" (relative to the script), "claim", ...}."""
    if script is None:
        return lambda agent_id, strategy, task, seed: ScriptedAgent(steps, name=agent_id)
    path = Path(script)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read the scripted backend's script {path}: {e}") from None

    def resolve(step: dict) -> dict:
        step = dict(step)
        if "source_file" in step:
            source = path.parent / step.pop("source_file")
            try:
                step["source"] = source.read_text()
            except OSError as e:
                raise UserError(f"the scripted backend's script {path} names a source it cannot read: {e}") from None
        return step

    # resolved now, so that a bad script fails before the campaign writes anything
    scripts = {agent_id: [resolve(s) for s in steps] for agent_id, steps in data.get("agents", {}).items()}
    default = [resolve(s) for s in data.get("default", [])]

    def make(agent_id: str, strategy: Strategy, task: Task, seed: int) -> FileScriptAgent:
        return FileScriptAgent(scripts.get(agent_id, default), name=agent_id)

    return make


register_backend("scripted", scripted_factory)

__all__ = ["FileScriptAgent", "ScriptedAgent", "Step", "scripted_factory"]
