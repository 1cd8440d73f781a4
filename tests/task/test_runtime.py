import pytest
import torch
import torch.nn as nn

from kernelarc.task import TaskRuntime, load_task
from kernelarc.task.execute import load_module


@pytest.fixture
def gemm(examples_dir):
    task = load_task(examples_dir / "kernelbench" / "gemm_bias_gelu_small.py")
    return task, TaskRuntime(task, "cpu")


def _candidate(path):
    return load_module(path.read_text(), str(path), path.stem)


def test_model_new_built_in_the_same_order_gets_the_reference_weights(gemm, examples_dir):
    task, runtime = gemm
    model_new = runtime.build_module(_candidate(examples_dir / "kernelbench" / "gemm_bias_gelu_small_torch.py").ModelNew)
    reference = runtime.reference()
    assert runtime.reference() is reference  # built once per runtime
    ref_state, new_state = reference.state_dict(), model_new.state_dict()
    assert set(ref_state) == set(new_state) and all(torch.equal(ref_state[k], new_state[k]) for k in ref_state)


def test_a_module_created_in_another_order_gets_other_weights(gemm):
    _, runtime = gemm

    class Reordered(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.extra = nn.Linear(in_features, out_features)
            self.linear = nn.Linear(in_features, out_features)

    built = runtime.build_module(Reordered)
    assert not torch.equal(built.linear.weight, runtime.reference().linear.weight)


def test_kernelbench_inputs_are_seeded_and_leave_the_global_rng_alone(gemm):
    task, runtime = gemm
    w = task.workloads[0]
    torch.manual_seed(5)
    expected_next = torch.rand(3)
    torch.manual_seed(5)
    first = runtime.make_inputs(w, seed=11)
    assert torch.equal(torch.rand(3), expected_next)
    assert torch.equal(first[0], runtime.make_inputs(w, seed=11)[0])
    assert not torch.equal(first[0], runtime.make_inputs(w, seed=12)[0])
    with torch.random.fork_rng():
        torch.manual_seed(11)
        assert torch.equal(first[0], torch.randn(64, 128))  # exactly what KernelBench's get_inputs draws


def test_init_inputs_and_output_lists(gemm, examples_dir):
    _, runtime = gemm
    assert runtime.init_inputs() == [128, 128]
    t = torch.zeros(2)
    assert TaskRuntime.as_output_list(t) == [t]
    assert TaskRuntime.as_output_list((t, 3)) == [t, 3]
    assert TaskRuntime.as_output_list([t]) == [t]
    assert TaskRuntime.as_output_list(3.0) == [3.0]
    sol = TaskRuntime(load_task(examples_dir / "sol" / "rmsnorm_small"), "cpu")
    assert sol.init_inputs() == []
    with pytest.raises(ValueError, match="SOL-ExecBench task"):
        sol.build_module(nn.Linear)


def test_sol_reference_is_run_and_produces_the_declared_output(examples_dir):
    task = load_task(examples_dir / "sol" / "rmsnorm_small")
    runtime = TaskRuntime(task, "cpu")
    for w in task.workloads:
        out = runtime.as_output_list(runtime.reference()(*runtime.make_inputs(w, seed=0)))
        assert [(tuple(o.shape), str(o.dtype)) for o in out] == [(s.shape, f"torch.{s.dtype}") for s in w.outputs]


def test_reference_source_from_json_is_inspectable(make_problem):
    """Triton's @jit reads its function's source back; references from definition.json must allow it."""
    import inspect

    from .problems import base_definition

    task = load_task(make_problem(base_definition()))
    assert "return x + y" in inspect.getsource(TaskRuntime(task, "cpu").reference())


class _WhereBuilt(nn.Module):
    """Records the device its __init__'s factory calls land on."""

    def __init__(self, in_features, out_features, host_only=False):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.drawn_on = torch.empty(1).device.type
        if host_only:
            torch.empty(1).numpy()  # works on the host only


class _HostOnly(_WhereBuilt):
    def __init__(self, *init):
        super().__init__(*init, host_only=True)


def test_weights_are_drawn_on_the_device_and_every_side_builds_where_the_reference_did(gemm):
    """Off the CPU the first build decides where weights are drawn (the device where construction works
    there); a runtime told the reference's choice builds the same way, even where another way would work."""
    task, _ = gemm
    reference_side = TaskRuntime(task, "meta")  # a device without memory: the choice is made as on CUDA
    assert reference_side.build_module(_WhereBuilt).drawn_on == "meta" and reference_side.init_on_device is True
    fallback = TaskRuntime(task, "meta")
    built = fallback.build_module(_HostOnly)
    assert built.drawn_on == "cpu" and fallback.init_on_device is False and built.linear.weight.device.type == "meta"
    told = TaskRuntime(task, "meta", init_on_device=False)
    assert told.build_module(_WhereBuilt).drawn_on == "cpu"
    assert TaskRuntime(task, "cpu").build_module(_WhereBuilt).drawn_on == "cpu"  # the CPU: as KernelBench builds
    with pytest.raises(TypeError):  # told to build on the device, a module that cannot fails (its own fault)
        TaskRuntime(task, "meta", init_on_device=True).build_module(_HostOnly)
