"""Write a SOL-ExecBench solution.json for a problem without a campaign: one of its baselines (`eager`, the
reference's own code; `torch.compile`, as kernelarc's baseline compiles it) or a candidate file with `run`.
What bench/gpu/official_agreement.sh judges by both tools when a problem is given as PROBLEM=SOLUTION.

    python bench/gpu/solution_json.py PROBLEM_DIR (eager|torch.compile|CANDIDATE.py) OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from kernelarc.campaign.baselines import baseline_candidates
from kernelarc.campaign.export import export_best
from kernelarc.guard.candidate import load_candidate
from kernelarc.task.loader import load_task


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    problem, which, out = argv
    task = load_task(Path(problem))
    baselines = baseline_candidates(task)
    candidate = baselines[which] if which in baselines else load_candidate(Path(which), task)
    written = export_best(task, candidate, Path(out), author="kernelarc bench/gpu/solution_json.py")
    print(" ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
