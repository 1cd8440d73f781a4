import pytest

from kernelarc.task import KernelType, classify_source, kernel_type, load_task

EXAMPLES = {
    "kernelbench/relu_small.py": "elementwise",
    "kernelbench/gemm_bias_gelu_small.py": "gemm",
    "kernelbench/softmax_small.py": "softmax",
    "kernelbench/slow_sum.py": "reduction",
    "sol/rmsnorm_small": "norm",
}
SHARED = {
    "kernelbench_examples/level1/19_ReLU.py": "elementwise",
    "kernelbench_examples/level1/1_Square_matrix_multiplication_.py": "gemm",
    "kernelbench_examples/level1/23_Softmax.py": "softmax",
    "kernelbench_examples/level1/40_LayerNorm.py": "norm",
    "kernelbench_examples/level1/42_Max_Pooling_2D.py": "pooling",
    "kernelbench_examples/level1/47_Sum_reduction_over_a_dimension.py": "reduction",
    "kernelbench_examples/level1/89_cumsum.py": "scan",
    "kernelbench_examples/level1/95_CrossEntropyLoss.py": "loss",
    "kernelbench_examples/level1/97_ScaledDotProductAttention.py": "attention",
    "kernelbench_examples/level2/1_Conv2D_ReLU_BiasAdd.py": "conv",
    "kernelbench_examples/level2/37_Matmul_Swish_Sum_GroupNorm.py": "gemm",
    "kernelbench_examples/level2/99_Matmul_GELU_Softmax.py": "gemm",
    "sol_examples/gqa_paged_decode_h32_kv8_d128_ps1": "attention",
    "sol_examples/linear_backward": "gemm",
    "sol_examples/rmsnorm": "norm",
    "sol_examples/flux_rope": "elementwise",
}


@pytest.mark.parametrize("path, expected", EXAMPLES.items())
def test_examples_are_classified(examples_dir, path, expected):
    task = load_task(examples_dir / path)
    assert task.kernel_type == expected == kernel_type(task)


@pytest.mark.parametrize("path, expected", SHARED.items())
def test_shared_tasks_are_classified(shared_dir, path, expected):
    assert load_task(shared_dir / path).kernel_type == expected


def test_matmul_plus_softmax_is_attention_only_when_named_so():
    source = "def run(q, k, v):\n    return (q @ k.T).softmax(-1) @ v\n"
    assert classify_source(source, "mla_decode", "multi-head latent attention") is KernelType.ATTENTION
    assert classify_source(source, "gemm_softmax", "") is KernelType.GEMM


def test_flops_reveal_matmul_work_the_names_hide():
    source = "def run(x, layer):\n    return layer(x)\n"
    assert classify_source(source, flops=0.0) is KernelType.OTHER
    assert classify_source(source, flops=1e6) is KernelType.GEMM


def test_unparsable_source_is_other():
    assert classify_source("def (") is KernelType.OTHER
