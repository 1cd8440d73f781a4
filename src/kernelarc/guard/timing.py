"""Latency measurement inside the worker (needs torch).

Incumbent and candidate are timed interleaved in one process (ABBA order) so clock and thermal
drift cancel. On CUDA every timed call is preceded by an L2 flush and gets its own input copy (a
fresh address: no pointer-keyed caching); launch-bound calls are the exception, timed in batches
back to back after one flush (`calls_per_sample`), each call still on its own input copy. The start event is recorded on an idle card, after the
flush has finished: otherwise the call's host code races the flush, and a launch-bound call's
sample is whatever part of its host overhead the flush did not hide (on the H200 such samples
spread by 30-140% between p20 and p80). CUDA events on the launching stream are the default;
when a probe under the CUDA profiler (CUPTI) shows a call putting kernels on other streams, that
side is timed by kernel spans over all streams instead, so hidden side-stream work is counted. On
the CPU the same flow runs on the wall clock.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.types import TimingMethod

ITER_MARK = "kernelarc_iter_"
_GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
_LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver"}


@dataclass(frozen=True)
class Samples:
    """Timed latencies (ms) of one side on one workload."""

    times_ms: tuple[float, ...]
    method: TimingMethod

    def quantile(self, q: float) -> float:
        s = sorted(self.times_ms)
        pos = q * (len(s) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    @property
    def median(self) -> float:
        return self.quantile(0.5)

    @property
    def spread(self) -> float:
        """(p80 - p20) / p50: the noise a speedup must beat."""
        m = self.median
        return (self.quantile(0.8) - self.quantile(0.2)) / m if m > 0 else 0.0


class L2Flusher:
    """Zeroes a buffer twice the L2 size before each timed call, so no call runs from a warm cache."""

    def __init__(self, device: torch.device):
        size = 2 * torch.cuda.get_device_properties(device).L2_cache_size
        self._buf = torch.empty(max(size, 1 << 20), dtype=torch.uint8, device=device)

    def __call__(self) -> None:
        self._buf.zero_()


@dataclass(frozen=True)
class StreamProbe:
    """What one profiled call launched."""

    n_kernels: int
    side_streams: bool
    """True if any of the call's GPU work ran on a stream other than the launching one."""


def _trace_events(prof) -> list[dict]:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f).get("traceEvents", [])


def _iteration_spans(events: list[dict]) -> tuple[dict[int, float], dict[int, int], dict[int, set], int | None]:
    """Per marked iteration: kernel span (ms), kernel count and streams used; plus the marker stream.

    GPU work is attributed to an iteration through the correlation id of the launch call that the
    iteration's `record_function` range encloses, whatever stream it ran on.
    """
    windows = {}
    for ev in events:
        name = ev.get("name", "")
        if ev.get("cat") == "user_annotation" and name.startswith(ITER_MARK):
            windows[int(name[len(ITER_MARK):])] = (ev["ts"], ev["ts"] + ev.get("dur", 0))
    launch_iter: dict[int, int] = {}
    for ev in events:
        if ev.get("cat") in _LAUNCH_CATEGORIES and "correlation" in ev.get("args", {}):
            for it, (lo, hi) in windows.items():
                if lo <= ev["ts"] <= hi:
                    launch_iter[ev["args"]["correlation"]] = it
                    break
    starts: dict[int, float] = {}
    ends: dict[int, float] = {}
    counts: dict[int, int] = {}
    streams: dict[int, set] = {}
    other_streams: set = set()
    for ev in events:
        if ev.get("cat") not in _GPU_CATEGORIES:
            continue
        args = ev.get("args", {})
        it = launch_iter.get(args.get("correlation"))
        if it is None:
            other_streams.add(args.get("stream"))
            continue
        starts[it] = min(starts.get(it, ev["ts"]), ev["ts"])
        ends[it] = max(ends.get(it, 0.0), ev["ts"] + ev.get("dur", 0))
        counts[it] = counts.get(it, 0) + 1
        streams.setdefault(it, set()).add(args.get("stream"))
    spans = {it: (ends[it] - starts[it]) / 1000.0 for it in starts}
    marker_stream = next(iter(other_streams)) if len(other_streams) == 1 else None
    return spans, counts, streams, marker_stream


def _profile_one(call: Callable[[], object], flush: Callable[[], None]):
    """Profile one flushed call under CUPTI: (span ms, kernel count, streams used, the flush's stream)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        flush()
        with record_function(f"{ITER_MARK}0"):
            call()
        torch.cuda.synchronize()
    spans, counts, streams, flush_stream = _iteration_spans(_trace_events(prof))
    return spans.get(0, 0.0), counts.get(0, 0), streams.get(0, set()), flush_stream


def probe_streams(call: Callable[[], object], flush: Callable[[], None]) -> StreamProbe:
    """Profile one call (after a flush on the launching stream) and report its kernels and streams."""
    _, n_kernels, used, flush_stream = _profile_one(call, flush)
    side = bool(used - {flush_stream}) if flush_stream is not None else len(used) > 1
    return StreamProbe(n_kernels=n_kernels, side_streams=side)


class SideTimer:
    """Times one side's calls with the method chosen for it.

    A sample is one call, or with `CUDA_EVENTS_BATCH` `batch` calls back to back (each bound to its
    own input copy) after one L2 flush, recorded as the span over `batch`.
    """

    def __init__(self, method: TimingMethod, flush: Callable[[], None] | None, batch: int = 1):
        self.method = method
        self.batch = batch if method is TimingMethod.CUDA_EVENTS_BATCH else 1
        self._flush = flush
        self.times: list[float] = []

    def time(self, calls: list[Callable[[], object]]) -> None:
        if self.method is TimingMethod.CPU_WALL:
            t0 = time.perf_counter()
            for call in calls:
                call()
            self.times.append((time.perf_counter() - t0) * 1000.0 / len(calls))
        elif self.method in (TimingMethod.CUDA_EVENTS, TimingMethod.CUDA_EVENTS_BATCH):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self._flush()
            torch.cuda.synchronize()
            start.record()
            for call in calls:
                call()
            end.record()
            end.synchronize()
            self.times.append(start.elapsed_time(end) / len(calls))
        else:
            self.times.append(sum(_cupti_span(call, self._flush) for call in calls) / len(calls))

    def samples(self) -> Samples:
        return Samples(tuple(self.times), self.method)


def _cupti_span(call: Callable[[], object], flush: Callable[[], None]) -> float:
    """One call's span from its first kernel's start to its last kernel's end, over all streams."""
    return _profile_one(call, flush)[0]


def calls_per_sample(methods: set[TimingMethod], synced_s: dict[str, float], settings: GuardSettings) -> int:
    """`settings.batch_calls` when both sides are timed by CUDA events on one stream and each side's
    synchronized call (`synced_s`, seconds) is launch-bound by `settings.batch_below_ms`; else 1.

    Side-stream work (CUPTI) is timed one call per profiler session: it cannot be batched.
    """
    limit_s = settings.batch_below_ms / 1000.0
    if methods == {TimingMethod.CUDA_EVENTS} and synced_s and max(synced_s.values()) < limit_s:
        return settings.batch_calls
    return 1


def interleaved(
    sides: dict[str, tuple[SideTimer, Callable[[int], Callable[[], object]]]],
    samples: int,
) -> dict[str, Samples]:
    """Take `samples` samples of every side in ABBA order.

    Args:
        sides: name -> (timer, make_call), where make_call(i) returns the zero-argument call number
            i (bound to its own input copy); sample k of a side takes calls k*batch to (k+1)*batch - 1.
        samples: samples per side.
    """
    names = list(sides)
    for k in range(samples):
        order = names if k % 2 == 0 else list(reversed(names))
        for name in order:
            timer, make_call = sides[name]
            timer.time([make_call(k * timer.batch + j) for j in range(timer.batch)])
    return {name: timer.samples() for name, (timer, _) in sides.items()}


__all__ = ["Samples", "L2Flusher", "StreamProbe", "probe_streams", "SideTimer", "calls_per_sample", "interleaved"]
