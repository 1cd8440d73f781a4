"""A fresh side's mailbox made ready before the device lock (`settle` with `reserve`): a CUDA side page-locks
its mailbox at its first write, 0.16-0.19 s for 512 MiB on the H100, inside the evaluation. The judge asks for
as much as one request of the task puts there (`Session.mailbox_bytes`), so no write of the evaluation grows it."""

from __future__ import annotations

import os
import random
from pathlib import Path

import torch

from kernelarc.guard import wire
from kernelarc.guard.session import Seeds, Session
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.side import Side
from kernelarc.task.loader import load_task

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "relu_tiny.py"


def _session(settings: GuardSettings) -> Session:
    """A session whose reference described two workloads: one call of 8 MiB, and calls of a few bytes."""
    session = Session(load_task(TASK), device="cpu", settings=settings, seeds=Seeds(random.Random(0)),
                      reference=None, candidate=None)
    big, small = {"shape": [1024, 1024], "dtype": "float32"}, {"shape": [3], "dtype": "float32"}
    session.outputs = {"big": [big], "small": [small, small]}
    session.input_specs = {"big": [big], "small": [small]}
    session.input_bytes = {"big": 4 << 20, "small": 12}
    return session


def _request(described: list[dict], calls: int) -> list[torch.Tensor]:
    """The tensors of `calls` calls, outputs and inputs, as a side's `call` request writes them."""
    return [torch.zeros(d["shape"], dtype=getattr(torch, d["dtype"])) for _ in range(calls) for d in described]


def test_a_reserved_mailbox_takes_every_request_of_the_task_without_growing():
    settings = GuardSettings(rounds=5, audits=4)
    session = _session(settings)
    reserve = session.mailbox_bytes()
    mailbox = wire.Mailbox(wire.sealed_mailbox())
    side = Side("cpu", mailbox)
    side.op_settle({"reserve": reserve})
    mapped = mailbox._map
    assert os.fstat(mailbox.fd).st_size >= reserve and len(mapped) >= reserve
    # the big workload: one call a request; the small one: its 5 rounds in one request, or 16 audits in a fetch
    for uuid, calls in (("big", 1), ("small", 5), ("small", 16)):
        mailbox.write(_request(session.outputs[uuid] + session.input_specs[uuid], calls))
        assert mailbox._map is mapped, f"{uuid}: {calls} calls grew the mailbox past its reserve"
    assert reserve < 2 * ((8 << 20) + 2 * wire.ALIGN)  # not more than the largest request asks


def test_a_side_settled_without_a_reserve_maps_nothing():
    mailbox = wire.Mailbox(wire.sealed_mailbox())
    Side("cpu", mailbox).op_settle({"reserve": 0})
    assert mailbox._map is None and os.fstat(mailbox.fd).st_size == 0
