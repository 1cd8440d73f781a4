"""The fused elementwise family: a captured pointwise chain (with a broadcast bias, clamp, pow, where
and GELU) becomes one Triton kernel that matches the reference; unsupported ops are named."""

from __future__ import annotations

import dataclasses

import pytest

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.agents.builtin.moves.base import OpNode
from kernelarc.agents.builtin.moves.triton_elementwise import translate_node
from kernelarc.task import load_task

from .triton_harness import analysis_for, assert_guard_passes, assert_matches_reference

FAMILY = "triton_fused_elementwise"


def test_family_serves_fusion():
    assert get_family(FAMILY) in families_for("fusion")


def test_chain_matches_reference_in_one_kernel(tmp_path):
    analysis = analysis_for("builtin_elementwise_chain")
    family = get_family(FAMILY)
    assert family.applies(analysis) is None
    move = family.render(analysis, family.space(analysis)[0])
    assert move.source.count("@triton.jit") == 1
    assert "offs % n_cols" in move.source  # the bias vector broadcasts along the last dim
    assert "return fused_elementwise(x, y, self.bias)" in move.source
    assert_matches_reference(move, analysis, tmp_path, seeds=(3, 4))


@pytest.mark.parametrize(("target", "args", "kwargs", "expected"), [
    ("aten.add.Tensor", ("a", "b"), {"alpha": 2}, "a + (b * 2.0)"),
    ("aten.rsub.Scalar", ("a", 1), {}, "1.0 - a"),
    ("aten.clamp", ("a", None, 0.5), {}, "tl.minimum(a, 0.5)"),
    ("aten.pow.Tensor_Scalar", ("a", 3), {}, "a * a * a"),
    ("aten.gelu", ("a",), {"approximate": "tanh"}, "a * tl.sigmoid(1.5957691216057308 * (a + 0.044715 * a * a * a))"),
    ("aten.where.self", ("c", "a", 0.0), {}, "tl.where(c, a, 0.0)"),
    ("aten.gt.Scalar", ("a", 0), {}, "a > 0.0"),
])
def test_translations(target, args, kwargs, expected):
    node = OpNode(target=target, args=args, kwargs=kwargs, shape=(2,), dtype="float32", name="v", pointwise=True)
    assert translate_node(node, {"a": "a", "b": "b", "c": "c"}) == expected


def test_applies_names_an_unsupported_op_or_input():
    analysis = analysis_for("builtin_elementwise_chain")
    family = get_family(FAMILY)
    nodes = tuple(dataclasses.replace(n, target="aten.erfinv") if n.name == "v_tanh" else n for n in analysis.nodes)
    assert "aten.erfinv is not translated" in family.applies(dataclasses.replace(analysis, nodes=nodes))
    odd = dataclasses.replace(analysis, values={**analysis.values, "self.bias": ((6, 2), "float32")})
    assert "broadcasts to (6, 50)" in family.applies(odd)
    assert "no elementwise pattern" in family.applies(analysis_for("builtin_softmax"))


@pytest.mark.slow
def test_full_guard_accepts_the_fused_chain():
    analysis = analysis_for("builtin_elementwise_chain")
    family = get_family(FAMILY)
    assert_guard_passes(family.render(analysis, family.space(analysis)[0]), analysis)


BUILT_BY_A_HELPER = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Its __init__ builds a layer through a helper method and a class attribute, as ResNet's
    `_make_layer` and `expansion` do."""

    width = 16

    def __init__(self):
        super().__init__()
        self.scale = self._make_scale(self.width)

    def _make_scale(self, width):
        return nn.Parameter(torch.linspace(0.5, 1.5, width))

    def forward(self, x):
        return torch.sigmoid(x) * self.scale + x


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
'''


def test_a_generated_module_carries_the_helper_methods_its_init_calls(tmp_path):
    """KernelBench's ResNet101 and ResNetBasicBlock at CPU sizes: every generated candidate failed with
    "'ModelNew' object has no attribute '_make_layer'" (or 'expansion') (bench/generality.py, gen10)."""
    path = tmp_path / "helper_init.py"
    path.write_text(BUILT_BY_A_HELPER)
    analysis = analyze(load_task(path))
    assert "def _make_scale(self, width):" in analysis.helper_source and "width = 16" in analysis.helper_source
    assert "def forward" not in analysis.helper_source
    family = get_family(FAMILY)
    assert_matches_reference(family.render(analysis, family.space(analysis)[0]), analysis, tmp_path)
