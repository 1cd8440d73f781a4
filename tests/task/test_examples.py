"""The example tasks load, run fast on the CPU, and their candidates match their references."""

import json
import os
import time

import pytest
import torch

from kernelarc.task import TaskFormat, TaskRuntime, load_task
from kernelarc.task.execute import load_module

KB_PAIRS = [
    ("relu_small", "relu_small_triton"),
    ("gemm_bias_gelu_small", "gemm_bias_gelu_small_torch"),
    ("slow_sum", "slow_sum_torch"),
    ("softmax_small", None),
]


def _close(out, ref, tol):
    return out.shape == ref.shape and out.dtype == ref.dtype and torch.allclose(out.float(), ref.float(), atol=tol, rtol=tol)


@pytest.mark.parametrize("reference, candidate", KB_PAIRS)
def test_kernelbench_examples_and_candidates(examples_dir, reference, candidate):
    if candidate and "triton" in candidate and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("Triton on the CPU needs TRITON_INTERPRET=1")
    task = load_task(examples_dir / "kernelbench" / f"{reference}.py")
    runtime, w = TaskRuntime(task, "cpu"), task.workloads[0]
    start = time.perf_counter()
    inputs = runtime.make_inputs(w, seed=3)
    expected = runtime.reference()(*inputs)
    assert time.perf_counter() - start < 1.0
    assert [tuple(expected.shape)] == [s.shape for s in w.outputs]
    if candidate:
        path = examples_dir / "kernelbench" / f"{candidate}.py"
        model_new = runtime.build_module(load_module(path.read_text(), str(path), candidate).ModelNew)
        tol = w.tolerance_for(0, w.outputs[0].dtype, TaskFormat.KERNELBENCH).atol
        assert _close(model_new(*inputs), expected, tol)


def test_sol_example_solutions_match_the_reference(examples_dir):
    root = examples_dir / "sol" / "rmsnorm_small"
    task = load_task(root)
    assert len(task.workloads) == 3 and {s.kind for s in task.workloads[0].inputs} == {"random", "scalar"}
    returning = load_module((root / "solution_torch.py").read_text(), str(root / "solution_torch.py"), "sol")
    solution = json.loads((root / "solution.json").read_text())
    assert solution["definition"] == task.name and solution["spec"]["destination_passing_style"] is True
    file, function = solution["spec"]["entry_point"].split("::")
    source = next(s["content"] for s in solution["sources"] if s["path"] == file)
    dps = getattr(load_module(source, file, "dps"), function)
    runtime = TaskRuntime(task, "cpu")
    for w in task.workloads:
        inputs = runtime.make_inputs(w, seed=5)
        expected = runtime.reference()(*inputs)
        written = torch.empty_like(expected)
        dps(*inputs, written)
        tol = w.tolerance[0].atol
        assert _close(returning.run(*inputs), expected, tol) and _close(written, expected, tol)
