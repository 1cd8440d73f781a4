"""The host CPUs that time GPU calls, and keeping the rest of kernelarc's processes off them.

On a GPU the wall time of a call is mostly the host launching it: a Triton candidate on the H200 spent
50-95 us of Python launch around a 130 us kernel, and the repeat spread of such calls in a campaign
(7% median, 19% p90 on softmax_fp32, session 24) is host work inside the timed window. Both timed sides
already run their timed blocks on one CPU per device (side.pinned); this module also keeps every other
process the judge starts (idle and building sides, builds made ahead, Inductor's generation, and what
they start: compile workers inherit the mask) off those CPUs (sandbox.move_off in their preexec functions), so that a build beside the timing never
preempts the timed thread there. The judge's own process is left where it is: its timing thread waits
on the side during a block, and a library call should not move its caller's threads.
Imports without torch (session.py is torch-free); `reserved` imports it when first asked.
"""

from __future__ import annotations

import functools
import os

from kernelarc.guard.sandbox import device_index

MIN_FREE_CPUS = 2
"""CPUs left to everything else, at least, for the timing CPUs to be reserved: on a smaller host the builds
need every core more than the timing needs one of its own."""


@functools.lru_cache(maxsize=1)
def host_cpus() -> tuple[int, ...]:
    """The CPUs this process could use when first asked (before any move of its own threads)."""
    return tuple(sorted(os.sched_getaffinity(0)))


def timing_cpu(device: str) -> int | None:
    """The host CPU on which both sides time `device`'s blocks: the same for both, since two processes on two
    cores differ more than the speedups the guard must tell apart (side.pinned); one per device, counted from
    the last CPU, so that evaluations on several GPUs of one host do not share one. None with a single CPU."""
    cpus = host_cpus()
    if len(cpus) < 2:
        return None
    return cpus[-1 - device_index(device) % len(cpus)]


@functools.lru_cache(maxsize=1)
def reserved() -> frozenset[int]:
    """The timing CPUs of every GPU this process sees, for the other processes to stay off; empty without a
    GPU (the CPU's timed calls run on torch's intra-op threads, all cores) or on a host too small to spare them.
    Processes of several kernelarc runs on one host compute the same set, so they stay off each other's
    timing CPU as well as their own (the device lock, devlock.py, keeps their timed blocks apart)."""
    try:
        import torch

        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no usable CUDA: nothing is timed on a GPU here
        gpus = 0
    chosen = frozenset(cpu for index in range(gpus) if (cpu := timing_cpu(f"cuda:{index}")) is not None)
    if len(host_cpus()) - len(chosen) < MIN_FREE_CPUS:
        return frozenset()
    return chosen


__all__ = ["MIN_FREE_CPUS", "host_cpus", "timing_cpu", "reserved"]
