"""kernelarc.agents: the `Agent` protocol every backend implements, and the backend registry.

Backends (builtin, openai, anthropic, cli, scripted) live in `kernelarc.agents.<name>` and are imported
on first use by `get_backend`, so the package imports without the optional LLM SDKs.
"""

from kernelarc.agents.protocol import (
    BUILTIN_BACKENDS,
    Agent,
    AgentContext,
    AgentFactory,
    BackendError,
    FactoryMaker,
    LeaderboardEntry,
    Proposal,
    VerdictNote,
    clip_reflection,
    get_backend,
    known_backends,
    register_backend,
)
from kernelarc.agents.scripted import ScriptedAgent, Step, scripted_factory

__all__ = [
    "Agent", "AgentContext", "AgentFactory", "BackendError", "BUILTIN_BACKENDS", "FactoryMaker", "LeaderboardEntry",
    "Proposal", "ScriptedAgent", "Step", "VerdictNote", "clip_reflection", "get_backend", "known_backends",
    "register_backend", "scripted_factory",
]
