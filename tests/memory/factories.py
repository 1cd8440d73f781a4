"""Small builders for guard evaluations and campaign stores used across the memory tests."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kernelarc.guard.types import Evaluation, KernelShare, Status, TimingMethod, Verdict, WorkloadResult
from kernelarc.memory import CampaignMeta, RetentionPolicy, Store

KERNEL_TYPE = "gemm"


def keep(speedup: float = 1.5, latency_ms: float = 1.0, reason: str = "1.50x faster than the incumbent") -> Evaluation:
    """A KEEP as the guard would return it."""
    return _timed(Verdict.KEEP, speedup, latency_ms, reason)


def accept(speedup: float = 1.01, latency_ms: float = 1.0) -> Evaluation:
    """An ACCEPT: correct, within the near-best window."""
    return _timed(Verdict.ACCEPT, speedup, latency_ms, "within 2% of the incumbent")


def revert(speedup: float = 0.7, latency_ms: float = 2.0, reason: str = "0.70x: slower than the incumbent") -> Evaluation:
    """A REVERT: correct but slower."""
    return _timed(Verdict.REVERT, speedup, latency_ms, reason)


def reject(reason: str = "INCORRECT_NUMERICAL: 3 of 4096 elements out of tolerance") -> Evaluation:
    """A REJECT: wrong output, no timing."""
    return Evaluation(verdict=Verdict.REJECT, status=Status.INCORRECT_NUMERICAL, reason=reason, correct=False,
                      device="cpu")


def _timed(verdict: Verdict, speedup: float, latency_ms: float, reason: str) -> Evaluation:
    return Evaluation(verdict=verdict, status=Status.PASSED, reason=reason, correct=True, latency_ms=latency_ms,
                      incumbent_ms=latency_ms * speedup, speedup=speedup, timing=TimingMethod.CPU_WALL, device="cpu")


def profiled(device_ms: float, wall_ms: float, name: str = "triton_red_fused_mean_pow_0",
             incumbent_name: str | None = None) -> Evaluation:
    """A KEEP on the card whose device pass profiled the candidate (and the incumbent, when named)."""
    kernels = (KernelShare(name=name, ms_per_call=0.03, launches_per_call=1.0, share=0.75),
               KernelShare(name="void at::native::elementwise_kernel", ms_per_call=0.01, launches_per_call=2.0, share=0.25))
    theirs = (KernelShare(name=incumbent_name, ms_per_call=0.5, launches_per_call=7.0, share=1.0),) if incumbent_name else ()
    workload = WorkloadResult(uuid="w0", status=Status.PASSED, latency_ms=wall_ms, device_ms=device_ms, wall_ms=wall_ms,
                              incumbent_device_ms=0.5, incumbent_wall_ms=0.6, kernels=kernels,
                              incumbent_kernels=theirs, sol_ms=0.02)
    return Evaluation(verdict=Verdict.KEEP, status=Status.PASSED, reason="faster", correct=True, latency_ms=wall_ms,
                      incumbent_ms=0.6, speedup=0.6 / wall_ms, timing=TimingMethod.CUDA_EVENTS, device="cuda:0",
                      workloads=(workload,))


def source(n: int) -> str:
    """A distinct candidate source for each n."""
    return f"import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x * {n}\n"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def open_campaign(path: Path, retention: RetentionPolicy = RetentionPolicy(), agents: tuple[str, ...] = ("a0",),
                  strategy: str = "tiling") -> Store:
    """A store with its campaign meta and agents registered (all on `strategy`, builtin backend)."""
    store = Store(path)
    store.put_meta(CampaignMeta(task_name="matmul", kernel_type=KERNEL_TYPE, seed=0, retention=retention))
    for agent_id in agents:
        store.register_agent(agent_id, strategy, "builtin")
    return store


def propose(store: Store, n: int, agent_id: str | None = "a0", strategy: str = "tiling",
            claim: str = "bigger tiles") -> int:
    """Add candidate `source(n)`; return its id."""
    text = source(n)
    candidate_id, _ = store.add_candidate(hash=digest(text), source=text, agent_id=agent_id, strategy=strategy,
                                          claim=claim, language="pytorch", kind="module")
    return candidate_id
