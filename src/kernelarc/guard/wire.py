"""Messages between the judge and its side processes: a JSON header plus raw byte blobs, on pipes.

A frame is an 8-byte length, the header (JSON, at most `MAX_HEADER_BYTES`), then the blobs whose
sizes the header lists. No pickle, no code: what a side sends is data the judge validates, never
something it executes. The judge reads with a deadline and a cap on the bytes it accepts, so a side
that hangs, floods or lies about sizes costs its own evaluation and nothing else.

Tensors travel as their raw bytes with dtype and shape in the header (`tensor_blob` /
`blob_tensor`, which need torch and are only used on the side processes). Imports without torch.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_HEADER_BYTES = 4 << 20
PIPE_BYTES = 1 << 20
"""Pipe capacity asked for (Linux's default cap): fewer wake-ups when outputs of megabytes travel."""
_LENGTH = struct.Struct(">Q")


class WireError(Exception):
    """The other end broke the protocol: malformed frame, size over the cap, or closed mid-frame."""


class WireTimeout(Exception):
    """The deadline passed before a whole frame arrived."""


@dataclass(frozen=True)
class Frame:
    header: dict
    blobs: tuple[bytes, ...] = ()


def widen(fd: int) -> None:
    """Ask for a larger pipe buffer (best effort)."""
    try:
        import fcntl

        fcntl.fcntl(fd, 1031, PIPE_BYTES)  # F_SETPIPE_SZ
    except (OSError, ImportError):
        pass


def send(fd: int, header: dict, blobs: tuple[bytes, ...] | list[bytes] = ()) -> None:
    """Write one frame (blocking)."""
    body = json.dumps({**header, "blobs": [len(b) for b in blobs]}, separators=(",", ":")).encode()
    _write_all(fd, _LENGTH.pack(len(body)) + body)
    for blob in blobs:
        _write_all(fd, blob)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def receive(fd: int, *, deadline: float | None = None, max_blob_bytes: int = 1 << 34,
            on_wait: Callable[[], None] | None = None, wait_s: float = 0.5) -> Frame:
    """Read one whole frame, waiting at most until `deadline` (time.monotonic()); None waits forever.

    Args:
        on_wait: called every `wait_s` seconds while no byte arrives (it may raise to give up); the
            frame is read on where it stopped, never restarted mid-way.

    Raises:
        WireTimeout: the deadline passed.
        WireError: end of file, a malformed header, or blobs larger than `max_blob_bytes` in total.
    """
    def read(n: int) -> bytes:
        return _read_exact(fd, n, deadline, on_wait, wait_s)

    (length,) = _LENGTH.unpack(read(_LENGTH.size))
    if length > MAX_HEADER_BYTES:
        raise WireError(f"header of {length} bytes (at most {MAX_HEADER_BYTES})")
    try:
        header = json.loads(read(length))
    except ValueError as e:
        raise WireError(f"header is not JSON: {e}") from None
    sizes = header.pop("blobs", []) if isinstance(header, dict) else None
    if not isinstance(header, dict) or not isinstance(sizes, list) or not all(
            isinstance(n, int) and n >= 0 for n in sizes):
        raise WireError("header is not an object with a list of blob sizes")
    if sum(sizes) > max_blob_bytes:
        raise WireError(f"{sum(sizes)} bytes of blobs announced, at most {max_blob_bytes} expected")
    return Frame(header, tuple(read(n) for n in sizes))


def _read_exact(fd: int, n: int, deadline: float | None, on_wait, wait_s: float) -> bytes:
    chunks, got = [], 0
    while got < n:
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise WireTimeout()
            step = wait_s if left is None else min(left, wait_s)
            if select.select([fd], [], [], step)[0]:
                break
            if on_wait is not None:
                on_wait()
        chunk = os.read(fd, min(n - got, 1 << 22))
        if not chunk:
            raise WireError("closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def tensor_blob(value) -> tuple[dict, bytes]:
    """(description, bytes) of one output value; a non-tensor is described by its type, with no bytes.

    Only an exact `torch.Tensor` is turned into bytes: a subclass could run its own code when read.
    """
    import torch

    if type(value) is not torch.Tensor:
        kind = "subclass" if isinstance(value, torch.Tensor) else "other"
        return {"kind": kind, "type": type(value).__name__}, b""
    t = value.detach().contiguous()
    raw = t.reshape(-1).view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
    return ({"kind": "tensor", "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)},
            raw.cpu().numpy().tobytes())


def blob_tensor(description: dict, blob: bytes, device):
    """The tensor a `tensor_blob` describes, on `device`."""
    import torch

    dtype = getattr(torch, description["dtype"])
    shape = tuple(description["shape"])
    flat = torch.frombuffer(bytearray(blob), dtype=torch.uint8) if blob else torch.empty(0, dtype=torch.uint8)
    return flat.view(dtype).reshape(shape).to(device)


def tensor_nbytes(description: dict) -> int:
    """Bytes a tensor of this description occupies (dtype names as torch spells them)."""
    sizes = {"float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4, "float16": 2,
             "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1,
             "float8_e4m3fn": 1, "float8_e5m2": 1, "float4_e2m1fn_x2": 1, "uint32": 4, "uint64": 8,
             "complex128": 16}
    n = 1
    for d in description["shape"]:
        n *= int(d)
    return n * sizes.get(description["dtype"], 8)


__all__ = ["Frame", "WireError", "WireTimeout", "send", "receive", "widen", "tensor_blob", "blob_tensor",
           "tensor_nbytes"]
