"""GPU check of the campaign for docs/benchmarks.md: a 4-agent campaign on one GPU, then a
single-agent campaign that proposes the same candidates in the same order, compared per candidate.

    python bench/gpu/campaign_check.py TASK --out DIR [--budget N]

Reports how busy the GPU lock was, the guard's overhead per candidate, and whether each candidate
got the same status and a latency within the measured noise in both runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("task", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    from kernelarc.campaign import CampaignOptions, start
    from kernelarc.memory import Store

    common = dict(budget=args.budget, longterm=False, compile_baseline=False, seed=7, device=args.device)
    multi = start(args.task, CampaignOptions(agents=4, **common), args.out / "multi")
    store = Store(args.out / "multi" / "campaign.sqlite")
    order = [r for r in store.evaluations() if r.agent_id is not None]
    script = {"default": [{"source": store.candidate(r.candidate_id).source,
                           "claim": store.candidate(r.candidate_id).claim} for r in order]}
    (args.out / "single_script.json").write_text(json.dumps(script))
    single = start(args.task, CampaignOptions(agents=1, backend="scripted",
                                              backend_options={"script": str(args.out / "single_script.json")},
                                              **common), args.out / "single")
    store1 = Store(args.out / "single" / "campaign.sqlite")
    by_hash = {store1.candidate(r.candidate_id).hash: r.evaluation for r in store1.evaluations() if r.agent_id}
    rows = []
    for r in order:
        a = r.evaluation
        b = by_hash.get(store.candidate(r.candidate_id).hash)
        rows.append({"candidate": store.candidate(r.candidate_id).claim[:70], "multi_status": a.status.value,
                     "single_status": b.status.value if b else None, "multi_ms": a.latency_ms,
                     "single_ms": b.latency_ms if b else None, "multi_noise": a.noise,
                     "single_noise": b.noise if b else None})
    same_status = sum(1 for x in rows if x["multi_status"] == x["single_status"])
    report = {"multi": {k: multi.summary[k] for k in ("guard", "best", "verdicts", "stop_reason", "wall_s")},
              "single": {k: single.summary[k] for k in ("guard", "best", "verdicts", "stop_reason", "wall_s")},
              "rows": rows, "same_status": same_status, "candidates": len(rows)}
    (args.out / "campaign_check.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps({k: report[k] for k in ("multi", "single", "same_status", "candidates")}, indent=1, default=str))
    for x in rows:
        print(x)
    return 0


if __name__ == "__main__":
    sys.exit(main())
