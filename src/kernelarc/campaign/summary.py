"""The end of a campaign: measure the winner against both baselines, export it, write summary.json and the plot.

The winner is the leader (an agent's incumbent or a baseline). It is timed once more against eager
and against torch.compile, each interleaved in one worker like any evaluation, so the reported
speedups come from direct comparisons rather than products of chained ratios. If a baseline beats
the leader in that head-to-head timing, the baseline is the winner (the user gets the faster code)
and is measured again against both, once: on the H200 (2026-11-30) the leader of swiglu_gate_up,
torch.compile, ranked first on a 1.01x that was noise and then timed at 0.96x eager head to head.
"""

from __future__ import annotations

import asyncio
import json
import platform
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from kernelarc import __version__
from kernelarc.agents.builtin.notation import parse_points
from kernelarc.campaign import disqualify
from kernelarc.campaign.baselines import COMPILE, EAGER
from kernelarc.campaign.executor import evaluation_seed
from kernelarc.campaign.export import export_best
from kernelarc.campaign.loop import Campaign, LeaderboardEntry
from kernelarc.campaign.options import StopReason
from kernelarc.guard import Evaluation, Verdict
from kernelarc.guard.candidate import Candidate, needs_build
from kernelarc.guard.cutoff import EvaluationCut
from kernelarc.guard.samples import median
from kernelarc.memory import EvaluationRecord
from kernelarc.report import plot_progress
from kernelarc.report.plot import WinnerMark
from kernelarc.roofline import sol_score


def _versions() -> dict:
    import torch

    versions = {"kernelarc": __version__, "python": sys.version.split()[0], "torch": torch.__version__,
                "platform": platform.platform()}
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        versions["triton"] = None
    return versions


@dataclass(frozen=True)
class Finals:
    """The campaign's winner and its head-to-head timings against each correct baseline, by name."""

    winner: LeaderboardEntry | None = None
    against: dict[str, Evaluation] = field(default_factory=dict)
    displaced: LeaderboardEntry | None = None
    """The leader that a baseline beat head to head, if one did."""
    timed: str = "measured"
    """`measured`, or why the head-to-head timings were not all taken (`cut: ...`, `cut before the one
    against NAME: ...`, `skipped: ...`): `against` holds those that were, the speedups over the others are
    unknown (None), and the chained speedup is reported beside them."""
    seconds: float | None = None
    """How long the final timings took."""
    left_s: float | None = None
    """Seconds the time limit left when they began (None without a limit)."""
    reserve_s: float | None = None
    """The seconds the campaign had set aside for them (`Campaign.finals_reserve_s`) when they began (None
    without a limit): with `seconds` and each head-to-head's `wall_s` and stages, what calibrates the
    reserve (on the H200 it held 47 s for finals of 11 s in one campaign and fell short in another)."""


async def _against_baselines(campaign: Campaign, entry: LeaderboardEntry) -> tuple[dict[str, Evaluation], str | None]:
    """The winner timed against each correct baseline but itself (a baseline that won is not timed
    against itself: that ratio, 1.05x in issue 19, was noise presented as a gain), and why the rest were
    not, where the time limit cut them: the head-to-heads already timed are kept (on the H200 a 130 s
    mlp_relu_small campaign's cut second final took its first, timed, with it; 2026-12-04).

    The head-to-heads are submitted together: each still holds the device lock alone, but the next one's
    build and side start-up run while the one before it is timed (one after the other, the second final
    waited 7.7-12.2 s for its sides on an H100, docs/benchmarks.md session 28)."""
    winner = campaign.candidate(entry.candidate_id)
    opponents = {}
    for name, cid in campaign.baselines.items():
        base_eval = campaign.store.evaluation(cid)
        if (base_eval is None or base_eval.evaluation.verdict is Verdict.REJECT or cid == entry.candidate_id
                or cid in campaign.disqualified):
            continue
        opponents[name] = campaign.candidate(cid)
    results = await asyncio.gather(*(
        campaign.executor.evaluate(winner, baseline, slot=0, trusted=True, cutoff=campaign.cutoff,
                                   seed=evaluation_seed(campaign.options.seed + 1, winner, baseline))
        for baseline in opponents.values()), return_exceptions=True)
    out, cut = {}, []
    for name, result in zip(opponents, results):
        if isinstance(result, EvaluationCut):
            cut.append((name, result))
        elif isinstance(result, BaseException):
            raise result
        else:
            out[name] = result
    if not cut:
        return out, None
    why = cut[0][1]
    return out, (f"cut before the one against {' and '.join(name for name, _ in cut)}: {why}" if out else f"cut: {why}")


def faster_baseline(leader_id: int, baselines: dict[str, int], against: dict[str, Evaluation]) -> str | None:
    """The baseline that beat the leader head to head by the widest margin, if any did."""
    beaten_by = [name for name, ev in against.items()
                 if ev.correct and ev.speedup is not None and ev.speedup < 1.0 and baselines[name] != leader_id]
    return min(beaten_by, key=lambda name: against[name].speedup) if beaten_by else None


async def final_measurements(campaign: Campaign) -> Finals:
    """The winner timed against each correct baseline (no winner when there is no leader), with the seconds
    that took and the seconds the time limit left them when they began (how the finals' reserve held)."""
    started, left = time.monotonic(), campaign.time_left_s()
    reserve = round(campaign.finals_reserve_s(), 3) if left is not None else None
    finals = await _finals(campaign)
    return replace(finals, seconds=round(time.monotonic() - started, 3), left_s=round(left, 3) if left is not None else None,
                   reserve_s=reserve)


async def _finals(campaign: Campaign) -> Finals:
    """The leader's head-to-heads; a leader that fails one is disqualified (campaign/disqualify.py) and the next
    leader timed in its place."""
    while True:
        leader = campaign.leader()
        if leader is None:
            return Finals()
        if campaign.interrupted:
            return Finals(leader, timed="skipped: interrupted (Ctrl-C)")
        if campaign.cutoff.passed():
            return Finals(leader, timed=f"skipped: {campaign.cutoff.why}")
        with campaign.busy("the winner's final timings against the baselines"):
            against, cut = await _against_baselines(campaign, leader)
            if cut is None:
                try:
                    if await _failed_in_finals(campaign, leader, against):
                        continue
                except EvaluationCut as e:
                    cut = f"cut while judging again a baseline that failed beside the leader: {e}"
            if cut is not None:
                return Finals(leader, against, timed=cut)
            return await _settled(campaign, leader, against)


async def _failed_in_finals(campaign: Campaign, leader: LeaderboardEntry, against: dict[str, Evaluation]) -> bool:
    """Disqualify whoever failed a head-to-head: the leader (True), or a baseline that failed beside it and again
    alone (that comparison is then left out)."""
    for name, ev in against.items():
        failed = await disqualify.culprit(campaign, leader.candidate_id, campaign.baselines[name], ev, slot=0,
                                          cutoff=campaign.cutoff)
        if failed is not None:
            disqualify.disqualify(campaign, failed, f"final head-to-head against {name}: {ev.reason}",
                                  beside=campaign.baselines[name] if failed == leader.candidate_id else leader.candidate_id)
        if failed == leader.candidate_id:
            return True
    return False


async def _settled(campaign: Campaign, leader: LeaderboardEntry, against: dict[str, Evaluation]) -> Finals:
    """The finals of a leader that passed its head-to-heads: a baseline that beat it takes over if confirmed."""
    faster = faster_baseline(leader.candidate_id, campaign.baselines, against)
    if faster is None:
        return Finals(leader, against)
    winner = next(e for e in campaign.leaderboard() if e.candidate_id == campaign.baselines[faster])
    confirmed, cut = await _against_baselines(campaign, winner)
    if cut is not None:  # the baseline's own head-to-heads unfinished: the leader stays, with what it lost
        return Finals(leader, against, timed=f"{cut} (while timing the {faster} baseline that beat it)")
    if tie_goes_to_leader(baseline_name(campaign, leader.candidate_id), faster, confirmed):
        return Finals(leader, against)
    return Finals(winner, confirmed, displaced=leader)


def tie_goes_to_leader(leader_baseline: str | None, challenger: str, confirmed: dict[str, Evaluation]) -> bool:
    """Whether a baseline leader keeps the win after a baseline challenger beat it head to head once
    and then timed slower than it in its own head-to-head: the two comparisons disagree, a tie within
    noise, which goes to eager, the reference's own code, else to the leader (on the H200 an MLP's
    torch.compile displaced an eager leader on one comparison and was reported the winner at 0.99x
    eager on the next)."""
    if leader_baseline is None or leader_baseline not in confirmed:
        return False
    again = confirmed[leader_baseline]
    disagree = again.correct and again.speedup is not None and again.speedup < 1.0
    return disagree and challenger != EAGER


def _workload_sol_score(winner: Evaluation, vs_compile: Evaluation | None) -> float | None:
    """Mean over workloads of S(T_k, T_b = min(eager, compile), T_SOL), as SOL-ExecBench scores a problem."""
    scores = []
    compile_ms = ({w.uuid: w.incumbent_device_ms for w in vs_compile.workloads}
                  if vs_compile and vs_compile.correct else {})
    for w in winner.workloads:  # device time, as SOL-ExecBench scores, whichever latency decided
        if w.sol_ms is None or w.device_ms is None or w.incumbent_device_ms is None:
            return None
        baseline = min(w.incumbent_device_ms, compile_ms.get(w.uuid) or w.incumbent_device_ms)
        scores.append(sol_score(w.device_ms, baseline, w.sol_ms))
    return sum(scores) / len(scores) if scores else None


def timing_consistency(store, finals: Finals, baselines: dict[str, int], min_ms: float = 0.02) -> dict:
    """How far apart the times of one candidate came out across the campaign's evaluations (as the
    candidate, as another's incumbent, in the final head-to-heads; the reference's times, in evaluations
    against it, as the eager baseline's, whose code it is): the spread (max - min) / median
    per candidate timed at least twice, median and p90 over candidates, for the latency that decided and
    for each clock apart (`by_clock`: device time is the kernels' own; wall time adds the host's work per
    call, which on a shared host follows the host between evaluations); times under `min_ms` left out
    (issue 15 asks for agreement from 20 µs up)."""
    eager = baselines.get(EAGER)
    records = [(r.candidate_id, eager if r.against_incumbent_id is None else r.against_incumbent_id, r.evaluation)
               for r in store.evaluations()]
    if finals.winner is not None:
        records += [(finals.winner.candidate_id, baselines[name], ev) for name, ev in finals.against.items()]
    records = [(c, i, ev) for c, i, ev in records if ev.correct]
    clocks = {"device": ("device_ms", "incumbent_device_ms"), "wall": ("wall_ms", "incumbent_wall_ms")}
    return {**_spreads(records, ("latency_ms", "incumbent_ms"), min_ms),
            "by_clock": {clock: _spreads(records, fields, min_ms) for clock, fields in clocks.items()}}


def _spreads(records, fields: tuple[str, str], min_ms: float) -> dict:
    """`timing_consistency` on one pair of Evaluation fields (the candidate's time, the incumbent's)."""
    times: dict[int, list[float]] = {}
    own, incumbent = fields
    for candidate_id, incumbent_id, ev in records:
        pairs = ((candidate_id, getattr(ev, own)), (incumbent_id, getattr(ev, incumbent)))
        for timed_id, ms in pairs:
            if timed_id is not None and ms is not None:
                times.setdefault(timed_id, []).append(ms)
    spreads = sorted((max(t) - min(t)) / median(t) for t in times.values() if len(t) >= 2 and median(t) >= min_ms)
    if not spreads:
        return {"candidates": 0, "median_spread": None, "p90_spread": None, "min_ms": min_ms}
    return {"candidates": len(spreads), "median_spread": median(spreads),
            "p90_spread": spreads[min(len(spreads) - 1, int(0.9 * len(spreads)))], "min_ms": min_ms}


def _series(campaign: Campaign) -> tuple[dict[str, list[tuple[int, float]]], dict[int, tuple[int, float]]]:
    """Best chained speedup over the reference after each evaluation, per agent (for the plot), and
    each judged candidate's (evaluation number, chained speedup)."""
    series: dict[str, list[tuple[int, float]]] = {}
    chain: dict[int | None, float] = {None: 1.0}
    best: dict[str, float] = {}
    placed: dict[int, tuple[int, float]] = {}
    for n, record in enumerate(campaign.store.evaluations(), start=1):
        ev = record.evaluation
        base = chain.get(record.against_incumbent_id, 1.0)
        if ev.speedup is not None:
            chain[record.candidate_id] = base * ev.speedup
        agent = record.agent_id or "baselines"
        if ev.verdict is Verdict.KEEP or agent == "baselines":
            best[agent] = max(best.get(agent, 1.0), chain.get(record.candidate_id, 1.0))
        series.setdefault(agent, []).append((n, best.get(agent, 1.0)))
        placed[record.candidate_id] = (n, chain.get(record.candidate_id, 1.0))
    return series, placed


def baseline_name(campaign: Campaign, candidate_id: int) -> str | None:
    """The baseline a candidate is (`eager`, `torch.compile`), or None for an agent's."""
    return next((name for name, cid in campaign.baselines.items() if cid == candidate_id), None)


def head_to_head(winner_id: int, baseline_id: int, ev: Evaluation) -> dict:
    """One final comparison as summary.json states it: both times and the speedup come from the same
    interleaved evaluation, with what that evaluation cost (wall, stages, requests). A wall-basis speedup is paired block by block (docs/guard.md), so it can
    differ from the ratio of the two medians shown when the host drifted between blocks."""
    return {"baseline_candidate_id": baseline_id, "candidate_id": winner_id, "verdict": ev.verdict.value,
            "candidate_ms": ev.latency_ms if ev.correct else None, "baseline_ms": ev.incumbent_ms if ev.correct else None,
            "speedup": ev.speedup if ev.correct else None, "basis": ev.basis,
            "timing": ev.timing.value if ev.timing else None, "wall_s": ev.wall_s, "stage_seconds": ev.stage_seconds,
            "request_seconds": {k: list(v) for k, v in ev.request_seconds.items()}}


REJECT_REASON_CHARS = 300
"""How much of each rejected candidate's reason `spend` keeps: enough for its first sentence."""


def candidate_spend(store) -> dict[str, dict]:
    """How the agents' candidates were spent, per move family (issue 16): the candidates, their verdicts,
    the best verdict's speedup over its incumbent, and why each rejected one failed (so a family that
    keeps failing can be told from one the guard wrongly refused, with summary.json alone). The family
    is the claim's first `[family ...]` point, as the built-in agents write it; other claims (an LLM's
    prose) count under `unnamed`."""
    spend: dict[str, dict] = {}
    for record in store.evaluations():
        if record.agent_id is None:
            continue
        points = parse_points(store.candidate(record.candidate_id).claim)
        entry = spend.setdefault(points[0][0] if points else "unnamed",
                                 {"candidates": 0, "verdicts": {}, "best_speedup": None, "rejects": []})
        ev = record.evaluation
        entry["candidates"] += 1
        entry["verdicts"][ev.verdict.value] = entry["verdicts"].get(ev.verdict.value, 0) + 1
        if ev.correct and ev.speedup is not None:
            entry["best_speedup"] = max(ev.speedup, entry["best_speedup"] or 0.0)
        if ev.verdict is Verdict.REJECT:
            entry["rejects"].append({"candidate_id": record.candidate_id, "status": ev.status.value,
                                     "reason": ev.reason[:REJECT_REASON_CHARS]})
    return dict(sorted(spend.items(), key=lambda kv: -kv[1]["candidates"]))


def write_outputs(campaign: Campaign, run_dir: Path, reason: StopReason, finals: Finals, *,
                  wall_s: float, llm_usage: dict | None = None) -> dict:
    """Export the winner, write summary.json and progress.png; return the summary."""
    store, task = campaign.store, campaign.task
    leader = finals.winner
    baselines = {}
    for name, cid in campaign.baselines.items():
        rec = store.evaluation(cid)
        ev = rec.evaluation if rec else None
        baselines[name] = None if ev is None else {
            "candidate_id": cid, "verdict": ev.verdict.value, "status": ev.status.value, "reason": ev.reason,
            "latency_ms": ev.latency_ms, "reference_ms": ev.incumbent_ms, "compile_s": ev.compile_s,
            "sol_ms": ev.sol_ms, "timing": ev.timing.value if ev.timing else None, "basis": ev.basis,
            "device_ms": ev.device_ms, "wall_ms": ev.wall_ms, "device": ev.device}
    best = None
    if leader is not None:
        vs_eager, vs_compile = finals.against.get(EAGER), finals.against.get(COMPILE)
        reference = vs_eager or vs_compile
        files = export_best(task, campaign.candidate(leader.candidate_id), run_dir / "best")
        best = {
            "candidate_id": leader.candidate_id, "agent": leader.agent_id, "strategy": leader.strategy,
            "baseline": baseline_name(campaign, leader.candidate_id),
            "claim": store.candidate(leader.candidate_id).claim,
            "head_to_head": {name: head_to_head(leader.candidate_id, campaign.baselines[name], ev)
                             for name, ev in finals.against.items()},
            "speedup_vs_reference_chained": leader.speedup,
            "final_timing": finals.timed,
            "finals_s": finals.seconds,
            "finals_left_s": finals.left_s,
            "finals_reserve_s": finals.reserve_s,
            "displaced_leader": finals.displaced.agent_id if finals.displaced else None,
            "latency_ms": reference.latency_ms if reference and reference.correct else None,
            "speedup_vs_eager": vs_eager.speedup if vs_eager and vs_eager.correct else None,
            "speedup_vs_compile": vs_compile.speedup if vs_compile and vs_compile.correct else None,
            "eager_ms": vs_eager.incumbent_ms if vs_eager and vs_eager.correct else None,
            "compile_ms": vs_compile.incumbent_ms if vs_compile and vs_compile.correct else None,
            "final_verdict_vs_eager": vs_eager.verdict.value if vs_eager else None,
            "final_verdict_vs_compile": vs_compile.verdict.value if vs_compile else None,
            "sol_ms": reference.sol_ms if reference else None,
            "sol_score": _workload_sol_score(vs_eager, vs_compile) if vs_eager and vs_eager.correct else None,
            "timing": reference.timing.value if reference and reference.timing else None,
            "basis": reference.basis if reference else None,
            "device_ms": reference.device_ms if reference and reference.correct else None,
            "wall_ms": reference.wall_ms if reference and reference.correct else None,
            "files": [str(p.relative_to(run_dir)) for p in files],
        }
    counts = store.counts()
    agents = []
    for slot in campaign.slots:
        record = store.agent(slot.id)
        verdicts = counts.verdicts.get(slot.id, {})
        failed = [e.payload["error"] for e in store.events(kind="agent_error", agent_id=slot.id)
                  if "phase" not in e.payload]  # proposals only: a failed reflection still judged its candidate
        agents.append({"agent": slot.id, "strategy": slot.strategy.name, "backend": record.backend,
                       "steps": record.state.steps, "verdicts": {v.value: n for v, n in verdicts.items()},
                       "best_speedup_vs_reference": record.state.incumbent_speedup,
                       "incumbent_id": record.state.incumbent_id, "plateaus": record.state.drafts,
                       "retired": record.state.retired, "failed_steps": len(failed),
                       "last_error": failed[-1] if failed else None})
    totals: dict[str, int] = {}
    for per_agent in counts.verdicts.values():
        for verdict, n in per_agent.items():
            totals[verdict.value] = totals.get(verdict.value, 0) + n
    agent_records = [r for r in store.evaluations() if r.agent_id is not None]
    evaluations = [r.evaluation for r in agent_records]
    judged = {r.candidate_id: campaign.candidate(r.candidate_id) for r in agent_records}  # read from the store once
    timing_s = sum(e.stage_seconds.get("timing", 0.0) for e in evaluations)
    by_device = dict(getattr(campaign.executor, "lock_held_s", {}))  # the Ray executor's, per node and GPU
    lock_s = sum(by_device.values()) if hasattr(campaign.executor, "lock_held_s") else None
    mean_wall_s = sum(e.wall_s or 0 for e in evaluations) / len(evaluations) if evaluations else None
    summary = {
        "task": {"name": task.name, "format": task.format.value, "path": str(task.path),
                 "kernel_type": task.kernel_type, "workloads": len(task.workloads)},
        "device": campaign.executor.devices,
        "baselines": baselines,
        "best": best,
        "candidates": campaign.agent_candidates_used(),
        "backend_failed": campaign.agent_candidates_used() == 0 and any(a["failed_steps"] for a in agents),
        "budget": campaign.options.budget,
        "verdicts": totals,
        "agents": agents,
        "spend": candidate_spend(store),
        "stop_reason": reason.value,
        "stop_detail": campaign.stop_detail,
        "pending": [c.id for c in store.pending_candidates() if c.agent_id is not None],
        "disqualified": [{"candidate_id": cid, "why": why} for cid, why in campaign.disqualified.items()],
        "rounds": campaign.round,
        "seed": campaign.options.seed,
        "options": campaign.options.model_dump(mode="json"),
        "wall_s": wall_s,
        "guard": {"evaluations": len(evaluations),
                  "mean_wall_s": mean_wall_s,
                  "median_wall_s": median([e.wall_s or 0.0 for e in evaluations]) if evaluations else None,
                  "median_beyond_compile_s": median([beyond_compile_s(e) for e in evaluations]) if evaluations else None,
                  "timing_s": timing_s, "lock_held_s": lock_s, "lock_held_s_by_device": by_device,
                  "lock_busy_fraction": lock_s / wall_s if lock_s is not None and wall_s > 0 else None,
                  "candidates_per_lock_minute": 60.0 * len(evaluations) / lock_s if lock_s else None,
                  # the search's pace once started: each agent's evaluation held the device lock for its wall,
                  # where the lock-minute rate also counts the baselines' and finals' lock time
                  "search_candidates_per_lock_minute": 60.0 / mean_wall_s if mean_wall_s else None,
                  "timing_fraction": timing_s / wall_s if wall_s > 0 else None,
                  "request_seconds": request_totals(evaluations),
                  "native_builds": native_builds(judged, agent_records),
                  "triton_compiled": triton_compiled(judged, agent_records),
                  "consistency": timing_consistency(store, finals, campaign.baselines)},
        "llm_usage": llm_usage,
        "versions": _versions(),
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    series, placed = _series(campaign)
    plot_progress(series, run_dir / "progress.png", f"kernelarc: {task.name}",
                  winner=_plotted_winner(best, placed.get(leader.candidate_id)) if best else None)
    return summary


def native_builds(judged: dict[int, Candidate], records: list[EvaluationRecord]) -> dict[str, int]:
    """How many judged candidates compile native code (C++ or CUDA), and how many of them loaded their
    builds from the build cache instead of building under the device lock (made ahead on the CPU, or kept):
    on the H200 the builds made ahead had gone unused, 20-29 s each under the lock, and nothing said so."""
    building = [r for r in records if needs_build(judged[r.candidate_id])]
    return {"candidates": len(building), "loaded_built": sum(bool(r.evaluation.builds_restored) for r in building)}


def triton_compiled(judged: dict[int, Candidate], records: list[EvaluationRecord]) -> dict[str, int]:
    """How many judged candidates are Triton code, and how many of them found their compiled kernels in their
    side's cache when they ran (compiled ahead on the CPU, guard/triton_ahead.py, or kept from an earlier
    evaluation of the same code) instead of compiling under the device lock."""
    triton = [r for r in records if judged[r.candidate_id].language == "triton"]
    return {"candidates": len(triton), "found_compiled": sum(r.evaluation.compiled_restored > 0 for r in triton)}


def beyond_compile_s(evaluation: Evaluation) -> float:
    """An evaluation's wall seconds less the candidate's own build and first call (JIT compilation,
    autotuning): what judging itself cost, the figure issue 15 bounds at 2 s for small tasks."""
    stages = evaluation.stage_seconds
    return max(0.0, (evaluation.wall_s or 0.0) - stages.get("compile", 0.0) - stages.get("first_call", 0.0))


def request_totals(evaluations: list[Evaluation]) -> dict[str, list[float]]:
    """[requests, seconds] per side and kind of request over the evaluations, costliest first: where
    judging time went in the campaign."""
    totals: dict[str, list[float]] = {}
    for e in evaluations:
        for kind, (n, seconds) in e.request_seconds.items():
            total = totals.setdefault(kind, [0, 0.0])
            total[0], total[1] = total[0] + n, total[1] + seconds
    return {kind: [n, round(seconds, 4)] for kind, (n, seconds) in sorted(totals.items(), key=lambda item: -item[1][1])}


def _plotted_winner(best: dict, placed: tuple[int, float] | None) -> WinnerMark | None:
    """The winner's mark on progress.png: where the campaign judged it, and the headline's figure."""
    if placed is None:
        return None
    who = f"the {best['baseline']} baseline" if best["baseline"] else f"#{best['candidate_id']} {best['agent']}"
    figure = ("no head-to-head timing" if best["speedup_vs_eager"] is None
              else f"{best['speedup_vs_eager']:.3g}x vs eager head to head")
    return WinnerMark(order=placed[0], chained=placed[1], label=f"winner: {who}, {figure}")


__all__ = ["Finals", "baseline_name", "faster_baseline", "final_measurements", "head_to_head", "request_totals", "tie_goes_to_leader",
           "timing_consistency", "write_outputs"]
