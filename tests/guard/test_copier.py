"""The judge's copy threads stay off the CPUs that time GPU calls."""

from __future__ import annotations

import os
import threading

import pytest

from kernelarc.guard import copier, timing_cpus


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs: one reserved, one to copy on")
def test_a_copy_thread_moves_itself_off_the_reserved_timing_cpus(monkeypatch):
    """The pool's initializer, run in a thread of its own: that thread leaves the reserved CPU, its caller not."""
    cpus = sorted(os.sched_getaffinity(0))
    monkeypatch.setattr(timing_cpus, "reserved", lambda: frozenset({cpus[-1]}))
    seen = []
    thread = threading.Thread(target=lambda: (copier._off_timing_cpus(), seen.append(os.sched_getaffinity(0))))
    thread.start()
    thread.join(10)
    assert seen and cpus[-1] not in seen[0] and seen[0] == set(cpus[:-1])
    assert cpus[-1] in os.sched_getaffinity(0)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to copy on")
def test_the_pool_copies_on_named_threads(monkeypatch):
    monkeypatch.setattr(timing_cpus, "reserved", lambda: frozenset())
    copier.pool.cache_clear()
    try:
        pool = copier.pool()
        assert pool is not None and pool.submit(lambda: threading.current_thread().name).result().startswith("kernelarc-copy")
    finally:
        if copier.pool():
            copier.pool().shutdown()
        copier.pool.cache_clear()


def test_no_pool_with_a_single_cpu_to_copy_on(monkeypatch):
    monkeypatch.setattr(timing_cpus, "host_cpus", lambda: (0, 1))
    monkeypatch.setattr(timing_cpus, "reserved", lambda: frozenset({1}))
    copier.pool.cache_clear()
    try:
        assert copier.pool() is None
    finally:
        copier.pool.cache_clear()
