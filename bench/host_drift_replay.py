"""How often the guard's verdict rules are fooled by a host's recorded drift (issue 15, consistent verdicts).

    python bench/host_drift_replay.py docs/data/h200-session21-2026-12-04.json [--pairs 17] [--json OUT.json]

Replays block medians that `bench/gpu/host_gap_probe.py` recorded on a GPU machine (one host-bound call,
in blocks of 100, over seconds) through `kernelarc.guard.verdict.decide`, without a GPU: each window of
2 x `--pairs` consecutive blocks is one wall pass, its blocks dealt ABBA to an incumbent and a candidate
running the same code, the candidate's blocks divided by a true speedup (1.0: identical code). Each window
is judged twice: by the medians' rule (each side's median, noise the larger side's spread) and by the
paired rule (the median of the per-pair ratios, noise their spread). Reported per rule and true speedup:
the share of windows KEEP, ACCEPT and REVERT.

What the replay leaves out, and which way it leans: a side's samples are its block medians, not its
per-call samples (the medians' rule sees less spread than it would, so it KEEPs more readily than here);
one recorded block (100 calls) stands for one guard block (50 calls), so the host drifts twice as fast per
block as it did (harder on the paired rule, which needs adjacent blocks to agree). The default of 17 pairs is
what the guard times for a 60 us call (`min_timed_s` 0.05 s in blocks of 50 calls).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from kernelarc.guard.samples import Samples
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.types import Status, WorkloadResult
from kernelarc.guard.verdict import MIN_PAIRS, decide

TRUE_SPEEDUPS = (1.0, 1.1, 1.25, 1.5, 2.0)


def traces(data, found: dict[str, list[float]] | None = None, path: str = "") -> dict[str, list[float]]:
    """Every `block_medians_us` list in the recorded JSON, by where it sits."""
    found = {} if found is None else found
    if isinstance(data, dict):
        if isinstance(data.get("block_medians_us"), list):
            found[path] = data["block_medians_us"]
        for key, value in data.items():
            traces(value, found, f"{path}/{key}")
    elif isinstance(data, list):
        for i, value in enumerate(data):
            traces(value, found, f"{path}[{i}]")
    return found


def abba(window: list[float]) -> tuple[list[float], list[float]]:
    """(incumbent blocks, candidate blocks) of one window, in the guard's order (session._pairs)."""
    inc, cand = [], []
    for b in range(len(window) // 2):
        first, second = window[2 * b], window[2 * b + 1]
        (inc if b % 2 == 0 else cand).append(first)
        (cand if b % 2 == 0 else inc).append(second)
    return inc, cand


def workload(inc: list[float], cand: list[float], paired: bool, inc_blocks: list[float] | None = None,
             cand_blocks: list[float] | None = None) -> WorkloadResult:
    """One workload's result as the judge builds it (judge._passed): each side's samples in ms (`inc`,
    `cand`) and its block medians, in the guard's order (by default the samples themselves)."""
    i, c = Samples(tuple(inc)), Samples(tuple(cand))
    ratios = Samples(tuple(a / b for a, b in zip(inc_blocks or inc, cand_blocks or cand)))
    use_pairs = paired and len(ratios.times_ms) >= MIN_PAIRS
    return WorkloadResult(uuid="replay", status=Status.PASSED, latency_ms=c.median, incumbent_ms=i.median,
                          spread=c.spread, incumbent_spread=i.spread,
                          paired_speedup=ratios.median if use_pairs else None,
                          paired_spread=ratios.spread if use_pairs else None,
                          pairs=len(ratios.times_ms) if use_pairs else None)


def replay(blocks: dict[str, list[float]], pairs: int, settings: GuardSettings) -> dict:
    """Verdict shares per rule and true speedup over every whole window of every trace."""
    windows = [trace[start:start + 2 * pairs] for trace in blocks.values()
               for start in range(0, len(trace) - 2 * pairs + 1, 2 * pairs)]
    report = {"windows": len(windows), "pairs": pairs, "rules": {}}
    for rule, paired in (("medians", False), ("paired", True)):
        shares = {}
        for true in TRUE_SPEEDUPS:
            verdicts = Counter()
            for window in windows:
                inc, cand = abba([us / 1000.0 for us in window])
                verdicts[decide([workload(inc, [t / true for t in cand], paired)], settings).verdict.value] += 1
            shares[f"{true:g}x"] = {v: round(n / len(windows), 3) for v, n in sorted(verdicts.items())}
        report["rules"][rule] = shares
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recorded", type=Path)
    parser.add_argument("--pairs", type=int, default=17)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    try:
        blocks = traces(json.loads(args.recorded.read_text()))
    except (OSError, json.JSONDecodeError) as e:
        print(f"error: cannot read {args.recorded}: {e}", file=sys.stderr)
        return 2
    if args.pairs < 1 or not any(len(t) >= 2 * args.pairs for t in blocks.values()):
        print(f"error: no trace of {2 * args.pairs} blocks in {args.recorded}", file=sys.stderr)
        return 2
    report = replay(blocks, args.pairs, GuardSettings())
    print(f"{report['windows']} windows of {args.pairs} ABBA pairs from {len(blocks)} traces")
    for rule, shares in report["rules"].items():
        for true, verdicts in shares.items():
            print(f"{rule:8} true {true:5}: " + ", ".join(f"{v} {s:.1%}" for v, s in verdicts.items()))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
