"""`kernelarc optimize TASK`: run a multi-agent campaign (or `--resume RUN_DIR`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from kernelarc.cli.app import (
    EXECUTOR_HELP, EXIT_NO_CORRECT, EXIT_OK, QUIET, RAY_ADDRESS_HELP, MATCHED_HELP, TIMEOUT_HELP, TIMING_HELP, ExecutorKind, Timing,
    app, err_console, executor_spec, fail, human, invalid_reference_line,
)
from kernelarc.cli.progress import LiveProgress
from kernelarc.cli.report_cmd import announce_report


def parse_backend_options(pairs: list[str], *, model: str | None = None, config: Path | None = None) -> dict:
    """`--backend-option KEY=VALUE` pairs (true/false become booleans), plus `--model` and `--config`."""
    out: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"--backend-option expects KEY=VALUE, got {pair!r}")
        out[key.replace("-", "_")] = {"true": True, "false": False}.get(value.lower(), value)
    if model is not None:
        out["model"] = model
    if config is not None:
        out["config"] = str(config)
    return out


def _option_name(field: str) -> str:
    """The command-line option behind a CampaignOptions field (`target_sol` -> `--target-sol`)."""
    return "--" + field.removesuffix("_s").replace("_", "-")


@app.command("optimize")
def optimize_command(
    task_path: Annotated[Path | None, typer.Argument(metavar="TASK", help="KernelBench .py file or SOL-ExecBench problem dir.")] = None,
    agents: Annotated[int, typer.Option("--agents", min=1, max=64, help="Concurrent agents.")] = 4,
    strategies: Annotated[str | None, typer.Option("--strategies", help="Comma-separated strategies, one per agent (cycled); default: a spread for the kernel type.")] = None,
    backend: Annotated[str, typer.Option("--backend", help="Agent backend: builtin (offline), openai, anthropic, cli.")] = "builtin",
    model: Annotated[str | None, typer.Option("--model", help="LLM backends: the model name (overrides the config's).")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="LLM backends: the configuration file (TOML or YAML, docs/backends.md).")] = None,
    backend_option: Annotated[list[str], typer.Option("--backend-option", help="KEY=VALUE passed to the backend (repeatable), e.g. model=..., config=...")] = [],  # noqa: B006
    budget: Annotated[int | None, typer.Option("--budget", min=1, help="Candidates that may reach the guard (default 100; with --resume, a new total for the campaign).")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=1, help="Seconds for this run, final timings included: evaluations still running then are cut and left pending (with --resume, a new limit for this run).")] = None,
    plateau: Annotated[int, typer.Option("--plateau", min=1, help="Non-improvements before an agent must draft.")] = 4,
    memory: Annotated[str, typer.Option("--memory", help="Findings kept per kernel type: unbounded, N or WINS/TRAPS.")] = "16",
    fresh_memory: Annotated[bool, typer.Option("--fresh-memory", help="Ignore and do not add to the long-term memory.")] = False,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:N (with --executor ray: auto, cpu or cuda).")] = "auto",
    executor: Annotated[ExecutorKind, typer.Option("--executor", help=EXECUTOR_HELP)] = ExecutorKind.local,
    ray_address: Annotated[str | None, typer.Option("--ray-address", help=RAY_ADDRESS_HELP)] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Run directory (default: runs/<task>-<seed>).")] = None,
    resume: Annotated[Path | None, typer.Option("--resume", help="Continue the campaign in this run directory (pending candidates first; --budget and --time-limit may be given anew).")] = None,
    remeasure: Annotated[bool, typer.Option("--remeasure", help="With --resume: time the winner against the baselines again and rewrite summary.json even when there is nothing new to do.")] = False,
    replay: Annotated[Path | None, typer.Option("--replay", help="Re-run a recorded LLM campaign from its stored responses (no model access) into --out.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Campaign seed.")] = 0,
    target_sol: Annotated[float | None, typer.Option("--target-sol", min=0.0, max=1.0, help="Stop at this SOL score (CUDA).")] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", min=0.0, help="Stop when LLM spending reaches this (USD).")] = None,
    no_compile_baseline: Annotated[bool, typer.Option("--no-compile-baseline", help="Skip the torch.compile baseline.")] = False,
    rounds: Annotated[int | None, typer.Option("--rounds", min=1, help="Correctness rounds per workload.")] = None,
    timing: Annotated[Timing, typer.Option("--timing", help=TIMING_HELP)] = Timing.auto,
    atol: Annotated[float | None, typer.Option("--atol", min=0, help="Absolute tolerance for every output (default: the task's).")] = None,
    rtol: Annotated[float | None, typer.Option("--rtol", min=0, help="Relative tolerance for every output (default: the task's).")] = None,
    matched_ratio: Annotated[float | None, typer.Option("--matched-ratio", min=0.001, max=1.0, help=MATCHED_HELP)] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help=TIMEOUT_HELP)] = None,
    unsafe_no_sandbox: Annotated[bool, typer.Option("--unsafe-no-sandbox", help="Judge LLM and coding-agent candidates even where no OS sandbox (bubblewrap) can start.")] = False,
    export: Annotated[list[str], typer.Option("--export", help="Also export the winner as: torch-op (a registered PyTorch custom op, best/torch_op.py); repeatable.")] = [],  # noqa: B006
    as_json: Annotated[bool, typer.Option("--json", help="Print summary.json on stdout at the end.")] = False,
) -> int:
    """Optimize TASK with strategy agents judged by the guard; the winner lands in RUN_DIR/best/."""
    from kernelarc.campaign import CampaignOptions, resume as resume_campaign, start
    from kernelarc.campaign.run import replay as replay_campaign
    from kernelarc.task.loader import load_task

    check_exports(export)
    spec = executor_spec(executor, ray_address)
    console = human(as_json)
    progress = LiveProgress(console, enabled=not as_json and console.is_terminal, lines=not QUIET["on"])
    if resume is not None and replay is not None:
        fail("give either --resume RUN_DIR or --replay RUN_DIR, not both")
    if remeasure and resume is None:
        fail("--remeasure applies to --resume RUN_DIR only")
    if resume is not None:
        if task_path is not None:
            fail("give either TASK or --resume RUN_DIR, not both")

        def announce_resume(task, options, store) -> None:
            counts = store.counts()
            judged = sum(1 for r in store.evaluations() if r.agent_id is not None)
            limit = "" if options.time_limit_s is None else f", time limit {options.time_limit_s:g} s"
            _header(console, task, options.agents, options.backend, options.device, resume,
                    f"resuming: {judged} candidate(s) judged, {counts.pending} pending, budget {options.budget}{limit}",
                    longterm=options.longterm, executor=spec)

        with progress:
            result = resume_campaign(resume, on_progress=progress.update, time_limit_s=time_limit, budget=budget,
                                     remeasure=remeasure, on_start=announce_resume, executor=spec)
    elif replay is not None:
        if task_path is not None:
            fail("--replay RUN_DIR takes the task from the recorded run: give no TASK")
        run_dir = out or Path("runs") / f"replay-{replay.name}"
        with progress:
            result = replay_campaign(replay, run_dir, on_progress=progress.update, executor=spec)
    else:
        if task_path is None:
            fail("missing TASK (a KernelBench .py file or a SOL-ExecBench problem dir), or --resume RUN_DIR")
        task = load_task(task_path)
        try:
            options = CampaignOptions(
                agents=agents, strategies=tuple(s.strip() for s in strategies.split(",") if s.strip()) if strategies
                else (), backend=backend, backend_options=parse_backend_options(backend_option, model=model, config=config),
                budget=budget if budget is not None else 100,
                time_limit_s=time_limit, plateau=plateau, memory=memory, longterm=not fresh_memory, device=device,
                seed=seed, target_sol=target_sol, max_cost=max_cost, compile_baseline=not no_compile_baseline,
                rounds=rounds, timing=timing.value, atol=atol, rtol=rtol, matched_ratio=matched_ratio, timeout_s=timeout,
                unsafe_no_sandbox=unsafe_no_sandbox)
        except ValidationError as e:
            error = e.errors()[0]
            fail(f"{_option_name(error['loc'][0])}: {error['msg']}, got {error['input']!r}")
        run_dir = out or Path("runs") / f"{task.name}-seed{seed}"

        def announce(task) -> None:  # after start() has ruled out every user error: an error stays one line
            _header(console, task, agents, backend, device, run_dir, longterm=not fresh_memory, executor=spec)

        with progress:
            result = start(task_path, options, run_dir, on_progress=progress.update, on_start=announce, executor=spec)
    export_winner(result.run_dir, export)
    summary = json.loads((result.run_dir / "summary.json").read_text()) if export else result.summary
    announce_report(result.run_dir, console)
    if as_json:
        print(json.dumps(summary, default=str))
    stop = summary["stop_reason"]
    if stop in ("invalid_reference", "baselines_failed"):  # the task's failure: one line, exit 2
        task_name = summary["task"]["name"]
        fail(invalid_reference_line(task_name, summary["stop_detail"]) if stop == "invalid_reference" else
             f"every baseline of {task_name} failed, so no candidate can be judged: {summary['stop_detail']}")
    if not as_json:
        progress.final(summary, result.run_dir)
    if stop == "interrupted":
        return EXIT_INTERRUPTED
    if summary.get("backend_failed"):  # a baseline may lead, but no agent ever worked: not a success
        return EXIT_NO_CORRECT
    return EXIT_OK if summary.get("best") else EXIT_NO_CORRECT


def check_exports(kinds: list[str]) -> None:
    """Refuse an unknown `--export` before anything runs."""
    from kernelarc.campaign.export import EXPORT_KINDS

    for kind in kinds:
        if kind not in EXPORT_KINDS:
            fail(f"--export: unknown kind {kind!r}; choose from {', '.join(EXPORT_KINDS)}")


def export_winner(run_dir: Path, kinds: list[str]) -> None:
    """`--export`: the campaign's winner in each kind asked for; one line each, a failure included
    (the campaign's own result stands)."""
    from kernelarc.campaign.export import ExportError, export_run

    if not (run_dir / "summary.json").is_file():
        return
    for kind in kinds:
        try:
            files = export_run(run_dir, kind)
        except ExportError as e:
            err_console.print(f"kernelarc: --export {kind}: not exported: {e}", highlight=False, markup=False)
        else:
            err_console.print(f"kernelarc: --export {kind}: {files[0]}", highlight=False, markup=False)


EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C (128 + SIGINT, as shells report it)."""


def _header(console, task, agents: int, backend: str, device: str, run_dir: Path, extra: str = "", *,
            longterm: bool, executor) -> None:
    """What was inferred and where the run goes, before anything runs; then where the long-term memory
    is (issue 19: unrelated runs steered each other through a file nobody was told about)."""
    from kernelarc.guard import resolve_device
    from kernelarc.memory.longterm import longterm_path

    if QUIET["on"]:
        return
    if executor.kind == "ray":  # start() has joined the cluster: say what it judges on
        from kernelarc.campaign.ray_executor import connect

        target = connect(executor.ray_address, device)
        what = f"{target.accelerator} GPU(s)" if target.accelerator else "CPU node(s) (timings are cpu_wall)"
        where = f"the Ray cluster at {executor.ray_address}: {target.slots} {what} on {target.nodes} node(s)"
    elif (resolved := resolve_device(device)) == "cpu":
        where = "the CPU (no CUDA device: timings are cpu_wall, not GPU speed)"
    else:
        where = resolved
    console.print(f"task [bold]{task.name}[/] ({task.format.value}, {task.kernel_type}, "
                  f"{len(task.workloads)} workload(s)); {agents} {backend} agents on {where}; "
                  f"run dir {run_dir}" + (f"; {extra}" if extra else ""), highlight=False)
    console.print(f"long-term memory: {longterm_path()} (findings of every finished campaign of this user, recalled "
                  "and added to; --fresh-memory leaves it out)" if longterm else
                  "long-term memory: not used (--fresh-memory)", highlight=False, markup=False)
