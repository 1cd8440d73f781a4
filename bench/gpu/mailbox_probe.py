"""How fast tensors cross between the card and a side's mailbox, pageable or page-locked (issue 15, fast
judging; guard/host_pinning.py).

    python bench/gpu/mailbox_probe.py OUT.json [--mib 16,256] [--repeat 5]

Per size and mode: the median seconds of `Mailbox.write` of one CUDA tensor (device to mailbox, what a
side does with each checked call's outputs) and of `Mailbox.read` back onto the card (what the reference
side does before comparing), and the GB/s they make.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from kernelarc.guard import wire


def _seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        started = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--mib", default="16,256")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for mib in (int(m) for m in args.mib.split(",")):
        x = torch.randn(mib << 18, device="cuda")  # mib MiB of fp32
        for pinned in (False, True):
            box = wire.Mailbox(os.memfd_create("probe-mailbox"), pinned=pinned)
            (placed,) = box.write([x])  # maps (and pins) once, as a side's first request does
            write_s = _seconds(lambda: box.write([x]), args.repeat)
            read_s = _seconds(lambda: box.read(placed, "cuda"), args.repeat)
            assert torch.equal(box.read(placed, "cuda"), x)
            row = {"mib": mib, "pinned": box.is_pinned, "write_s": write_s, "read_s": read_s,
                   "write_gbps": (mib << 20) / write_s / 1e9, "read_gbps": (mib << 20) / read_s / 1e9}
            rows.append(row)
            print(row, flush=True)
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
