"""The timing CPUs are kept free of the judge's other processes (guard/timing_cpus.py, sandbox.move_off)."""

import os
import subprocess
import sys

import pytest
import torch

from kernelarc.guard import sandbox, timing_cpus

CPUS = sorted(os.sched_getaffinity(0))
needs_two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="one CPU: nothing can be kept free")


def child_affinity(preexec) -> set[int]:
    out = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                         capture_output=True, text=True, check=True, preexec_fn=preexec).stdout
    return set(eval(out))  # noqa: S307 - a list of ints printed by the child above


@needs_two_cpus
def test_a_started_process_and_what_it_starts_stay_off_the_timing_cpus():
    off = frozenset({CPUS[-1]})
    assert child_affinity(sandbox.limits(sandbox.SandboxPolicy(), "cpu", off_cpus=off)) == set(CPUS) - off
    assert child_affinity(lambda: sandbox.lowered_priority(off)) == set(CPUS) - off
    grandchild = subprocess.run(
        [sys.executable, "-c", "import os, subprocess, sys; print(subprocess.run([sys.executable, '-c', "
         "'import os; print(sorted(os.sched_getaffinity(0)))'], capture_output=True, text=True).stdout)"],
        capture_output=True, text=True, check=True, preexec_fn=lambda: sandbox.move_off(off)).stdout
    assert set(eval(grandchild)) == set(CPUS) - off  # noqa: S307 - compile workers inherit the mask
    assert os.sched_getaffinity(0) == set(CPUS)  # the judge's own process did not move


def test_a_mask_that_would_leave_no_cpu_is_left_as_it_is():
    assert child_affinity(lambda: sandbox.move_off(frozenset(CPUS))) == set(CPUS)
    assert child_affinity(lambda: sandbox.move_off(frozenset())) == set(CPUS)


@pytest.mark.parametrize("cpus, gpus, expected", [
    (tuple(range(16)), 1, {15}),
    (tuple(range(16)), 2, {15, 14}),
    (tuple(range(3)), 2, set()),   # one CPU left to the builds: nothing reserved
    (tuple(range(16)), 0, set()),  # no GPU: the CPU's timed calls use every core
    ((0, 2, 5, 9), 1, {9}),        # counted in the CPUs this process may use, not their numbers
])
def test_reserved_is_one_timing_cpu_per_visible_gpu_where_the_host_can_spare_it(monkeypatch, cpus, gpus, expected):
    monkeypatch.setattr(timing_cpus, "host_cpus", lambda: cpus)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    timing_cpus.reserved.cache_clear()
    try:
        assert timing_cpus.reserved() == expected
        assert all(timing_cpus.timing_cpu(f"cuda:{i}") in expected for i in range(gpus) if expected)
    finally:
        timing_cpus.reserved.cache_clear()


def test_the_timing_cpu_is_chosen_from_the_cpus_the_process_had_before_any_move():
    timing_cpus.host_cpus.cache_clear()
    try:
        first = timing_cpus.timing_cpu("cuda:0")
        if len(CPUS) >= 2:
            os.sched_setaffinity(0, {CPUS[0]})
            try:
                assert timing_cpus.timing_cpu("cuda:0") == first == CPUS[-1]
            finally:
                os.sched_setaffinity(0, set(CPUS))
    finally:
        timing_cpus.host_cpus.cache_clear()
