"""Compare kernelarc's device times with SOL-ExecBench's official evaluator's (issue 15), from the
files bench/gpu/official_agreement.sh wrote: per workload, the winner's and the reference's latency
by both tools and their ratio, then per problem the geometric mean ratio and the speedups each tool
reports.

    python bench/gpu/official_compare.py OUT [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def load_official(path: Path) -> dict[str, dict]:
    """Workload uuid -> the official evaluation (status, latency_ms, reference_latency_ms)."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        trace = json.loads(line)
        ev = trace.get("evaluation") or {}
        perf = ev.get("performance") or {}
        found[trace["workload"]["uuid"]] = {"status": ev.get("status"), "latency_ms": perf.get("latency_ms"),
                                           "reference_latency_ms": perf.get("reference_latency_ms")}
    return found


def compare(out: Path) -> list[dict]:
    """One row per problem with per-workload pairs."""
    rows = []
    for eval_path in sorted(out.glob("*.eval.json")):
        name = eval_path.name[: -len(".eval.json")]
        official_path = out / f"{name}.official.jsonl"
        ours = json.loads(eval_path.read_text() or "{}")
        theirs = load_official(official_path) if official_path.exists() else {}
        pairs = []
        for w in ours.get("workloads", []):
            o = theirs.get(w["uuid"], {})
            pairs.append({"uuid": w["uuid"], "status": w["status"], "official_status": o.get("status"),
                          "candidate_ms": w.get("device_ms"), "official_candidate_ms": o.get("latency_ms"),
                          "reference_ms": w.get("incumbent_device_ms"),
                          "official_reference_ms": o.get("reference_latency_ms")})
        rows.append({"problem": name, "verdict": ours.get("verdict"), "status": ours.get("status"),
                     "speedup": ours.get("speedup"), "workloads": pairs, **_summary(pairs)})
    return rows


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def _summary(pairs: list[dict]) -> dict:
    both = [p for p in pairs if p["candidate_ms"] and p["official_candidate_ms"]]
    ratio = [p["candidate_ms"] / p["official_candidate_ms"] for p in both]
    ref = [p["reference_ms"] / p["official_reference_ms"] for p in both if p["reference_ms"] and p["official_reference_ms"]]
    return {"workloads_compared": len(both),
            "candidate_ratio_geomean": _geomean(ratio), "candidate_ratio_range": [min(ratio), max(ratio)] if ratio else None,
            "reference_ratio_geomean": _geomean(ref), "reference_ratio_range": [min(ref), max(ref)] if ref else None,
            "official_speedup_geomean": _geomean([p["official_reference_ms"] / p["official_candidate_ms"] for p in both
                                                  if p["official_reference_ms"]])}


def table(rows: list[dict]) -> str:
    fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    rng = lambda r: "-" if not r else f"{r[0]:.2f}-{r[1]:.2f}"  # noqa: E731
    lines = ["| problem | workloads | kernelarc / official, winner (geomean, range) | kernelarc / official, "
             "reference | speedup: kernelarc | speedup: official |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['problem']} | {r['workloads_compared']}{_none_compared(r)} | {fmt(r['candidate_ratio_geomean'])} "
                     f"({rng(r['candidate_ratio_range'])}) | {fmt(r['reference_ratio_geomean'])} "
                     f"({rng(r['reference_ratio_range'])}) | {fmt(r['speedup'])} | {fmt(r['official_speedup_geomean'])} |")
    return "\n".join(lines)


def _none_compared(row: dict) -> str:
    """Why a problem compared no workload: kernelarc's verdict when it gave no times (a REJECT), else none."""
    if row["workloads_compared"]:
        return ""
    if row["verdict"] is None:
        return " (no kernelarc result)"
    return f" (kernelarc: {row['verdict']} {row['status']})" if row["status"] != "PASSED" else " (no official times)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = compare(args.out)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
