"""The judge's copies between mailboxes: checked and audited calls, staged inputs.

Every candidate call the reference side checks is first copied out of the candidate's mailbox (a GPU kernel
of the candidate's could still write there while its process is stopped). Those copies were most of the
judge's own time on large tensors: on the H100 (session 35, rmsnorm_bf16, 256 MiB in and out per call) 13
copies an evaluation took 1.5-1.6 s of a 4.1-5.4 s evaluation, through `copy_file_range`, and chunks of it on
eight threads were no faster than one (timing stage 2.23-2.36 s against 2.20-2.39 s; not traced, a likely cause
is the lock the kernel takes on the destination file for each write). So the judge keeps its own mapping of
each mailbox (`FileMap`) and copies with memcpy on threads: on this project's 2-core CPU box, 512 MiB between two kept
mappings took 34-43 ms against 82 ms for `copy_file_range`; a mapping made afresh for each copy was slower
still (118 ms: every page faults again). The threads stay off the CPUs that time GPU calls
(timing_cpus.reserved): another device's timed block may be running there. Imports without torch.
"""

from __future__ import annotations

import functools
import mmap
import os
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from kernelarc.guard import timing_cpus
from kernelarc.guard.wire import WireError, aligned

MAX_WORKERS = 8
"""Copy threads at most: past a few, a copy between mappings is bound by the memory, not by the cores."""
COPY_CHUNK = 32 << 20
"""Bytes of one region a copy thread takes at a time: a 256 MiB output is eight of them."""


class FileMap:
    """The judge's mapping of one memfd, kept while the file is open, so that a page touched once stays mapped
    and the next copy is a memcpy. Reading a mapping past its file's end is a SIGBUS in the judge, so a mapped
    file must never shrink: a side's mailbox is sealed against it (wire.sealed_mailbox) and the judge's own
    memfds are only ever grown. Whoever owns the descriptor lets the mapping go (`close`) with it."""

    def __init__(self, fd: int):
        self.fd = fd
        self._bytes: np.ndarray | None = None
        """The file's bytes over the judge's mapping, which lives as long as the array (its base) does."""

    def bytes(self, end: int, grow: bool) -> np.ndarray:
        """The file's first bytes, at least `end` of them: the file grown to `end` when `grow`, else a WireError if
        it is shorter. Only what is asked for is mapped (doubling, to remap seldom), never the whole file: a side
        without the sandbox's file-size limit (`--unsafe-no-sandbox`; a sandboxed one gets EFBIG past its memory or
        disk cap) may grow its mailbox past what an address space holds, and a region there is a WireError."""
        size = os.fstat(self.fd).st_size
        if size < end:
            if not grow:
                raise WireError("a mailbox ended before the region the side described")
            os.ftruncate(self.fd, end)
            size = end
        if self._bytes is None or self._bytes.size < end:
            length = min(size, max(end, 2 * (0 if self._bytes is None else self._bytes.size)))
            try:
                self._bytes = np.frombuffer(mmap.mmap(self.fd, length), dtype=np.uint8)
            except (OSError, OverflowError, ValueError) as e:
                raise WireError(f"{length} bytes of a mailbox could not be mapped ({e})") from None
        return self._bytes

    def close(self) -> None:
        """Let the mapping go: it is unmapped once no copy still holds a view of it (never under one)."""
        self._bytes = None


def copy_regions(src: FileMap, dst: FileMap, descriptions: list[dict], pool: ThreadPoolExecutor | None = None) -> list[dict]:
    """Copy the tensors `descriptions` place in one mailbox into another, packed from offset 0; the
    descriptions of the copies. The judge calls this after checking every region lies in the source.
    With `pool` (`pool()`), chunks of COPY_CHUNK bytes are copied on its threads at once."""
    offset, copies = 0, []
    for d in descriptions:
        copies.append({**d, "offset": offset})
        offset += aligned(d["nbytes"])
    chunks = [(d["offset"] + i, c["offset"] + i, min(COPY_CHUNK, d["nbytes"] - i))
              for d, c in zip(descriptions, copies) for i in range(0, d["nbytes"], COPY_CHUNK)]
    if not chunks:
        return copies
    source = src.bytes(max(at + n for at, _, n in chunks), grow=False)
    target = dst.bytes(offset, grow=True)

    def copy(at: int, to: int, n: int) -> None:
        np.copyto(target[to:to + n], source[at:at + n])  # numpy lets go of the GIL for a plain copy

    if pool is None or len(chunks) < 2:
        for chunk in chunks:
            copy(*chunk)
        return copies
    done, _ = wait([pool.submit(copy, *chunk) for chunk in chunks])
    for future in done:  # every chunk has ended before the first failure is raised: none writes after
        future.result()
    return copies


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


__all__ = ["COPY_CHUNK", "MAX_WORKERS", "FileMap", "copy_regions", "pool"]
