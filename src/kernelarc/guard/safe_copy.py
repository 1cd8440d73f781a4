"""Copy a folder a side wrote into the judge's own storage: no link followed, regular files only, capped.

The judge runs as root and a side's code shaped the folder: a `compiled` folder replaced by a link to a
root-only folder was copied through the link into the build cache and restored into the candidate's next side,
owned by `nobody` (fifth red-team pass, 2026-12-06), and two sparse 1 GiB files in a build folder became 2 GiB
of the judge's disk. So every folder is opened relative to its parent's descriptor with O_NOFOLLOW (a name
swapped for a link between the listing and the open fails instead of being followed), every file is opened
O_NOFOLLOW | O_NONBLOCK and copied only if its descriptor is a regular file (a FIFO or device swapped in is
never read), links, sockets and devices are left out, and the copy stops at a cap on its apparent size and
on the number of entries. The walk keeps its own stack: a folder of any depth costs no recursion.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 22


class CopyRefused(Exception):
    """The folder is not a real folder, or it holds more than the caps allow: nothing of it is kept."""


@dataclass(frozen=True)
class Copied:
    files: int
    names: frozenset[str]
    """File names copied (not paths): what a caller checks for, such as a built library."""


def open_folder(path: Path | str, dir_fd: int | None = None) -> int:
    """A descriptor of the folder `path` (relative to `dir_fd` when given), never through a link as its last part.

    Raises:
        OSError: it is a link, not a folder, or gone.
    """
    return os.open(path, _DIR_FLAGS, dir_fd=dir_fd)


def copy_tree(src: Path | str, dst: Path, *, max_bytes: int, max_entries: int = 100_000, max_depth: int = 64,
              dir_fd: int | None = None) -> Copied:
    """Copy the folder `src` (relative to `dir_fd` when given: a name in a folder opened with `open_folder`)
    to `dst` (created; its parent must exist), as described above.

    Raises:
        CopyRefused: `src` is a link or not a folder, or the caps were passed (`dst` may hold a part).
        OSError: `dst` could not be written.
    """
    try:
        root = open_folder(src, dir_fd)
    except OSError as e:
        raise CopyRefused(f"{src} is not a folder that can be opened without following a link: {e}") from None
    os.mkdir(dst, 0o755)
    stack = [(root, dst, 0)]
    files = total = entries = 0
    names: set[str] = set()
    try:
        while stack:
            fd, target, depth = stack.pop()
            for entry in list(os.scandir(fd)):
                entries += 1
                if entries > max_entries:
                    raise CopyRefused(f"more than {max_entries} entries")
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if depth + 1 > max_depth:
                        raise CopyRefused(f"folders more than {max_depth} deep")
                    try:
                        child = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
                    except OSError:  # swapped for a link or removed since the listing
                        continue
                    os.mkdir(target / entry.name, 0o755)
                    stack.append((child, target / entry.name, depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    copied = _copy_file(fd, entry.name, target / entry.name, max_bytes - total)
                    if copied is not None:
                        files, total = files + 1, total + copied
                        names.add(entry.name)
            os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    return Copied(files=files, names=frozenset(names))


def _copy_file(dir_fd: int, name: str, dst: Path, budget: int) -> int | None:
    """Copy one regular file's bytes (its apparent size: a sparse file costs what it says); None if it is no
    longer a regular file by that name."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > budget:
            raise CopyRefused(f"more than the cap's bytes (a file of {info.st_size} bytes)")
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, stat.S_IMODE(info.st_mode) & 0o755)
        try:
            left = info.st_size
            while left > 0:
                chunk = os.read(fd, min(_CHUNK, left))
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
                left -= len(chunk)
            os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))  # ninja tells a build up to date by them
        finally:
            os.close(out)
        return info.st_size - left
    finally:
        os.close(fd)


__all__ = ["CopyRefused", "Copied", "copy_tree", "open_folder"]
