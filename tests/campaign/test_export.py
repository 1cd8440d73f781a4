"""best/ says what the winner is: a baseline exported as that baseline in a form KernelBench's checker
accepts, a SOL-ExecBench solution named after the task and the candidate, and no solution.json for a
kernel that SOL-ExecBench's evaluator would refuse."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import torch

from kernelarc.campaign.baselines import COMPILE, EAGER, baseline_candidates
from kernelarc.campaign.export import export_best, rename, which_baseline
from kernelarc.guard import candidate_from_source
from kernelarc.task.loader import load_task
from kernelarc.task.runtime import TaskRuntime

from campaign.runs import RMSNORM

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
LINEAR_TASK = TASKS / "builtin_gemm_gelu_layernorm.py"  # has parameters: weights must come out the same


def _model_new_bases(source: str) -> list[str]:
    tree = ast.parse(source)
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"]
    return [ast.unparse(b) for b in cls.bases]


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"exported_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_eager_winner_is_the_reference_renamed_and_computes_the_same(tmp_path):
    task = load_task(LINEAR_TASK)
    eager = baseline_candidates(task)[EAGER]
    assert which_baseline(task, eager) == EAGER
    module_path, _ = export_best(task, eager, tmp_path)
    source = module_path.read_text()
    assert _model_new_bases(source) == ["nn.Module"] and "class Model(" not in source
    module = _load(module_path)
    runtime = TaskRuntime(task, "cpu")
    inputs = runtime.make_inputs(task.workloads[0], 3)
    want = runtime.reference()(*inputs)
    got = runtime.build_module(module.ModelNew)(*inputs)
    torch.testing.assert_close(got, want)


def test_a_compile_winner_holds_the_compiled_reference_not_a_subclass(tmp_path):
    task = load_task(LINEAR_TASK)
    compiled = baseline_candidates(task)[COMPILE]
    assert which_baseline(task, compiled) == COMPILE
    module_path, _ = export_best(task, compiled, tmp_path)
    source = module_path.read_text()
    assert _model_new_bases(source) == ["torch.nn.Module"] and "torch.compile(self.reference)" in source


def test_an_agent_kernel_is_exported_as_written(tmp_path):
    task = load_task(LINEAR_TASK)
    text = task.reference_source + "\n\nclass ModelNew(nn.Module):\n    pass\n"
    candidate = candidate_from_source(text, task, name="c7")
    assert which_baseline(task, candidate) is None
    module_path, _ = export_best(task, candidate, tmp_path)
    assert module_path.read_text() == text


def test_sol_solutions_are_named_after_the_task_and_the_candidate(tmp_path):
    task = load_task(RMSNORM)
    agent = candidate_from_source((RMSNORM / "solution_torch.py").read_text(), task, name="c12")
    solution = json.loads(export_best(task, agent, tmp_path / "agent")[0].read_text())
    assert solution["name"] == f"{task.name}_kernelarc_c12" and solution["description"].startswith("Found by kernelarc")
    assert solution["spec"]["languages"] == ["pytorch"]
    eager = baseline_candidates(task)[EAGER]
    solution = json.loads(export_best(task, eager, tmp_path / "eager")[0].read_text())
    assert solution["name"] == f"{task.name}_baseline_eager"
    assert solution["description"].startswith("Not found by kernelarc: PyTorch eager")


def test_a_load_inline_kernel_gets_no_solution_json_and_says_why(tmp_path):
    task = load_task(RMSNORM)
    source = ("import torch\nfrom torch.utils.cpp_extension import load_inline\n\n"
              "def run(hidden_states, weight):\n    return hidden_states\n")
    files = export_best(task, candidate_from_source(source, task, name="c3"), tmp_path)
    assert [f.name for f in files] == ["kernel.py", "NOT_EXPORTED.txt"]
    assert not (tmp_path / "solution.json").exists()
    assert "load_inline" in (tmp_path / "NOT_EXPORTED.txt").read_text()


def test_rename_leaves_strings_and_comments_alone():
    source = 'class Model:  # Model here\n    name = "Model"\n\nm = Model()\nModelX = 1\n'
    assert rename(source, "Model", "ModelNew") == (
        'class ModelNew:  # Model here\n    name = "Model"\n\nm = ModelNew()\nModelX = 1\n')
