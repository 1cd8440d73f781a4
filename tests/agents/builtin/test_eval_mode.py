"""Generated modules after `model.eval()`: the graph is traced in training mode (as the guard calls the
module), so where BatchNorm or Dropout make eval mode compute otherwise, a generated module computes as
the reference does there instead of returning training-mode results; in training mode it updates the
running statistics as the reference does."""

from __future__ import annotations

import pytest
import torch

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.task.execute import load_module

from tests.agents.builtin.builtin_tasks import task_file
from tests.agents.builtin.triton_harness import load_generated

CONV_BN = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        return self.drop(torch.relu(self.bn(self.conv(x))) * 2.0)


def get_inputs():
    return [torch.randn(2, 4, 8, 8)]


def get_init_inputs():
    return []
'''


@pytest.fixture(scope="module")
def conv_bn(tmp_path_factory):
    return analyze(task_file(tmp_path_factory.mktemp("eval_mode"), "conv_bn", CONV_BN))


def test_a_module_whose_graph_changes_in_eval_mode_is_found_and_one_that_does_not_is_not(conv_bn, tmp_path):
    assert conv_bn.facts["mode_dependent"]
    plain = analyze(task_file(tmp_path, "plain", CONV_BN.replace("self.bn(", "(").replace("self.drop(", "(")))
    assert not plain.facts["mode_dependent"]


@pytest.mark.parametrize("family", ["triton_pointwise_regions", "triton_lowered_regions"])
def test_a_generated_module_in_eval_mode_computes_as_the_reference_does(conv_bn, family, tmp_path):
    point = get_family(family).space(conv_bn)[0]
    generated = load_generated(get_family(family).render(conv_bn, point).source, tmp_path)
    reference = load_module(conv_bn.task.reference_source, str(tmp_path / "reference.py"), "reference")
    torch.manual_seed(0)
    expected = reference.Model()
    torch.manual_seed(0)
    actual = generated.ModelNew()
    with torch.no_grad():  # running statistics set apart from their defaults, the same on both
        for model in (expected, actual):
            model.bn.running_mean.fill_(0.5)
            model.bn.running_var.fill_(2.0)
    x = torch.randn(2, 4, 8, 8)
    torch.testing.assert_close(actual.eval()(x), expected.eval()(x))
    torch.testing.assert_close(actual.train()(x), expected.train()(x))  # training mode: the generated kernels
    # which update the running statistics as the reference's BatchNorm does (no output reads them)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(getattr(actual.bn, name), getattr(expected.bn, name), msg=name)
    torch.testing.assert_close(actual.eval()(x), expected.eval()(x))
