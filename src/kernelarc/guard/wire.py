"""Messages between the judge and its side processes: JSON headers on pipes, tensors in shared memory.

A frame is an 8-byte length and a JSON object of at most `MAX_HEADER_BYTES`. No pickle, no code: what
a side sends is data the judge validates, never something it executes. The judge reads and writes
with a deadline, and reads with a cap on the length, so a side that hangs, floods or lies about sizes costs its own
evaluation and nothing else.

Tensors travel through shared memory instead (`Mailbox`, needs torch, used only by the sides; the
judge moves bytes between mailboxes with guard/copier.py). Imports without torch.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from collections.abc import Callable

from kernelarc.guard import host_pinning

MAX_HEADER_BYTES = 4 << 20
PIPE_BYTES = 1 << 20
"""Pipe capacity asked for (Linux's default cap): fewer wake-ups when outputs of megabytes travel."""
_LENGTH = struct.Struct(">Q")


class WireError(Exception):
    """The other end broke the protocol: malformed frame, size over the cap, or closed mid-frame."""


class WireTimeout(Exception):
    """The deadline passed before a whole frame arrived."""


def widen(fd: int) -> None:
    """Ask for a larger pipe buffer (best effort)."""
    try:
        import fcntl

        fcntl.fcntl(fd, 1031, PIPE_BYTES)  # F_SETPIPE_SZ
    except (OSError, ImportError):
        pass


def send(fd: int, header: dict, *, deadline: float | None = None, on_wait: Callable[[], None] | None = None,
         wait_s: float = 0.5) -> None:
    """Write one frame. On a non-blocking descriptor (the judge's to each side) wait for room in the pipe at
    most until `deadline` (time.monotonic(); None waits forever), calling `on_wait` every `wait_s` meanwhile:
    a side can shrink its command pipe to one page and stop reading, and a blocking write of a request larger
    than that once held the judge forever (docs/guard.md). A blocking descriptor (a side's own) blocks.

    Raises:
        WireTimeout: the deadline passed with the frame not yet written (part of it may be in the pipe).
    """
    body = json.dumps(header, separators=(",", ":")).encode()
    view = memoryview(_LENGTH.pack(len(body)) + body)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            _wait(fd, True, deadline, on_wait, wait_s)


def receive(fd: int, *, deadline: float | None = None, on_wait: Callable[[], None] | None = None,
            wait_s: float = 0.5) -> dict:
    """Read one whole frame's header, waiting at most until `deadline` (time.monotonic()); None waits forever.

    Args:
        on_wait: called every `wait_s` seconds while no byte arrives (it may raise to give up); the
            frame is read on where it stopped, never restarted mid-way.

    Raises:
        WireTimeout: the deadline passed.
        WireError: end of file, or a header that is too long or not a JSON object.
    """
    (length,) = _LENGTH.unpack(_read_exact(fd, _LENGTH.size, deadline, on_wait, wait_s))
    if length > MAX_HEADER_BYTES:
        raise WireError(f"header of {length} bytes (at most {MAX_HEADER_BYTES})")
    body = _read_exact(fd, length, deadline, on_wait, wait_s)
    try:
        header = json.loads(body)
    except ValueError as e:
        raise WireError(f"header is not JSON: {e}") from None
    except RecursionError:  # valid JSON nested deeper than the parser's stack: a red-team reply (docs/guard.md)
        raise WireError("header nests too deeply to parse") from None
    if not isinstance(header, dict):
        raise WireError("header is not a JSON object")
    return header


def _read_exact(fd: int, n: int, deadline: float | None, on_wait, wait_s: float) -> bytes:
    chunks, got = [], 0
    while got < n:
        _wait(fd, False, deadline, on_wait, wait_s)
        chunk = os.read(fd, min(n - got, 1 << 22))
        if not chunk:
            raise WireError("closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _wait(fd: int, writing: bool, deadline: float | None, on_wait, wait_s: float) -> None:
    """Until `fd` can be read (or written), checking `on_wait` every `wait_s` and the deadline."""
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise WireTimeout()
        step = wait_s if left is None else min(left, wait_s)
        ready = select.select([], [fd], [], step)[1] if writing else select.select([fd], [], [], step)[0]
        if ready:
            return
        if on_wait is not None:
            on_wait()


ALIGN = 64
"""Tensors in a mailbox start at multiples of this (any dtype can be viewed in place)."""


def describe(value) -> dict:
    """What a judge needs to know of an output value: an exact `torch.Tensor`'s dtype and shape, or the
    type of anything else (a subclass is named as such: it could run its own code when read)."""
    import torch

    if type(value) is not torch.Tensor:
        return {"kind": "subclass" if isinstance(value, torch.Tensor) else "other", "type": type(value).__name__}
    return {"kind": "tensor", "dtype": str(value.dtype).removeprefix("torch."), "shape": list(value.shape)}


def sealed_mailbox() -> int:
    """A new mailbox memfd that may grow but never shrink, and takes no other seal.

    A side shares its mailbox with the judge, which checks that a region lies inside it and then copies
    it: a thread of a candidate's side that shrank the file between the two made the copy fail inside
    the judge (an uncaught WireError in about 3 of 30 evaluations, docs/guard.md). F_SEAL_SEAL keeps a
    side from adding F_SEAL_WRITE or F_SEAL_GROW, which would make the judge's own writes into it fail."""
    import fcntl

    fd = os.memfd_create("kernelarc-mailbox", os.MFD_ALLOW_SEALING)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    return fd


class Mailbox:
    """A side's shared-memory mailbox (a memfd the judge created and passed in): tensors too big for
    the pipes travel through it. The side writes its own mailbox; the judge copies what it checks
    from one side's mailbox into the reference side's, so no side ever reads another's memory."""

    def __init__(self, fd: int, pinned: bool = False):
        self.fd = fd
        self.pinned = pinned
        """Page-lock each mapping for the GPU (a CUDA side's mailbox: guard/host_pinning.py)."""
        self._map = None
        self._pinned_at: int | None = None

    def _view(self, size: int):
        import mmap

        import torch

        size = max(size, ALIGN)
        if os.fstat(self.fd).st_size < size:
            self._drop()
            os.ftruncate(self.fd, size)
        if self._map is None or len(self._map) < size:
            self._drop()
            self._map = mmap.mmap(self.fd, size)
            if self.pinned:
                address = torch.frombuffer(self._map, dtype=torch.uint8).data_ptr()
                self._pinned_at = address if host_pinning.pin(address, len(self._map)) else None
        return torch.frombuffer(self._map, dtype=torch.uint8)

    def reserve(self, size: int) -> None:
        """Map (and pin) `size` bytes now, so that writes up to that end find them ready."""
        self._view(size)

    @property
    def is_pinned(self) -> bool:
        """The current mapping is page-locked."""
        return self._pinned_at is not None

    def _drop(self) -> None:
        """Let the current mapping go, unpinned first (the driver must not keep pages that get unmapped)."""
        if self._pinned_at is not None:
            host_pinning.unpin(self._pinned_at)
            self._pinned_at = None
        self._map = None

    def write(self, values: list, start: int = 0) -> list[dict]:
        """Put every exact tensor of `values` in the mailbox, one after another from `start` (what lies
        before it stays); their descriptions."""
        described = [describe(v) for v in values]
        offset, places = aligned(start), []
        for d in described:
            places.append(offset)
            if d["kind"] == "tensor":
                offset += aligned(tensor_nbytes(d))
        view = self._view(offset)
        for d, v, at in zip(described, values, places):
            if d["kind"] == "tensor":
                n = tensor_nbytes(d)
                d.update(offset=at, nbytes=n)
                if n:
                    view[at:at + n].copy_(v.detach().contiguous().reshape(-1).view(view.dtype))
        return described

    def read(self, description: dict, device):
        """The tensor a description names, copied out of the mailbox onto `device`."""
        import torch

        n, at = description["nbytes"], description["offset"]
        view = self._view(at + n)
        dtype = getattr(torch, description["dtype"])
        return view[at:at + n].view(dtype).reshape(tuple(description["shape"])).to(device, copy=True)


def aligned(n: int) -> int:
    """`n` rounded up to where the next tensor in a mailbox may start."""
    return -(-n // ALIGN) * ALIGN


def end_offset(described: list[dict], start: int = 0) -> int:
    """Where the next write may start after tensors `Mailbox.write` placed from `start`."""
    return max([aligned(start)] + [aligned(d["offset"] + d["nbytes"]) for d in described if d.get("kind") == "tensor"])


def tensor_nbytes(description: dict) -> int:
    """Bytes a tensor of this description occupies (dtype names as torch spells them)."""
    sizes = {"float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4, "float16": 2,
             "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1,
             "float8_e4m3fn": 1, "float8_e5m2": 1, "float4_e2m1fn_x2": 1, "uint32": 4, "uint64": 8,
             "complex128": 16}
    if description["dtype"] not in sizes:
        raise ValueError(f"unknown dtype {description['dtype']!r}")
    n = 1
    for d in description["shape"]:
        n *= int(d)
    return n * sizes[description["dtype"]]


__all__ = ["WireError", "WireTimeout", "Mailbox", "sealed_mailbox", "send", "receive", "widen", "describe",
           "end_offset", "tensor_nbytes", "aligned", "ALIGN"]
