"""The private result channel between the guard and its worker process.

The worker writes HMAC-signed JSON lines to a pipe fd it received before torch or the candidate was
imported; the key arrives on stdin, which is closed before the candidate runs. The candidate's own
prints go to the log file, and a line it forges on the pipe fails the signature, so it cannot fake a
result. Imports without torch.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets


def new_key() -> bytes:
    """A fresh per-evaluation signing key."""
    return secrets.token_bytes(32)


def _sign(key: bytes, body: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


class ChannelWriter:
    """Worker side: signed messages, one per line."""

    def __init__(self, fd: int, key: bytes):
        self._fd = fd
        self._key = key

    def send(self, kind: str, **payload) -> None:
        body = json.dumps({"kind": kind, **payload}, separators=(",", ":"), default=str).encode()
        line = _sign(self._key, body).encode() + b" " + body + b"\n"
        view = memoryview(line)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]


class ForgedMessage(Exception):
    """A line on the channel did not carry a valid signature: someone other than the worker wrote it."""


def parse_line(key: bytes, line: bytes) -> dict:
    """Verify and decode one channel line; raises ForgedMessage on a bad signature or shape."""
    sig, _, body = line.rstrip(b"\n").partition(b" ")
    if not body or not hmac.compare_digest(sig, _sign(key, body).encode()):  # bytes: any forged byte compares
        raise ForgedMessage(f"unsigned or badly signed line: {line[:80]!r}")
    msg = json.loads(body)
    if not isinstance(msg, dict) or "kind" not in msg:
        raise ForgedMessage(f"malformed message: {line[:80]!r}")
    return msg


__all__ = ["ChannelWriter", "ForgedMessage", "new_key", "parse_line"]
