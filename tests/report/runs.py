"""Run directories for report tests, written straight through the store in well under a second.

`write_run` records a small campaign by hand (the eager baseline, a KEEP chain two deep, an ACCEPT,
a REVERT, a REJECT with a worker log and a candidate never judged) plus a summary.json shaped as
the campaign writes it. Its winner's source and claim carry hostile HTML: the report must show them
as text. `write_bench` lays out a bench dir holding one such campaign as a task.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelarc.guard.types import Evaluation, Status, TimingMethod, Verdict
from kernelarc.memory import CampaignMeta, Store

HOSTILE = "</script><script>alert(1)</script>"
HOSTILE_SOURCE = f'''"""A fast row sum. {HOSTILE}"""

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.sum(1, keepdim=True)  # <img src=x onerror=alert(2)>
'''
FIRST_SOURCE = '''import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.stack([r.sum() for r in x]).unsqueeze(1)
'''


def _timed(verdict: Verdict, speedup: float, latency_ms: float, reason: str) -> Evaluation:
    return Evaluation(verdict=verdict, status=Status.PASSED, reason=reason, correct=True, latency_ms=latency_ms,
                      incumbent_ms=latency_ms * speedup, speedup=speedup, noise=0.02, timing=TimingMethod.CPU_WALL,
                      basis="wall", device="cpu")


def _rejected(reason: str, log_tail: str = "") -> Evaluation:
    return Evaluation(verdict=Verdict.REJECT, status=Status.INCORRECT_NUMERICAL, reason=reason, correct=False,
                      device="cpu", log_tail=log_tail)


def write_run(run_dir: Path) -> dict[str, int]:
    """Record the campaign in `run_dir`; return its candidates' ids by name."""
    run_dir.mkdir(parents=True)
    store = Store(run_dir / "campaign.sqlite")
    store.put_meta(CampaignMeta(task_name="slow_sum", task_path="examples/kernelbench/slow_sum.py",
                                kernel_type="reduction", seed=0))
    for agent, strategy in (("a0-reduction", "reduction"), ("a1-memory", "memory")):
        store.register_agent(agent, strategy, "scripted")
    ids: dict[str, int] = {}

    def add(name: str, source: str, agent: str | None, claim: str, parent: str | None = None) -> int:
        ids[name], _ = store.add_candidate(hash=f"hash-{name}", source=source, agent_id=agent,
                                           strategy=agent.split("-")[1] if agent else "baseline", claim=claim,
                                           language="pytorch", kind="module", parent_id=ids.get(parent))
        return ids[name]

    def judge(name: str, evaluation: Evaluation, against: str | None = None) -> None:
        store.record_verdict(ids[name], evaluation, against_incumbent_id=ids.get(against))

    add("eager", "import torch\n# the reference, as eager PyTorch\n", None, "baseline: eager")
    judge("eager", _timed(Verdict.ACCEPT, 1.0, 5.0, "within the window: 1.000x"))
    add("first", FIRST_SOURCE, "a0-reduction", "stack the row sums")
    judge("first", _timed(Verdict.KEEP, 4.0, 1.25, "faster: 4.000x vs reference"))
    add("hostile", HOSTILE_SOURCE, "a0-reduction", f"one vectorized sum {HOSTILE}", parent="first")
    judge("hostile", _timed(Verdict.KEEP, 50.0, 0.025, f"faster: 50.000x vs incumbent <b>{HOSTILE}</b>"), "first")
    add("alt", HOSTILE_SOURCE.replace("keepdim=True", "True"), "a0-reduction", "positional keepdim", parent="hostile")
    judge("alt", _timed(Verdict.ACCEPT, 1.01, 0.0248, "within the window: 1.010x"), "hostile")
    add("loop", FIRST_SOURCE.replace("stack", "cat"), "a1-memory", "loop over rows")
    judge("loop", _timed(Verdict.REVERT, 0.5, 10.0, "slower: 0.500x vs reference"))
    add("wrong", FIRST_SOURCE.replace("r.sum()", "r.sum() + 1"), "a1-memory", "off by one")
    judge("wrong", _rejected("workload default: 100% of elements out of tolerance",
                             log_tail=f"Traceback: {HOSTILE}"))
    add("unjudged", FIRST_SOURCE + "# never judged\n", "a1-memory", "proposed as the budget ran out")
    store.log_event("agent_error", "a1-memory", {"step": 3, "error": f"ValueError: {HOSTILE}"})
    store.log_event("stop", payload={"reason": "budget", "round": 3})
    best = {"candidate_id": ids["hostile"], "agent": "a0-reduction", "strategy": "reduction",
            "speedup_vs_reference_chained": 200.0, "displaced_leader": None, "latency_ms": 0.026,
            "speedup_vs_eager": 187.654, "speedup_vs_compile": 23.4567, "eager_ms": 4.879, "compile_ms": 0.61,
            "final_verdict_vs_eager": "KEEP", "final_verdict_vs_compile": "KEEP", "sol_ms": None, "sol_score": None,
            "timing": "cpu_wall", "basis": "wall", "files": ["best/model_new.py", "best/standalone.py"]}
    summary = {"task": {"name": "slow_sum", "format": "kernelbench", "path": "examples/kernelbench/slow_sum.py",
                        "kernel_type": "reduction", "workloads": 1},
               "device": ["cpu"], "baselines": {"eager": {"candidate_id": ids["eager"], "verdict": "ACCEPT",
                                                          "status": "PASSED", "reason": "within the window",
                                                          "latency_ms": 5.0, "reference_ms": 5.0, "compile_s": 0.01}},
               "best": best, "candidates": 6, "budget": 6, "verdicts": {"KEEP": 2, "ACCEPT": 1, "REVERT": 1, "REJECT": 1},
               "agents": [], "stop_reason": "budget", "wall_s": 12.5,
               "guard": {"evaluations": 5, "lock_held_s": 9.5, "lock_busy_fraction": 0.76,
                         "candidates_per_lock_minute": 31.6, "timing_s": 4.0, "median_wall_s": 1.9,
                         "median_beyond_compile_s": 1.35, "native_builds": {"candidates": 2, "loaded_built": 1}}}
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return ids


def write_bench(bench_dir: Path, run_dir: Path) -> None:
    """A bench dir with task slow_sum complete (its campaign a copy of `run_dir`) and task broken failed."""
    shutil.copytree(run_dir, bench_dir / "slow_sum" / "campaign")
    row = {"task": "slow_sum", "path": "suite/slow_sum.py", "options_key": "k", "status": "complete",
           "kernel_type": "reduction", "device": "cpu", "timing": "cpu_wall",
           "eager": {"status": "PASSED", "latency_ms": 4.879, "compile_s": 0.01, "reason": ""},
           "compile": {"status": "skipped"}, "best_ms": 0.026, "basis": "wall", "best_label": "a0-reduction (reduction)",
           "speedup_vs_eager": 187.654, "candidates": 6, "budget": 6, "stop_reason": "budget", "wall_s": 12.5,
           "run_dir": str(bench_dir / "slow_sum" / "campaign"), "finished_at": "2026-12-01T00:00:00Z"}
    failed = {"task": "broken", "path": "suite/broken.py", "options_key": "k", "status": "failed",
              "error": f"TaskError: {HOSTILE}", "finished_at": "2026-12-01T00:00:00Z"}
    results = {"schema_version": 1, "suite": "/abs/suite", "command": "kernelarc bench suite", "updated_at": "now",
               "versions": {}, "rows": [row, failed], "ablation": [],
               "geomeans": {"speedup_vs_eager": {"value": 187.654, "n": 1}, "sol_score_mean": {"value": None, "n": 0}},
               "arms": []}
    (bench_dir / "results.json").write_text(json.dumps(results, indent=2))
