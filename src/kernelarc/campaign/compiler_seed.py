"""torch.compile's own code for the task, shown to the agents that write code (LLMs, coding CLIs) and
rendered ahead for the built-in agents' `inductor_seed` family.

Issue 16 item 3: the search starts at the compiler's level. The built-in agents propose it as the
`inductor_seed` family's first point; an LLM is shown the same standalone file in its first prompts,
to change rather than to rewrite from the reference. It is rendered once per campaign in a
background thread (Inductor's code is generated in a child process on the campaign's card: 16-24 s
on the H200), so no proposal waits for it: prompts built before it is ready go without it. Only on
a CUDA device: off the GPU Inductor writes C++, which the built-in agents leave out there too.
"""

from __future__ import annotations

import threading

from kernelarc.task.model import Task

SEEDED_BACKENDS = frozenset({"openai", "anthropic", "cli", "builtin"})
"""Backends it is rendered for: the code-writing ones read it in their prompts; the built-in agents'
`inductor_seed` family renders the same code and then finds it in this process's cache (Inductor's
generation and the task's analysis are cached per process) instead of waiting 16-24 s for it in their
first proposals, while the baselines were being judged (session 13 on the H200)."""


class CompilerSeed:
    """The standalone seed file for one task and device, rendered in a daemon thread."""

    def __init__(self, task: Task, device: str):
        self.source: str | None = None
        """The file, once rendered; None before and when it could not be rendered."""
        self.error: str | None = None
        """Why it could not be rendered, once known."""
        self._thread = threading.Thread(target=self._render, args=(task, device), daemon=True,
                                        name="kernelarc-compiler-seed")
        self._thread.start()

    def _render(self, task: Task, device: str) -> None:
        from kernelarc.agents.builtin.agent import shared_analysis
        from kernelarc.agents.builtin.moves import get_family

        try:
            self.source = get_family("inductor_seed").render(shared_analysis(task, device), {"tuning": "default"}).source
        except Exception as e:  # noqa: BLE001 - no seed is a prompt without it, never a failed campaign
            self.error = f"{type(e).__name__}: {e}"


def seeded(device: str, backend: str) -> bool:
    """Whether a campaign on `device` with agents of `backend` renders the seed: on a CUDA device only."""
    return backend in SEEDED_BACKENDS and device.startswith("cuda")


def compiler_seed(task: Task, device: str, backend: str) -> CompilerSeed | None:
    """Start rendering the seed where an agent would use it (see `seeded`)."""
    return CompilerSeed(task, device) if seeded(device, backend) else None


__all__ = ["SEEDED_BACKENDS", "CompilerSeed", "compiler_seed", "seeded"]
