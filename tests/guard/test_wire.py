"""The frames judge and sides exchange: whatever bytes a side writes, the judge's reader answers with a
frame or a WireError, never with another exception (a side's malformed reply is its own failure)."""

from __future__ import annotations

import os
import struct
import threading
import time

import pytest

from kernelarc.guard import wire


def _frame(body: bytes) -> bytes:
    return struct.pack(">Q", len(body)) + body


def _receive(raw: bytes) -> dict:
    """Frames larger than a pipe's buffer (64 KiB) are written from a thread, as a side writes them."""
    r, w = os.pipe()

    def write():
        with os.fdopen(w, "wb") as f:
            f.write(raw)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        return wire.receive(r, deadline=time.monotonic() + 30)
    finally:
        os.close(r)
        writer.join(5)


def test_a_frame_sent_is_the_frame_received():
    r, w = os.pipe()
    wire.send(w, {"ok": True, "shape": [2, 3], "reason": "é\u0000"})
    assert wire.receive(r, deadline=None) == {"ok": True, "shape": [2, 3], "reason": "é\u0000"}
    os.close(r)
    os.close(w)


@pytest.mark.parametrize("body, says", [
    (b'{"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests too deeply"),
    (b"[1, 2]", "not a JSON object"),
    (b"{not json", "not JSON"),
    (b'{"n": ' + b"9" * 5000 + b"}", "not JSON"),
    (b"\xff\xfe{}", "not JSON"),
])
def test_a_malformed_header_is_a_wire_error(body, says):
    with pytest.raises(wire.WireError, match=says):
        _receive(_frame(body))


def test_a_header_over_the_cap_is_refused_before_it_is_read():
    with pytest.raises(wire.WireError, match="at most"):
        _receive(struct.pack(">Q", wire.MAX_HEADER_BYTES + 1))


def test_a_frame_cut_short_is_closed():
    with pytest.raises(wire.WireError, match="closed"):
        _receive(_frame(b'{"ok": true}')[:-3])


def test_a_write_to_a_reader_that_stopped_waits_only_until_its_deadline():
    """A side can shrink its command pipe to one page and stop reading; a blocking write of a larger request
    once held the judge forever. On a non-blocking descriptor the write gives up at its deadline, calling
    `on_wait` meanwhile (the judge's watch for the side's death and the caller's cutoff)."""
    import fcntl

    r, w = os.pipe()
    try:
        fcntl.fcntl(w, 1031, 1)  # F_SETPIPE_SZ: one page
        os.set_blocking(w, False)
        waits = []
        started = time.monotonic()
        with pytest.raises(wire.WireTimeout):
            wire.send(w, {"x": "y" * 20_000}, deadline=started + 0.3, on_wait=lambda: waits.append(1), wait_s=0.05)
        assert 0.3 <= time.monotonic() - started < 2 and waits
    finally:
        os.close(r)
        os.close(w)
