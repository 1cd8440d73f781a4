"""Builders shared by the agent tests: a tiny task, contexts, and guard evaluations as the guard returns them."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from kernelarc.agents import AgentContext
from kernelarc.guard.types import Evaluation, Status, TimingMethod, Verdict
from kernelarc.strategies import get_strategy
from kernelarc.task.model import Task, TaskFormat, Workload

REFERENCE = """import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
"""


@pytest.fixture
def task() -> Task:
    return Task(name="relu_tiny", format=TaskFormat.KERNELBENCH, path=Path("/tasks/relu_tiny.py"),
                reference_source=REFERENCE, workloads=(Workload(uuid="default"),), kernel_type="elementwise")


@pytest.fixture
def make_context(task: Task) -> Callable[..., AgentContext]:
    """AgentContext for agent `a0` on `fusion`; keyword arguments override any field."""

    def make(**overrides) -> AgentContext:
        fields = dict(task=task, agent_id="a0", strategy=get_strategy("fusion"), rng_seed=7)
        return AgentContext(**{**fields, **overrides})

    return make


@pytest.fixture
def keep_evaluation() -> Evaluation:
    """A KEEP at 1.5x on the CPU."""
    return Evaluation(verdict=Verdict.KEEP, status=Status.PASSED, reason="1.50x faster than the incumbent",
                      correct=True, latency_ms=1.0, incumbent_ms=1.5, speedup=1.5, timing=TimingMethod.CPU_WALL,
                      device="cpu")


@pytest.fixture
def reject_evaluation() -> Evaluation:
    """A REJECT for wrong numbers, with no timing."""
    return Evaluation(verdict=Verdict.REJECT, status=Status.INCORRECT_NUMERICAL,
                      reason="INCORRECT_NUMERICAL: 3 of 32 elements out of tolerance", correct=False, device="cpu")
