"""The decision rule: KEEP, ACCEPT or REVERT for a correct candidate. Imports without torch.

Aggregates are geometric means over workloads. A workload's speedup is, where the wall time decided and
its pass had at least MIN_PAIRS ABBA pairs of blocks, the median of the pairs' incumbent / candidate
ratios, and its noise their spread (p80 - p20) / p50: on the lent H200 a host-bound call alone in a
process pinned to one core drifts between about 40 and 80 us over tens of milliseconds to seconds
(docs/benchmarks.md, session 21), so each side's samples spread by 30-90% while two blocks timed back
to back see the same host. Elsewhere (the device time, a few blocks of long calls) the speedup is
incumbent / candidate medians and the noise the larger absolute spread (p80 - p20) of the two sides
over the larger of their medians. A host-bound workload's noise is at least PROCESS_BIAS. The largest noise over workloads counts: a speedup smaller than that
is not evidence. (Relative to its own median, a microsecond call timed on a noisy clock can spread by
1000% while its whole range is far below a millisecond incumbent's: what matters is the spread on the
scale of the comparison.) The bars are
symmetric in ratio: KEEP above 1 + x with x = max(margin, noise), REVERT below 1 / (1 + y) with
y = max(window, min(noise, NOISE_CAP)), so no noise makes a slowdown past 2x look "within the window" (a red-team
candidate whose own children made its blocks erratic read 0.037x at 2786% noise, and was an ACCEPT). A paired
KEEP also needs four pairs in five in the candidate's favour (`paired_low` above 1): on a loaded 2-core host the
same code on both sides read 3.96x at 208% noise, its median past the bar while the pairs were split (sixth
red-team pass, 2026-12-06).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.types import Verdict, WorkloadResult


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str
    latency_ms: float
    incumbent_ms: float
    speedup: float
    noise: float


def geomean(values: list[float]) -> float:
    """Geometric mean of positive values (0 if any is 0)."""
    if any(v <= 0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


MIN_PAIRS = 6
"""ABBA pairs of blocks a paired speedup needs (fewer: the two sides' medians decide)."""
PROCESS_BIAS = 0.10
"""The noise a host-bound workload's speedup must beat at least: on the lent H200 two processes timing the
same eager call in turns, ABBA, differed by 3.7-9.7% in their medians for 10-15 s at a time, the same one
slower in all six conditions (bench/gpu/side_pair_probe.py, docs/benchmarks.md session 22). Pairs of blocks
cancel the host's drift over time, not that difference between the two sides' processes."""
NOISE_CAP = 1.0
"""The most noise that widens the near-best window: below 1 / (1 + NOISE_CAP), half the incumbent's speed, is
a REVERT however noisy the timing."""
HOST_BOUND_SHARE = 0.5
"""A workload is host-bound when either side's kernels kept the card busy for less than this share of its
wall time per call: the rest is host work, which follows the process and the host's moment."""


def _host_bound(w: WorkloadResult) -> bool:
    sides = ((w.device_ms, w.wall_ms), (w.incumbent_device_ms, w.incumbent_wall_ms))
    return any(device is not None and wall and device < HOST_BOUND_SHARE * wall for device, wall in sides)


def _noise(w: WorkloadResult) -> float:
    """The paired ratios' spread, else the larger absolute spread of the two sides over the larger median
    (module docstring); at least PROCESS_BIAS where the workload is host-bound."""
    floor = PROCESS_BIAS if _host_bound(w) else 0.0
    if w.paired_speedup is not None:
        return max(floor, w.paired_spread or 0.0)
    spreads = ((w.spread or 0.0) * w.latency_ms, (w.incumbent_spread or 0.0) * w.incumbent_ms)
    scale = max(w.latency_ms, w.incumbent_ms)
    return max(floor, max(spreads) / scale if scale > 0 else 0.0)


def _speedup(w: WorkloadResult) -> float:
    if w.paired_speedup is not None:
        return w.paired_speedup
    return w.incumbent_ms / w.latency_ms if w.latency_ms > 0 else math.inf


def decide(workloads: list[WorkloadResult], settings: GuardSettings, incumbent_label: str = "incumbent") -> Decision:
    """Verdict for a candidate that passed every workload and was timed on each."""
    latency = geomean([w.latency_ms for w in workloads])
    incumbent = geomean([w.incumbent_ms for w in workloads])
    speedups = [_speedup(w) for w in workloads]
    speedup = math.inf if math.inf in speedups else geomean(speedups)
    noise = max(_noise(w) for w in workloads)
    keep_bar = 1.0 + max(settings.margin, noise)
    accept_bar = 1.0 / (1.0 + max(settings.near_best_window, min(noise, NOISE_CAP)))
    split = [w.uuid for w in workloads if w.paired_low is not None and w.paired_low <= 1.0]
    paired = sum(w.paired_speedup is not None for w in workloads)
    how = "" if not paired else (" medians, paired block by block" if paired == len(workloads)
                                 else f" medians, paired block by block on {paired} of {len(workloads)} workloads")
    numbers = f"{speedup:.3f}x vs {incumbent_label} ({latency:.4g} ms vs {incumbent:.4g} ms{how}, noise {noise:.1%})"
    if speedup > keep_bar and not split:
        return Decision(Verdict.KEEP, f"faster: {numbers}", latency, incumbent, speedup, noise)
    if speedup > keep_bar:
        return Decision(Verdict.ACCEPT, f"faster in the median but not in four pairs of blocks in five (workload "
                                        f"{', '.join(split)}): {numbers}", latency, incumbent, speedup, noise)
    if speedup >= accept_bar:
        return Decision(Verdict.ACCEPT, f"within the near-best window but not faster by {keep_bar - 1:.1%}: {numbers}",
                        latency, incumbent, speedup, noise)
    return Decision(Verdict.REVERT, f"slower: {numbers}", latency, incumbent, speedup, noise)


__all__ = ["Decision", "decide", "geomean", "HOST_BOUND_SHARE", "MIN_PAIRS", "NOISE_CAP", "PROCESS_BIAS"]
