"""Tasks and analyses shared by the built-in agent tests (examples/ tasks, cached; tiny tasks written here)."""

from __future__ import annotations

import functools
from pathlib import Path

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves.base import TaskAnalysis
from kernelarc.guard import GuardSettings
from kernelarc.task import load_task
from kernelarc.task.model import Task

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
FIXTURE_TASKS = Path(__file__).resolve().parents[2] / "fixtures" / "tasks"
FAST_GUARD = GuardSettings(rounds=2, cpu_iterations=3, warmup=1)

CONV_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(channels, 8, kernel_size=3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 4, 8, 8)]


def get_init_inputs():
    return [4]
'''

DATA_DEPENDENT_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
'''


@functools.lru_cache(maxsize=None)
def example(relative: str) -> Task:
    """examples/<relative> loaded as a task (cached)."""
    return load_task(EXAMPLES / relative)


@functools.lru_cache(maxsize=None)
def example_analysis(relative: str) -> TaskAnalysis:
    """The analysis of examples/<relative> (cached: slow_sum's 769-node graph takes a second)."""
    return analyze(example(relative))


def task_file(directory: Path, name: str, source: str) -> Task:
    """A KernelBench task written to `directory` and loaded."""
    path = directory / f"{name}.py"
    path.write_text(source)
    return load_task(path)
