"""GuardSettings: how many timed calls a side gets."""

from __future__ import annotations

from kernelarc.guard.settings import GuardSettings


def test_short_cuda_calls_are_timed_more_often_up_to_the_cap():
    settings = GuardSettings()
    assert settings.timed_iterations(on_cuda=True, call_s=0.010) == settings.iterations
    assert settings.timed_iterations(on_cuda=True, call_s=0.0001) == 500
    assert settings.timed_iterations(on_cuda=True, call_s=1e-7) == settings.max_iterations
    assert settings.timed_iterations(on_cuda=False, call_s=1e-7) == settings.cpu_iterations


def test_the_deciding_clock_gets_the_full_count_and_the_other_is_reported():
    settings = GuardSettings()
    # a KernelBench file: wall time decides (more calls for short ones), device time is reported from 10
    assert settings.pass_iterations("wall", call_s=1e-3) == (settings.reported_iterations, settings.iterations)
    assert settings.pass_iterations("wall", call_s=1e-5) == (settings.reported_iterations, settings.max_iterations)
    # a SOL-ExecBench task: device time decides from 50 profiled calls, wall time is reported from 10
    assert settings.pass_iterations("device", call_s=1e-5) == (settings.device_iterations, settings.reported_iterations)
    few = GuardSettings(device_iterations=4, iterations=5, reported_iterations=8)
    assert few.pass_iterations("wall", 1.0) == (4, 5) and few.pass_iterations("device", 1.0) == (4, 5)
