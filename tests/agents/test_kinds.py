"""Kernel kinds read from what the reference computes (its captured graph), whatever its source calls
things (issue 19 item 4, issue 16 item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelarc.agents.builtin.kinds import with_graph_kind
from kernelarc.task.loader import load_task

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
INPUTS = "\n\ndef get_init_inputs():\n    return []\n"

SOURCES = {
    "loop_rowsum": ("elementwise", "reduction", '''
class Model(nn.Module):
    def forward(self, x):
        acc = torch.zeros(x.shape[0], 1, dtype=x.dtype)
        for j in range(x.shape[1]):
            acc = acc + x[:, j:j + 1]
        return acc

def get_inputs():
    return [torch.randn(4, 16)]'''),
    "handwritten_mse": ("reduction", "loss", '''
class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)

def get_inputs():
    return [torch.randn(8, 16), torch.randn(8, 16)]'''),
    "hard_sigmoid": ("other", "elementwise", '''
class Model(nn.Module):
    def forward(self, x):
        return F.hardsigmoid(x)

def get_inputs():
    return [torch.randn(8, 16)]'''),
    "masked_attention_by_hand": (None, "attention", '''
class Model(nn.Module):
    def forward(self, q, k, v):
        s = (q @ k.transpose(-2, -1)) * 0.125
        s = s.masked_fill(torch.tril(torch.ones(16, 16, dtype=torch.bool)).logical_not(), float("-inf"))
        return torch.softmax(s, dim=-1) @ v

def get_inputs():
    return [torch.randn(2, 16, 8), torch.randn(2, 16, 8), torch.randn(2, 16, 8)]'''),
    "transposed_conv_then_max": (None, "conv", '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 4, 3)

    def forward(self, x):
        return torch.amax(self.up(x), dim=1)

def get_inputs():
    return [torch.randn(2, 4, 8, 8)]'''),
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_graph_decides_the_kind(tmp_path: Path, name: str):
    by_names, by_graph, body = SOURCES[name]
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + body.strip() + "\n" + INPUTS)
    task = load_task(path)
    if by_names is not None:  # where the names mislead, the case shows it
        assert task.kernel_type == by_names
    assert with_graph_kind(task).kernel_type == by_graph


def test_a_graph_that_cannot_be_captured_keeps_the_names_kind(tmp_path: Path):
    path = tmp_path / "data_dependent.py"
    path.write_text(HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) if x.sum().item() > 0 else torch.sigmoid(x)

def get_inputs():
    return [torch.randn(8, 16)]
''' + INPUTS)
    task = load_task(path)
    assert with_graph_kind(task).kernel_type == task.kernel_type
