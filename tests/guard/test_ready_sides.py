"""On a GPU an evaluation makes its fresh sides ready before it waits for the device lock (Judge.ready_sides):
their start-up no longer holds the GPU idle. The path runs here with sides for `cuda:0` on a machine without
one (a side starts and answers without a GPU); the evaluations that use them run on the card (GPU tests)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernelarc.guard.candidate import load_candidate
from kernelarc.guard.cutoff import Cutoff, EvaluationCut
from kernelarc.guard.judge import Judge, _code_key
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.sides import SidePool
from kernelarc.task.loader import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SETTINGS = GuardSettings(compile_timeout_s=120)
DEVICE = "cuda:0"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def task():
    return load_task(FIXTURES / "tasks" / "relu_tiny.py")


@pytest.fixture
def judge(task, monkeypatch):
    monkeypatch.setattr(SidePool, "CUDA_DEPTH", 1)
    with Judge(task) as judge:
        yield judge


def _incumbent(task):
    return load_candidate(FIXTURES / "candidates" / "honest_output_buffer.py", task)


def _answers(side) -> bool:
    side.request({"op": "settle"}, deadline=time.monotonic() + 5)  # already settled: answered at once
    return side.proc.poll() is None


def test_the_candidate_side_and_a_spare_for_an_unparked_incumbent_are_ready_before_the_lock(judge, task):
    ready = judge.ready_sides(DEVICE, _incumbent(task), SETTINGS, None)
    assert ready.spare is not None and ready.spare is not ready.candidate
    assert _answers(ready.candidate) and _answers(ready.spare) and ready.seconds > 0
    judge.pool.give_back(ready.candidate, ready.spare)
    assert judge.pool._idle[DEVICE][0] is ready.spare, "a side given back is the next one taken"
    assert ready.candidate.proc.poll() is not None, "past the pool's depth a side given back ends"


def test_the_candidate_sides_mailbox_is_made_as_large_as_a_request_before_the_lock_and_the_spares_is_not(judge, task):
    """A candidate's side puts outputs and inputs in its mailbox; an incumbent's only times on the GPU, and a
    parked one would keep a page-locked mailbox it never uses."""
    import os

    judge._mailbox_bytes = 3 << 20  # as the judge's first evaluation learns it (Session.mailbox_bytes)
    ready = judge.ready_sides(DEVICE, _incumbent(task), SETTINGS, None)
    try:
        assert os.fstat(ready.candidate.mailbox).st_size >= 3 << 20
        assert os.fstat(ready.spare.mailbox).st_size == 0
    finally:
        judge.give_back(ready)


def test_no_spare_where_the_incumbent_is_parked_and_none_on_the_cpu(judge, task):
    incumbent = _incumbent(task)
    judge._incumbents[(DEVICE, _code_key(incumbent))] = object()  # parked: its own side serves it
    try:
        ready = judge.ready_sides(DEVICE, incumbent, SETTINGS, None)
    finally:
        judge._incumbents.clear()
    assert ready.spare is None and _answers(ready.candidate)
    judge.pool.give_back(ready.candidate)
    assert judge.ready_sides("cpu", incumbent, SETTINGS, None) is None


def test_a_cut_while_the_sides_start_gives_them_back(judge, task):
    cutoff = Cutoff(time.monotonic() + 0.05, "the final timings' reserve began")
    taken = []
    take = judge.pool.take
    judge.pool.take = lambda device: taken.append(take(device)) or taken[-1]
    with pytest.raises(EvaluationCut):
        judge.ready_sides(DEVICE, _incumbent(task), SETTINGS, cutoff)
    idle = judge.pool._idle[DEVICE]
    assert taken and all(side in idle or side.proc.poll() is not None for side in taken)
    assert any(side in idle for side in taken), "the warmest side given back waits in the pool"


def test_a_side_that_died_starting_is_replaced(judge, task):
    dead = judge.pool.take(DEVICE)
    dead.kill()
    take = judge.pool.take
    calls = iter([dead])
    judge.pool.take = lambda device: next(calls, None) or take(device)
    ready = judge.ready_sides(DEVICE, None, SETTINGS, None)
    assert ready.candidate is not dead and _answers(ready.candidate)
    judge.pool.give_back(ready.candidate)


def test_a_campaign_makes_them_ready_before_its_own_queue_and_gets_them_back_when_cut_there(task, monkeypatch):
    import asyncio

    from kernelarc.campaign import executor as executor_module
    from kernelarc.campaign.executor import LocalExecutor

    monkeypatch.setattr(SidePool, "CUDA_DEPTH", 1)
    monkeypatch.setattr(executor_module, "gpu_capability", lambda device: "9.0")  # no GPU here to ask
    executor = LocalExecutor(task, [DEVICE], SETTINGS)
    candidate = load_candidate(FIXTURES / "candidates" / "honest_torch.py", task)
    made = []
    ready_sides = executor.judge.ready_sides
    executor.judge.ready_sides = lambda *a: made.append(ready_sides(*a)) or made[-1]
    cutoff = Cutoff()

    async def queued_then_cut():
        async with executor._locks[DEVICE]:  # another evaluation holds the device
            waiting = asyncio.create_task(executor.evaluate(candidate, None, slot=0, seed=1, cutoff=cutoff))
            while not made:
                await asyncio.sleep(0.05)
            cutoff.now("a second Ctrl-C")
        with pytest.raises(EvaluationCut):
            await waiting
        # checked before the loop ends: a side started from one of its worker threads dies with that thread
        # (the sandbox's parent-death signal), as in a campaign, whose loop outlives its judge's sides
        [ready] = made
        assert ready.candidate in executor.judge.pool._idle[DEVICE] and _answers(ready.candidate)

    try:
        asyncio.run(queued_then_cut())
    finally:
        executor.close()
