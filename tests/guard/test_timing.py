"""Sampling order and batching of the guard's timing (CPU: the CUDA methods run in tests/guard/test_evaluate.py)."""

from __future__ import annotations

from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.timing import SideTimer, calls_per_sample, interleaved
from kernelarc.guard.types import TimingMethod

EVENTS, CUPTI = TimingMethod.CUDA_EVENTS, TimingMethod.CUPTI


def test_interleaved_takes_abba_samples_each_on_its_own_calls():
    log: list[tuple[str, int]] = []

    def maker(name):
        return lambda i: (lambda: log.append((name, i)))

    timers = {n: SideTimer(TimingMethod.CPU_WALL, None) for n in ("a", "b")}
    samples = interleaved({n: (timers[n], maker(n)) for n in timers}, 4)
    assert log == [("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2), ("b", 3), ("a", 3)]
    assert all(len(s.times_ms) == 4 and s.method is TimingMethod.CPU_WALL for s in samples.values())


def test_only_event_timed_launch_bound_calls_are_batched():
    settings = GuardSettings()
    fast = {"incumbent": 40e-6, "candidate": 15e-6}
    assert calls_per_sample({EVENTS}, fast, settings) == settings.batch_calls == 16
    assert calls_per_sample({EVENTS}, {**fast, "incumbent": 2e-4}, settings) == 1  # one side does real GPU work
    assert calls_per_sample({EVENTS, CUPTI}, fast, settings) == 1  # side streams: one profiled call per sample
    assert calls_per_sample({TimingMethod.CPU_WALL}, {}, settings) == 1
    assert calls_per_sample({EVENTS}, fast, GuardSettings(batch_below_ms=0)) == 1


def test_a_batched_timer_keeps_its_batch_and_others_take_one_call():
    assert SideTimer(TimingMethod.CUDA_EVENTS_BATCH, None, batch=16).batch == 16
    assert SideTimer(EVENTS, None, batch=16).batch == 1
