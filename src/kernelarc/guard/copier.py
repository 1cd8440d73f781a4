"""The judge's threads for large copies between mailboxes (checked and audited calls, staged inputs).

Every candidate call the reference side checks is first copied out of the candidate's mailbox (a GPU kernel
of the candidate's could still write there while its process is stopped). On one thread that copy runs at
the speed of one core: session 33's judge profile on the H100 (rmsnorm_bf16, 256 MiB in and 256 MiB out per
call, eight audited calls and five checked ones) spent 1.2-1.4 s of a 2.2-2.5 s timing stage outside the
sides' requests. `copy_file_range` lets go of the GIL, so chunks of one copy run on several threads at once.
The threads stay off the CPUs that time GPU calls (timing_cpus.reserved): another device's timed block may
be running there. Imports without torch.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

from kernelarc.guard import timing_cpus

MAX_WORKERS = 8
"""Copy threads at most: past a few, a copy of shared memory is bound by the memory, not by the cores."""


def _off_timing_cpus() -> None:
    """Each worker thread's start: its own affinity (Linux applies it to the calling thread only)."""
    allowed = set(timing_cpus.host_cpus()) - timing_cpus.reserved()
    if allowed:
        os.sched_setaffinity(0, allowed)


@functools.lru_cache(maxsize=1)
def pool() -> ThreadPoolExecutor | None:
    """The process's copy threads; None where one CPU is all there is to copy with."""
    cpus = len(set(timing_cpus.host_cpus()) - timing_cpus.reserved())
    workers = min(MAX_WORKERS, cpus)
    if workers < 2:
        return None
    return ThreadPoolExecutor(workers, thread_name_prefix="kernelarc-copy", initializer=_off_timing_cpus)


__all__ = ["MAX_WORKERS", "pool"]
