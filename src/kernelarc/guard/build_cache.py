"""Built torch extensions kept across a campaign's evaluations, so a C++ or CUDA candidate compiles once.

A candidate built with `load_inline` would otherwise pay its build in every evaluation it takes part
in: as the candidate, again each time it is the incumbent, and again in the final measurements (22 s
per evaluation for a `cpp_forward` module on the H200 machine, about a minute for a CUTLASS kernel).
A fresh process loading an extension whose build directory already holds the same sources and a
newer library only runs a ninja no-op, provided the directory has the same path: torch's
build.ninja holds absolute paths. Every sandboxed side builds under one fixed path inside its
sandbox (sandbox.EXTENSIONS_INSIDE), bound to a host folder of its own, so a build copied from one
side's folder into another's is found up to date. (Without a sandbox the paths differ, and a kept
build is rebuilt.)

Untrusted code made these builds. The rules keep one candidate from planting a build that another
would load: builds are kept under the candidate that was judged, only directories named, as a word,
in its own source and holding a library; and a side gets only the builds of the code it runs.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from kernelarc.guard import sandbox
from kernelarc.guard.candidate import Candidate


def _named_in(name: str, candidate: Candidate) -> bool:
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", candidate.source) is not None


def _built(directory: Path) -> bool:
    return directory.is_dir() and any(directory.glob("*.so"))


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
        except OSError:  # a cache that cannot be read costs a build, never the evaluation
            return set()
        return restored

    def keep(self, extensions: Path, candidate: Candidate, restored: set[str]) -> list[str]:
        """Keep the builds the judged candidate made in its side; the names kept."""
        kept = []
        try:
            for build in sorted(extensions.iterdir()) if extensions.is_dir() else ():
                target = self.root / "kept" / candidate.hash / build.name
                if build.name in restored or target.exists() or not _built(build) or not _named_in(build.name, candidate):
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(f".{build.name}.{os.getpid()}")
                shutil.copytree(build, partial, symlinks=True)
                os.replace(partial, target)  # whole or not at all: another device's evaluation may read it
                kept.append(build.name)
        except OSError:  # nor one that cannot be written
            pass
        return kept


__all__ = ["BuildCache"]
