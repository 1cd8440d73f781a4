"""How a side process times one call (needs torch; used only inside side processes).

Three clocks, one per way of measuring, each taking one call after an L2 flush:
- `wall_sample`: CUDA events around the call on the launching stream, host overhead included (what
  KernelBench measures). A side whose work leaves that stream is timed with a device-wide
  synchronize before the end event, so the hidden work counts.
- `device_samples`: kernel spans under the CUDA profiler (CUPTI through torch.profiler), the way
  SOL-ExecBench measures: one profiler session for a block of calls, each call's span from its
  first kernel's start to its last kernel's end over all streams, gaps included. As in that
  evaluator, the call is launched right behind the queued flush, with no synchronization between
  them: the host's launches overlap the flush, so a chain of small kernels is not timed as launch gaps.
- `cpu_sample`: the host clock, on the CPU (`cpu_wall`: a ranking for tests, never a GPU speed).

A block of calls runs with Python's garbage collector paused (`collector_paused`), as `timeit` does:
a collection that happens to start inside one call adds its pause to that call's host time.

None of these numbers is believed as such: the judge compares every block's samples with its own
clock around the request (guard/session.py). After each call its outputs are copied for the judge
to fetch any of them later (`keep`), outside the measured window.
"""

from __future__ import annotations

import bisect
import dataclasses
import gc
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from kernelarc.guard.replies import HOST_GAP_MS, KERNEL_NAME_CHARS, KERNELS_REPORTED

ITER_MARK = "kernelarc_iter_"
_GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
_LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver"}
SYNC_NAME = "cudaDeviceSynchronize"


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off for the block, restored after as it was. No collection first: the
    judge's clock times the whole request, and a full collection costs milliseconds there."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class L2Flusher:
    """Zeroes a buffer twice the L2 size before each timed call, so no call runs from a warm cache."""

    def __init__(self, device: torch.device):
        size = 2 * torch.cuda.get_device_properties(device).L2_cache_size
        self._buf = torch.empty(max(size, 1 << 20), dtype=torch.uint8, device=device)

    def __call__(self) -> None:
        self._buf.zero_()


def _kept(outputs: list) -> list:
    """Copies of a call's tensor outputs (a call may reuse its buffers in the next one)."""
    return [o.clone() if type(o) is torch.Tensor else o for o in outputs]


class InputSlots:
    """One set of buffers that a timed block's calls all read their tensor inputs from, each call's own
    values copied in just before its window (`load`, outside it).

    Why: on the H100 a 3-5 us compiled RMSNorm read 20-34% above SOL-ExecBench's evaluator when each of a
    block's calls ran on its own input set, all drawn before the block at as many addresses (as much with a
    clone made before each call but all kept), and 2.5-4.6% above it in slots (docs/benchmarks.md sessions
    32-33). The official loop hands each call a clone made just before it, whose memory the allocator gives
    back for the next clone: its calls read one set of addresses. A slot is a plain tensor of one shape,
    dtype and device in every call; any other input (scalars, subclasses, strided or autograd tensors) goes to
    each call as drawn. A block of one call (inputs too large for two in the memory budget) has no slots: its
    call reads one set of addresses anyway, and two more copies of a 6 GiB input would cost 12 GiB."""

    def __init__(self, staged: list[list]):
        self._staged = staged
        several = len(staged) > 1
        self._slots = [torch.empty_like(value) if several and all(_slottable(value, call[j]) for call in staged)
                       else None for j, value in enumerate(staged[0] if staged else [])]

    @property
    def count(self) -> int:
        """How many of a call's inputs sit in slots."""
        return sum(slot is not None for slot in self._slots)

    def inputs(self, i: int) -> list:
        """Call i's inputs: the slots, and its own values where an input has no slot."""
        return [value if slot is None else slot for slot, value in zip(self._slots, self._staged[i])]

    def load(self, i: int) -> None:
        """Call i's values into the slots (queued on the current stream)."""
        with torch.no_grad():
            for slot, value in zip(self._slots, self._staged[i]):
                if slot is not None:
                    slot.copy_(value)

    def returning_inputs(self, call: Callable[[], list]) -> Callable[[], list]:
        """`call` returning its outputs and then its slotted inputs as it left them, for the block's `keep`
        to copy with the outputs, between windows: the next call's `load` overwrites them."""
        slotted = [slot for slot in self._slots if slot is not None]
        return lambda: [*call(), *slotted]

    def split(self, i: int, kept: list) -> tuple[list, list]:
        """Call i's kept outputs, and its inputs as it left them, from what `returning_inputs` returned."""
        outputs, after = kept[:len(kept) - self.count], iter(kept[len(kept) - self.count:])
        return outputs, [value if slot is None else next(after) for slot, value in zip(self._slots, self._staged[i])]


def _slottable(first, value) -> bool:
    return (type(first) is torch.Tensor and type(value) is torch.Tensor and first.is_contiguous()
            and value.is_contiguous() and not first.requires_grad and not value.requires_grad
            and (value.shape, value.dtype, value.device) == (first.shape, first.dtype, first.device))


def cpu_sample(call: Callable[[], list], flush, keep, sync_end: bool = False) -> float:
    t0 = time.perf_counter()
    outputs = call()
    ms = (time.perf_counter() - t0) * 1000.0
    if keep is not None:
        keep(_kept(outputs))
    return ms


def wall_sample(call: Callable[[], list], flush, keep, sync_end: bool = False) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush()
    torch.cuda.synchronize()
    start.record()
    outputs = call()
    if sync_end:
        torch.cuda.synchronize()
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    if keep is not None:
        keep(_kept(outputs))
    return ms


@dataclass(frozen=True)
class DeviceBlock:
    """Kernel spans of a block of calls profiled in one session."""

    spans_ms: list[float]
    kernels: list[int]
    """GPU activities (kernels, copies, memsets) attributed to each call."""
    longest_ms: list[float]
    """Each call's longest single GPU activity: a floor under its wall time that no profiler overhead
    inflates (a span can grow with the host's gaps between launches under the profiler; one kernel not)."""
    busy_ms: list[float]
    """Each call's span less its idle gaps over `HOST_GAP_MS` (`CallActivity.busy_ms`): the floor under its
    wall time that holds for a host-bound call too."""
    side_streams: bool
    """Some call ran GPU work on a stream other than the launching one."""
    kernel_ms: dict[str, list[float]]
    """Kernel name -> [total ms, launches] over the block's calls."""
    annotated: bool = False
    """Profiled with each call marked on the host (`_annotated_device_samples`): spans inflated by tracing."""


def device_samples(calls: list[Callable[[], list]], flush, keep,
                   before: Callable[[int], None] = lambda i: None) -> DeviceBlock:
    """Each call's kernel span from one CUPTI session with no host-side op tracing (as SOL-ExecBench's
    evaluator measures); calls are told apart by the side's own device synchronizations around them.

    Tracing every host op (the profiler's CPU activity) costs microseconds per op, so a chain of small
    kernels then spans its launches' tracing too: on the H200 that read launch-bound eager code 1.5-2.9x
    slower than the official evaluator; and a call started on an idle card after a synchronized flush
    pays every launch as a gap (2.5-3.2x the official time on a three-kernel linear backward). So each
    window holds the flush's launch first, then the call's: the flush's kernel is told apart as the
    window's first launch. A call that synchronizes the device itself breaks the count of those
    synchronizations; its block is then profiled again with each call marked on the host
    (`record_function`), which attributes any launch but inflates such gaps. `before(i)` runs ahead of
    call i's window, its GPU work finished before the window opens (the side seeds its RNGs and loads the
    call's inputs there, `InputSlots.load`).
    """
    from torch.profiler import ProfilerActivity, profile

    kept = []
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i, call in enumerate(calls):
            before(i)
            torch.cuda.synchronize()
            flush()
            outputs = call()
            torch.cuda.synchronize()
            if keep is not None:
                kept.append(_kept_between_windows(outputs, last=i == len(calls) - 1))
    events = _trace_events(prof)
    windows = sync_windows(events, len(calls))
    if windows is None:
        return _annotated_device_samples(calls, flush, keep, before)
    _hand_over(kept, keep)
    return _block(iteration_spans(events, windows, flush_first=True), len(calls))


def _annotated_device_samples(calls: list[Callable[[], list]], flush, keep,
                              before: Callable[[int], None]) -> DeviceBlock:
    from torch.profiler import ProfilerActivity, profile, record_function

    kept = []
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i, call in enumerate(calls):
            before(i)
            torch.cuda.synchronize()
            flush()
            with record_function(f"{ITER_MARK}{i}"):
                outputs = call()
            torch.cuda.synchronize()
            if keep is not None:
                kept.append(_kept_between_windows(outputs, last=i == len(calls) - 1))
    events = _trace_events(prof)
    _hand_over(kept, keep)
    return dataclasses.replace(_block(iteration_spans(events, marked_windows(events)), len(calls)), annotated=True)


def _kept_between_windows(outputs: list, last: bool) -> list:
    """A profiled call's outputs for the audits: copied between windows, except the block's last call's, held as
    they are. Its copy would be GPU work after the last window, and `sync_windows` could then pair the
    synchronizations either way when the profiler's extra one comes last; no later call of the block can
    overwrite the last call's buffers."""
    return list(outputs) if last else _kept(outputs)


def _hand_over(kept: list[list], keep) -> None:
    """The kept outputs of the profiled run whose spans are reported, and only those: a block profiled again
    (host-traced) hands over its second run's, so a side cannot be audited on one run and timed on another."""
    if keep is not None:
        for outputs in kept:
            keep(outputs)


def _block(spans: tuple[dict[int, CallActivity], int | None], n: int) -> DeviceBlock:
    activity, flush_stream = spans
    used = set().union(*(a.streams for a in activity.values())) if activity else set()
    side = bool(used - {flush_stream}) if flush_stream is not None else any(len(a.streams) > 1 for a in activity.values())
    empty = CallActivity(0.0, 0, frozenset(), 0.0)
    got = [activity.get(i, empty) for i in range(n)]
    totals: dict[str, list[float]] = {}
    for a in got:
        for name, ms in a.by_name:
            total = totals.setdefault(name, [0.0, 0])
            total[0] += ms
            total[1] += 1
    return DeviceBlock([a.span_ms for a in got], [a.count for a in got], [a.longest_ms for a in got],
                       [a.busy_ms for a in got], side, totals)


def costliest(kernel_ms: dict[str, list[float]], n: int = KERNELS_REPORTED) -> dict[str, list[float]]:
    """The `n` kernels with the most device time, names clipped: what a side reports of its profile."""
    top = sorted(kernel_ms.items(), key=lambda item: -item[1][0])[:n]
    return {name[:KERNEL_NAME_CHARS]: [float(ms), float(count)] for name, (ms, count) in top}


def _trace_events(prof) -> list[dict]:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f).get("traceEvents", [])


@dataclass(frozen=True)
class CallActivity:
    """The GPU work one marked call launched."""

    span_ms: float
    """First start to last end, over every stream."""
    count: int
    streams: frozenset
    longest_ms: float
    busy_ms: float = 0.0
    """The span less every idle gap over `HOST_GAP_MS` between its GPU activities."""
    by_name: tuple[tuple[str, float], ...] = ()
    """(name, ms) of each of its GPU activities."""


def _busy_us(evs: list[dict]) -> float:
    """First start to last end of `evs`, less every gap over `HOST_GAP_MS` in which none of them ran."""
    intervals = sorted((e["ts"], e["ts"] + e.get("dur", 0)) for e in evs)
    busy, (start, end) = 0.0, intervals[0]
    for lo, hi in intervals[1:]:
        if lo - end > HOST_GAP_MS * 1000.0:
            busy, start = busy + (end - start), lo
        end = max(end, hi)
    return busy + (end - start)


def sync_windows(events: list[dict], n: int) -> dict[int, tuple[float, float]] | None:
    """Call i's host window: from the side's device synchronization before the flush to the one after
    the call. The side makes 2n of them in order; the profiler adds its own (torch 2.11's adds one per
    session: on the H200 every block had 2n + 1, and each fell back to host tracing until session 16).
    So with 2n + 1 of them the windows are the 2n consecutive ones, paired, in which each pair holds a
    launch that ran GPU work (the flush at least), leaving the extra one first or last. None unless
    exactly one such pairing exists: any other count means the call synchronized the device itself (or
    the trace lost some), and its windows cannot be told from the synchronizations (a call that
    synchronizes to split its window would otherwise have its own kernels left out)."""
    syncs = sorted(ev["ts"] for ev in events
                   if ev.get("cat") in _LAUNCH_CATEGORIES and ev.get("name") == SYNC_NAME)
    working = {ev.get("args", {}).get("correlation") for ev in events if ev.get("cat") in _GPU_CATEGORIES}
    launched = sorted(ev["ts"] for ev in events if ev.get("cat") in _LAUNCH_CATEGORIES
                      and ev.get("name") != SYNC_NAME and ev.get("args", {}).get("correlation") in working)

    def works(lo: float, hi: float) -> bool:
        first = bisect.bisect_left(launched, lo)
        return first < len(launched) and launched[first] <= hi

    offsets = {0: (0,), 1: (0, 1)}.get(len(syncs) - 2 * n, ())
    fits = [offset for offset in offsets
            if all(works(syncs[offset + 2 * i], syncs[offset + 2 * i + 1]) for i in range(n))]
    if n == 0 or len(fits) != 1:
        return None
    return {i: (syncs[fits[0] + 2 * i], syncs[fits[0] + 2 * i + 1]) for i in range(n)}


def marked_windows(events: list[dict]) -> dict[int, tuple[float, float]]:
    """Call i's host window from its `record_function` range (the flush launched before it)."""
    windows = {}
    for ev in events:
        name = ev.get("name", "")
        if ev.get("cat") == "user_annotation" and name.startswith(ITER_MARK):
            windows[int(name[len(ITER_MARK):])] = (ev["ts"], ev["ts"] + ev.get("dur", 0))
    return windows


def iteration_spans(events: list[dict], windows: dict[int, tuple[float, float]],
                    flush_first: bool = False) -> tuple[dict[int, CallActivity], int | None]:
    """Per call, its GPU activity; plus the stream of the flush, when it is one stream.

    GPU work is attributed to a call through the correlation id of the launch whose host time falls in
    the call's window, whatever stream it ran on. With `flush_first`, each window's first launch that
    ran GPU work is the flush's (the side launches it before the call), not the call's; otherwise
    the flush is the GPU work outside every window.
    """
    launches: dict[int, list[tuple[float, int]]] = {}
    for ev in events:
        if ev.get("cat") in _LAUNCH_CATEGORIES and "correlation" in ev.get("args", {}):
            for it, (lo, hi) in windows.items():
                if lo <= ev["ts"] <= hi:
                    launches.setdefault(it, []).append((ev["ts"], ev["args"]["correlation"]))
                    break
    gpu_work: dict[int, list[dict]] = {}
    for ev in events:
        if ev.get("cat") in _GPU_CATEGORIES:
            gpu_work.setdefault(ev.get("args", {}).get("correlation"), []).append(ev)
    launch_iter: dict[int, int] = {}
    for it, found in launches.items():
        ran = sorted((ts, corr) for ts, corr in found if corr in gpu_work)
        for _, corr in ran[1:] if flush_first else ran:
            launch_iter[corr] = it
    mine: dict[int, list[dict]] = {}
    flush_streams: set = set()
    for corr, evs in gpu_work.items():
        it = launch_iter.get(corr)
        if it is None:
            flush_streams.update(e.get("args", {}).get("stream") for e in evs)
        else:
            mine.setdefault(it, []).extend(evs)
    activity = {
        it: CallActivity(span_ms=(max(e["ts"] + e.get("dur", 0) for e in evs) - min(e["ts"] for e in evs)) / 1000.0,
                         count=len(evs), streams=frozenset(e.get("args", {}).get("stream") for e in evs),
                         longest_ms=max(e.get("dur", 0) for e in evs) / 1000.0,
                         busy_ms=_busy_us(evs) / 1000.0,
                         by_name=tuple((str(e.get("name", "?")), e.get("dur", 0) / 1000.0) for e in evs))
        for it, evs in mine.items()
    }
    flush_stream = next(iter(flush_streams)) if len(flush_streams) == 1 else None
    return activity, flush_stream


__all__ = ["L2Flusher", "InputSlots", "DeviceBlock", "CallActivity", "costliest", "cpu_sample", "wall_sample", "device_samples", "iteration_spans",
           "sync_windows", "marked_windows", "ITER_MARK", "SYNC_NAME"]
