"""The device lock holds across processes: two processes are never inside it at once, and a second
holder in the same process waits too."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from kernelarc.guard.devlock import device_id, device_lock

HOLDER = """
import sys, time
from pathlib import Path
from kernelarc.guard.devlock import device_lock
log = open(sys.argv[2], "a", buffering=1)
for _ in range(5):
    with device_lock("cpu", Path(sys.argv[1])):
        log.write(f"in {time.monotonic()}\\n")
        time.sleep(0.05)
        log.write(f"out {time.monotonic()}\\n")
"""


def _intervals(log: Path) -> list[tuple[float, float]]:
    events = [line.split() for line in log.read_text().splitlines()]
    starts = [float(t) for kind, t in events if kind == "in"]
    ends = [float(t) for kind, t in events if kind == "out"]
    return sorted(zip(sorted(starts), sorted(ends)))


def test_two_processes_never_hold_the_lock_at_once(tmp_path):
    logs = [tmp_path / f"holder{i}.log" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "locks"), str(log)]) for log in logs]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    intervals = sorted(i for log in logs for i in _intervals(log))
    assert len(intervals) == 10
    assert all(end <= nxt_start for (_, end), (nxt_start, _) in zip(intervals, intervals[1:])), intervals


def test_a_second_holder_in_the_same_process_waits(tmp_path):
    order = []

    def second():
        with device_lock("cpu", tmp_path) as waited:
            order.append(("second", waited))

    with device_lock("cpu", tmp_path):
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.2)
        order.append(("first done", 0.0))
    thread.join(timeout=10)
    assert [name for name, _ in order] == ["first done", "second"] and order[1][1] >= 0.15


def test_the_cpu_is_one_device():
    assert device_id("cpu") == "cpu"
