"""Every judged candidate of a `kernelarc bench` results folder as one CSV (for docs/data).

    python bench/gpu/candidates_csv.py RUN_LABEL RESULTS_DIR > candidates.csv

One row per evaluation of every campaign database under RESULTS_DIR (main runs and ablation
campaigns): who proposed what, against which incumbent, the verdict, the timings and where the
guard's wall time went. Reads the databases with sqlite3 only, so it runs anywhere.
"""

from __future__ import annotations

import csv
import json
import sqlite3
import sys
from pathlib import Path

COLUMNS = ("run", "task", "campaign", "candidate", "agent", "point_or_baseline", "against", "verdict", "status",
           "timing", "calls_per_sample", "latency_ms", "incumbent_ms", "speedup", "noise", "wall_s", "start_s",
           "compile_s", "first_call_s", "timing_s")


def rows(run: str, results: Path):
    for db in sorted(results.rglob("campaign.sqlite")):
        rel = db.parent.relative_to(results).parts
        task, campaign = rel[0], "/".join(rel[1:])
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        query = ("select c.id, c.agent_id, c.claim, e.against_incumbent_id, e.verdict, e.status, e.evaluation "
                 "from candidates c join evaluations e on e.candidate_id = c.id order by e.id")
        for cid, agent, claim, against, verdict, status, evaluation in con.execute(query):
            ev = json.loads(evaluation)
            stages = ev.get("stage_seconds") or {}
            workloads = ev.get("workloads") or [{}]
            point = claim.split("]")[0].lstrip("[") if claim.startswith("[") else claim
            yield (run, task, campaign, cid, agent or "", point, against or "reference", verdict, status,
                   ev.get("timing") or "", workloads[0].get("calls_per_sample", 1), _r(ev.get("latency_ms")),
                   _r(ev.get("incumbent_ms")), _r(ev.get("speedup"), 3), _r(ev.get("noise"), 3), _r(ev.get("wall_s"), 1),
                   _r(stages.get("start"), 1), _r(stages.get("compile"), 1), _r(stages.get("first_call"), 1),
                   _r(stages.get("timing"), 1))
        con.close()


def _r(value, digits: int = 5):
    return "" if value is None else round(value, digits)


if __name__ == "__main__":
    writer = csv.writer(sys.stdout)
    writer.writerow(COLUMNS)
    writer.writerows(rows(sys.argv[1], Path(sys.argv[2])))
