import resource

import pytest

from kernelarc.errors import TaskError
from kernelarc.task import TaskFormat, load_kernelbench, load_task

# name -> (input shapes, output shapes, has matmul-class FLOPs)
SHARED_KB = {
    "level1/19_ReLU.py": ([(4096, 393216)], [(4096, 393216)], False),
    "level1/1_Square_matrix_multiplication_.py": ([(4096, 4096), (4096, 4096)], [(4096, 4096)], True),
    "level1/23_Softmax.py": ([(4096, 393216)], [(4096, 393216)], False),
    "level1/40_LayerNorm.py": ([(16, 64, 256, 256)], [(16, 64, 256, 256)], False),
    "level1/42_Max_Pooling_2D.py": ([(32, 64, 512, 512)], [(32, 64, 511, 511)], False),
    "level1/47_Sum_reduction_over_a_dimension.py": ([(128, 4096, 4095)], [(128, 1, 4095)], False),
    "level1/4_Matrix_vector_multiplication_.py": ([(2048, 1048576), (1048576, 1)], [(2048, 1)], True),
    "level1/89_cumsum.py": ([(32768, 32768)], [(32768, 32768)], False),
    "level1/95_CrossEntropyLoss.py": ([(32768, 4096), (32768,)], [()], False),
    "level1/97_ScaledDotProductAttention.py": ([(32, 32, 512, 1024)] * 3, [(32, 32, 512, 1024)], True),
    "level2/12_Gemm_Multiply_LeakyReLU.py": ([(1024, 8192)], [(1024, 8192)], True),
    "level2/1_Conv2D_ReLU_BiasAdd.py": ([(128, 64, 128, 128)], [(128, 128, 126, 126)], True),
    "level2/37_Matmul_Swish_Sum_GroupNorm.py": ([(32768, 1024)], [(32768, 4096)], True),
    "level2/76_Gemm_Add_ReLU.py": ([(1024, 8192)], [(1024, 8192)], True),
    "level2/99_Matmul_GELU_Softmax.py": ([(1024, 8192)], [(1024, 8192)], True),
}


def test_shared_kernelbench_files_load_on_meta_without_allocating(shared_dir):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    tasks = {name: load_task(shared_dir / "kernelbench_examples" / name) for name in SHARED_KB}
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 512, f"loading grew peak memory by {grown_mib:.0f} MiB"  # real tensors would take GiBs
    for name, (in_shapes, out_shapes, has_flops) in SHARED_KB.items():
        task = tasks[name]
        w = task.workloads[0]
        assert task.format is TaskFormat.KERNELBENCH and task.rounds == 5 and w.uuid == "default"
        assert [s.shape for s in w.inputs] == in_shapes and [s.shape for s in w.outputs] == out_shapes, name
        assert (w.flops > 0) == has_flops, name
        assert w.min_bytes >= sum(s.nbytes for s in w.inputs + w.outputs)


def test_specs_flops_and_bytes_of_a_linear_layer(shared_dir):
    w = load_kernelbench(shared_dir / "kernelbench_examples" / "level2" / "76_Gemm_Add_ReLU.py").workloads[0]
    assert w.inputs[0].dtype == "float32" and w.inputs[0].kind == "random"
    assert w.flops == 2 * 1024 * 8192 * 8192
    weights = (8192 * 8192 + 8192) * 4  # Linear without bias + the separate bias parameter
    assert w.min_bytes == 2 * 1024 * 8192 * 4 + weights


def test_scalar_arguments_become_scalar_specs(tmp_path):
    f = tmp_path / "scaled.py"
    f.write_text(
        "import torch\nclass Model(torch.nn.Module):\n"
        "    def forward(self, x, s):\n        return x * s, x.sum()\n"
        "def get_inputs():\n    return [torch.rand(3, 4), 2.5]\n"
        "def get_init_inputs():\n    return []\n")
    w = load_kernelbench(f).workloads[0]
    assert [(s.name, s.shape, s.dtype, s.kind, s.value) for s in w.inputs] == [
        ("arg0", (3, 4), "float32", "random", None), ("arg1", None, "float64", "scalar", 2.5)]
    assert [(s.name, s.shape) for s in w.outputs] == [("out0", (3, 4)), ("out1", ())]


def test_code_that_cannot_run_on_meta_leaves_specs_empty(tmp_path):
    f = tmp_path / "data_dependent.py"
    f.write_text(
        "import torch\nclass Model(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x[: int(x.sum().item())]\n"
        "def get_inputs():\n    return [torch.rand(8)]\n"
        "def get_init_inputs():\n    return []\n")
    w = load_kernelbench(f).workloads[0]
    assert [s.shape for s in w.inputs] == [(8,)] and w.outputs == () and w.flops is None and w.min_bytes is None


GOOD_TAIL = "def get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n"


@pytest.mark.parametrize("source, problem", [
    ("import torch\n" + GOOD_TAIL, "must define Model at top level"),
    ("class Model:\n    pass\ndef get_inputs():\n    return []\n", "must define get_init_inputs"),
    ("class Model:\n    pass\n" + GOOD_TAIL + "def broken(:\n", r"broken.py:\d+: syntax error"),
    ("import not_a_module_kernelarc\nclass Model:\n    pass\n" + GOOD_TAIL, "importing it failed: ModuleNotFoundError"),
])
def test_malformed_files_raise_task_errors(tmp_path, source, problem):
    f = tmp_path / "broken.py"
    f.write_text(source)
    with pytest.raises(TaskError, match=problem) as info:
        load_task(f)
    assert str(f) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("name, problem", [("missing.py", "not found"), ("task.txt", "no such file"),
                                           ("exists.txt", "KernelBench .py file or a SOL-ExecBench problem dir")])
def test_paths_that_are_not_tasks(tmp_path, name, problem):
    (tmp_path / "exists.txt").write_text("x")
    with pytest.raises(TaskError, match=problem):
        load_task(tmp_path / name)


_RELU = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(4, 8, dtype=torch.bfloat16)]
def get_init_inputs():
    return []
"""


def test_a_declared_tolerance_replaces_the_per_dtype_rule(tmp_path):
    plain, declared = tmp_path / "plain.py", tmp_path / "declared.py"
    plain.write_text(_RELU)
    declared.write_text(_RELU + "KERNELARC_TOLERANCE = {'atol': 0.01, 'rtol': 0.01, 'required_matched_ratio': 0.9999}\n")
    assert load_kernelbench(plain).workloads[0].tolerance_for(0, "bfloat16", TaskFormat.KERNELBENCH).required_matched_ratio == 1.0
    tol = load_kernelbench(declared).workloads[0].tolerance_for(0, "bfloat16", TaskFormat.KERNELBENCH)
    assert (tol.atol, tol.rtol, tol.required_matched_ratio) == (0.01, 0.01, 0.9999)


def test_a_malformed_declared_tolerance_is_a_task_error(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text(_RELU + "KERNELARC_TOLERANCE = {'atol': -1, 'rtol': 0.01}\n")
    with pytest.raises(TaskError, match="KERNELARC_TOLERANCE is not a tolerance"):
        load_kernelbench(f)
