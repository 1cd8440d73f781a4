"""The official SOL-ExecBench input rules, checked against their formulas drawn from an equally seeded generator."""

import math

import pytest
import torch

from kernelarc.task import TaskRuntime, load_sol
from kernelarc.task.inputs import named_tensor, random_input, random_tensor
from kernelarc.task.model import TensorSpec

CPU = torch.device("cpu")


def gen(seed: int = 0) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def named(name, shape, dtype=torch.float32, description=None):
    return named_tensor(name, shape, dtype, gen(), CPU, description)


@pytest.mark.parametrize("name", ["norm_weight", "input_layernorm_weight", "q_norm_weight", "rmsnorm2_weight"])
def test_norm_weights_are_ones(name):
    assert torch.equal(named(name, (16,), torch.bfloat16), torch.ones(16, dtype=torch.bfloat16))


@pytest.mark.parametrize("name", ["norm_bias", "post_layernorm_bias"])
def test_norm_biases_are_zeros(name):
    assert torch.equal(named(name, (16,)), torch.zeros(16))


@pytest.mark.parametrize("name, description", [("attention_mask", None), ("causal_mask", None),
                                               ("bias_mask", "Causal attention mask added to scores")])
def test_square_attention_masks_are_causal_with_the_dtype_min(name, description):
    mask = named(name, (2, 5, 5), torch.float16, description)
    expected = torch.zeros(5, 5, dtype=torch.float16).masked_fill(torch.ones(5, 5).triu(1).bool(),
                                                                  torch.finfo(torch.float16).min)
    assert torch.equal(mask, expected.expand(2, 5, 5))


@pytest.mark.parametrize("name, shape, description", [("attention_mask", (4, 9), None), ("x_mask", (64,), None),
                                                      ("pad_mask", (64,), "Binary mask: 1.0 for valid tokens")])
def test_masks_are_binary(name, shape, description):
    mask = named(name, shape, torch.float32, description)
    assert set(mask.unique().tolist()) == {0.0, 1.0}


def test_an_unexplained_mask_is_plain_random():
    assert named("pad_mask", (64,)) is None


@pytest.mark.parametrize("name, fn", [("cos", torch.cos), ("rope_sin", torch.sin), ("sin_cached", torch.sin)])
def test_rope_caches_are_cos_or_sin_of_clamped_randn(name, fn):
    expected = fn(torch.randn((8, 16), generator=gen()).clamp(-math.pi, math.pi)).to(torch.bfloat16)
    assert torch.equal(named(name, (8, 16), torch.bfloat16), expected)


@pytest.mark.parametrize("name", ["rstd", "var", "layer_var", "x_std", "rstd2", "running_variance"])
def test_spread_statistics_are_positive(name):
    expected = torch.randn((32,), generator=gen()).abs() + 0.1
    assert torch.equal(named(name, (32,)), expected)


@pytest.mark.parametrize("name, description", [("routing_weights", None), ("attn_weights", None),
                                               ("probs_in", "The softmax output of the router")])
def test_attention_and_routing_weights_are_softmax_rows(name, description):
    t = named(name, (4, 10), torch.float32, description)
    assert torch.allclose(t.sum(-1), torch.ones(4)) and (t > 0).all()


@pytest.mark.parametrize("name, low, high", [("A_log", -5.0, -1.0), ("A", -1.0, -0.001), ("g", -5.0, 0.0)])
def test_ssm_decays_are_uniform_in_their_range(name, low, high):
    t = named(name, (1000,))
    assert low <= t.min() and t.max() <= high


def test_ssm_cumulative_decay_is_decreasing():
    t = named("A_cumsum", (4, 50))
    assert (t.diff(dim=-1) <= 0).all()


@pytest.mark.parametrize("name", ["weight", "gate_proj", "w1_weight", "up_projs", "weight2", "o_proj_weight"])
def test_weight_matrices_are_scaled_by_fan_in(name):
    expected = torch.randn((32, 256), generator=gen()) / math.sqrt(256)
    assert torch.equal(named(name, (32, 256)), expected)


@pytest.mark.parametrize("name, shape, dtype", [
    ("weight", (256,), torch.float32),  # 1-d weight: not a matrix, not a norm weight
    ("hidden_states", (4, 8), torch.float32),
    ("attention_mask", (8, 8), torch.int32),  # name rules are for floats only
    ("norm_weight", (8,), torch.float8_e4m3fn),
])
def test_no_rule_falls_back_to_the_dtype_rule(name, shape, dtype):
    assert named(name, shape, dtype) is None


@pytest.mark.parametrize("dtype, low, high", [(torch.int8, -128, 127), (torch.int16, -1024, 1023),
                                              (torch.int32, -1024, 1023), (torch.int64, -1024, 1023)])
def test_integers_span_their_official_range(dtype, low, high):
    t = random_tensor((20000,), dtype, gen(), CPU)
    assert t.dtype == dtype and t.min() == low and t.max() == high


def test_bool_fp8_fp4_and_float_dtype_rules():
    assert set(random_tensor((100,), torch.bool, gen(), CPU).tolist()) == {False, True}
    fp8 = random_tensor((10000,), torch.float8_e4m3fn, gen(), CPU)
    assert fp8.dtype == torch.float8_e4m3fn and fp8.float().abs().max() == 2.0
    fp4 = random_tensor((3, 8), torch.float4_e2m1fn_x2, gen(), CPU)
    assert fp4.dtype == torch.float4_e2m1fn_x2 and fp4.shape == (3, 4)  # packed two per byte
    bf16 = random_tensor((4, 4), torch.bfloat16, gen(), CPU)
    assert torch.equal(bf16, torch.randn((4, 4), dtype=torch.bfloat16, generator=gen()))


def test_fp4_packing_rounds_to_e2m1_codes_low_nibble_first():
    from kernelarc.task.inputs import _pack_fp4

    x = torch.tensor([[0.1, 0.6, 1.1, -1.6, 2.2, -3.2, 4.5, 7.0]])
    packed = _pack_fp4(x).view(torch.uint8)
    codes = [0, 1, 2, 8 + 3, 4, 8 + 5, 6, 7]
    assert packed.tolist() == [[codes[i] + 16 * codes[i + 1] for i in range(0, 8, 2)]]


def test_random_scalar_input_is_a_python_number():
    value = random_input(TensorSpec(name="scale", shape=None, dtype="float32"), gen(), CPU)
    assert isinstance(value, float)


def test_sol_inputs_depend_only_on_the_seed(examples_dir):
    task = load_sol(examples_dir / "sol" / "rmsnorm_small")
    runtime, w = TaskRuntime(task, "cpu"), task.workloads[2]
    torch.manual_seed(1)
    first = runtime.make_inputs(w, seed=7)
    torch.manual_seed(2)
    again = runtime.make_inputs(w, seed=7)
    other = runtime.make_inputs(w, seed=8)
    assert all(torch.equal(a, b) for a, b in zip(first[:2], again[:2])) and first[2] == again[2] == 1e-5
    assert not torch.equal(first[0], other[0])
    assert first[0].dtype == torch.bfloat16 and tuple(first[0].shape) == (33, 256)
