"""The shipped suites load (meta shapes only, nothing allocated) and suite discovery refuses bad folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelarc.bench.suite import SuiteError, discover
from kernelarc.task import load_task

SUITES = Path(__file__).resolve().parents[2] / "bench" / "suites"
H200 = SUITES / "h200"


def test_h200_suite_has_twelve_tasks_or_more_each_listed_in_its_readme():
    tasks = discover(H200)
    readme = (H200 / "README.md").read_text()
    assert len(tasks) >= 12
    assert [t.name for t in tasks if f"| {t.name} |" not in readme] == []


@pytest.mark.parametrize("entry", discover(H200), ids=lambda t: t.name)
def test_h200_task_loads_on_meta_with_its_cost(entry):
    task = load_task(entry.path)
    (workload,) = task.workloads
    assert workload.inputs and workload.outputs, "specs must be inferable on meta tensors"
    assert workload.flops is not None and workload.min_bytes, (workload.flops, workload.min_bytes)
    assert task.description and task.path.read_text().startswith('"""')
    working_set = sum(s.nbytes for s in (*workload.inputs, *workload.outputs))
    assert working_set < 4 << 30, f"{entry.name}: inputs + outputs {working_set / 1e9:.2f} GB"


def test_h200_tasks_are_bf16_where_the_brief_says_so():
    dtypes = {t.name: {s.dtype for s in load_task(t.path).workloads[0].inputs} for t in discover(H200)}
    for name in ("gemm_bf16_4096", "gemm_decode_skinny", "linear_bias_gelu", "swiglu_gate_up",
                 "attention_causal_residual", "rmsnorm_bf16", "layernorm_residual_bf16", "gemm_gelu_layernorm"):
        assert dtypes[name] == {"bfloat16"}, (name, dtypes[name])


def test_cpu_smoke_tasks_load():
    assert [t.name for t in discover(SUITES / "cpu_smoke")] == ["relu_tiny", "slow_rowsum"]


def test_discover_skips_private_files_and_filters_by_name(tmp_path):
    for name in ("b.py", "a.py", "_helper.py", "notes.md"):
        (tmp_path / name).write_text("")
    (tmp_path / "sol_problem").mkdir()
    (tmp_path / "sol_problem" / "definition.json").write_text("{}")
    (tmp_path / "not_a_problem").mkdir()
    assert [t.name for t in discover(tmp_path)] == ["a", "b", "sol_problem"]
    assert [t.name for t in discover(tmp_path, ["b"])] == ["b"]


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing", "is not a directory"),
    (lambda d: d, "holds no task"),
])
def test_discover_refuses_a_bad_suite(tmp_path, make, message):
    (tmp_path / "README.md").write_text("")
    with pytest.raises(SuiteError, match=message):
        discover(make(tmp_path))


def test_discover_names_unknown_tasks(tmp_path):
    (tmp_path / "a.py").write_text("")
    with pytest.raises(SuiteError, match="--tasks names nope, not in suite"):
        discover(tmp_path, ["a", "nope"])
