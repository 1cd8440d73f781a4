"""The `builtin` agent backend: offline agents that search generated candidates (no API key, no network).

Registers the backend on import. `analysis.py` reads a task (graph, source parts, pattern facts),
`moves/` holds the candidate generators by strategy, `search.py` chooses what to try from measured
results, `agent.py` is the `Agent`. Importing this package does not import torch.
"""

from kernelarc.agents.builtin.agent import BuiltinAgent, builtin_factory
from kernelarc.agents.protocol import register_backend

register_backend("builtin", builtin_factory)

__all__ = ["BuiltinAgent", "builtin_factory"]
