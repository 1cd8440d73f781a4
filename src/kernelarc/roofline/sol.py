"""Speed of light of a workload and the SOL score. Imports without torch.

T_SOL = max(FLOPs / matmul rate, minimal bytes / copy bandwidth). The score is SOL-ExecBench's:
S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)), 0.5 at the baseline, 1.0 at the hardware limit; if the
baseline is already at or under T_SOL, S is 1 when the kernel is too, else 0.
"""

from __future__ import annotations

from kernelarc.roofline.ceilings import DeviceCeilings
from kernelarc.task.model import Workload


def sol_ms(workload: Workload, ceilings: DeviceCeilings) -> float | None:
    """Speed-of-light time of one workload in ms, None when neither FLOPs nor bytes are known."""
    terms = []
    if workload.flops:
        terms.append(workload.flops / (ceilings.bf16_tflops * 1e12) * 1e3)
    if workload.min_bytes:
        terms.append(workload.min_bytes / (ceilings.copy_gbps * 1e9) * 1e3)
    return max(terms) if terms else None


def sol_score(kernel_ms: float, baseline_ms: float, sol: float) -> float:
    """SOL-ExecBench's score of a kernel time against a baseline time and the SOL time, at most 1.0.

    The official formula, 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)), assumes no kernel is faster than its analytic
    SOL time. Ours is a measured ceiling (a copy, a matmul), which a kernel can meet within noise: below it the
    formula grows without bound as the baseline nears it too (session 35, H100: softmax_fp32's winner at 0.1793 ms
    against a SOL of 0.1796 ms and a baseline just above it scored 2.0). A kernel at or under the SOL
    time scores 1.0, the formula's own value at T_SOL; everywhere else this is the official score."""
    if kernel_ms <= sol:
        return 1.0
    if baseline_ms <= sol:
        return 0.0
    return 1.0 / (1.0 + (kernel_ms - sol) / (baseline_ms - sol))


__all__ = ["sol_ms", "sol_score"]
