"""Built torch extensions kept across a campaign's workers, so a C++ or CUDA candidate compiles once.

Each worker has a private TORCH_EXTENSIONS_DIR (runner.worker_env). A candidate built with
`load_inline` would otherwise pay its build in every evaluation it takes part in: as the candidate,
again each time it is the incumbent, and again in the final measurements (22 s per evaluation for a
`cpp_forward` module on the H200 machine, about a minute for a CUTLASS kernel). A fresh process
loading an extension whose build directory already holds the same sources and a newer library only
runs a ninja no-op, so copying the directory in is enough, provided the directory has the same
path: torch's build.ninja holds absolute paths, and a changed command rebuilds. So the workers of a
device all build under one path, a symlink (`worker_extensions`) that each evaluation points at a
fresh folder of its own, holding the builds restored for it.

Untrusted code made these builds. The rules keep one candidate from planting a build that another
would load:
- builds are kept under the candidate that was judged, never under its incumbent;
- only directories named, as a word, in the judged candidate's own source, and holding a library;
- a side's builds are restored only under names its source has and the other side's has not.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

from kernelarc.guard.candidate import Candidate


def _named_in(name: str, candidate: Candidate | None) -> bool:
    return candidate is not None and re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", candidate.source) is not None


def _built(directory: Path) -> bool:
    return directory.is_dir() and any(directory.glob("*.so"))


class BuildCache:
    """Extension build directories per candidate hash, under `root`."""

    def __init__(self, root: Path):
        self.root = root

    def worker_extensions(self, device: str) -> Path:
        """The path the workers of `device` build extensions under (a symlink each evaluation re-points)."""
        return self.root / "workers" / re.sub(r"\W", "_", device)

    def restore(self, extensions: Path, candidate: Candidate, incumbent: Candidate | None) -> set[str]:
        """Copy both sides' kept builds into a worker's extension directory; the names restored."""
        restored = set()
        for side, other in ((candidate, incumbent), (incumbent, candidate)):
            kept = self.root / "kept" / side.hash if side is not None else None
            if kept is None or not kept.is_dir():
                continue
            for build in kept.iterdir():
                if _named_in(build.name, side) and not _named_in(build.name, other) and build.name not in restored:
                    shutil.copytree(build, extensions / build.name, symlinks=True, dirs_exist_ok=True)
                    restored.add(build.name)
        return restored

    def keep(self, extensions: Path, candidate: Candidate, restored: set[str]) -> list[str]:
        """Keep the builds the judged candidate made in this worker; the names kept."""
        if not extensions.is_dir():
            return []
        kept = []
        for build in extensions.iterdir():
            target = self.root / "kept" / candidate.hash / build.name
            if build.name in restored or target.exists() or not _built(build) or not _named_in(build.name, candidate):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{build.name}.{os.getpid()}")
            shutil.copytree(build, partial, symlinks=True)
            os.replace(partial, target)  # whole or not at all: another device's evaluation may read it
            kept.append(build.name)
        return kept


class BuildSession:
    """One evaluation's use of a BuildCache: a fresh folder behind the device's path, holding both
    sides' kept builds, before the job; the candidate's new builds kept, and the folder removed, after."""

    def __init__(self, cache: BuildCache, candidate: Candidate, incumbent: Candidate | None):
        self.cache, self.candidate, self.incumbent = cache, candidate, incumbent
        self.extensions: Path | None = None
        """The device's symlinked path, once `before` ran: what a worker started now must be given."""
        self._live: Path | None = None
        self._restored: set[str] = set()

    def before(self, device: str) -> None:
        self.extensions = self.cache.worker_extensions(device)
        self._live = self.cache.root / "live" / uuid.uuid4().hex
        self._live.mkdir(parents=True)
        try:
            self._restored = self.cache.restore(self._live, self.candidate, self.incumbent)
        except OSError:  # a cache that cannot be read costs a build, never the evaluation
            self._restored = set()
        link = self.extensions.with_name(f".{self.extensions.name}.{uuid.uuid4().hex}")
        self.extensions.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(self._live, target_is_directory=True)
        os.replace(link, self.extensions)

    def after(self) -> None:
        if self._live is None:
            return
        try:
            self.cache.keep(self._live, self.candidate, self._restored)
        except OSError:  # nor one that cannot be written
            pass
        shutil.rmtree(self._live, ignore_errors=True)


__all__ = ["BuildCache", "BuildSession"]
