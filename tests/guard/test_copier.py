"""The judge's copies between mailboxes: byte-exact over kept mappings, on threads off the CPUs that time GPU calls."""

from __future__ import annotations

import os
import threading

import pytest

from kernelarc.guard import copier, timing_cpus, wire


@pytest.fixture
def memfds():
    made = []

    def make() -> copier.FileMap:
        made.append(copier.FileMap(os.memfd_create("copier-test")))
        return made[-1]

    yield make
    for kept in made:
        kept.close()
        os.close(kept.fd)


@pytest.mark.parametrize("threads", [0, 3])
def test_copy_regions_packs_every_byte_of_regions_across_chunks(monkeypatch, memfds, threads):
    """Regions of several chunks, one under a chunk and an empty one land packed and byte-exact, on the caller's
    thread or spread over a pool's; the destination grows to hold them."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(copier, "COPY_CHUNK", 4096)
    payload = os.urandom(5 * 4096 + 100)
    src, dst = memfds(), memfds()
    os.pwrite(src.fd, payload, 0)
    regions = [{"offset": 0, "nbytes": 3 * 4096 + 7}, {"offset": 3 * 4096 + 64, "nbytes": 0},
               {"offset": 4 * 4096, "nbytes": 4096 + 100}]
    with ThreadPoolExecutor(threads or 1) as pool:
        copies = copier.copy_regions(src, dst, regions, pool if threads else None)
    for region, copy in zip(regions, copies):
        assert os.pread(dst.fd, region["nbytes"], copy["offset"]) == payload[region["offset"]:][:region["nbytes"]]
    assert copies[0]["offset"] == 0 and copies[2]["offset"] >= copies[0]["offset"] + regions[0]["nbytes"]
    assert os.fstat(dst.fd).st_size >= copies[2]["offset"] + regions[2]["nbytes"]


def test_a_kept_mapping_sees_what_the_file_holds_now_and_follows_it_as_it_grows(memfds):
    """The judge maps a mailbox once; a side writes (and grows) it between copies: each copy takes what is there
    then, never the bytes of an earlier copy."""
    src, dst = memfds(), memfds()
    for size, fill in ((4096, b"a"), (4096, b"b"), (3 * 4096, b"c")):
        os.pwrite(src.fd, fill * size, 0)
        copier.copy_regions(src, dst, [{"offset": 0, "nbytes": size}])
        assert os.pread(dst.fd, size, 0) == fill * size


def test_a_region_past_the_source_end_is_a_wire_error_and_copies_nothing(memfds):
    """A side that described a region beyond its mailbox (it cannot shrink it: wire.sealed_mailbox): a WireError
    before any byte moves, never a read past the mapping (a SIGBUS in the judge)."""
    src, dst = memfds(), memfds()
    os.pwrite(src.fd, b"x" * 4096, 0)
    with pytest.raises(wire.WireError):
        copier.copy_regions(src, dst, [{"offset": 0, "nbytes": 4096}, {"offset": 4096, "nbytes": 4096}])
    assert os.fstat(dst.fd).st_size == 0


def test_a_mailbox_grown_past_any_address_space_is_mapped_only_as_far_as_its_regions_go(memfds):
    """A side outside the sandbox's file-size limit (`--unsafe-no-sandbox`) may grow its own mailbox to exabytes
    (sparse): a region near its start still copies, one near its end is a WireError (the candidate's REWARD_HACK in
    Session.relay), never an error out of the judge."""
    src, dst = memfds(), memfds()
    os.ftruncate(src.fd, 1 << 62)
    os.pwrite(src.fd, b"y" * 4096, 0)
    copier.copy_regions(src, dst, [{"offset": 0, "nbytes": 4096}])
    assert os.pread(dst.fd, 4096, 0) == b"y" * 4096
    with pytest.raises(wire.WireError):
        copier.copy_regions(src, dst, [{"offset": (1 << 62) - 4096, "nbytes": 4096}])


def test_only_empty_regions_map_nothing(memfds):
    src, dst = memfds(), memfds()
    copies = copier.copy_regions(src, dst, [{"offset": 0, "nbytes": 0}])
    assert copies == [{"offset": 0, "nbytes": 0}] and os.fstat(dst.fd).st_size == 0


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
