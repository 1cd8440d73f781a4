"""`kernelarc model` on a tiny two-layer decoder (decoder.py): regions, capture, one line for what
cannot be captured, and (slow) the whole pipeline through the CLI with the built-in agents on the
CPU, the patched model checked in process: its outputs, torch.compile without graph breaks, torch.export."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

from kernelarc.cli.main import run_app
from kernelarc.cli.model_cmd import overall_line
from kernelarc.model.capture import CaptureError, capture, task_source
from kernelarc.model.pipeline import _regions, _unpatched
from kernelarc.model.report import render_markdown
from kernelarc.model.regions import profile, region_paths
from kernelarc.task.loader import load_task
from kernelarc.task.runtime import TaskRuntime

from memory.factories import keep, reject

DECODER = Path(__file__).with_name("decoder.py")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


decoder = _load(DECODER, "kernelarc_test_decoder")


class Routed(torch.nn.Module):
    """A region with a data-dependent op, beside one that captures."""

    def __init__(self):
        super().__init__()
        self.router = Router()
        self.norm = decoder.RMSNorm(32)

    def forward(self, x):
        return self.norm(self.router(x))


class Router(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # control flow on a value: no graph without it
            return x * 2.0
        return x


def _profiled(model, inputs):
    return profile(model, inputs, region_paths(model), repeats=1)


def test_regions_are_each_blocks_norms_attention_and_mlp_not_their_linears():
    assert region_paths(decoder.Model()) == [
        f"layers.{i}.{part}" for i in range(2) for part in ("attn_norm", "attn", "mlp_norm", "mlp")] + ["norm"]


def test_identical_calls_share_one_task_and_shares_rank_them():
    model = decoder.Model()
    prof = _profiled(model, decoder.get_inputs())
    regions, failures = _regions(model, prof, lambda line: None)
    assert failures == []
    kinds = sorted((r.graph.call.kind, len(r.modules)) for r in regions)
    assert kinds == [("Attention", 2), ("MLP", 2), ("RMSNorm", 5)]
    assert [r.ms for r in regions] == sorted((r.ms for r in regions), reverse=True)
    assert sum(r.ms for r in regions) <= prof.model_ms


def test_a_region_task_computes_what_the_module_computes_with_the_weights_as_inputs(tmp_path):
    model = decoder.Model()
    prof = _profiled(model, decoder.get_inputs())
    call = next(c for c in prof.calls if c.path == "layers.1.mlp")
    graph = capture(call, model.get_submodule(call.path))
    assert [(i.source, i.key) for i in graph.inputs] == [
        ("arg", "0"), ("parameter", "gate.weight"), ("parameter", "up.weight"), ("parameter", "down.weight")]
    path = tmp_path / "mlp_layers_1_mlp.py"
    path.write_text(task_source(graph, "decoder"))
    task = load_task(path)
    assert [s.shape for s in task.workloads[0].inputs] == [(2, 8, 32), (64, 32), (64, 32), (32, 64)]
    region = TaskRuntime(task, "cpu").reference()
    module = model.get_submodule(call.path)
    with torch.no_grad():
        torch.testing.assert_close(region(call.args[0], module.gate.weight, module.up.weight, module.down.weight),
                                   module(call.args[0]))


def test_a_region_that_cannot_be_captured_is_one_line_naming_its_op_and_the_rest_goes_on():
    model = Routed()
    x = torch.randn(2, 8, 32)
    regions, failures = _regions(model, _profiled(model, [x]), lambda line: None)
    [failure] = failures
    assert failure["module"] == "router" and "\n" not in failure["error"]
    assert "test_model.py" in failure["error"] and "`if x.sum() > 0:" in failure["error"]
    assert [r.modules for r in regions] == [["norm"]]
    with pytest.raises(CaptureError):
        capture(next(c for c in _profiled(model, [x]).calls if c.path == "router"), model.router)


def test_with_nothing_swapped_the_model_is_reported_beside_torch_compile_of_it():
    """The Llama stack on the H200: torch.compile won every region, so nothing was swapped in; the run
    still says what the model as it is runs at beside torch.compile of the whole model."""
    compiled = keep(speedup=1.25, latency_ms=8.0).model_dump(mode="json")  # compile 8 ms, the model 10 ms
    overall = _unpatched(compiled)
    assert overall["swapped"] == 0 and overall["correct"] and overall["speedup_vs_eager"] is None
    assert overall["eager_ms"] == pytest.approx(10.0) and overall["compile_ms"] == pytest.approx(8.0)
    assert overall["speedup_vs_compile"] == pytest.approx(0.8)
    summary = {"target": "stack", "device": "cuda:0", "overall": overall, "regions": [],
               "profile": {"model_ms": 10.0, "method": "m", "uncaptured": []}}
    assert "runs 0.800x torch.compile's speed" in overall_line(summary)
    assert "0.800x torch.compile's speed" in render_markdown(summary)
    failed = _unpatched(reject("INCORRECT_NUMERICAL: 4 of 33554432 elements out of tolerance").model_dump(mode="json"))
    summary["overall"] = failed
    assert failed["compile_ms"] is None and failed["speedup_vs_compile"] is None
    assert "torch.compile of it was not timed (INCORRECT_NUMERICAL: INCORRECT_NUMERICAL: 4 of" in overall_line(summary)
    assert "was not timed" in render_markdown(summary)


@pytest.mark.parametrize("args, message", [
    (["nope.py"], "not found"),
    ([str(DECODER), "--input-shapes", "2xeight"], "--input-shapes: cannot read '2xeight'"),
    ([str(DECODER), "--dtype", "fp12"], "--dtype: unknown dtype 'fp12'"),
    (["json:dumps"], "needs --input-shapes"),
    ([str(DECODER), "--swap", "some"], "--swap: use faster or all"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, capsys):
    assert run_app(["model", *args, "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.heavy
def test_the_whole_pipeline_swaps_the_ops_in_and_the_patched_model_traces_and_matches(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = run_app(["model", str(DECODER), "--top", "2", "--agents", "2", "--budget", "2", "--swap", "all",
                    "--device", "cpu", "--no-compile-baseline", "--rounds", "2", "--time-limit", "90",
                    "--fresh-memory", "--out", str(run_dir)])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((run_dir / "model_summary.json").read_text())
    rows = summary["regions"]
    assert [r["ms"] for r in rows] == sorted((r["ms"] for r in rows), reverse=True)
    assert sum(r["share"] for r in rows) <= 1.0 and all(r["amdahl_bound"] >= 1.0 for r in rows)
    optimized = rows[:2]
    assert all((run_dir / r["campaign"] / "summary.json").is_file() for r in optimized)
    swapped = [r for r in optimized if r["swapped"]]
    assert swapped, [r["note"] for r in optimized]
    overall = summary["overall"]
    assert overall["measured"] and overall["correct"], overall["reason"]
    assert overall["max_abs_error"] is not None and overall["speedup_vs_eager"] is not None
    assert all(r.get("e2e_speedup") is not None for r in swapped)
    err = capsys.readouterr().err
    assert "region speedup" in err and "whole model (cpu_wall" in err
    assert "| Attention |" in (run_dir / "model_summary.md").read_text()

    # the user's side: patch.py on a model built as the run built it, fresh inputs
    task = load_task(run_dir / summary["model_task"])
    runtime = TaskRuntime(task, "cpu")
    original = runtime.reference()
    patched = runtime.build_module(type(original))
    patch = _load(run_dir / "patch.py", "kernelarc_test_patch")
    patch.apply(patched)
    [x] = runtime.make_inputs(task.workloads[0], 1234)
    with torch.no_grad():
        torch.testing.assert_close(patched(x), original(x), atol=1e-4, rtol=1e-4)
        explained = torch._dynamo.explain(patched)(x)
        assert explained.graph_break_count == 0
        program = torch.export.export(patched, (x,))
    code = program.graph_module.code
    assert all(f"torch.ops.kernelarc.{r['op']}.default" in code for r in swapped)
    torch.testing.assert_close(program.module()(x), original(x), atol=1e-4, rtol=1e-4)
