"""`kernelarc eval TASK CANDIDATE`: judge one candidate with the guard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from kernelarc.cli.app import (
    EXIT_NO_CORRECT, EXIT_OK, MATCHED_HELP, TIMEOUT_HELP, TIMING_HELP, Timing, app, err_console, invalid_reference_line, out_console,
)
from kernelarc.cli.render import render_evaluation


@app.command("eval")
def eval_command(
    task_path: Annotated[Path, typer.Argument(metavar="TASK", help="KernelBench .py file or SOL-ExecBench problem dir.")],
    candidate_path: Annotated[Path, typer.Argument(metavar="CANDIDATE", help="Candidate .py (ModelNew or run) or solution.json.")],
    incumbent: Annotated[Path | None, typer.Option("--incumbent", help="Compare against this candidate instead of the reference.")] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:N.")] = "auto",
    rounds: Annotated[int | None, typer.Option("--rounds", min=1, help="Correctness rounds per workload (default: 5 KernelBench, 10 SOL-ExecBench).")] = None,
    atol: Annotated[float | None, typer.Option("--atol", min=0, help="Override the absolute tolerance.")] = None,
    rtol: Annotated[float | None, typer.Option("--rtol", min=0, help="Override the relative tolerance.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Fix the input seeds (default: drawn from the OS).")] = None,
    timing: Annotated[Timing, typer.Option("--timing", help=TIMING_HELP)] = Timing.auto,
    matched_ratio: Annotated[float | None, typer.Option("--matched-ratio", min=0.001, max=1.0, help=MATCHED_HELP)] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help=TIMEOUT_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")] = False,
) -> int:
    """Judge CANDIDATE against the reference of TASK (or --incumbent): gate, correctness, timing, verdict."""
    from kernelarc.campaign.export import which_baseline
    from kernelarc.cli.app import fail
    from kernelarc.guard.candidate import load_candidate
    from kernelarc.guard.gate import check_candidate
    from kernelarc.guard.judge import evaluate, isolation, resolve_device
    from kernelarc.guard.settings import GuardSettings
    from kernelarc.task.loader import load_task

    task = load_task(task_path)
    candidate = load_candidate(candidate_path, task)
    # The incumbent is read once, here, and judged from this text: never re-read from its path later.
    inc = load_candidate(incumbent, task) if incumbent is not None else None
    if inc is not None and which_baseline(task, inc) is None and (finding := check_candidate(inc)) is not None:
        fail(f"the incumbent {incumbent} is refused by the static gate, rule {finding.rule} at line {finding.line}: "
             f"{finding.message}")
    resolved = resolve_device(device)
    settings = GuardSettings(rounds=rounds, atol=atol, rtol=rtol, matched_ratio=matched_ratio, seed=seed, timing=timing.value,
                             **GuardSettings.deadlines(timeout))
    # kernelarc's own baseline, as a campaign exports it when no agent beat it, skips the static gate as it
    # does in the campaign: the code is the task's reference wrapped by kernelarc, byte for byte (a
    # torch.compile baseline raises Dynamo's recompile limit, which the gate refuses from any other code)
    baseline = which_baseline(task, candidate)
    iso = isolation()
    if iso.note:
        err_console.print(f"kernelarc: {iso.note}", soft_wrap=True)
    if not as_json:
        where = "CPU (no CUDA device: timings are cpu_wall, not GPU speed)" if resolved == "cpu" else resolved
        out_console.print(f"task [bold]{task.name}[/] ({task.format.value}, {len(task.workloads)} workload(s)) on {where}",
                          soft_wrap=True)
        if baseline is not None:
            out_console.print(f"{escape(str(candidate_path))} is kernelarc's {baseline} baseline of this task: the static gate "
                              "is skipped, as in a campaign", soft_wrap=True)
    with out_console.status("evaluating", spinner="dots") if not as_json else _null():
        result = evaluate(task, candidate, inc, device=resolved, settings=settings, trusted=baseline is not None,
                          isolation_=iso)
    if as_json:
        print(json.dumps(result.to_json_dict()))
    if result.status.value == "INVALID_REFERENCE":  # the task's failure, not the candidate's: one line, exit 2
        fail(invalid_reference_line(task.name, result.reason))
    if not as_json:
        render_evaluation(result)
    return EXIT_NO_CORRECT if result.verdict.value == "REJECT" else EXIT_OK


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
