"""The worker's signed result channel: what the worker writes parses back; anything else is refused."""

from __future__ import annotations

import hashlib
import hmac
import os

import pytest

from kernelarc.guard.channel import ChannelWriter, ForgedMessage, new_key, parse_line


def _written(key: bytes, kind: str, **payload) -> bytes:
    """The bytes ChannelWriter puts on a real pipe."""
    read_fd, write_fd = os.pipe()
    try:
        ChannelWriter(write_fd, key).send(kind, **payload)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as f:
            return f.read()
    finally:
        try:
            os.close(write_fd)
        except OSError:
            pass


def test_round_trip_through_a_pipe():
    key = new_key()
    line = _written(key, "result", status="PASSED", workloads=[{"uuid": "a", "latency_ms": 0.5}])
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert parse_line(key, line) == {"kind": "result", "status": "PASSED", "workloads": [{"uuid": "a", "latency_ms": 0.5}]}


def test_keys_are_fresh_and_long():
    keys = {new_key() for _ in range(8)}
    assert len(keys) == 8 and all(len(k) == 32 for k in keys)


def test_tampered_body_is_refused():
    key = new_key()
    line = _written(key, "result", status="INCORRECT_NUMERICAL")
    with pytest.raises(ForgedMessage, match="badly signed"):
        parse_line(key, line.replace(b"INCORRECT_NUMERICAL", b"PASSED"))


def test_wrong_key_is_refused():
    line = _written(new_key(), "result", status="PASSED")
    with pytest.raises(ForgedMessage):
        parse_line(new_key(), line)


@pytest.mark.parametrize("line", [
    b'{"kind": "result", "status": "PASSED"}\n',             # a plain print, no signature
    b"0" * 64 + b' {"kind":"result","status":"PASSED"}\n',   # signature-shaped garbage
    b"",
    b"\xff\xfe not even text\n",
])
def test_unsigned_lines_are_refused(line):
    with pytest.raises(ForgedMessage):
        parse_line(new_key(), line)


@pytest.mark.parametrize("body", [b"[1, 2]", b'{"no_kind": 1}'])
def test_signed_but_malformed_messages_are_refused(body):
    key = new_key()
    signed = hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b" " + body  # the channel's HMAC-SHA256
    with pytest.raises(ForgedMessage, match="malformed"):
        parse_line(key, signed)
