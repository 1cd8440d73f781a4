"""The guard's timing arithmetic that runs without a GPU: sample statistics, and how kernel spans are
attributed to calls from a profiler trace (the CUDA paths themselves run on the H200, docs/benchmarks.md)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from kernelarc.guard import copier
from kernelarc.guard.samples import Samples
from kernelarc.guard.replies import TimeReply
from kernelarc.guard.session import kernel_shares
from kernelarc.guard.timing import ITER_MARK, SYNC_NAME, costliest, iteration_spans, marked_windows, sync_windows


def test_median_and_spread_of_samples():
    s = Samples((1.0, 2.0, 3.0, 4.0, 5.0))
    assert s.median == 3.0
    assert s.quantile(0.2) == pytest.approx(1.8) and s.quantile(0.8) == pytest.approx(4.2)
    assert s.spread == pytest.approx((4.2 - 1.8) / 3.0)
    assert Samples((0.0, 0.0)).spread == 0.0


def _marker(i: int, ts: float, dur: float) -> dict:
    return {"cat": "user_annotation", "name": f"{ITER_MARK}{i}", "ts": ts, "dur": dur}


def _launch(correlation: int, ts: float) -> dict:
    return {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "args": {"correlation": correlation}}


def _kernel(correlation: int, ts: float, dur: float, stream: int) -> dict:
    return {"cat": "kernel", "name": "k", "ts": ts, "dur": dur, "args": {"correlation": correlation, "stream": stream}}


def test_spans_run_from_first_kernel_start_to_last_kernel_end_over_every_stream():
    events = [
        _kernel(1, 0.0, 5.0, stream=7),  # the flush, outside every call: the launching stream
        _marker(0, 10.0, 20.0), _launch(2, 11.0), _launch(3, 12.0),
        _kernel(2, 40.0, 10.0, stream=7), _kernel(3, 45.0, 30.0, stream=9),  # a side stream, still counted
        _marker(1, 100.0, 10.0), _launch(4, 101.0), _kernel(4, 120.0, 4.0, stream=7),
    ]
    activity, flush_stream = iteration_spans(events, marked_windows(events))
    assert {i: a.span_ms for i, a in activity.items()} == {0: pytest.approx((75.0 - 40.0) / 1000.0),
                                                            1: pytest.approx(4.0 / 1000.0)}
    assert {i: a.count for i, a in activity.items()} == {0: 2, 1: 1}
    assert {i: a.longest_ms for i, a in activity.items()} == {0: pytest.approx(0.030), 1: pytest.approx(0.004)}
    assert {i: set(a.streams) for i, a in activity.items()} == {0: {7, 9}, 1: {7}} and flush_stream == 7


def test_a_call_that_launched_nothing_has_no_span():
    events = [_marker(0, 0.0, 10.0)]
    activity, _ = iteration_spans(events, marked_windows(events))
    assert activity == {}


def _sync(ts: float) -> dict:
    return {"cat": "cuda_runtime", "name": SYNC_NAME, "ts": ts, "args": {"correlation": int(ts) + 1000}}


def test_without_host_markers_calls_are_told_apart_by_the_sides_synchronizations():
    events = [
        _sync(10.0), _launch(1, 10.5), _launch(2, 11.0), _launch(3, 12.0), _sync(13.0),
        _kernel(1, 11.0, 40.0, stream=7),  # the flush, the window's first launch: not the call's
        _kernel(2, 51.0, 3.0, stream=7), _kernel(3, 55.0, 2.0, stream=7),  # queued behind it, no launch gap
        _launch(4, 14.0), _kernel(4, 58.0, 1.0, stream=7),  # the copy kept of the outputs, between windows
        _sync(60.0), _launch(5, 60.5), _launch(6, 61.0), _sync(62.0),
        _kernel(5, 61.0, 40.0, stream=7), _kernel(6, 101.0, 1.0, stream=9),
    ]
    windows = sync_windows(events, 2)
    assert windows == {0: (10.0, 13.0), 1: (60.0, 62.0)}
    activity, flush_stream = iteration_spans(events, windows, flush_first=True)
    assert {i: a.span_ms for i, a in activity.items()} == {0: pytest.approx(6.0 / 1000.0), 1: pytest.approx(0.001)}
    assert {i: a.count for i, a in activity.items()} == {0: 2, 1: 1} and flush_stream == 7


def test_a_launch_without_gpu_work_is_not_taken_for_the_flush():
    events = [
        _sync(0.0), {"cat": "cuda_runtime", "name": "cudaStreamIsCapturing", "ts": 0.2, "args": {"correlation": 9}},
        _launch(1, 0.5), _launch(2, 1.0), _sync(2.0),
        _kernel(1, 1.0, 40.0, stream=7), _kernel(2, 41.0, 3.0, stream=7),
    ]
    activity, _ = iteration_spans(events, sync_windows(events, 1), flush_first=True)
    assert activity[0].count == 1 and activity[0].span_ms == pytest.approx(0.003)


@pytest.mark.parametrize("extra", [0.0, 200.0])
def test_the_profilers_own_synchronization_is_not_taken_for_a_call_window(extra):
    """torch 2.11's profiler synchronizes the device once per session itself (2n + 1 in every block on the
    H200): the calls' windows are still the pairs that hold GPU work, wherever the extra one falls."""
    events = [
        _sync(extra), _sync(10.0), _launch(1, 10.5), _launch(2, 11.0), _sync(13.0),
        _kernel(1, 11.0, 40.0, stream=7), _kernel(2, 51.0, 3.0, stream=7),
        _sync(60.0), _launch(5, 60.5), _launch(6, 61.0), _sync(62.0),
        _kernel(5, 61.0, 40.0, stream=7), _kernel(6, 101.0, 1.0, stream=7),
    ]
    assert sync_windows(events, 2) == {0: (10.0, 13.0), 1: (60.0, 62.0)}
    assert sync_windows(events, 3) is None and sync_windows(events, 0) is None


@pytest.mark.parametrize("extra", [0.0, 200.0])
def test_copies_kept_between_windows_leave_one_pairing_when_the_last_call_is_not_copied(extra):
    """The device pass keeps every profiled call's outputs for the audits: copies launched between the
    windows. With the profiler's extra synchronization last, a copy after the last call too would make the
    pairing (after call i, before call i + 1) hold GPU work in every pair, so the last call's outputs are
    held, not copied (timing._kept_between_windows), and one pairing is left."""
    events = [_sync(extra)]
    for i, base in enumerate((10.0, 60.0, 110.0)):
        c = 10 * (i + 1)
        events += [_sync(base), _launch(c, base + 0.5), _launch(c + 1, base + 1.0), _sync(base + 30.0),
                   _kernel(c, base + 1.0, 20.0, stream=7), _kernel(c + 1, base + 21.0, 3.0, stream=7)]
        if i < 2:
            events += [_launch(c + 2, base + 31.0), _kernel(c + 2, base + 32.0, 2.0, stream=7)]
    assert sync_windows(events, 3) == {0: (10.0, 40.0), 1: (60.0, 90.0), 2: (110.0, 140.0)}
    copied_last = events + [_launch(99, 141.0), _kernel(99, 142.0, 2.0, stream=7)]
    if extra:  # the two pairings then both hold GPU work in every pair
        assert sync_windows(copied_last, 3) is None
    else:
        assert sync_windows(copied_last, 3) == sync_windows(events, 3)


def test_profiled_calls_are_kept_as_copies_but_the_last_as_it_is():
    import torch

    from kernelarc.guard.timing import _kept_between_windows

    out = torch.arange(4.0)
    copied, held = _kept_between_windows([out, 3], last=False), _kept_between_windows([out, 3], last=True)
    assert copied[0] is not out and torch.equal(copied[0], out) and copied[1] == 3
    assert held[0] is out


def test_small_calls_get_more_audits():
    """A side that answers a share f of its timed calls wrongly escapes A audits with probability (1 - f)^A:
    small calls, whose checks cost little, get up to MAX_AUDITS."""
    from kernelarc.guard.session import AUDIT_BYTES, MAX_AUDITS, audit_count

    assert audit_count(4, 1024) == MAX_AUDITS
    assert audit_count(4, AUDIT_BYTES // 8) == 8
    assert audit_count(4, 1 << 30) == 4 and audit_count(20, 1024) == 20


def test_a_call_that_synchronizes_itself_leaves_no_sync_windows():
    events = [_sync(10.0), _launch(2, 11.0), _sync(11.5), _sync(13.0)]  # the call's own synchronize in between
    assert sync_windows(events, 1) is None
    # two calls that each synchronize once, beside the profiler's own: no pairing may pass half a call off
    # as a window (the kernels after its own synchronization would go uncounted)
    split = []
    for i, base in enumerate((10.0, 60.0)):
        c = 10 * (i + 1)
        split += [_sync(base), _launch(c, base + 0.5), _kernel(c, base + 1.0, 5.0, stream=7), _sync(base + 7.0),
                  _launch(c + 1, base + 8.0), _kernel(c + 1, base + 9.0, 30.0, stream=7), _sync(base + 40.0)]
    assert sync_windows(split + [_sync(200.0)], 2) is None


def test_each_call_knows_its_kernels_by_name_and_a_side_reports_its_costliest():
    events = [
        _sync(0.0), _launch(1, 0.5), _launch(2, 1.0), _launch(3, 1.5), _sync(2.0),
        _kernel(1, 1.0, 40.0, stream=7), dict(_kernel(2, 41.0, 3.0, stream=7), name="gemm"),
        dict(_kernel(3, 44.0, 1.0, stream=7), name="add"),
    ]
    activity, _ = iteration_spans(events, sync_windows(events, 1), flush_first=True)
    assert dict(activity[0].by_name) == {"gemm": pytest.approx(0.003), "add": pytest.approx(0.001)}
    totals = {"gemm": [0.3, 100], "add": [0.1, 200], **{f"k{i}": [0.01 * i, 1] for i in range(9)}, "x" * 500: [9.0, 1]}
    reported = costliest(totals)
    assert list(reported) == ["x" * 160, "gemm", "add", "k8", "k7"]
    TimeReply(samples_ms=[1.0], kernel_ms=reported)  # what an honest side sends passes the judge's check
    with pytest.raises(ValueError):
        TimeReply(samples_ms=[1.0], kernel_ms=totals)  # a side cannot flood the judge


def test_kernel_shares_are_per_call_and_costliest_first():
    shares = kernel_shares({"add": [0.1, 200.0], "gemm": [0.3, 100.0]}, calls=100)
    assert [k.name for k in shares] == ["gemm", "add"]
    assert shares[0].ms_per_call == pytest.approx(0.003) and shares[0].launches_per_call == 1.0
    assert shares[1].launches_per_call == 2.0 and shares[0].share == pytest.approx(0.75)
    assert kernel_shares({"add": [0.1, 1.0]}, calls=0) == ()


def test_a_timed_block_runs_with_the_garbage_collector_paused_and_restores_it():
    import gc

    from kernelarc.guard.timing import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():  # a failing call restores it too
        raise RuntimeError("the candidate failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()


def test_the_device_pass_stages_no_more_inputs_than_the_memory_budget_holds():
    from kernelarc.guard.session import DEVICE_BLOCKS, MAX_DEVICE_BLOCKS, device_blocks

    assert device_blocks(50, fit=50) == (DEVICE_BLOCKS, 25)  # small inputs: two sessions of 25 calls
    assert device_blocks(50, fit=10) == (6, 10)  # five sessions' worth, made even (ABBA)
    blocks, calls = device_blocks(50, fit=1)  # one call's inputs fill the budget (a 6 GiB softmax)
    assert calls == 1 and blocks == MAX_DEVICE_BLOCKS and blocks % 2 == 0


def test_the_warm_up_stages_at_most_one_block_of_inputs_per_request():
    from kernelarc.guard.session import warmup_requests

    assert warmup_requests(10, 1) == [1] * 10  # a 6 GiB input: ten requests of one call
    assert warmup_requests(10, 4) == [4, 4, 2]
    assert warmup_requests(3, 3) == [3]  # the CPU's warm-up: one request
    assert sum(warmup_requests(50, 7)) == 50 and max(warmup_requests(50, 7)) == 7


class _Process:
    def __init__(self, log: list, name: str):
        self.log, self.name = log, name

    def freeze(self):
        self.log.append(f"freeze {self.name}")

    def thaw(self, check: bool = False):
        self.log.append(f"thaw {self.name}")


def _session_with(log: list):
    from kernelarc.guard.session import Seeds, Session
    from kernelarc.guard.settings import GuardSettings
    from kernelarc.task.loader import load_task

    task = load_task(Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "relu_tiny.py")
    return Session(task, device="cuda:0", settings=GuardSettings(), seeds=Seeds(random.Random(0)),
                   reference=_Process(log, "reference"), candidate=_Process(log, "candidate"),
                   incumbent=_Process(log, "incumbent"))


def test_timed_sides_take_turns_and_all_run_again_after_the_pass():
    """While one side's block is timed the other untrusted side is stopped (the reference never is); a side
    keeps its turn over the ABBA order's consecutive blocks, and a pass that fails still thaws every side."""
    log: list[str] = []
    session = _session_with(log)
    with session.turns() as turn:
        for side, _ in session._pairs(4):  # inc cand | cand inc | inc cand | cand inc
            turn(side)
            log.append(f"time {side.role}")
    assert log == ["freeze candidate", "time incumbent", "thaw candidate", "freeze incumbent", "time candidate",
                   "time candidate", "thaw incumbent", "freeze candidate", "time incumbent", "time incumbent",
                   "thaw candidate", "freeze incumbent", "time candidate", "time candidate", "thaw incumbent",
                   "freeze candidate", "time incumbent", "thaw candidate"]
    assert session.request_seconds["candidate turn"][0] == 2 and session.request_seconds["incumbent turn"][0] == 3
    log.clear()
    with pytest.raises(RuntimeError), session.turns() as turn:
        turn(session.cand)
        raise RuntimeError("a failed block")
    assert log == ["freeze incumbent", "thaw incumbent"]


def _floor_check(wall_ms: float, longest_ms: float | None, busy_ms: float | None) -> str | None:
    """The kernel-floor check's REWARD_HACK reason for a candidate timed at `wall_ms`, or None."""
    from kernelarc.guard.samples import Samples
    from kernelarc.guard.session import Failure, WorkloadTimes

    session = _session_with([])
    times = WorkloadTimes(wall={"candidate": Samples((wall_ms,) * 5)}, longest_kernel_ms=longest_ms, busy_ms=busy_ms)
    try:
        session._check_kernel_floor("w", times)
    except Failure as f:
        assert f.status == "REWARD_HACK"
        return f.message
    return None


def test_a_clock_scaled_down_on_a_call_of_many_kernels_trips_the_busy_floor():
    """Eight kernels of 0.125 ms: a clock scaled to 0.6x passes the longest-kernel floor but not the busy
    time's, and an honest call (wall a little over its busy time, or under it by the drift of two clocks)
    passes both."""
    assert _floor_check(0.6, longest_ms=0.125, busy_ms=None) is None  # what the longest kernel alone allows
    assert "kept the card busy" in _floor_check(0.6, longest_ms=0.125, busy_ms=1.0)
    assert _floor_check(1.05, longest_ms=0.125, busy_ms=1.0) is None
    assert _floor_check(0.85, longest_ms=0.125, busy_ms=1.0) is None
    assert "longest kernel" in _floor_check(0.5, longest_ms=1.0, busy_ms=1.0)
    # tiny calls keep the absolute slack: 10 us of kernels against an 8 us median is noise, not a cheat
    assert _floor_check(0.008, longest_ms=0.004, busy_ms=0.010) is None


def test_the_hosts_gaps_between_kernels_are_left_out_of_the_busy_floor():
    """A host-bound call (a launch every 40 us of host time, each kernel 3 us) spans far more under the
    profiler, which adds its own cost per launch, than its wall time without it; what sets its floor is the
    kernels' time. Kernels queued back to back (gaps of 1-2 us) count whole, so a scaled clock on a
    device-bound call still meets the span."""
    host_bound = [_marker(0, 0.0, 5000.0)]
    for i in range(100):
        host_bound += [_launch(10 + i, 1.0 + 40.0 * i), _kernel(10 + i, 5.0 + 40.0 * i, 3.0, stream=7)]
    queued = [_marker(1, 6000.0, 10.0)] + [_launch(200 + i, 6001.0 + i) for i in range(5)]
    queued += [_kernel(200 + i, 6010.0 + 31.5 * i, 30.0, stream=7) for i in range(5)]  # 1.5 us apart
    events = host_bound + queued
    activity, _ = iteration_spans(events, marked_windows(events))
    assert activity[0].span_ms == pytest.approx((40.0 * 99 + 3.0) / 1000.0)
    assert activity[0].busy_ms == pytest.approx(100 * 3.0 / 1000.0)
    assert activity[1].busy_ms == pytest.approx(activity[1].span_ms) == pytest.approx((31.5 * 4 + 30.0) / 1000.0)
    # the host-bound call's wall (2.5 ms unprofiled) against its profiled span (4 ms) and its busy time
    assert _floor_check(2.5, longest_ms=0.003, busy_ms=activity[0].busy_ms) is None
    assert _floor_check(2.5, longest_ms=0.003, busy_ms=activity[0].span_ms) is not None


OUTPUT = {"kind": "tensor", "type": "torch.Tensor", "dtype": "float32", "shape": [2], "offset": 0, "nbytes": 8}
"""The one output of the fake workload "w", as a side describes it in its mailbox."""


class _ProfiledSide(_Process):
    """A side answering the device pass's requests with fixed profiles: spans of 1 ms, 8 kernels each,
    busy for 0.6 ms of it (`busy_ms`), or without busy times at all (None); and `fetch` requests for its
    kept calls (`fetched`: the indices asked for, per block)."""

    def __init__(self, log: list, name: str, annotated: bool, busy_ms: float | None = 0.6):
        super().__init__(log, name)
        self.annotated, self.busy_ms = annotated, busy_ms
        self.mailbox = os.memfd_create("fake-mailbox")
        os.ftruncate(self.mailbox, 64)
        self.mailbox_map = copier.FileMap(self.mailbox)
        self.timed: list[dict] = []
        self.fetched: list[list[int]] = []

    def mailbox_size(self) -> int:
        return 64

    def request(self, header: dict, *, deadline: float, cutoff=None):
        from kernelarc.guard.sides import Reply

        if header["op"] == "fetch":
            self.fetched.append(list(header["indices"]))
            return Reply({"ok": True, "calls": [{"outputs": [OUTPUT], "inputs": []} for _ in header["indices"]]},
                         seconds=0.001)
        self.timed.append(header)
        n = len(header["seeds"])
        busy = {} if self.busy_ms is None else {"busy_ms": [self.busy_ms] * n}
        return Reply({"ok": True, "samples_ms": [1.0] * n, "kernels": [8] * n, "longest_ms": [0.125] * n,
                      "annotated": self.annotated, **busy}, seconds=0.01 * n)


class _Checker(_ProfiledSide):
    """The reference side's `check`: every call passes but those on the seeds in `wrong`."""

    def __init__(self, wrong: set[int]):
        super().__init__([], "reference", annotated=False)
        self.wrong, self.checked = wrong, []

    def request(self, header: dict, *, deadline: float, cutoff=None):
        from kernelarc.guard.sides import Reply

        calls = header["calls"]
        self.checked += [c["seed"] for c in calls]
        return Reply({"ok": True, "calls": [{"status": "INCORRECT_NUMERICAL", "message": "wrong"}
                                            if c["seed"] in self.wrong else {} for c in calls]}, seconds=0.001)


class _Everything:
    def __contains__(self, item) -> bool:
        return True


def _profiled_session(candidate: _ProfiledSide, wrong: set[int] = frozenset()):
    session = _session_with([])
    session.outputs["w"], session.input_bytes["w"] = [{"shape": [2], "dtype": "float32"}], 8
    session.input_specs["w"] = []
    session.cand.process, session.inc.process = candidate, _ProfiledSide([], "incumbent", False)
    session.ref.process = _Checker(set(wrong))
    return session


def test_each_timed_block_follows_a_rest_as_long_as_the_card_last_worked(monkeypatch):
    """On CUDA the card idles before every timed block as long as it worked in the last timed request (rest_ratio
    1): its calls times the slower side's per-call time, at most the judge's seconds around the request (a
    profiler session's host work is no work of the card's); the first block after the warm-up's requests, at
    most cooldown_s. The other untrusted side is stopped meanwhile, in the device pass and the wall pass alike;
    counted as `rest`."""
    from kernelarc.guard.session import WorkloadTimes

    log: list = []
    session = _profiled_session(_ProfiledSide(log, "candidate", annotated=False))
    session.inc.process = _ProfiledSide(log, "incumbent", False)
    monkeypatch.setattr(session, "_audit", lambda *args: None)
    states: list = []

    def sleep(seconds: float) -> None:
        frozen = set()
        for entry in log:
            if isinstance(entry, str) and entry.split()[0] in ("freeze", "thaw"):
                (frozen.add if entry.startswith("freeze") else frozen.discard)(entry.split()[1])
        states.append((round(seconds, 6), tuple(sorted(frozen))))

    from kernelarc.guard import session as session_module
    monkeypatch.setattr(session_module.time, "sleep", sleep)
    session.worked_s, session.call_s = 0.5, 0.003  # the warm-up's requests; 3 ms calls
    session._device_pass("w", [], iterations=8, fit=2, times=WorkloadTimes())
    # four blocks of two calls a side, each request 0.02 s on the judge's clock: 6 ms of calls in each
    assert [seconds for seconds, _ in states] == [session.settings.cooldown_s] + [0.006] * 7
    assert all(len(frozen) == 1 for _, frozen in states)  # one untrusted side stopped: the other is timed next
    assert session.request_seconds["rest"] == [8, pytest.approx(0.142)]

    states.clear()
    host = _DriftingHost()
    session.inc.process, session.cand.process = _WallSide("incumbent", host, 0.05), _WallSide("candidate", host, 0.05)
    session.check = lambda *args, **kwargs: []
    session._wall_pass("w", [], k=5, n_blocks=4, sync_end={"incumbent": False, "candidate": False},
                       times=WorkloadTimes())
    # blocks of 5 calls of about 0.05 ms: the judge's clock around each request, shorter than 5 x 3 ms
    assert [seconds for seconds, _ in states] == [0.006] + [pytest.approx(0.000257)] * 7

    states.clear()
    session.on_cuda = False  # the CPU: nothing to cool
    session.worked_s = 0.5
    session._rest()
    assert states == []


def test_the_candidates_profiled_calls_are_audited():
    """Where device time decides, a side could answer its profiled calls with less work than its checked
    ones. It keeps every profiled call's outputs (the incumbent none) and the judge checks some of them,
    drawn after each block ran: one wrong is REWARD_HACK."""
    from kernelarc.guard.session import Failure, WorkloadTimes, audit_count

    candidate = _ProfiledSide([], "candidate", annotated=False)
    session = _profiled_session(candidate)
    session._device_pass("w", [], iterations=50, fit=100, times=WorkloadTimes())
    assert all(h["capture"] for h in candidate.timed)
    assert not any(h["capture"] for h in session.inc.process.timed)
    audited = [i for block in candidate.fetched for i in block]
    assert len(audited) == audit_count(session.settings.audits, 16) and len(set(session.ref.process.checked)) == len(audited)
    profiled_seeds = [s for h in candidate.timed for s in h["seeds"]]
    assert set(session.ref.process.checked) <= set(profiled_seeds)

    candidate = _ProfiledSide([], "candidate", annotated=False)
    session = _profiled_session(candidate)
    session.ref.process.wrong = _Everything()  # every profiled call is wrong
    with pytest.raises(Failure) as failed:
        session._device_pass("w", [], iterations=50, fit=100, times=WorkloadTimes())
    assert failed.value.status == "REWARD_HACK" and "a profiled call" in failed.value.message


@pytest.mark.parametrize("annotated, busy", [(False, 0.6), (True, None)])
def test_spans_profiled_with_host_tracing_set_no_floor(annotated, busy):
    """A call that synchronizes the device itself is profiled again with each call marked on the host; its
    spans then hold the tracing's gaps and say nothing about its wall time: the pass keeps no busy floor."""
    from kernelarc.guard.session import WorkloadTimes

    session = _profiled_session(_ProfiledSide([], "candidate", annotated))
    times = WorkloadTimes()
    session._device_pass("w", [], iterations=4, fit=100, times=times)
    assert times.busy_ms == busy and times.longest_kernel_ms == 0.125


def test_a_reply_without_busy_times_is_held_to_its_whole_spans():
    """Busy times are the side's to report: one that leaves them out gets the span floor, the stricter one,
    not none at all (a scaled clock would otherwise pass by dropping a field)."""
    from kernelarc.guard.session import WorkloadTimes

    session = _profiled_session(_ProfiledSide([], "candidate", annotated=False, busy_ms=None))
    times = WorkloadTimes()
    session._device_pass("w", [], iterations=4, fit=100, times=times)
    assert times.busy_ms == 1.0


class _DriftingHost:
    """One host for both sides whose speed drifts between two regimes every eight timed blocks (on the lent
    H200 a host-bound call alone on one core moved between about 40 and 80 us, docs/benchmarks.md session 21)."""

    def __init__(self):
        self.blocks = 0

    def factor(self) -> float:
        f = 1.0 if (self.blocks // 8) % 2 == 0 else 1.8
        self.blocks += 1
        return f


class _WallSide(_Process):
    """A side answering wall-clock blocks with `call_ms` per call times the host's factor of the moment,
    and a microsecond of bookkeeping per call (the judge's clock around the request)."""

    def __init__(self, name: str, host: _DriftingHost, call_ms: float):
        super().__init__([], name)
        self.host, self.call_ms = host, call_ms

    def request(self, header: dict, *, deadline: float, cutoff=None):
        from kernelarc.guard.sides import Reply

        n = len(header.get("seeds", header.get("indices", [])))
        if header["op"] == "fetch":
            return Reply({"ok": True, "calls": []}, seconds=0.0)
        f = self.host.factor()
        samples = [self.call_ms * f * (1.0 + 0.01 * (i % 3)) for i in range(n)]
        return Reply({"ok": True, "samples_ms": samples}, seconds=(sum(samples) + 0.001 * n) / 1000.0)


def test_the_wall_pass_pairs_each_abba_block_with_its_neighbour_so_the_hosts_drift_cancels():
    """Each side alone spreads by half its median over the pass, more than a 1.2x speedup; each pair of
    blocks timed back to back holds that speedup, and the verdict rests on the pairs: KEEP, with the pairs'
    own small spread as its noise."""
    from kernelarc.guard.samples import Samples
    from kernelarc.guard.session import WorkloadTimes
    from kernelarc.guard.settings import GuardSettings
    from kernelarc.guard.types import Status, Verdict, WorkloadResult
    from kernelarc.guard.verdict import MIN_PAIRS, decide

    session = _session_with([])
    host = _DriftingHost()
    session.inc.process = _WallSide("incumbent", host, call_ms=0.060)
    session.cand.process = _WallSide("candidate", host, call_ms=0.050)
    session.outputs["w"], session.input_bytes["w"] = [], 0
    session.check = lambda *args, **kwargs: []
    session._calls = lambda reply, n, uuid: [None] * n
    times = WorkloadTimes()
    session._wall_pass("w", [], k=5, n_blocks=16, sync_end={"incumbent": False, "candidate": False}, times=times)
    assert len(times.paired) == 16 >= MIN_PAIRS
    assert Samples(times.paired).median == pytest.approx(1.2)
    assert max(times.wall["candidate"].spread, times.wall["incumbent"].spread) > 0.5
    paired = Samples(times.paired)
    result = WorkloadResult(uuid="w", status=Status.PASSED, latency_ms=times.wall["candidate"].median,
                            incumbent_ms=times.wall["incumbent"].median, spread=times.wall["candidate"].spread,
                            incumbent_spread=times.wall["incumbent"].spread, paired_speedup=paired.median,
                            paired_spread=paired.spread, pairs=len(times.paired))
    decision = decide([result], GuardSettings())
    assert decision.verdict is Verdict.KEEP and decision.noise < 0.05
    assert "paired block by block" in decision.reason
    unpaired = result.model_copy(update={"paired_speedup": None, "paired_spread": None, "pairs": None})
    assert decide([unpaired], GuardSettings()).verdict is not Verdict.KEEP  # the sides' spread hides it


def test_both_timed_sides_get_one_cpu_per_device_and_the_thread_is_pinned_only_for_the_block():
    from kernelarc.guard.timing_cpus import timing_cpu
    from kernelarc.guard.side import pinned

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        assert timing_cpu("cuda:0") is None
        return
    assert timing_cpu("cuda:0") == timing_cpu("cpu") == cpus[-1] and timing_cpu("cuda:1") == cpus[-2]
    before = os.sched_getaffinity(0)
    with pinned(cpus[0]):
        assert os.sched_getaffinity(0) == {cpus[0]}
    assert os.sched_getaffinity(0) == before
    with pinned(max(cpus) + 4096):  # not a CPU this process may use: left where it runs
        assert os.sched_getaffinity(0) == before
    with pinned(None):
        assert os.sched_getaffinity(0) == before


class _LateSide(_ProfiledSide):
    """A CPU side whose timed reply says it took 0.1 ms, while its outputs reach the judge `late_s` after the
    request: what a side that replies first and writes its outputs after looks like to the judge."""

    def __init__(self, name: str, late_s: float):
        super().__init__([], name, annotated=False)
        self.late_s = late_s

    def request(self, header: dict, *, deadline: float, cutoff=None):
        import time

        from kernelarc.guard.sides import Reply

        if header["op"] != "time":
            return super().request(header, deadline=deadline, cutoff=cutoff)
        n = len(header["seeds"])
        time.sleep(self.late_s)
        return Reply({"ok": True, "samples_ms": [0.0] * n, "calls": [{"outputs": [OUTPUT]}] * n}, seconds=1e-4)


class _CpuReference(_Checker):
    def request(self, header: dict, *, deadline: float, cutoff=None):
        from kernelarc.guard.sides import Reply

        if header["op"] == "stage":  # every side draws its own inputs
            return Reply({"ok": True, "inputs": None}, seconds=0.0)
        return super().request(header, deadline=deadline, cutoff=cutoff)


def test_the_cpu_clock_runs_until_the_outputs_are_out_of_the_sides_reach():
    """Fifth red-team pass: on the CPU the judge's clock stopped at the reply, and the outputs were copied from
    the side's mailbox after, so a side could reply at once and write them from a thread while the judge parsed
    (KEEP 1.2-2x on a tiny call). The judged time now runs from the request to the end of that copy."""
    from kernelarc.guard.session import Seeds, Session, WorkloadTimes
    from kernelarc.guard.settings import GuardSettings
    from kernelarc.task.loader import load_task

    session = Session(load_task(Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "relu_tiny.py"),
                      device="cpu", settings=GuardSettings(), seeds=Seeds(random.Random(0)),
                      reference=_CpuReference(set()), candidate=_LateSide("candidate", 0.02),
                      incumbent=_LateSide("incumbent", 0.0))
    session.outputs["w"], session.input_bytes["w"], session.input_specs["w"] = [{"shape": [2], "dtype": "float32"}], 8, []
    times = WorkloadTimes()
    session._wall_pass("w", [], k=2, n_blocks=4, sync_end={"incumbent": False, "candidate": False}, times=times)
    assert times.wall["candidate"].median >= 8.0  # ms per call: the 20 ms per block of 2 calls, less at most half
    assert times.wall["incumbent"].median < 4.0
    assert len(session.ref.process.checked) >= 8  # every timed call of the candidate was checked


def test_input_slots_give_every_call_one_set_of_buffers_loaded_with_its_own_values():
    import torch

    from kernelarc.guard.timing import InputSlots

    staged = [[torch.full((4,), float(i)), i, torch.full((2, 2), 10.0 * i).t()] for i in range(3)]
    slots = InputSlots(staged)
    assert slots.count == 1  # the transposed (strided) tensor and the scalar go to each call as drawn
    firsts = [slots.inputs(i)[0] for i in range(3)]
    assert all(t is firsts[0] for t in firsts)
    assert [slots.inputs(i)[1] for i in range(3)] == [0, 1, 2]
    assert slots.inputs(2)[2] is staged[2][2]
    for i in range(3):
        slots.load(i)
        assert torch.equal(slots.inputs(i)[0], staged[i][0])


def test_input_slots_hand_back_each_calls_inputs_as_the_call_left_them():
    """The audits compare a call's inputs after it with the ones it was given: a call that writes into its
    slot must be seen doing so, though the next call's values go into the same slot."""
    import torch

    from kernelarc.guard.timing import InputSlots, _kept

    staged = [[torch.full((3,), float(i)), 7] for i in range(2)]
    slots = InputSlots(staged)

    def writes_its_input(x, n):
        out = x * 2
        x.add_(1)
        return [out]

    calls = [slots.returning_inputs(lambda i=i: writes_its_input(*slots.inputs(i))) for i in range(2)]
    kept = []
    for i, call in enumerate(calls):
        slots.load(i)
        kept.append(_kept(call()))
    (out0, after0), (out1, after1) = slots.split(0, kept[0]), slots.split(1, kept[1])
    assert torch.equal(out0[0], torch.zeros(3)) and torch.equal(out1[0], torch.full((3,), 2.0))
    assert torch.equal(after0[0], torch.ones(3)) and torch.equal(after1[0], torch.full((3,), 2.0))
    assert after0[1] == after1[1] == 7
    assert torch.equal(staged[0][0], torch.zeros(3))  # what was drawn stays as drawn


def test_inputs_of_other_shapes_or_autograd_get_no_slot():
    import torch

    from kernelarc.guard.timing import InputSlots

    assert InputSlots([[torch.zeros(3)], [torch.zeros(4)]]).count == 0
    assert InputSlots([[torch.zeros(3, requires_grad=True)], [torch.zeros(3, requires_grad=True)]]).count == 0
    assert InputSlots([[torch.zeros(3)], [torch.zeros(3, dtype=torch.float64)]]).count == 0
    assert InputSlots([]).count == 0


def test_a_block_of_one_call_reads_its_inputs_as_drawn():
    """One call reads one set of addresses anyway: no slot, no copies (a 6 GiB input would take 12 GiB more)."""
    import torch

    from kernelarc.guard.timing import InputSlots

    staged = [[torch.zeros(3), 5]]
    slots = InputSlots(staged)
    assert slots.count == 0 and slots.inputs(0)[0] is staged[0][0]
    call = slots.returning_inputs(lambda: [staged[0][0].add_(1)])
    outputs, after = slots.split(0, call())
    assert len(outputs) == 1 and after[0] is staged[0][0] and after[1] == 5


def test_a_block_holds_the_calls_whose_inputs_outputs_and_kept_inputs_fit_the_budget():
    """Each timed call's inputs are kept as the call left them (InputSlots), beside its outputs: a block of
    2 MiB inputs and 1 MiB outputs holds 4 calls in a 20 MiB budget, not 6."""
    session = _session_with([])
    uuid = session.task.workloads[0].uuid
    session.settings = session.settings.model_copy(update={"input_pool_bytes": 20 << 20})
    session.input_bytes = {uuid: 2 << 20}
    session.outputs = {uuid: [{"kind": "tensor", "dtype": "float32", "shape": [1 << 18]}]}
    assert session.block_calls(uuid, 0.0) == 4


def test_a_timed_block_holds_no_more_than_its_load_of_calls():
    """On CUDA a block holds at most `block_load_s` of calls, within the memory budget, but never fewer than
    MIN_BLOCK_CALLS where they fit: a GEMM timed back to back reads the card's power limit, and the first call
    after a rest reads long (GuardSettings.block_load_s, session.MIN_BLOCK_CALLS)."""
    from kernelarc.guard.session import MIN_BLOCK_CALLS

    session = _session_with([])
    uuid = session.task.workloads[0].uuid
    session.input_bytes, session.outputs = {uuid: 8}, {uuid: []}
    fit = session.block_calls(uuid, 0.0)
    assert fit == 50  # MAX_BLOCK_CALLS: tiny inputs
    assert session.block_calls(uuid, 0.0005) == 10  # 5 ms of 0.5 ms calls
    assert session.block_calls(uuid, 0.020) == MIN_BLOCK_CALLS  # long calls: the fewest a median rests on
    assert session.block_calls(uuid, 3e-6) == fit  # microsecond calls: the memory budget decides
    session.input_bytes = {uuid: session.settings.input_pool_bytes // 6}
    assert session.block_calls(uuid, 0.020) == 3  # three calls' inputs fill the budget


def test_a_failed_residual_check_names_each_blocks_bookkeeping():
    """linear_backward's compiled solution was REJECTed so on the H100 (session 33) with only the medians
    said: whether one block or every block went over tells a hiccup from a habit."""
    from kernelarc.guard.samples import Samples
    from kernelarc.guard.session import Failure, WorkloadTimes

    session = _session_with([])
    uuid = session.task.workloads[0].uuid
    times = WorkloadTimes(wall={"candidate": Samples((0.02, 0.02)), "incumbent": Samples((0.02, 0.02))},
                          residual_ms={"candidate": 0.64, "incumbent": 0.27},
                          residual_blocks_ms={"candidate": [1.01, 0.27], "incumbent": [0.27, 0.27]})
    with pytest.raises(Failure) as failed:
        session._check_residuals(uuid, times)
    assert failed.value.status == "REWARD_HACK"
    assert "per block: candidate 1.01 0.27, incumbent 0.27 0.27" in failed.value.message
    times.residual_ms["candidate"] = 0.3
    session._check_residuals(uuid, times)  # within the slack: no failure
