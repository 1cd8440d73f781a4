"""Triton dual GEMM: C = act(A @ Wg^T [+ bg]) * (A @ Wu^T [+ bu]) in one kernel (SwiGLU, GeGLU).

Eager runs two GEMMs, writes both M x N results, then reads them back for the activation and the
product. This kernel loads each A tile once, multiplies it by the gate and the up weight tiles into two
fp32 accumulators, and stores only act(gate) * up: A is read once instead of twice and the two
intermediates never reach memory. Two accumulators double the registers a tile holds and the B tiles
double the shared memory per pipeline stage, so the tiles are smaller than `triton_gemm`'s and
`resources()` counts both weight tiles.

Family `triton_gemm_dual` (fusion). Reads `facts["gemm_dual"]` (see `DualGemmFacts`); the tile
scheduling and the dot come from triton_gemm.py. Imports neither torch nor triton. Budget: 270 lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, jit_kernel, launch, module_source
from kernelarc.agents.builtin.moves.triton_common import (
    EpilogueStep,
    LOW_PRECISION,
    SMEM_PER_BLOCK_BYTES,
    TemplateFacts,
    claim,
    dedupe,
    describe_params,
    elem_bytes,
    launch_keywords,
    next_power_of_2,
    require_leaf,
    require_whole_forward,
)
from kernelarc.agents.builtin.moves.triton_gemm import TILE_COORDS, TILE_OF_PROGRAM, dot_source

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages), most promising first for fp16/bf16. Both
# accumulators together hold at most 128 fp32 registers per thread (2 * BLOCK_M * BLOCK_N / (32 * warps)),
# so no 256-wide tiles. fp32 operands take the points whose stages fit in shared memory (`resources`).
TILES = [
    (128, 128, 64, 8, 8, 3), (128, 128, 64, 8, 8, 4), (128, 64, 64, 8, 4, 4), (64, 128, 64, 8, 4, 4),
    (128, 128, 32, 8, 8, 4), (64, 128, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4), (64, 64, 64, 8, 4, 3),
    (64, 64, 32, 8, 4, 3), (32, 64, 32, 8, 2, 3),
]


@dataclass(frozen=True)
class DualWeight:
    """One of the two GEMMs: its weight, layout and bias."""

    w: str
    """Source expression of the weight: an input name or a `self.<param>` accessor."""
    layout: str
    """`nk`: stored `[N, K]` and used transposed (nn.Linear's weight); `kn`: stored `[K, N]`."""
    bias: str | None
    """A length-N vector added before the activation (gate) or the product (up), or None."""

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> DualWeight:
        """From the fact's `gate` or `up` entry."""
        return cls(w=raw["b"], layout="nk" if raw["trans_b"] else "kn", bias=raw.get("bias"))

    def formula(self, w: str, b: str) -> str:
        """`A @ Wg^T + bg` for this weight named `w` and its bias named `b`."""
        product = f"A @ {w}^T" if self.layout == "nk" else f"A @ {w}"
        return f"{product} + {b}" if self.bias else product


@dataclass(frozen=True)
class DualGemmFacts:
    """`facts["gemm_dual"]`: the whole forward is act(A @ Wg + bg) * (A @ Wu + bu) over one A."""

    M: int
    """Rows of A once its leading dims are flattened."""
    N: int
    """Columns of both products and of C."""
    K: int
    """The reduction dim."""
    a: str
    """Source expression of A `[..., K]`: an input name."""
    gate: DualWeight
    """The GEMM whose result goes through the activation."""
    up: DualWeight
    """The GEMM whose result multiplies it."""
    activation: EpilogueStep
    """Applied to the gate product (fp32) before the multiply."""
    dtype: str
    """Dtype of A, the weights and C."""

    @classmethod
    def parse(cls, raw: dict[str, Any], analysis: TaskAnalysis) -> DualGemmFacts:
        """From `facts["gemm_dual"]` (agents/builtin/patterns.py); ValueError if this template cannot serve it."""
        require_whole_forward(analysis, raw["out"])
        activation = EpilogueStep.parse(dict(raw["activation"]))
        gate, up = DualWeight.parse(raw["gate"]), DualWeight.parse(raw["up"])
        for ref in (raw["a"], gate.w, up.w, gate.bias, up.bias):
            if ref is not None:
                require_leaf(analysis, ref)
        return cls(M=int(raw["M"]), N=int(raw["N"]), K=int(raw["K"]), a=raw["a"], gate=gate, up=up,
                   activation=activation, dtype=raw["dtype"])

    @property
    def formula(self) -> str:
        """`silu(A @ Wg^T) * (A @ Wu^T)`."""
        return f"{self.activation.formula(self.gate.formula('Wg', 'bg'))} * ({self.up.formula('Wu', 'bu')})"

    @property
    def biases(self) -> list[tuple[str, str, str]]:
        """(kernel argument stem, accumulator it is added to, source expression) of each bias, gate first."""
        return [(stem, acc, w.bias) for stem, acc, w in (("bias_g", "acc_gate", self.gate),
                                                          ("bias_u", "acc_up", self.up)) if w.bias]


def _mainloop(facts: DualGemmFacts, params: dict[str, Any]) -> str:
    """Lines that leave A[pid_m tile] @ Wg and A[pid_m tile] @ Wu, tile pid_n, in two fp32 accumulators."""
    return "\n".join([
        "offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)",
        "offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)",
        "offs_k = tl.arange(0, BLOCK_K)",
        "a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :].to(tl.int64) * stride_ak",
        "wg_ptrs = wg_ptr + offs_k[:, None].to(tl.int64) * stride_wgk + offs_bn[None, :] * stride_wgn",
        "wu_ptrs = wu_ptr + offs_k[:, None].to(tl.int64) * stride_wuk + offs_bn[None, :] * stride_wun",
        "acc_gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
        "acc_up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
        "for k in range(0, tl.cdiv(K, BLOCK_K)):",
        "    k_remaining = K - k * BLOCK_K",
        "    a_mask = (offs_am[:, None] < M) & (offs_k[None, :] < k_remaining)",
        "    b_mask = (offs_k[:, None] < k_remaining) & (offs_bn[None, :] < N)",
        "    a = tl.load(a_ptrs, mask=a_mask, other=0.0)  # loaded once, used by both products",
        "    wg = tl.load(wg_ptrs, mask=b_mask, other=0.0)",
        "    wu = tl.load(wu_ptrs, mask=b_mask, other=0.0)",
        "    " + dot_source(facts.dtype, params, "wg", "acc_gate"),
        "    " + dot_source(facts.dtype, params, "wu", "acc_up"),
        "    a_ptrs += BLOCK_K * stride_ak",
        "    wg_ptrs += BLOCK_K * stride_wgk",
        "    wu_ptrs += BLOCK_K * stride_wuk",
    ])


def _epilogue(facts: DualGemmFacts) -> str:
    """Lines that add the biases, apply the activation to the gate, multiply and store tile (pid_m, pid_n)."""
    lines = [
        "offs_cm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)",
        "offs_cn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)",
        "c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)",
    ]
    for stem, acc, _ in facts.biases:
        lines += [f"{stem} = tl.load({stem}_ptr + offs_cn, mask=offs_cn < N, other=0.0).to(tl.float32)",
                  f"{acc} = {acc} + {stem}[None, :]"]
    lines += [
        f"acc_gate = {facts.activation.expression('acc_gate')}  # {facts.activation.describe()}",
        "c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn",
        "tl.store(c_ptrs, (acc_gate * acc_up).to(c_ptr.dtype.element_ty), mask=c_mask)",
    ]
    return "\n".join(lines)


def kernel_source(facts: DualGemmFacts, params: dict[str, Any]) -> str:
    """The `@triton.jit` kernel: one program per output tile, grouped launch order."""
    args = ["c_ptr, stride_cm, stride_cn,", "a_ptr, stride_am, stride_ak,", "wg_ptr, stride_wgk, stride_wgn,",
            "wu_ptr, stride_wuk, stride_wun,", *[f"{stem}_ptr," for stem, _, _ in facts.biases], "M, N, K,",
            "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,"]
    doc = f"C = {facts.formula} tile by tile; each A tile feeds both fp32 accumulators."
    return jit_kernel("_gemm_dual_kernel", args, doc,
                      f"{TILE_OF_PROGRAM}\n{_mainloop(facts, params)}\n{_epilogue(facts)}")


def _weight_view(name: str, layout: str) -> tuple[str, str, str]:
    """(its N, its K, its strides as (k, n)) for a weight argument in `layout`."""
    if layout == "nk":
        return f"{name}.shape[0]", f"{name}.shape[1]", f"{name}.stride(1), {name}.stride(0)"
    return f"{name}.shape[1]", f"{name}.shape[0]", f"{name}.stride(0), {name}.stride(1)"


def wrapper_source(facts: DualGemmFacts, params: dict[str, Any]) -> str:
    """The host function `gemm_dual(a, w_gate, w_up, <biases>)`: check, allocate, launch."""
    (gn, gk, g_strides), (un, uk, u_strides) = (_weight_view("w_gate", facts.gate.layout),
                                                _weight_view("w_up", facts.up.layout))
    stems = [stem for stem, _, _ in facts.biases]
    lines = [
        "a2 = a.reshape(-1, a.shape[-1])",
        "M, K = a2.shape",
        f"N = {gn}",
        f"if ({gk}, {un}, {uk}) != (K, N, K):",
        '    raise ValueError(f"gemm_dual: A is {tuple(a.shape)}, gate weight {tuple(w_gate.shape)} '
        f'({facts.gate.layout}), up weight {{tuple(w_up.shape)}} ({facts.up.layout})")',
        "c = torch.empty((M, N), device=a.device, dtype=a.dtype)",
        launch("_gemm_dual_kernel",
               f"(triton.cdiv(M, {params['BLOCK_M']}) * triton.cdiv(N, {params['BLOCK_N']}),)",
               ["c, c.stride(0), c.stride(1)", "a2, a2.stride(0), a2.stride(1)", f"w_gate, {g_strides}",
                f"w_up, {u_strides}", *stems, "M, N, K",
                launch_keywords({k: v for k, v in params.items() if k != "precision"})]),
        "return c.reshape(*a.shape[:-1], N)",
    ]
    doc = f'"""C = {facts.formula} for A [..., K]; one launch, A read once."""'
    signature = ", ".join(["a", "w_gate", "w_up", *stems])
    return f"def gemm_dual({signature}):\n    {doc}\n" + indent("\n".join(lines)) + "\n"


@dataclass(frozen=True)
class TritonGemmDualFamily(TemplateFacts):
    """Gate and up GEMMs of one A in one Triton kernel, act(gate) * up fused before the store."""

    name: str = "triton_gemm_dual"
    strategy: str = "fusion"
    language: str = "triton"

    FACT_KEY: ClassVar[str] = "gemm_dual"
    PARSE: ClassVar = DualGemmFacts.parse

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        facts, _ = self.facts(analysis)
        if facts is None:
            return []
        cap_m, cap_n, cap_k = (max(16, next_power_of_2(d)) for d in (facts.M, facts.N, facts.K))
        points = [dict(BLOCK_M=min(m, cap_m), BLOCK_N=min(n, cap_n), BLOCK_K=min(k, cap_k), GROUP_M=g,
                       num_warps=w, num_stages=st) for m, n, k, g, w, st in TILES]
        points = [p for p in points if self.resources(p, analysis) <= SMEM_PER_BLOCK_BYTES]
        if facts.dtype not in LOW_PRECISION:
            points = [dict(p, precision="ieee") for p in points] + [dict(points[0], precision="tf32")]
        return dedupe(points)

    def resources(self, params: dict[str, Any], analysis: TaskAnalysis | None = None) -> int:
        """Shared memory bytes one block needs: the A tile and both weight tiles of every pipeline stage.

        Compare with `triton_common.SMEM_PER_BLOCK_BYTES` (H200: 227 KiB) before trying a point.
        Without the analysis the element size is taken as 4 bytes, an upper bound.
        """
        facts = self.facts(analysis)[0] if analysis is not None else None
        size = elem_bytes(facts.dtype) if facts else 4
        tile = params["BLOCK_M"] * params["BLOCK_K"] + 2 * params["BLOCK_K"] * params["BLOCK_N"]
        return tile * size * params["num_stages"]

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        facts, reason = self.facts(analysis)
        if facts is None:
            raise ValueError(f"{self.name} cannot render: {reason}")
        body = "\n\n".join([TILE_COORDS, kernel_source(facts, params), wrapper_source(facts, params)])
        elem = elem_bytes(facts.dtype)
        moved = (facts.M * facts.K + 2 * facts.K * facts.N + facts.M * facts.N + len(facts.biases) * facts.N) * elem
        doc = (f"Triton dual GEMM: C = {facts.formula} in one kernel.\n\n"
               f"M={facts.M} N={facts.N} K={facts.K} {facts.dtype}: {4 * facts.M * facts.N * facts.K} FLOPs, "
               f"{moved} bytes at least;\neager also writes both M x N products and reads them back.\n"
               f"Point: {describe_params(params)}. Generated by kernelarc ({self.name}).")
        call = f"gemm_dual({', '.join([facts.a, facts.gate.w, facts.up.w, *(ref for _, _, ref in facts.biases)])})"
        source = module_source(analysis, doc=doc, body=body, call=call)
        text = (f"Triton dual GEMM {params['BLOCK_M']}x{params['BLOCK_N']}x{params['BLOCK_K']} "
                f"w{params['num_warps']} s{params['num_stages']}: A read once, {facts.activation.describe()}(gate)"
                " * up fused, no gate/up round trip")
        return Move(family=self.name, params=dict(params), source=source, claim=claim(text))


FAMILY = register_family(TritonGemmDualFamily())
"""The registered dual GEMM family."""

__all__ = ["FAMILY", "DualGemmFacts", "DualWeight", "TILES", "TritonGemmDualFamily", "kernel_source",
           "wrapper_source"]
