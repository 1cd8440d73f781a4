"""The torch.compile baseline is judged like any candidate and reported (compiling on the CPU is slow).

The task is narrow_sum (slow_sum with 8 columns) so that inductor builds it in tens of seconds.
"""

from __future__ import annotations

import json

import pytest

from kernelarc.campaign import start

from campaign.runs import CANDIDATES, open_store, options, proposal, scripted_agents, scripted_backend

NARROW_SUM = CANDIDATES / "narrow_sum.py"


@pytest.mark.slow
@pytest.mark.heavy
def test_the_compile_baseline_is_judged_and_the_winner_measured_against_it(tmp_path):
    agents = scripted_agents([proposal("fast")])
    start(NARROW_SUM, options(agents=1, strategies=("reduction",), budget=1, compile_baseline=True,
                              backend=scripted_backend(agents)), tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    compiled = summary["baselines"]["torch.compile"]
    assert compiled["status"] == "PASSED" and compiled["latency_ms"] > 0 and compiled["compile_s"] is not None
    record = open_store(tmp_path).evaluation(compiled["candidate_id"])
    assert record.agent_id is None and record.against_incumbent_id is None  # judged against the reference
    best = summary["best"]  # fast.py or a baseline: timing noise on 10-microsecond calls decides
    for name, key in (("torch.compile", "compile"), ("eager", "eager")):
        if best["baseline"] == name:  # a baseline is never timed against itself
            assert best[f"speedup_vs_{key}"] is None and best[f"final_verdict_vs_{key}"] is None
        else:
            assert best[f"speedup_vs_{key}"] > 0 and best[f"final_verdict_vs_{key}"] in ("KEEP", "ACCEPT", "REVERT")
