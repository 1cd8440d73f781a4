import json

import pytest

from kernelarc.errors import TaskError
from kernelarc.task import SOL_DEFAULT_TOLERANCE, TaskFormat, TaskRuntime, load_sol, load_task

from .problems import ADD_REFERENCE, base_definition

SOL_PROBLEMS = ["allenai_Olmo-3-1025-7B_post_norm_residual", "flux_rope",
                "google_gemma-3-12b-it_gemma3_fused_gate_up_projection_with_swiglu",
                "gqa_paged_decode_h32_kv8_d128_ps1", "linear_backward", "rmsnorm"]


@pytest.fixture
def sol_dir(shared_dir):
    return shared_dir / "sol_examples"


@pytest.mark.parametrize("problem", SOL_PROBLEMS)
def test_every_shared_problem_loads_with_concrete_specs(sol_dir, problem):
    task = load_task(sol_dir / problem)
    definition = json.loads((sol_dir / problem / "definition.json").read_text())
    assert task.format is TaskFormat.SOL and task.rounds == 10
    assert task.input_names == tuple(definition["inputs"]) and task.output_names == tuple(definition["outputs"])
    assert task.definition == definition and task.reference_source == definition["reference"]
    for w in task.workloads:
        assert [s.name for s in w.inputs] == list(definition["inputs"])
        for spec, decl in zip(w.inputs + w.outputs, [*definition["inputs"].values(), *definition["outputs"].values()]):
            assert spec.dtype == decl["dtype"]
            assert (spec.shape is None) == (decl["shape"] is None)
            if spec.shape is not None:
                assert len(spec.shape) == len(decl["shape"]) and all(isinstance(d, int) for d in spec.shape)
        assert len(w.tolerance) == len(w.outputs)
        assert w.min_bytes == sum(s.nbytes for s in w.inputs + w.outputs)


def test_scalar_input_keeps_its_value_and_is_a_python_scalar(sol_dir):
    task = load_sol(sol_dir / "allenai_Olmo-3-1025-7B_post_norm_residual")
    w = task.workloads[0]
    eps = w.inputs[-1]
    assert (eps.name, eps.kind, eps.shape, eps.value) == ("eps", "scalar", None, 1e-6)
    assert w.axes == {"batch_size": 1, "seq_len": 128, "hidden_size": 4096}
    inputs = TaskRuntime(task, "cpu").make_inputs(w, seed=0)
    assert inputs[-1] == 1e-6 and tuple(inputs[0].shape) == (1, 128, 4096)
    assert w.flops == 0.0  # no matmul-class work, but counted


def test_expr_axis_is_resolved_per_workload(sol_dir):
    task = load_sol(sol_dir / "flux_rope")
    assert all(w.axes["half_head_dim"] == 64 for w in task.workloads)


def test_gemm_problem_counts_flops(sol_dir):
    task = load_sol(sol_dir / "google_gemma-3-12b-it_gemma3_fused_gate_up_projection_with_swiglu")
    w = task.workloads[0]  # two (128 x 3072) @ (3072 x 24576) products
    assert w.flops == 2 * 2 * 128 * 3072 * 24576


def test_custom_entrypoint_builds_every_input(sol_dir):
    task = load_sol(sol_dir / "linear_backward")
    assert task.custom_inputs_entrypoint == "generate_inputs"
    w = task.workloads[0]
    assert {s.kind for s in w.inputs} == {"custom"}
    runtime = TaskRuntime(task, "cpu")
    first, again, other = (runtime.make_inputs(w, seed) for seed in (1, 1, 2))
    assert [tuple(t.shape) for t in first] == [s.shape for s in w.inputs]
    assert all((a == b).all() for a, b in zip(first, again))
    assert not (first[0] == other[0]).all()
    grad_input, grad_weight = runtime.as_output_list(runtime.reference()(*first))
    assert tuple(grad_input.shape) == w.outputs[0].shape and tuple(grad_weight.shape) == w.outputs[1].shape


def test_safetensors_problem_loads_but_missing_blob_is_a_clear_error(sol_dir):
    task = load_sol(sol_dir / "gqa_paged_decode_h32_kv8_d128_ps1")
    w = task.workloads[1]
    assert [s.kind for s in w.inputs] == ["random", "random", "random", "safetensors", "safetensors", "scalar"]
    assert w.tolerance[0].allow_negative_inf and w.tolerance[0].atol == 0.01
    assert w.flops is None  # the reference calls .item(): not countable on meta tensors
    with pytest.raises(TaskError, match=r"input 'kv_indptr': safetensors file .*\.safetensors not found"):
        TaskRuntime(task, "cpu").make_inputs(w, seed=0)


def test_safetensors_input_is_loaded_relative_to_the_problem_dir(make_problem):
    import torch
    from safetensors.torch import save_file

    definition = base_definition()
    definition["inputs"]["y"]["dtype"] = "int32"
    root = make_problem(definition, [{"uuid": "w", "axes": {"n": 3}, "inputs": {
        "y": {"type": "safetensors", "path": "blobs/y.safetensors", "tensor_key": "y"}}}])
    (root / "blobs").mkdir()
    save_file({"y": torch.tensor([1, 2, 3], dtype=torch.int32)}, str(root / "blobs" / "y.safetensors"))
    task = load_sol(root)
    x, y = TaskRuntime(task, "cpu").make_inputs(task.workloads[0], seed=0)
    assert y.tolist() == [1, 2, 3] and x.shape == (3,)


def test_tolerance_defaults_and_overrides(make_problem):
    root = make_problem(workloads=[
        {"uuid": "plain", "axes": {"n": 4}},
        {"uuid": "loose", "axes": {"n": 4}, "tolerance": {"max_atol": 0.1, "max_error_cap": 1.0}},
    ])
    plain, loose = load_sol(root).workloads
    assert plain.tolerance == (SOL_DEFAULT_TOLERANCE,)
    assert SOL_DEFAULT_TOLERANCE.required_matched_ratio == 0.99
    assert (loose.tolerance[0].atol, loose.tolerance[0].rtol, loose.tolerance[0].max_error_cap) == (0.1, 0.01, 1.0)
    assert loose.tolerance[0].required_matched_ratio == 0.99 and not loose.tolerance[0].allow_negative_inf


@pytest.mark.parametrize("definition, workloads, problem", [
    ("{not json", None, r"definition.json: invalid JSON at line 1"),
    (base_definition(inputs={"x": {"shape": ["n"], "dtype": "float33"}, "y": {"shape": ["n"], "dtype": "float32"}}),
     None, r"definition.json: input 'x' has unknown dtype 'float33'"),
    (base_definition(reference="def run(y, x):\n    return x + y\n"), None, r"run\(y, x\) must take the inputs in order: \(x, y\)"),
    (base_definition(reference="def forward(x, y):\n    return x\n"), None, "defines no top-level function 'run'"),
    (base_definition(reference="def run(x, y)\n"), None, "reference does not parse: line 1"),
    (base_definition(outputs={"x": {"shape": ["n"], "dtype": "float32"}}), None, r"names \['x'\] are both inputs and outputs"),
    (base_definition(axes={"n": {"type": "var"}, "x": {"type": "const", "value": 2}}), None, r"input names \['x'\] are also axis names"),
    (base_definition(axes={"n": {"type": "expr", "expression": "n + 1"}}), None, "cycle"),
    (base_definition(inputs={"x": {"shape": ["m"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}}),
     None, "shape entry 'm' is neither an axis name nor a number"),
    (base_definition(custom_inputs_entrypoint="make"), None, "custom_inputs_entrypoint 'make' is not a top-level function"),
    (base_definition(name=""), None, "field 'name' must be a non-empty string"),
    (None, ["{bad"], r"workload.jsonl:1: invalid JSON"),
    (None, [{"uuid": "w", "axes": {}}], r"workload.jsonl:1 \(w\): var axis 'n' has no value"),
    (None, [{"uuid": "w", "axes": {"n": 2}, "inputs": {"q": {"type": "random"}}}], "input 'q' is not declared"),
    (None, [{"uuid": "w", "axes": {"n": 2}, "inputs": {"x": {"type": "zeros"}}}], "input 'x' has type 'zeros'"),
    (None, [{"uuid": "w", "axes": {"n": 2}, "inputs": {"x": {"type": "scalar"}}}], "scalar input 'x' needs a numeric"),
    (None, [{"uuid": "w", "axes": {"n": 2}, "inputs": {"x": {"type": "custom"}, "y": {"type": "random"}}}],
     r"custom inputs \['x'\] cannot be mixed"),
    (None, [{"uuid": "w", "axes": {"n": 2}, "inputs": {"x": {"type": "custom"}, "y": {"type": "custom"}}}],
     "need the definition's custom_inputs_entrypoint"),
    (None, [{"uuid": "w", "axes": {"n": 2}, "tolerance": {"atol": 1}}], "tolerance must be an object with keys"),
    (None, [{"uuid": "w", "axes": {"n": 2}, "tolerance": {"max_atol": -1}}], "bad tolerance"),
    (None, [{"uuid": "w", "axes": {"n": 2}}, {"uuid": "w", "axes": {"n": 3}}], r"uuids must be unique, got \['w'\]"),
    (None, [], "no workloads"),
    (base_definition(reference="import not_a_module_kernelarc\n" + ADD_REFERENCE), None,
     "reference failed to import: ModuleNotFoundError"),
])
def test_malformed_problems_raise_one_line_task_errors(make_problem, definition, workloads, problem):
    root = make_problem(definition, workloads)
    with pytest.raises(TaskError, match=problem) as info:
        load_task(root)
    assert "\n" not in str(info.value) and str(root) in str(info.value)


def test_missing_workload_file_is_named(make_problem):
    root = make_problem()
    (root / "workload.jsonl").unlink()
    with pytest.raises(TaskError, match=r"workload.jsonl: not found"):
        load_sol(root)


def test_dir_without_definition_is_not_a_task(tmp_path):
    with pytest.raises(TaskError, match="needs definition.json"):
        load_task(tmp_path)
