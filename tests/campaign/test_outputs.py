"""What the user gets in RUN_DIR: best/ in the task's own format, summary.json, progress.png."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter

import pytest

from kernelarc.agents import Proposal
from kernelarc.campaign import start
from kernelarc.guard import GuardSettings, evaluate, solution_candidate
from kernelarc.task.loader import load_task

from campaign.runs import RMSNORM, open_store, options, scripted_agents, scripted_backend

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SUMMARY_KEYS = {"task", "device", "baselines", "best", "candidates", "budget", "verdicts", "agents", "stop_reason",
                "seed", "versions"}


def test_summary_states_task_device_baselines_best_counts_and_versions(mixed):
    summary = json.loads((mixed.run_dir / "summary.json").read_text())
    assert SUMMARY_KEYS <= summary.keys()
    assert summary["task"]["name"] == "slow_sum" and summary["task"]["format"] == "kernelbench"
    assert summary["device"] == ["cpu"] and summary["seed"] == 0
    assert list(summary["baselines"]) == ["eager"]  # compile_baseline off
    assert summary["baselines"]["eager"]["timing"] == "cpu_wall"
    best = summary["best"]
    assert best["speedup_vs_eager"] > 0 and best["speedup_vs_compile"] is None  # its size is a CPU timing: not asserted
    # One set of numbers: the ratio and both times come from the same head-to-head with the eager baseline.
    assert best["baseline"] is None and list(best["head_to_head"]) == ["eager"]
    eager = best["head_to_head"]["eager"]
    assert eager["baseline_candidate_id"] == summary["baselines"]["eager"]["candidate_id"]
    assert eager["speedup"] == best["speedup_vs_eager"] and eager["candidate_ms"] == best["latency_ms"]
    assert eager["baseline_ms"] == best["eager_ms"]
    # what the head-to-head cost, and the reserve (none: this campaign has no time limit)
    assert eager["wall_s"] > 0 and eager["stage_seconds"]["timing"] > 0 and eager["request_seconds"]
    assert best["finals_s"] > 0 and best["finals_left_s"] is None and best["finals_reserve_s"] is None
    # the speedup is paired block by block (docs/guard.md), not the ratio of the two medians shown
    assert eager["speedup"] > 0 and eager["basis"] == "wall"
    assert best["claim"] == open_store(mixed.run_dir).candidate(best["candidate_id"]).claim
    assert best["sol_ms"] is None and best["sol_score"] is None  # no SOL bound on the CPU
    assert best["timing"] == "cpu_wall" and best["basis"] == "wall"
    assert best["wall_ms"] == pytest.approx(best["latency_ms"]) and best["device_ms"] is None  # no device time on the CPU
    guard = summary["guard"]
    assert guard["candidates_per_lock_minute"] > 0 and guard["median_wall_s"] > 0
    agents_s = sum(e.evaluation.wall_s for e in open_store(mixed.run_dir).evaluations() if e.agent_id)
    assert guard["search_candidates_per_lock_minute"] == pytest.approx(60 * guard["evaluations"] / agents_s)
    assert guard["search_candidates_per_lock_minute"] > guard["candidates_per_lock_minute"]  # baselines' lock left out
    # judging's own seconds: the evaluations' walls less their builds and first calls
    store = open_store(mixed.run_dir)
    beyond = sorted(e.evaluation.wall_s - e.evaluation.stage_seconds.get("compile", 0.0)
                    - e.evaluation.stage_seconds.get("first_call", 0.0) for e in store.evaluations() if e.agent_id)
    assert 0 < guard["median_beyond_compile_s"] < guard["median_wall_s"]
    assert beyond[0] <= guard["median_beyond_compile_s"] <= beyond[-1]
    assert guard["native_builds"] == {"candidates": 0, "loaded_built": 0}  # Python candidates build nothing
    assert guard["triton_compiled"] == {"candidates": 0, "found_compiled": 0}  # nor compile Triton
    # where the judging time went, summed over the agents' evaluations, costliest kind first
    spent = list(guard["request_seconds"].values())
    assert spent and [s for _, s in spent] == sorted((s for _, s in spent), reverse=True)
    assert 0 < guard["request_seconds"]["candidate load"][0] <= guard["evaluations"]  # a static REJECT loads nothing
    # the winner was timed as a candidate, as an incumbent and in the finals: its spread is reported
    assert guard["consistency"]["candidates"] >= 1 and guard["consistency"]["median_spread"] >= 0
    verdicts = Counter(r.evaluation.verdict.value for r in open_store(mixed.run_dir).evaluations() if r.agent_id)
    assert summary["verdicts"] == verdicts
    # how the candidates were spent: these scripted claims name no `[family ...]` point
    assert list(summary["spend"]) == ["unnamed"] and summary["spend"]["unnamed"]["verdicts"] == verdicts
    assert summary["spend"]["unnamed"]["best_speedup"] > 1
    # each rejected candidate says why, as the store recorded it (mixed.py: wrong numbers, a static gate)
    rejected = {r.candidate_id: r.evaluation for r in open_store(mixed.run_dir).evaluations()
                if r.agent_id and r.evaluation.verdict.value == "REJECT"}
    rejects = summary["spend"]["unnamed"]["rejects"]
    assert len(rejected) == verdicts["REJECT"] == 2 and {r["candidate_id"] for r in rejects} == set(rejected)
    assert all(r["status"] == rejected[r["candidate_id"]].status.value and r["reason"]
               and rejected[r["candidate_id"]].reason.startswith(r["reason"]) for r in rejects)
    assert {r["status"] for r in rejects} == {"INCORRECT_NUMERICAL", "STATIC_REJECT"}
    assert [a["agent"] for a in summary["agents"]] == ["a0-reduction", "a1-memory", "a2-fusion"]
    assert {"kernelarc", "torch", "python"} <= summary["versions"].keys()
    assert (mixed.run_dir / "progress.png").read_bytes().startswith(PNG_MAGIC)


def test_kernelbench_best_is_the_winner_and_runs_standalone(mixed):
    best = json.loads((mixed.run_dir / "summary.json").read_text())["best"]
    assert best["files"] == ["best/model_new.py", "best/standalone.py"]
    winner = open_store(mixed.run_dir).candidate(best["candidate_id"]).source
    assert (mixed.run_dir / "best" / "model_new.py").read_text() == winner
    done = subprocess.run([sys.executable, "standalone.py"], cwd=mixed.run_dir / "best", capture_output=True,
                          text=True, timeout=120, check=True)
    error = re.search(r"max abs error (\S+);", done.stdout)
    assert error is not None and float(error.group(1)) < 1e-3, done.stdout


@pytest.mark.heavy
def test_sol_best_is_a_solution_json_the_guard_accepts(tmp_path):
    run_source = (RMSNORM / "solution_torch.py").read_text()
    agents = scripted_agents([Proposal(source=run_source, claim="fp32 RMSNorm returning its output")])
    start(RMSNORM, options(agents=1, budget=1, backend=scripted_backend(agents)), tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["task"]["format"] == "sol" and summary["best"]["files"] == ["best/solution.json", "best/kernel.py"]
    # the winner may be the candidate or the eager baseline (noise decides between two equal kernels)
    winner = open_store(tmp_path).candidate(summary["best"]["candidate_id"]).source
    kernel = (tmp_path / "best" / "kernel.py").read_text()
    assert kernel == winner
    text = (tmp_path / "best" / "solution.json").read_text()
    solution = json.loads(text)
    assert solution["definition"] == "rmsnorm_small" and solution["spec"]["entry_point"] == "kernel.py::run"
    assert solution["sources"] == [{"path": "kernel.py", "content": kernel}]
    exported = evaluate(load_task(RMSNORM), solution_candidate(text), device="cpu", settings=GuardSettings(rounds=1))
    assert exported.correct, exported.reason
