"""`kernelarc model`: profile a model, cut its slowest regions out as tasks, run a campaign on each,
swap the winners in as PyTorch custom ops, and judge the whole model before and after.

RUN_DIR/model/<name>.py            the whole model as a KernelBench task (this run's shapes and dtype)
RUN_DIR/regions/<n>_<region>/      <kind>_<region>.py (the task), campaign/ (as `optimize` writes it), op/ (torch_op.py)
RUN_DIR/patch.py                   `patch.apply(model)` swaps the ops in
RUN_DIR/model_summary.json, .md    per region and overall (docs/model.md)

Every whole-model figure is a guard evaluation of the patched model (a candidate like any other)
against the model itself and against torch.compile of it: interleaved timing, correctness on fresh
inputs, in the guard's sides. Any region's failure (capture, campaign, export) is one line and the
run goes on. Budget: about 250 lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kernelarc import __version__
from kernelarc.campaign import CampaignOptions, start
from kernelarc.campaign.baselines import COMPILE, baseline_candidates
from kernelarc.campaign.export import ExportError, export_best, export_torch_op, op_name, which_baseline
from kernelarc.campaign.run import DB_NAME
from kernelarc.errors import UserError
from kernelarc.guard import Evaluation, Judge, candidate_from_source, isolation, resolve_device
from kernelarc.guard.candidate import stored_candidate
from kernelarc.guard.sandbox import SandboxPolicy
from kernelarc.memory import Store
from kernelarc.model.capture import CaptureError, RegionGraph, capture, task_source
from kernelarc.model.patch import patch_source, patched_model_source
from kernelarc.model.regions import profile, region_paths
from kernelarc.model.report import render_markdown
from kernelarc.model.target import Target
from kernelarc.paths import user_data_dir
from kernelarc.task.loader import load_task
from kernelarc.task.model import kernelbench_tolerance
from kernelarc.task.runtime import TaskRuntime

SUMMARY = "model_summary.json"
Notify = Callable[[str], None]


@dataclass(frozen=True)
class ModelOptions:
    """What `kernelarc model` was asked to do besides each region's campaign options."""

    top: int = 3
    """Regions (distinct tasks, slowest first) that get a campaign."""
    swap: Literal["faster", "all"] = "faster"
    """`faster`: swap a region's winner in only when it is an agent's kernel that beat eager head to
    head; `all`: swap every region's best correct agent kernel (to check the pipeline, e.g. on a CPU)."""
    repeats: int = 3
    """Profiled forwards."""


@dataclass
class Region:
    """One distinct region task: every module call with the same captured graph and input specs."""

    graph: RegionGraph
    modules: list[str] = field(default_factory=list)
    ms: float = 0.0


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if isinstance(error, UserError) else f"{type(error).__name__}: {text}"


def _regions(model, prof, notify: Notify) -> tuple[list[Region], list[dict]]:
    """The profile's calls captured and grouped by task, slowest first; the calls that were not captured."""
    groups: dict[str, Region] = {}
    failures = []
    for call in prof.calls:
        try:
            graph = capture(call, model.get_submodule(call.path))
        except CaptureError as e:
            failures.append({"module": call.path, "kind": call.kind, "ms": prof.region_ms[call.path], "error": str(e)})
            notify(f"region {call.path} ({call.kind}) not captured: {e}")
            continue
        region = groups.setdefault(graph.signature, Region(graph))
        if call.path not in region.modules:
            region.modules.append(call.path)
            region.ms += prof.region_ms[call.path]
    return sorted(groups.values(), key=lambda r: -r.ms), failures


def _chained_best(store: Store) -> tuple[int, float] | None:
    """The agent candidate with the highest speedup over the reference, chained along its incumbents."""
    chain: dict[int | None, float] = {None: 1.0}
    best = None
    for record in store.evaluations():
        ev = record.evaluation
        if ev.speedup is None:
            continue
        chain[record.candidate_id] = chain.get(record.against_incumbent_id, 1.0) * ev.speedup
        if record.agent_id is not None and ev.correct and (best is None or chain[record.candidate_id] > best[1]):
            best = (record.candidate_id, chain[record.candidate_id])
    return best


def _pick(run_dir: Path, task, summary: dict, swap: str) -> tuple[object | None, float | None, str]:
    """The kernel to swap in for a region, its speedup over the region's eager reference, and why
    (or why nothing is swapped)."""
    store = Store(run_dir / DB_NAME)
    best = summary.get("best")
    if best:
        record = store.candidate(best["candidate_id"])
        candidate = stored_candidate(record.kind, record.source, task, name=f"c{best['candidate_id']}")
        baseline = which_baseline(task, candidate)
        speedup = best.get("speedup_vs_eager")
        if baseline is None and speedup is not None and speedup > 1.0:
            return candidate, speedup, "the campaign's winner, faster than eager head to head"
        if swap == "faster":
            timed = best.get("final_timing", "measured")
            why = (f"the {baseline} baseline won" if baseline else "its winner did not beat eager head to head"
                   if timed == "measured" else f"its winner's final timings against eager were {timed}")
            return None, speedup, f"not swapped: {why}"
    if swap == "faster":
        return None, None, "not swapped: no correct kernel"
    chained = _chained_best(store)
    if chained is None:
        return None, None, "not swapped: no agent kernel was correct"
    record = store.candidate(chained[0])
    return (stored_candidate(record.kind, record.source, task, name=f"c{chained[0]}"), chained[1],
            "--swap all: the best correct agent kernel (speedup chained over the campaign)")


def _region_name(index: int, region: Region) -> str:
    return f"{index}_{re.sub(r'[^0-9a-zA-Z]+', '_', region.modules[0]).strip('_').lower()}"


def _optimize_region(index: int, region: Region, model_name: str, options: CampaignOptions, swap: str,
                     run_dir: Path, notify: Notify) -> dict:
    """Task, campaign and op of one region; its row of the summary."""
    folder = run_dir / "regions" / _region_name(index, region)
    folder.mkdir(parents=True, exist_ok=True)
    task_file = folder / f"{region.graph.call.kind.lower()}_{folder.name.split('_', 1)[1]}.py"
    task_file.write_text(task_source(region.graph, model_name))
    row = {"task": str(task_file.relative_to(run_dir)), "campaign": str((folder / "campaign").relative_to(run_dir)),
           "region_speedup": None, "swapped": False, "op": None, "note": ""}
    try:
        task = load_task(task_file)
        notify(f"region {index} {region.graph.call.kind} ({', '.join(region.modules)}): campaign in {folder / 'campaign'}")
        summary = start(task_file, options, folder / "campaign").summary
        candidate, speedup, note = _pick(folder / "campaign", task, summary, swap)
        row.update(region_speedup=speedup, note=note, stop_reason=summary["stop_reason"])
        if candidate is not None:
            export_best(task, candidate, folder / "op")
            export_torch_op(task, candidate, folder / "op")
            row.update(swapped=True, op=op_name(task, candidate), op_folder=str((folder / "op").relative_to(run_dir)))
    except (UserError, ExportError, OSError, RuntimeError) as e:
        row["note"] = f"failed: {_one_line(e)}"
    notify(f"region {index}: {row['note']}")
    return row


def _measure(task, patched: str, device: str, options: CampaignOptions, run_dir: Path) -> dict:
    """The patched model judged against the model (eager) and against torch.compile of it."""
    iso = isolation(policy=SandboxPolicy(hidden=(user_data_dir().resolve(),)))
    candidate = candidate_from_source(patched, task, name="patched")
    out: dict[str, Evaluation] = {}
    with Judge(task, isolation_=iso) as judge:
        out["eager"] = judge.evaluate(candidate, None, device=device, settings=options.guard_settings(), trusted=True)
        if options.compile_baseline:
            out[COMPILE] = judge.evaluate(candidate, baseline_candidates(task)[COMPILE], device=device,
                                          settings=options.guard_settings(), trusted=True)
    return {name: ev.model_dump(mode="json", exclude={"log_tail"}) | {"log_tail": ev.log_tail[-2000:]}
            for name, ev in out.items()}


def run_model(target: Target, campaign: CampaignOptions, options: ModelOptions, run_dir: Path,
              notify: Notify = lambda line: None) -> dict:
    """The whole pipeline (module docstring); returns the summary it writes.

    Raises:
        UserError: the target cannot be loaded or its forward fails, or `run_dir` holds a model run.
    """
    if (run_dir / SUMMARY).exists():
        raise UserError(f"{run_dir} already holds a model run ({SUMMARY}): use another --out")
    device = resolve_device(campaign.device)
    model_file = run_dir / "model" / f"{target.name}.py"
    model_file.parent.mkdir(parents=True, exist_ok=True)
    model_file.write_text(target.source)
    task = load_task(model_file)
    runtime = TaskRuntime(task, device)
    try:
        model = runtime.reference()
        inputs = runtime.make_inputs(task.workloads[0], 0)
        paths = region_paths(model)
        prof = profile(model, inputs, paths, options.repeats)
    except Exception as e:  # the user's model: its failure is one line
        raise UserError(f"{target.name}: the model's forward failed on {device}: {_one_line(e)}") from None
    notify(f"profiled {target.name}: {prof.model_ms:.3f} ms per forward, {len(paths)} region module(s) ({prof.method})")
    regions, failures = _regions(model, prof, notify)
    rows = []
    for index, region in enumerate(regions):
        share = region.ms / prof.model_ms if prof.model_ms > 0 else 0.0
        row = {"rank": index + 1, "kind": region.graph.call.kind, "modules": region.modules, "ms": region.ms,
               "share": share, "amdahl_bound": 1.0 / (1.0 - share) if share < 1 else None}
        if index < options.top:
            row |= _optimize_region(index + 1, region, target.name, campaign, options.swap, run_dir, notify)
            if row.get("region_speedup"):
                row["e2e_estimate"] = 1.0 / (1.0 - share + share / row["region_speedup"])
        rows.append(row)
    swapped = [r for r in rows if r.get("swapped")]
    (run_dir / "patch.py").write_text(patch_source(target.name, [(r, regions[r["rank"] - 1]) for r in swapped]))
    overall: dict = {"measured": False, "note": "no region was swapped in: the model is as it was"}
    if not swapped and campaign.compile_baseline:
        overall = _unpatched(_measure_compile(task, device, campaign))
    if swapped:
        files = {"patch.py": (run_dir / "patch.py").read_text()}
        for row in swapped:
            for f in sorted((run_dir / row["op_folder"]).glob("*.py")):
                files[str(f.relative_to(run_dir))] = f.read_text()
        overall = _overall(_measure(task, patched_model_source(target.source, files), device, campaign, run_dir))
        overall.update(swapped=len(swapped), tolerance=_tolerance(task, campaign))
        if len(swapped) > 1:
            for row in swapped:
                only = patched_model_source(target.source, files, only=[row["op"]])
                ev = _measure(task, only, device, campaign.model_copy(update={"compile_baseline": False}), run_dir)
                row["e2e_speedup"] = ev["eager"]["speedup"]
        else:
            swapped[0]["e2e_speedup"] = overall["speedup_vs_eager"]
    summary = {"target": target.name, "device": device, "model_task": str(model_file.relative_to(run_dir)),
               "profile": {"model_ms": prof.model_ms, "method": prof.method,
                           "captured_ms": sum(r.ms for r in regions),
                           "uncaptured": failures},
               "regions": rows, "overall": overall, "patch": "patch.py",
               "options": {"top": options.top, "swap": options.swap, "campaign": campaign.model_dump(mode="json")},
               "kernelarc": __version__}
    (run_dir / SUMMARY).write_text(json.dumps(summary, indent=2, default=str))
    (run_dir / SUMMARY.replace(".json", ".md")).write_text(render_markdown(summary))
    return summary


def _measure_compile(task, device: str, options: CampaignOptions) -> dict:
    """torch.compile of the whole model judged against the model: with no region swapped in, the
    patched model is the model, and this is the comparison left for the user."""
    iso = isolation(policy=SandboxPolicy(hidden=(user_data_dir().resolve(),)))
    with Judge(task, isolation_=iso) as judge:
        ev = judge.evaluate(baseline_candidates(task)[COMPILE], None, device=device,
                            settings=options.guard_settings(), trusted=True)
    return ev.model_dump(mode="json", exclude={"log_tail"}) | {"log_tail": ev.log_tail[-2000:]}


def _unpatched(compiled: dict) -> dict:
    """The whole model's figures when nothing was swapped in: the patched model is the model (1x over
    eager by construction, not timed against itself), and its ratio to torch.compile is the inverse of
    torch.compile's head-to-head against it."""
    ok = compiled["correct"] and compiled["speedup"]
    return {"measured": True, "swapped": 0, "correct": True, "status": "UNCHANGED",
            "reason": "no region was swapped in: the patched model is the model",
            "speedup_vs_eager": None, "eager_ms": compiled["incumbent_ms"], "patched_ms": compiled["incumbent_ms"],
            "speedup_vs_compile": 1.0 / compiled["speedup"] if ok else None,
            "compile_ms": compiled["latency_ms"] if ok else None, "compile_status": compiled["status"],
            "compile_reason": compiled["reason"], "max_abs_error": None, "max_rel_error": None, "timing": compiled["timing"],
            "spread": (compiled.get("workloads") or [{}])[0].get("spread"), "device_name": compiled["device"],
            "evaluations": {COMPILE: compiled}}


def _tolerance(task, campaign: CampaignOptions) -> dict:
    """The tolerance the whole model was checked with: the user's, else KernelBench's for its output dtype."""
    outputs = task.workloads[0].outputs
    default = kernelbench_tolerance(outputs[0].dtype) if outputs else None
    return {"atol": campaign.atol if campaign.atol is not None else default and default.atol,
            "rtol": campaign.rtol if campaign.rtol is not None else default and default.rtol,
            "matched_ratio": campaign.matched_ratio if campaign.matched_ratio is not None else 1.0,
            "source": "--atol/--rtol/--matched-ratio"
            if any(v is not None for v in (campaign.atol, campaign.rtol, campaign.matched_ratio))
            else f"KernelBench's for {outputs[0].dtype if outputs else 'the output dtype'}"}


def _overall(evaluations: dict) -> dict:
    """The whole model's figures from the guard's evaluations of the patched model."""
    eager, compiled = evaluations["eager"], evaluations.get(COMPILE)
    workload = (eager.get("workloads") or [{}])[0]
    return {"measured": True, "correct": eager["correct"], "status": eager["status"], "reason": eager["reason"],
            "speedup_vs_eager": eager["speedup"], "eager_ms": eager["incumbent_ms"], "patched_ms": eager["latency_ms"],
            "speedup_vs_compile": compiled["speedup"] if compiled else None,
            "compile_ms": compiled["incumbent_ms"] if compiled else None,
            "compile_status": compiled["status"] if compiled else "skipped (--no-compile-baseline)",
            "max_abs_error": workload.get("max_abs_error"), "max_rel_error": workload.get("max_rel_error"),
            "timing": eager["timing"], "spread": workload.get("spread"), "device_name": eager["device"],
            "evaluations": evaluations}


__all__ = ["ModelOptions", "SUMMARY", "run_model"]
