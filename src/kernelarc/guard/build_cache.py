"""Built torch extensions and compiler caches kept across a campaign's evaluations, so a candidate compiles once.

A candidate built with `load_inline` would otherwise pay its build in every evaluation it takes part
in: as the candidate, again each time it is the incumbent, and again in the final measurements (22 s
per evaluation for a `cpp_forward` module on the H200 machine, about a minute for a CUTLASS kernel).
A fresh process loading an extension whose build directory already holds the same sources and a
newer library only runs a ninja no-op, provided the directory has the same path: torch's
build.ninja holds absolute paths. Every sandboxed side builds under one fixed path inside its
sandbox (sandbox.EXTENSIONS_INSIDE), bound to a host folder of its own, so a build copied from one
side's folder into another's is found up to date. (Without a sandbox the paths differ, and a kept
build is rebuilt.)

The same holds for Triton's and Inductor's caches (a side's `compiled` folder, at one fixed path
inside every sandbox): a torch.compile baseline, the seed or a Triton candidate compiles and autotunes
again in every evaluation it takes part in (5-20 s per evaluation at KernelBench's sizes on the H200,
docs/benchmarks.md), and with the caches kept the next evaluation of the same code finds its kernels,
its autotuning choices and Inductor's compiled graph. Same code, same cache, so the same configuration
is timed each time, which a fresh autotune need not pick.

Untrusted code made these builds. The rules keep one candidate from planting a build that another
would load: builds and caches are kept under the candidate that was judged (extension builds only in
directories named, as a word, in its own source and holding a library); and a side gets only the
builds and caches of the code it runs. What is kept is copied by `safe_copy.copy_tree`: regular files and
folders only, no link followed, each kept folder capped (a link to a root-only folder and sparse files of
apparent gigabytes got through shutil's copies, docs/guard.md).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from kernelarc.guard import sandbox
from kernelarc.guard.candidate import Candidate
from kernelarc.guard.safe_copy import CopyRefused, copy_tree, open_folder

UNREADABLE = (OSError, RecursionError)
"""What walking or copying a folder a side wrote can raise: it may be any depth (shutil and pathlib recurse)."""
COMPILED_CAP_BYTES = 1 << 30
"""A side's compiler caches larger than this are not kept (copying them would cost what they save)."""
BUILD_CAP_BYTES = 1 << 30
"""Nor is an extension build folder larger than this (a CUTLASS build is tens of megabytes)."""


def _named_in(name: str, candidate: Candidate) -> bool:
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", candidate.source) is not None


class BuildCache:
    """Extension build directories per candidate hash, under `root`."""

    def __init__(self, root: Path):
        self.root = root

    def restore(self, extensions: Path, candidate: Candidate) -> set[str]:
        """Copy the builds kept for `candidate` into a side's extension folder; the names restored."""
        kept = self.root / "kept" / candidate.hash
        restored = set()
        try:
            for build in sorted(kept.iterdir()) if kept.is_dir() else ():
                if _named_in(build.name, candidate):
                    shutil.copytree(build, extensions / build.name, symlinks=True, dirs_exist_ok=True)
                    restored.add(build.name)
            if restored and sandbox.needs_owner_change():  # the side runs as nobody and rebuilds in place
                for path in [extensions, *extensions.rglob("*")]:
                    os.chown(path, sandbox.NOBODY, sandbox.NOBODY, follow_symlinks=False)
        except UNREADABLE:  # a cache that cannot be read costs a build, never the evaluation
            return set()
        return restored

    def keep(self, extensions: Path, candidate: Candidate, restored: set[str]) -> list[str]:
        """Keep the builds the judged candidate made in its side; the names kept. `extensions` itself is opened
        without following a link (sixth red-team pass: a side that put a link to a root-only folder in its place
        had that folder's builds kept), and each build is copied relative to it."""
        kept = []
        try:
            folder = open_folder(extensions)
        except OSError:
            return kept
        try:
            for name in sorted(os.listdir(folder)):
                target = self.root / "kept" / candidate.hash / name
                if name in restored or target.exists() or not _named_in(name, candidate):
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(f".{name}.{os.getpid()}")
                try:
                    copied = copy_tree(name, partial, max_bytes=BUILD_CAP_BYTES, dir_fd=folder)
                except (CopyRefused, *UNREADABLE):
                    sandbox.remove_tree(partial)
                    continue
                if not any(n.endswith(".so") for n in copied.names):  # no library: nothing was built
                    sandbox.remove_tree(partial)
                    continue
                os.replace(partial, target)  # whole or not at all: another device's evaluation may read it
                kept.append(name)
        except UNREADABLE:  # nor one that cannot be written
            pass
        finally:
            os.close(folder)
        return kept

    def restore_compiled(self, compiled: Path, candidate: Candidate) -> int:
        """Copy the compiler caches kept for `candidate` into a side's `compiled` folder; the files restored."""
        kept = self.root / "kept" / candidate.hash / "compiled"
        try:
            if not kept.is_dir():
                return 0
            shutil.copytree(kept, compiled, symlinks=True, dirs_exist_ok=True)
            paths = [compiled, *compiled.rglob("*")]
            if sandbox.needs_owner_change():  # the side runs as nobody and writes to its caches
                for path in paths:
                    os.chown(path, sandbox.NOBODY, sandbox.NOBODY, follow_symlinks=False)
        except UNREADABLE:
            return 0
        return sum(1 for p in paths if p.is_file())

    def keep_compiled(self, compiled: Path, candidate: Candidate) -> bool:
        """Keep what the side's compilers cached, when it holds more files than the copy kept for this
        candidate (a side restored from the kept copy holds all of it, plus what it compiled since)."""
        target = self.root / "kept" / candidate.hash / "compiled"
        partial = target.with_name(f".compiled.{os.getpid()}.{id(compiled)}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            copied = copy_tree(compiled, partial, max_bytes=COMPILED_CAP_BYTES)
            if not copied.files or (target.is_dir() and sum(1 for p in target.rglob("*") if p.is_file()) >= copied.files):
                sandbox.remove_tree(partial)
                return False
            old = target.with_name(f".old.{os.getpid()}.{id(compiled)}")
            if target.exists():
                os.replace(target, old)
            os.replace(partial, target)  # whole or not at all: another device's evaluation may read it
            sandbox.remove_tree(old)
        except (CopyRefused, *UNREADABLE):
            sandbox.remove_tree(partial)
            return False
        return True


__all__ = ["BuildCache"]
