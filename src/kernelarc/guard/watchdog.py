"""The judge's watch over what its sides hold: memory and disk, every WATCH_INTERVAL_S, whatever is in flight.

A side's memory is its processes' resident memory plus the memfds they hold open (pages written with
`write` into a memfd are neither address space nor resident memory: a red-team side held gigabytes so
under a 1 GiB cap, 2026-12-03); its disk is its scratch folder, its log and the unlinked files it still
holds open. One thread of the judge looks at every live side (guard/sides.py `SideProcess.inspect`),
so a side is watched while the judge talks to another one too, not only while it waits for this side's
reply. A side past a cap is killed, and its next request fails with the reason. Imports without torch.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

WATCH_INTERVAL_S = 0.5
MAX_FILES = 100_000
"""Entries of a scratch folder the walk counts, at most: past this many, the side is over its disk cap
(an honest side's compiler caches hold hundreds; a walk of millions would stall the judge)."""
_MEMFD = "/memfd:"
_DELETED = " (deleted)"


@dataclass(frozen=True)
class Usage:
    memory: int
    """Resident bytes of the side's processes, plus the memfds they hold open (its mailbox excepted:
    its pages are resident in the side that maps them)."""
    disk: int
    """Allocated bytes of the scratch folder, the log and the unlinked files the processes hold open."""
    files: int
    """Entries of the scratch folder (at most MAX_FILES + 1)."""
    hidden: int | None
    """A process of the side whose open files the judge could not list (it made itself undumpable)."""


def usage(pid: int, scratch: Path, log_fd: int, mailbox_fd: int) -> Usage:
    """What the side rooted at `pid` holds now (see Usage)."""
    mailbox = _identity(os.fstat(mailbox_fd))
    resident, page = 0, os.sysconf("SC_PAGE_SIZE")
    held: dict[tuple[int, int], tuple[str, int]] = {}
    hidden = None
    for p in descendants(pid):
        try:
            with open(f"/proc/{p}/statm", "rb") as f:
                resident += int(f.read().split()[1]) * page
            fds = os.listdir(f"/proc/{p}/fd")
        except PermissionError:
            hidden = p
            continue
        except (OSError, IndexError, ValueError):  # it exited meanwhile
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{p}/fd/{fd}")
                if not (target.startswith(_MEMFD) or target.endswith(_DELETED)):
                    continue
                st = os.stat(f"/proc/{p}/fd/{fd}")
            except OSError:
                continue
            if _identity(st) != mailbox:
                held[_identity(st)] = ("memory" if target.startswith(_MEMFD) else "disk", st.st_blocks * 512)
    in_memory = sum(n for kind, n in held.values() if kind == "memory")
    files, scratch_bytes = _tree_bytes(scratch)
    disk = scratch_bytes + os.fstat(log_fd).st_blocks * 512 + sum(n for kind, n in held.values() if kind == "disk")
    return Usage(memory=resident + in_memory, disk=disk, files=files, hidden=hidden)


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _tree_bytes(root: Path) -> tuple[int, int]:
    """(entries, allocated bytes) below `root`, links not followed, stopping past MAX_FILES entries."""
    entries, total, todo = 0, 0, [str(root)]
    while todo and entries <= MAX_FILES:
        try:
            with os.scandir(todo.pop()) as it:
                for entry in it:
                    entries += 1
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
        except OSError:
            continue
    return entries, total


class Watchdog:
    """One daemon thread of the judge that calls `inspect()` on every watched side each WATCH_INTERVAL_S."""

    def __init__(self) -> None:
        self._sides: set = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, side) -> None:
        with self._lock:
            self._sides.add(side)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="kernelarc-watchdog", daemon=True)
                self._thread.start()

    def forget(self, side) -> None:
        with self._lock:
            self._sides.discard(side)

    def _run(self) -> None:
        while True:
            time.sleep(WATCH_INTERVAL_S)
            with self._lock:
                sides = list(self._sides)
            for side in sides:
                try:
                    side.inspect()
                except Exception:  # noqa: BLE001 - a side that vanished mid-look: the next look decides
                    continue


WATCHDOG = Watchdog()


_CHILDREN_LISTS = os.path.exists(f"/proc/self/task/{os.getpid()}/children")
"""Whether this kernel lists each thread's children (CONFIG_PROC_CHILDREN)."""


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it, seen from this PID namespace.

    Walks the tree through each thread's /proc `children` list: a few reads per process of the side,
    where a scan of all of /proc costs milliseconds on a busy machine and the judge walks a side's tree
    around every timed request (about 9 ms of the guard's time per request on the H200, 2026-12-02).
    Falls back to the scan where the kernel has no `children` lists."""
    if not _CHILDREN_LISTS:
        return _descendants_by_scan(pid)
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            threads = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for thread in threads:
            try:
                with open(f"/proc/{p}/task/{thread}/children", "rb") as f:
                    todo.extend(int(child) for child in f.read().split())
            except (OSError, ValueError):
                continue
    return found


def _descendants_by_scan(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().rsplit(b")", 1)[1].split()
            children.setdefault(int(stat[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


__all__ = ["Usage", "usage", "Watchdog", "WATCHDOG", "descendants", "WATCH_INTERVAL_S", "MAX_FILES"]
