"""Issue 15 item 4: where a candidate's side spends its requests on the card, which judge_profile cannot see.

    python bench/gpu/side_profile.py OUT.json TASK.py CANDIDATE.py [DEVICE]

judge_profile.py profiles the judge's process; a side is another process, sandboxed, whose requests show
there only as wholes (`candidate warm`: 0.6 s of a cached Triton row kernel's first call, 1.3-5.6 s per
candidate in session 35's large-tensor campaigns). Here a reference side and a candidate side (guard/side.py's
`Side`, the code a side process serves) run in this one process, unsandboxed, and answer the requests an
evaluation makes in its order: setup, load, specs, the first call, a second one, and every workload's
correctness rounds in the session's batches. Each request is timed under cProfile (its costliest functions
kept), and every page-locking of a mailbox (host_pinning.pin) is counted and timed.

Run it twice with one TRITON_CACHE_DIR: the first run's first call compiles, the second's finds its kernels
cached, as an evaluation does after `Judge.prebuild`. Trusted candidates only: nothing here is sandboxed.
"""

from __future__ import annotations

import cProfile
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from judge_profile import own_time

from kernelarc.guard import host_pinning, load_candidate, wire
from kernelarc.guard.session import CHECK_BATCH_BYTES
from kernelarc.guard.side import Side, prewarm
from kernelarc.task import load_task


def main() -> int:
    if len(sys.argv) < 4:
        print("usage: python bench/gpu/side_profile.py OUT.json TASK.py CANDIDATE.py [DEVICE]", file=sys.stderr)
        return 2
    out, task = Path(sys.argv[1]), load_task(sys.argv[2])
    candidate = load_candidate(Path(sys.argv[3]), task)
    device = sys.argv[4] if len(sys.argv) > 4 else "cuda:0"  # a side's device always has its index
    pins = count_pins()
    rows: list[dict] = []

    def ask(side: Side, label: str, header: dict) -> dict:
        profile, before = cProfile.Profile(), (pins["n"], pins["s"])
        started = time.perf_counter()
        reply = profile.runcall(getattr(side, f"op_{header['op']}"), header)
        rows.append({"request": label, "seconds": round(time.perf_counter() - started, 4),
                     "pins": pins["n"] - before[0], "pin_s": round(pins["s"] - before[1], 4),
                     "own_time": own_time(profile, 12)})
        print(label, rows[-1]["seconds"], "pins", rows[-1]["pins"], rows[-1]["pin_s"], flush=True)
        return reply

    os.chdir(tempfile.mkdtemp(prefix="side-profile-"))
    on_cuda = device.startswith("cuda")
    started = time.perf_counter()
    ref = Side(device, wire.Mailbox(wire.sealed_mailbox(), pinned=on_cuda), warming=prewarm(device))
    cand = Side(device, wire.Mailbox(wire.sealed_mailbox(), pinned=on_cuda), warming=prewarm(device))
    ref.settle(), cand.settle()
    rows.append({"request": "two sides' start (prewarm)", "seconds": round(time.perf_counter() - started, 4)})
    task_header = {"task": task.model_dump(mode="json"), "definition": task.definition}
    ask(ref, "reference setup", {"op": "setup", "role": "reference", **task_header})
    ask(ref, "reference load", {"op": "load", "candidate": None})
    specs, per_call = {}, {}
    for w in task.workloads:
        reply = ask(ref, f"reference specs {w.uuid}", {"op": "specs", "workload": w.uuid, "seed": 1})
        specs[w.uuid] = [{"shape": d["shape"], "dtype": d["dtype"]} for d in reply["outputs"]]
        per_call[w.uuid] = sum(wire.tensor_nbytes(d) for d in reply["outputs"]) + reply["input_bytes"]
    init_on_device = reply["init_on_device"]
    ask(cand, "candidate setup", {"op": "setup", "role": "candidate", "init_on_device": init_on_device, **task_header})
    ask(cand, "candidate load", {"op": "load", "candidate": candidate.model_dump(mode="json"), "label": "candidate"})
    first = task.workloads[0].uuid
    for label in ("candidate warm (first call)", "candidate warm (second call)"):
        ask(cand, label, {"op": "warm", "workload": first, "seed": 2, "calls": 1, "specs": specs[first]})
    rounds = task.rounds
    for w in task.workloads:
        size = max(1, CHECK_BATCH_BYTES // max(per_call[w.uuid], 1))
        for start in range(0, rounds, size):
            numbers = list(range(start, min(rounds, start + size)))
            ask(cand, f"candidate call {w.uuid} rounds {numbers[0] + 1}-{numbers[-1] + 1}",
                {"op": "call", "workload": w.uuid, "seeds": [10 + r for r in numbers],
                 "return_inputs": [r in (0, rounds - 1) for r in numbers], "poison": True, "specs": specs[w.uuid]})
    out.write_text(json.dumps({"task": task.name, "device": device, "triton_cache": os.environ.get("TRITON_CACHE_DIR"),
                               "rows": rows}, indent=1))
    return 0


def count_pins() -> dict:
    """Count and time every mailbox page-locking from now on (host_pinning.pin, wrapped in place)."""
    pins, pin = {"n": 0, "s": 0.0}, host_pinning.pin

    def counted(address: int, size: int) -> bool:
        started = time.perf_counter()
        try:
            return pin(address, size)
        finally:
            pins["n"] += 1
            pins["s"] += time.perf_counter() - started

    host_pinning.pin = counted
    return pins


if __name__ == "__main__":
    raise SystemExit(main())
