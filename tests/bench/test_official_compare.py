"""bench/gpu/official_compare.py: per-workload ratios of kernelarc's device times to the official evaluator's,
and a problem that compared none says why."""

from __future__ import annotations

import json

from .scripts import load_script

SCRIPT = "bench/gpu/official_compare.py"


def _official_line(uuid: str, ms: float, ref_ms: float) -> str:
    return json.dumps({"workload": {"uuid": uuid}, "evaluation": {"status": "PASSED", "performance": {
        "latency_ms": ms, "reference_latency_ms": ref_ms}}})


def test_ratios_per_workload_and_a_reject_named_where_nothing_compared(tmp_path):
    module = load_script(SCRIPT)
    workloads = [{"uuid": "a", "status": "PASSED", "device_ms": 0.011, "incumbent_device_ms": 0.2},
                 {"uuid": "b", "status": "PASSED", "device_ms": 0.02, "incumbent_device_ms": 0.4}]
    (tmp_path / "good.eval.json").write_text(json.dumps({"verdict": "KEEP", "status": "PASSED", "speedup": 20.0,
                                                         "workloads": workloads}))
    (tmp_path / "good.official.jsonl").write_text("progress text\n" + _official_line("a", 0.01, 0.2) + "\n"
                                                  + _official_line("b", 0.02, 0.5) + "\n")
    (tmp_path / "hack.eval.json").write_text(json.dumps({"verdict": "REJECT", "status": "REWARD_HACK",
                                                         "workloads": []}))
    (tmp_path / "hack.official.jsonl").write_text(_official_line("a", 0.01, 0.2) + "\n")
    (tmp_path / "crashed.eval.json").write_text("")

    rows = {r["problem"]: r for r in module.compare(tmp_path)}
    good = rows["good"]
    assert good["workloads_compared"] == 2
    assert [round(r, 12) for r in good["candidate_ratio_range"]] == [1.0, 1.1]
    assert abs(good["candidate_ratio_geomean"] - 1.1 ** 0.5) < 1e-12
    text = module.table(list(rows.values()))
    assert "| hack | 0 (kernelarc: REJECT REWARD_HACK) |" in text
    assert "| crashed | 0 (no kernelarc result) |" in text
    assert "| good | 2 |" in text
