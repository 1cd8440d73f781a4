"""GEMM nodes of a lowered graph (`aten.mm`, `aten.bmm`, `aten.addmm`) as one generated Triton kernel each.

One template serves them all: a batch of tiled products read through the operands' own strides (a
transposed weight is read as it lies, never copied), accumulated in fp32, with addmm's
`beta * bias + alpha * (a @ b)` applied before the one store. fp32 operands multiply in full fp32
(`input_precision="ieee"`): PyTorch's default, where tf32 would miss KernelBench's 1e-4 tolerance;
fp16 and bf16 operands use the tensor cores. Used by triton_lowered_regions. Imports neither torch nor
triton. Budget: 120 lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves.base import OpNode, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, jit_kernel, launch, literal

# target -> (bias, a, b) argument positions (bias None: no bias)
GEMMS: dict[str, tuple[int | None, int, int]] = {"aten.mm": (None, 0, 1), "aten.bmm": (None, 0, 1),
                                                  "aten.addmm": (0, 1, 2)}
GEMM_DTYPES = frozenset({"float32", "float16", "bfloat16"})


@dataclass(frozen=True)
class Gemm:
    node: OpNode
    a: str
    b: str
    bias: str | None
    alpha: float
    beta: float

    @property
    def kernel(self) -> str:
        return f"_gemm_{self.node.name}"

    @property
    def call(self) -> str:
        bias = self.bias or "None"
        return f"{self.kernel}_call({self.a}, {self.b}, {bias})"


def find_gemms(analysis: TaskAnalysis) -> list[Gemm]:
    """The GEMM nodes whose operands are tensors of one supported dtype."""
    values = analysis.typed_refs()
    found = []
    for node in analysis.nodes:
        places = GEMMS.get(node.target)
        if places is None or node.dtype not in GEMM_DTYPES:
            continue
        bias_at, a_at, b_at = places
        refs = [node.args[i] if len(node.args) > i else None for i in (a_at, b_at)]
        if not all(isinstance(r, str) and values.get(r, (None, None))[1] == node.dtype for r in refs):
            continue
        bias = node.args[bias_at] if bias_at is not None else None
        if bias is not None and not (isinstance(bias, str) and values.get(bias, (None, None))[0] is not None):
            continue
        found.append(Gemm(node, refs[0], refs[1], bias, float(node.kwargs.get("alpha", 1)),
                          float(node.kwargs.get("beta", 1))))
    return found


def kernel_source(g: Gemm) -> str:
    body = """pid_m, pid_n = tl.program_id(0), tl.program_id(1)
batch = tl.program_id(2).to(tl.int64)
rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
rk = tl.arange(0, BLOCK_K)
acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
for k in range(0, K, BLOCK_K):
    ka = k + rk
    a = tl.load(a_ptr + batch * s_ab + rm[:, None] * s_am + ka[None, :] * s_ak,
                mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
    b = tl.load(b_ptr + batch * s_bb + ka[:, None] * s_bk + rn[None, :] * s_bn,
                mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
    if IEEE:
        acc += tl.dot(a, b, input_precision="ieee")
    else:
        acc += tl.dot(a, b)
acc = acc * alpha
mask = (rm[:, None] < M) & (rn[None, :] < N)
if HAS_BIAS:
    bias = tl.load(bias_ptr + batch * s_xb + rm[:, None] * s_xm + rn[None, :] * s_xn, mask=mask, other=0.0)
    acc += beta * bias.to(tl.float32)
tl.store(c_ptr + batch * s_cb + rm[:, None] * s_cm + rn[None, :] * s_cn, acc.to(c_ptr.dtype.element_ty), mask=mask)"""
    args = ["a_ptr, b_ptr, bias_ptr, c_ptr,", "M, N, K,", "s_ab, s_am, s_ak, s_bb, s_bk, s_bn,",
            "s_xb, s_xm, s_xn, s_cb, s_cm, s_cn,", "alpha, beta,",
            "HAS_BIAS: tl.constexpr, IEEE: tl.constexpr,",
            "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,"]
    return jit_kernel(g.kernel, args, f"{g.node.target} of the forward: tiles through the operands' strides.", body)


def wrapper_source(g: Gemm, params: dict[str, Any]) -> str:
    """Host function: 2-D operands as a batch of one, the bias broadcast to the output through strides."""
    bm, bn, bk = params["gemm_m"], params["gemm_n"], params["gemm_k"]
    lines = ["batched = a.dim() == 3", "a3, b3 = (a, b) if batched else (a.unsqueeze(0), b.unsqueeze(0))",
             "batch, M, K = a3.shape", "N = b3.shape[-1]",
             f"c = torch.empty(batch, M, N, device=a.device, dtype=torch.{g.node.dtype})",
             "x = c if bias is None else bias.expand(c.shape[1:]).unsqueeze(0).expand(c.shape)",
             f"grid = (triton.cdiv(M, {bm}), triton.cdiv(N, {bn}), batch)",
             "if c.numel():",
             indent(launch(g.kernel, "grid", [
                 "a3, b3, x, c", "M, N, K", "*a3.stride(), *b3.stride()", "*x.stride(), *c.stride()",
                 f"{literal(g.alpha)}, {literal(g.beta)}",
                 f"HAS_BIAS=bias is not None, IEEE=a.dtype == torch.float32, BLOCK_M={bm}, BLOCK_N={bn}, "
                 f"BLOCK_K={bk}, num_warps={params['num_warps']}"])),
             "return c if batched else c[0]"]
    return (f"def {g.kernel}_call(a, b, bias):\n    \"\"\"{g.node.target} as one kernel launch.\"\"\"\n"
            f"{indent(chr(10).join(lines))}\n")


__all__ = ["GEMMS", "Gemm", "find_gemms", "kernel_source", "wrapper_source"]
