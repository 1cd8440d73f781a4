"""The `replay` backend: re-run a campaign from the responses its database recorded, with no model access.

Each agent gets, per (agent id, step, kind), the recorded calls in the order they were made: a
recorded reply is served again (so an unusable one is retried just as it was), a recorded failure
fails again. When the recording has no more calls for what an agent asks, `ReplayExhausted` says so
and the run stops. Prompts are rebuilt and recorded anew but never sent. Registers on import.
Budget: 100 lines.
"""

from __future__ import annotations

from collections import defaultdict, deque
from pathlib import Path

from kernelarc.agents.llm import Completion, LLMAgent, Message, ModelCallError, ReplyFormat
from kernelarc.agents.protocol import AgentContext, AgentExhausted, AgentFactory, register_backend
from kernelarc.agents.usage import CallRecorder, MemoryRecorder
from kernelarc.errors import UserError
from kernelarc.memory.llm_calls import CallKind, LLMCall, calls
from kernelarc.memory.store import Store
from kernelarc.strategies.model import Strategy
from kernelarc.task.model import Task

Key = tuple[str, int, CallKind]
"""(agent id, step, kind): what a recorded call answers."""


class ReplayExhausted(UserError):
    """The recording holds no (more) responses for a call the replayed campaign makes."""


class RecordingEnded(AgentExhausted):
    """The recorded agent made no proposal at this step or later: the replayed agent is done too."""


class Recording:
    """The recorded calls of one campaign, each served once, in order per (agent id, step, kind)."""

    def __init__(self, recorded: list[LLMCall], source: str) -> None:
        self.source = source
        """Where the calls came from, for messages."""
        self._queues: dict[Key, deque[LLMCall]] = defaultdict(deque)
        for call in recorded:
            self._queues[(call.agent_id, call.step, call.kind)].append(call)

    @classmethod
    def open(cls, database: Store | str | Path) -> "Recording":
        """Read every recorded call of a campaign store (a path or an open Store).

        Raises:
            UserError: the file is not a campaign store (StoreError), or it recorded no LLM calls.
        """
        store = database if isinstance(database, Store) else Store(database)
        recorded = calls(store)
        if not recorded:
            raise ReplayExhausted(f"{store.path} recorded no LLM calls: nothing to replay")
        return cls(recorded, str(store.path))

    def next(self, agent_id: str, step: int, kind: CallKind) -> LLMCall:
        """The next recorded call for this key.

        Raises:
            RecordingEnded: a proposal is asked for at a step past every step the agent recorded.
            ReplayExhausted: otherwise, when there is no such call (the replay went where the run did not).
        """
        queue = self._queues.get((agent_id, step, kind))
        steps = [s for a, s, _ in self._queues if a == agent_id]
        if not queue and kind is CallKind.PROPOSE and steps and max(steps) < step:
            raise RecordingEnded(f"the recording {self.source} ends for agent {agent_id!r} before step {step}")
        if not queue:
            raise ReplayExhausted(f"the recording {self.source} has no more {kind.value} responses for agent "
                                  f"{agent_id!r} at step {step}: the replayed campaign went further than it")
        return queue.popleft()


class ReplayChat:
    """A ChatModel that answers from a Recording."""

    def __init__(self, recording: Recording, reply_format: ReplyFormat = "chat") -> None:
        self.recording = recording
        self.model = f"replay:{Path(recording.source).name}"
        self.reply_format = reply_format

    async def complete(self, messages: list[Message], *, kind: CallKind, ctx: AgentContext) -> Completion:
        """The recorded reply, or the recorded failure raised again."""
        call = self.recording.next(ctx.agent_id, ctx.step, kind)
        if call.response is None:
            raise ModelCallError(f"(replayed) {call.error}")
        return Completion(text=call.response, tokens_in=call.tokens_in, tokens_out=call.tokens_out)


def replay_factory(recording: Recording | Store | str | Path, recorder: CallRecorder | None = None, *,
                   device: str = "cuda", reply_format: ReplyFormat = "chat") -> AgentFactory:
    """The `replay` backend's AgentFactory: every agent answers from the same recording, by its own id.

    Args:
        recording: a Recording, or the campaign store (path or Store) to read one from.
        recorder: where the replayed calls are recorded again (unpriced: replay costs nothing).
        device: shown in the rebuilt prompts.
        reply_format: the recorded backend's (`files` for cli), so rebuilt prompts match the originals.
    """
    served = recording if isinstance(recording, Recording) else Recording.open(recording)
    recorder = recorder if recorder is not None else MemoryRecorder()

    def make(agent_id: str, strategy: Strategy, task: Task, seed: int) -> LLMAgent:
        return LLMAgent(agent_id, ReplayChat(served, reply_format), recorder, price=None, device=device)

    return make


register_backend("replay", replay_factory)

__all__ = ["Recording", "ReplayChat", "ReplayExhausted", "replay_factory"]
