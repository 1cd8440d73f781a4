"""`kernelarc bench SUITE`: every task of a suite against eager, torch.compile and the speed of light
(or, with --ablation, the memory ablation), into DIR/results.json, results.md and results.png."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from kernelarc.cli.app import (
    EXECUTOR_HELP, EXIT_NO_CORRECT, EXIT_OK, RAY_ADDRESS_HELP, TIMEOUT_HELP, TIMING_HELP, ExecutorKind, Timing, app,
    executor_spec, human,
)
from kernelarc.cli.optimize_cmd import check_exports, export_winner, parse_backend_options
from kernelarc.cli.report_cmd import announce_report


@app.command("bench")
def bench_command(
    suite: Annotated[Path, typer.Argument(metavar="SUITE", help="Folder of tasks (KernelBench .py files, SOL-ExecBench problem dirs).")],
    budget: Annotated[int, typer.Option("--budget", min=1, help="Candidates per campaign.")] = 100,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=1, help="Seconds per campaign.")] = None,
    agents: Annotated[int, typer.Option("--agents", min=1, max=64, help="Agents per campaign (the ablation's N).")] = 4,
    ablation: Annotated[bool, typer.Option("--ablation", help="Run the memory ablation (1 private agent, N bounded-shared, N unbounded-shared) instead of the main comparison.")] = False,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Ablation: campaigns per arm and task.")] = 3,
    out: Annotated[Path | None, typer.Option("--out", help="Output dir (default: runs/bench-<suite>); rerun to complete it.")] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:N (with --executor ray: auto, cpu or cuda).")] = "auto",
    executor: Annotated[ExecutorKind, typer.Option("--executor", help=EXECUTOR_HELP + " With ray, one task's campaign per cluster device at a time.")] = ExecutorKind.local,
    ray_address: Annotated[str | None, typer.Option("--ray-address", help=RAY_ADDRESS_HELP)] = None,
    backend: Annotated[str, typer.Option("--backend", help="Agent backend: builtin (offline), openai, anthropic, cli.")] = "builtin",
    backend_option: Annotated[list[str], typer.Option("--backend-option", help="KEY=VALUE passed to the backend (repeatable).")] = [],  # noqa: B006
    tasks: Annotated[str | None, typer.Option("--tasks", help="Comma-separated task names to run (default: all).")] = None,
    memory: Annotated[str, typer.Option("--memory", help="Main runs: findings kept per kernel type (unbounded, N, WINS/TRAPS).")] = "16",
    longterm: Annotated[bool, typer.Option("--longterm", help="Let campaigns use the long-term memory (results then depend on run order).")] = False,
    no_compile_baselines: Annotated[bool, typer.Option("--no-compile-baselines", help="Skip both torch.compile baselines (quick CPU runs).")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the main runs; ablation seeds count up from it.")] = 0,
    rounds: Annotated[int | None, typer.Option("--rounds", min=1, help="Correctness rounds per workload.")] = None,
    timing: Annotated[Timing, typer.Option("--timing", help=TIMING_HELP)] = Timing.auto,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help=TIMEOUT_HELP)] = None,
    unsafe_no_sandbox: Annotated[bool, typer.Option("--unsafe-no-sandbox", help="Judge LLM and coding-agent candidates even where no OS sandbox (bubblewrap) can start.")] = False,
    export: Annotated[list[str], typer.Option("--export", help="Also export each task's winner as: torch-op (a registered PyTorch custom op, <task>/campaign/best/torch_op.py); repeatable.")] = [],  # noqa: B006
    as_json: Annotated[bool, typer.Option("--json", help="Print results.json on stdout at the end.")] = False,
) -> int:
    """Bench SUITE: per task SOL, eager, torch.compile (default, max-autotune) and a kernelarc campaign; geomeans."""
    from kernelarc.bench import BenchOptions, RowStatus, discover, run_suite, suite_geomeans
    from kernelarc.bench.report import RESULTS_MD

    check_exports(export)
    spec = executor_spec(executor, ray_address)
    options = BenchOptions(
        agents=agents, budget=budget, time_limit_s=time_limit, backend=backend,
        backend_options=parse_backend_options(backend_option), device=device, seed=seed, seeds=seeds, memory=memory,
        longterm=longterm, compile_baselines=not no_compile_baselines, rounds=rounds,
        timing=timing.value, timeout_s=timeout, unsafe_no_sandbox=unsafe_no_sandbox)
    out_dir = out or Path("runs") / f"bench-{suite.name}"
    only = tuple(t.strip() for t in tasks.split(",") if t.strip()) if tasks else ()
    command = shlex.join(["kernelarc", "bench", str(suite), *_flags(locals())])
    count = len(discover(suite, only))  # a bad suite or task name fails here, before anything is printed
    console = human(as_json)
    console.print(f"bench [bold]{suite}[/] ({count} task(s)) -> {out_dir}: {'ablation, ' if ablation else ''}"
                      f"{agents} {backend} agent(s), budget {budget}, device {device}"
                      + (f", on the Ray cluster at {spec.ray_address}" if spec.kind == "ray" else ""), highlight=False)
    results = run_suite(suite, options, out_dir, ablation=ablation, only=only, command=command,
                        notify=lambda line: console.print(line, highlight=False, markup=False), executor=spec)
    runs = results.ablation if ablation else results.rows
    mine = [r for r in runs if not only or r.task in only]
    for row in mine:
        if row.status is RowStatus.COMPLETE and row.run_dir:
            export_winner(Path(row.run_dir), export)
    if not ablation:
        g = suite_geomeans(results.rows)["speedup_vs_eager"]
        line = f"geomean speedup over eager {g.value:.3f}x over {g.n} task(s)" if g.n else "no complete task"
        console.print(line, highlight=False)
    console.print(f"results: {out_dir / RESULTS_MD}", highlight=False)
    announce_report(out_dir, console)
    if as_json:
        print((out_dir / "results.json").read_text())
    return EXIT_OK if all(r.status is RowStatus.COMPLETE for r in mine) else EXIT_NO_CORRECT


_FLAG_NAMES = {"budget": "--budget", "time_limit": "--time-limit", "agents": "--agents", "seeds": "--seeds",
               "out": "--out", "device": "--device", "backend": "--backend", "tasks": "--tasks", "memory": "--memory",
               "seed": "--seed", "rounds": "--rounds", "timing": "--timing",
               "timeout": "--timeout"}
_SWITCHES = {"ablation": "--ablation", "longterm": "--longterm", "no_compile_baselines": "--no-compile-baselines",
             "unsafe_no_sandbox": "--unsafe-no-sandbox"}


def _flags(params: dict) -> list[str]:
    """The command line's options, rebuilt from the parsed values (for results.md)."""
    out = []
    for name, flag in _FLAG_NAMES.items():
        if params[name] is not None and (name != "seeds" or params["ablation"]):
            out += [flag, str(params[name])]
    out += [f"--backend-option={pair}" for pair in params["backend_option"]]
    if params["executor"] is ExecutorKind.ray:
        out += ["--executor", "ray", *(["--ray-address", params["ray_address"]] if params["ray_address"] else [])]
    return out + [flag for name, flag in _SWITCHES.items() if params[name]]


__all__ = ["bench_command"]
