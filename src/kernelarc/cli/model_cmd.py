"""`kernelarc model TARGET`: profile a model, optimize its slowest regions, swap the winners in as
PyTorch custom ops, and judge the whole model before and after (kernelarc.model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.table import Table

from kernelarc.cli.app import EXIT_NO_CORRECT, EXIT_OK, MATCHED_HELP, TIMEOUT_HELP, TIMING_HELP, Timing, app, err_console, fail
from kernelarc.cli.optimize_cmd import _option_name, parse_backend_options


@app.command("model")
def model_command(
    target: Annotated[str, typer.Argument(metavar="TARGET", help="A .py file with Model, get_inputs, get_init_inputs (KernelBench style), or pkg.module:factory (factory() returns the nn.Module).")],
    input_shapes: Annotated[str | None, typer.Option("--input-shapes", help="Inputs in call order, comma-separated: DIMS[:DTYPE[:HIGH]], e.g. 4x2048x4096 or 4x2048:int64:32000 (required for a factory).")] = None,
    dtype: Annotated[str | None, typer.Option("--dtype", help="Cast the model and its floating inputs: bf16, fp16, fp32.")] = None,
    top: Annotated[int, typer.Option("--top", min=1, help="Regions (distinct tasks, slowest first) that get a campaign.")] = 3,
    budget: Annotated[int, typer.Option("--budget", min=1, help="Candidates per region campaign.")] = 20,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=1, help="Seconds per region campaign.")] = None,
    agents: Annotated[int, typer.Option("--agents", min=1, max=64, help="Agents per region campaign.")] = 4,
    swap: Annotated[str, typer.Option("--swap", help="faster: swap a region's winner in when it beat eager head to head; all: every region's best correct agent kernel (checks the pipeline, e.g. on a CPU).")] = "faster",
    backend: Annotated[str, typer.Option("--backend", help="Agent backend: builtin (offline), openai, anthropic, cli.")] = "builtin",
    model: Annotated[str | None, typer.Option("--model", help="LLM backends: the model name.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="LLM backends: the configuration file.")] = None,
    backend_option: Annotated[list[str], typer.Option("--backend-option", help="KEY=VALUE passed to the backend (repeatable).")] = [],  # noqa: B006
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:N.")] = "auto",
    out: Annotated[Path | None, typer.Option("--out", help="Run directory (default: runs/model-<target>).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every region campaign.")] = 0,
    no_compile_baseline: Annotated[bool, typer.Option("--no-compile-baseline", help="Skip torch.compile (region baselines and the whole-model comparison).")] = False,
    rounds: Annotated[int | None, typer.Option("--rounds", min=1, help="Correctness rounds per workload.")] = None,
    timing: Annotated[Timing, typer.Option("--timing", help=TIMING_HELP)] = Timing.auto,
    atol: Annotated[float | None, typer.Option("--atol", min=0, help="Absolute tolerance (regions and the whole model; default: per dtype).")] = None,
    rtol: Annotated[float | None, typer.Option("--rtol", min=0, help="Relative tolerance (regions and the whole model; default: per dtype).")] = None,
    matched_ratio: Annotated[float | None, typer.Option("--matched-ratio", min=0.001, max=1.0, help=MATCHED_HELP)] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help=TIMEOUT_HELP)] = None,
    fresh_memory: Annotated[bool, typer.Option("--fresh-memory", help="Ignore and do not add to the long-term memory.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print model_summary.json on stdout at the end.")] = False,
) -> int:
    """Find the slowest regions of TARGET's forward, optimize each, swap the winners in as custom ops."""
    from kernelarc.campaign import CampaignOptions
    from kernelarc.model import ModelOptions, load_target, run_model

    if swap not in ("faster", "all"):
        fail(f"--swap: use faster or all, not {swap!r}")
    loaded = load_target(target, input_shapes, dtype)
    try:
        campaign = CampaignOptions(
            agents=agents, backend=backend, backend_options=parse_backend_options(backend_option, model=model, config=config),
            budget=budget, time_limit_s=time_limit, longterm=not fresh_memory, device=device, seed=seed,
            compile_baseline=not no_compile_baseline, rounds=rounds, timing=timing.value, atol=atol, rtol=rtol, matched_ratio=matched_ratio,
            timeout_s=timeout)
    except ValidationError as e:
        error = e.errors()[0]
        fail(f"{_option_name(error['loc'][0])}: {error['msg']}, got {error['input']!r}")
    run_dir = out or Path("runs") / f"model-{loaded.name}"
    err_console.print(f"model [bold]{loaded.name}[/] -> {run_dir}: top {top} region(s), {agents} {backend} agent(s), "
                      f"budget {budget} each, device {device}", highlight=False)
    summary = run_model(loaded, campaign, ModelOptions(top=top, swap=swap), run_dir,
                        notify=lambda line: err_console.print(line, highlight=False, markup=False))
    err_console.print(region_table(summary))
    err_console.print(overall_line(summary), highlight=False)
    err_console.print(f"patch: {run_dir / summary['patch']}; summary: {run_dir / 'model_summary.json'}", highlight=False)
    if as_json:
        print(json.dumps(summary, default=str))
    return EXIT_NO_CORRECT if summary["overall"].get("correct") is False else EXIT_OK


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def region_table(summary: dict) -> Table:
    """Per region: share of the model's time, the Amdahl bound, the region's speedup, the end-to-end gain."""
    table = Table(title=f"{summary['target']}: regions ({summary['profile']['method']})")
    for name in ("#", "region", "modules", "ms/fwd", "share", "bound", "region speedup", "e2e (measured)", "e2e (Amdahl)", "note"):
        table.add_column(name)
    for row in summary["regions"]:
        table.add_row(str(row["rank"]), row["kind"], f"{row['modules'][0]}" + (f" +{len(row['modules']) - 1}" if len(row["modules"]) > 1 else ""),
                      f"{row['ms']:.3f}", f"{100 * row['share']:.1f}%", _x(row["amdahl_bound"]), _x(row.get("region_speedup")),
                      _x(row.get("e2e_speedup")), _x(row.get("e2e_estimate")), row.get("note", "not optimized (below --top)"))
    for failure in summary["profile"]["uncaptured"]:
        table.add_row("-", failure["kind"], failure["module"], f"{failure['ms']:.3f}", "", "", "", "", "", failure["error"])
    return table


def overall_line(summary: dict) -> str:
    """The whole model: speedups over eager and torch.compile, and the correctness margin."""
    o = summary["overall"]
    if not o.get("measured"):
        return f"whole model: {o['note']}"
    if o["swapped"] == 0:
        if o["compile_ms"] is None:
            return f"whole model: {o['reason']}; torch.compile of it was not timed ({o['compile_status']}: {o['compile_reason']})"
        return (f"whole model ({o['timing']}, {o['device_name']}): {o['reason']}, {o['eager_ms']:.3f} ms; torch.compile of "
                f"it {o['compile_ms']:.3f} ms ({o['compile_status']}): the model as it is runs {_x(o['speedup_vs_compile'])} "
                "torch.compile's speed")
    if not o["correct"]:
        return f"whole model: the patched model FAILED the guard ({o['status']}): {o['reason']}"
    return (f"whole model ({o['timing']}, {o['device_name']}): {o['patched_ms']:.3f} ms patched vs {o['eager_ms']:.3f} ms eager "
            f"= {_x(o['speedup_vs_eager'])}; vs torch.compile {_x(o['speedup_vs_compile'])} ({o['compile_status']}); "
            f"outputs within tolerance on fresh inputs, max abs error {o['max_abs_error']:.3g}, max rel error "
            f"{o['max_rel_error'] if o['max_rel_error'] is not None else float('nan'):.3g}")


__all__ = ["model_command", "overall_line", "region_table"]
