"""GuardSettings: how many timed calls a side gets."""

from __future__ import annotations

from kernelarc.guard.settings import GuardSettings


def test_short_cuda_calls_are_timed_more_often_up_to_the_cap():
    settings = GuardSettings()
    assert settings.timed_iterations(on_cuda=True, call_s=0.010) == settings.iterations
    assert settings.timed_iterations(on_cuda=True, call_s=0.0001) == 500
    assert settings.timed_iterations(on_cuda=True, call_s=1e-7) == settings.max_iterations
    assert settings.timed_iterations(on_cuda=False, call_s=1e-7) == settings.cpu_iterations
