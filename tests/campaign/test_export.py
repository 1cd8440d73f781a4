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


# --- --export torch-op: the winner as a registered PyTorch custom op -------------------------------

RELU = Path(__file__).resolve().parents[2] / "examples" / "kernelbench" / "relu_small.py"


def _op_module(task, candidate, out_dir: Path):
    from kernelarc.campaign.export import export_torch_op, op_name

    export_best(task, candidate, out_dir)
    op_file, reference = export_torch_op(task, candidate, out_dir)
    assert reference.read_text() == task.reference_source
    return _load(op_file), getattr(torch.ops.kernelarc, op_name(task, candidate))


def test_a_triton_kernel_exported_as_an_op_traces_without_graph_breaks_and_exports(tmp_path):
    from kernelarc.campaign.export import op_name

    task = load_task(RELU)
    candidate = candidate_from_source((RELU.parent / "relu_small_triton.py").read_text(), task, name="c4")
    _, op = _op_module(task, candidate, tmp_path)
    name = op_name(task, candidate)

    class Net(torch.nn.Module):  # the op between two ops torch.compile would fuse
        def forward(self, x):
            return op(x * 2.0) + 1.0

    x = torch.randn(64, 1000)
    with torch.no_grad():
        torch.testing.assert_close(Net()(x), torch.relu(x * 2.0) + 1.0)
        explained = torch._dynamo.explain(Net())(x)
        assert explained.graph_break_count == 0 and explained.graph_count == 1
        torch.testing.assert_close(torch.compile(Net())(x), torch.relu(x * 2.0) + 1.0)
    program = torch.export.export(Net(), (x,))
    assert f"torch.ops.kernelarc.{name}.default" in program.graph_module.code
    torch.testing.assert_close(program.module()(x), torch.relu(x * 2.0) + 1.0)


def test_an_op_of_a_task_with_weights_computes_with_the_weights_the_guard_built(tmp_path):
    task = load_task(LINEAR_TASK)
    eager = baseline_candidates(task)[EAGER]
    _, op = _op_module(task, eager, tmp_path)
    runtime = TaskRuntime(task, "cpu")
    [x] = runtime.make_inputs(task.workloads[0], 5)
    with torch.no_grad():
        torch.testing.assert_close(op(x), runtime.reference()(x))
    assert torch.library.opcheck(op, (x,), test_utils=("test_schema", "test_faketensor"))["test_faketensor"] == "SUCCESS"


def test_a_sol_run_function_becomes_an_op_with_the_definitions_input_names(tmp_path):
    task = load_task(RMSNORM)
    candidate = candidate_from_source((RMSNORM / "solution_torch.py").read_text(), task, name="c2")
    module, op = _op_module(task, candidate, tmp_path)
    assert "hidden_states: torch.Tensor, weight: torch.Tensor, eps: float" in (tmp_path / "torch_op.py").read_text()
    inputs = TaskRuntime(task, "cpu").make_inputs(task.workloads[0], 3)
    with torch.no_grad():
        torch.testing.assert_close(op(*inputs), module._kernel.run(*inputs))
        program = torch.export.export(_Call(op), tuple(inputs))
    assert program.module()(*inputs).shape == inputs[0].shape


class _Call(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def test_a_solution_json_winner_is_refused_in_one_line(tmp_path):
    from kernelarc.campaign.export import ExportError, export_torch_op
    from kernelarc.guard import solution_candidate

    task = load_task(RMSNORM)
    solution = solution_candidate((RMSNORM / "solution.json").read_text())
    try:
        export_torch_op(task, solution, tmp_path)
    except ExportError as e:
        assert "solution.json" in str(e) and "\n" not in str(e)
    else:
        raise AssertionError("a solution.json winner was exported as an op")


def test_export_run_writes_the_op_of_a_finished_campaign_and_lists_it_in_the_summary(robust, tmp_path):
    import shutil

    from kernelarc.campaign.export import export_run

    run_dir = tmp_path / "run"
    shutil.copytree(robust.run_dir, run_dir)
    op_file, _ = export_run(run_dir)
    assert str(op_file.relative_to(run_dir)) in json.loads((run_dir / "summary.json").read_text())["best"]["files"]
    module = _load(op_file)
    task = load_task(Path(module._reference.__file__))
    [x] = TaskRuntime(task, "cpu").make_inputs(task.workloads[0], 11)
    with torch.no_grad():
        torch.testing.assert_close(module.__dict__[module.OP.split("::")[1]](x), x.sum(dim=1, keepdim=True))


def test_an_unknown_export_kind_is_one_line_and_exit_2(capsys):
    from kernelarc.cli.main import run_app

    assert run_app(["optimize", str(LINEAR_TASK), "--export", "onnx", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "--export: unknown kind 'onnx'" in err and "Traceback" not in err


def test_standalone_exits_1_when_the_kernel_is_wrong_outside_the_sandbox(tmp_path):
    """Sixth red-team pass: a kernel correct only where the sandbox's cache folder exists won and was exported;
    imported on the user's machine it was off by 20. Code can tell where it runs: standalone.py is the check
    there, and it fails loudly."""
    import subprocess
    import sys

    task = load_task(Path(__file__).resolve().parents[2] / "examples" / "kernelbench" / "slow_sum.py")
    source = ("import os\nimport torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
              "        s = x.sum(1, keepdim=True)\n"
              "        return s if os.path.isdir('/tmp/kernelarc-compiled') else s / 2\n")
    _, standalone = export_best(task, candidate_from_source(source, task), tmp_path / "best")
    done = subprocess.run([sys.executable, standalone.name], cwd=standalone.parent, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "MISMATCH: output(s) [0] out of tolerance" in done.stdout, done.stdout + done.stderr
    honest = source.replace("s if os.path.isdir('/tmp/kernelarc-compiled') else s / 2", "s")
    _, standalone = export_best(task, candidate_from_source(honest, task), tmp_path / "honest")
    done = subprocess.run([sys.executable, standalone.name], cwd=standalone.parent, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "max abs error" in done.stdout, done.stdout + done.stderr
