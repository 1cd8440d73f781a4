"""Does a host-bound call's drift belong to the moment or to the CPU a process runs on (issue 15)?

    python bench/gpu/side_pair_probe.py OUT.json PROBLEM [--seconds S] [--pairs 17] [--rounds 2]

Two worker processes load the same KernelBench problem and time its eager call the way the guard's wall
clock does (host_gap_probe.block: L2 flush, synchronize, CUDA events around one call), in blocks of 50,
taking turns ABBA as the guard's two sides do, the waiting one blocked on its pipe. Conditions, in turn
and then again: `unpinned`; `one core` (both workers' timing threads on the same CPU); `two cores` (each on
its own); last, `one core, after a profiler session` (each worker first runs 10 calls under torch's
profiler with CUDA activity, as the guard's device pass does in a side before its wall pass). Both run the same code, so every true speedup is 1.0. Per condition: the ratio of the two
workers' medians and the median and spread of the per-pair ratios, and, over windows of `--pairs` pairs
(what the guard times for a 60 us call), the share of KEEP / ACCEPT / REVERT by the medians' rule and by
the paired rule (guard/verdict.py `decide`). If drift is the moment's, pairs cancel it anywhere; if it is
each CPU's, only `one core` pairs cancel it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
BLOCK_CALLS = 50


def worker(problem_path: str) -> int:
    """Answer each line from the parent: `pin CPU` (or `pin all`), `block` (50 timed calls), `exit`."""
    import torch
    from host_gap_probe import block

    from kernelarc.task.execute import load_module

    problem = load_module(Path(problem_path).read_text(), problem_path, "problem")
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    everyone = os.sched_getaffinity(0)

    def call():
        with torch.no_grad():
            return model(*inputs)

    block(call, flush, BLOCK_CALLS)  # first-use costs
    print("ready", flush=True)
    for line in sys.stdin:
        word, *rest = line.split()
        if word == "pin":
            os.sched_setaffinity(0, everyone if rest[0] == "all" else {int(rest[0])})
            print("ok", flush=True)
        elif word == "block":
            print(json.dumps(block(call, flush, BLOCK_CALLS)), flush=True)
        elif word == "profile":  # what the guard's device pass does in a side before its wall pass
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
                block(call, flush, 10)
            print("ok", flush=True)
        else:
            return 0
    return 0


class Worker:
    def __init__(self, problem: str):
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", problem], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def ask(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def close(self) -> None:
        self.ask("exit")
        self.proc.wait()


def run_condition(a: Worker, b: Worker, seconds: float) -> tuple[list[list[float]], list[list[float]]]:
    """ABBA blocks for `seconds`: (a's blocks, b's blocks), a first in even pairs (session._pairs)."""
    blocks: dict[Worker, list[list[float]]] = {a: [], b: []}
    stop, pair = time.monotonic() + seconds, 0
    while time.monotonic() < stop:
        for w in (a, b) if pair % 2 == 0 else (b, a):
            blocks[w].append([s / 1000.0 for s in json.loads(w.ask("block"))])
        pair += 1
    return blocks[a], blocks[b]


def summarize(a_blocks: list[list[float]], b_blocks: list[list[float]], pairs: int) -> dict:
    from host_drift_replay import workload

    from kernelarc.guard.settings import GuardSettings
    from kernelarc.guard.verdict import decide

    med = statistics.median
    a_med, b_med = [med(x) for x in a_blocks], [med(x) for x in b_blocks]
    ratios = sorted(x / y for x, y in zip(a_med, b_med))
    verdicts = {"medians": Counter(), "paired": Counter()}
    for start in range(0, len(a_blocks) - pairs + 1, pairs):
        inc = [s for blk in a_blocks[start:start + pairs] for s in blk]
        cand = [s for blk in b_blocks[start:start + pairs] for s in blk]
        for rule, paired in (("medians", False), ("paired", True)):
            w = workload(inc, cand, paired, a_med[start:start + pairs], b_med[start:start + pairs])
            verdicts[rule][decide([w], GuardSettings()).verdict.value] += 1
    return {"pairs": len(ratios), "a_median_us": round(1000 * med([s for x in a_blocks for s in x]), 2),
            "b_median_us": round(1000 * med([s for x in b_blocks for s in x]), 2),
            "pair_ratio_p10_p50_p90": [round(ratios[int(q * (len(ratios) - 1))], 3) for q in (0.1, 0.5, 0.9)],
            "block_medians_us": [[round(1000 * x, 1), round(1000 * y, 1)] for x, y in zip(a_med, b_med)],
            "windows": {rule: dict(c) for rule, c in verdicts.items()}}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        return worker(argv[1])
    seconds = float(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else 15.0
    pairs = int(argv[argv.index("--pairs") + 1]) if "--pairs" in argv else 17
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 2
    out, problem = Path(argv[0]), argv[1]
    cores = sorted(os.sched_getaffinity(0))
    a, b = Worker(problem), Worker(problem)
    report: dict = {"problem": Path(problem).name, "block_calls": BLOCK_CALLS, "window_pairs": pairs, "runs": []}
    placements = {"unpinned": ("all", "all"), "one core": (str(cores[-1]),) * 2,
                  "two cores": (str(cores[-1]), str(cores[-2]))}
    profiled = "one core, after a profiler session"
    plan = [(r, name) for r in range(rounds) for name in placements] + [(rounds, profiled)]
    try:
        for round_, name in plan:
            if name == profiled:
                a.ask("profile")
                b.ask("profile")
            pa, pb = placements.get(name, placements["one core"])
            a.ask(f"pin {pa}")
            b.ask(f"pin {pb}")
            row = {"condition": name, "round": round_, **summarize(*run_condition(a, b, seconds), pairs)}
            report["runs"].append(row)
            print(name, round_, row["a_median_us"], row["b_median_us"], row["pair_ratio_p10_p50_p90"],
                  row["windows"], flush=True)
            out.write_text(json.dumps(report, indent=1))
    finally:
        a.close()
        b.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
