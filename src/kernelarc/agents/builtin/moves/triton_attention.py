"""Triton attention template: a FlashAttention-2 style forward, out = softmax(q k^T * scale) v, causal
or not, with an optional residual add fused before the store.

One program per (BLOCK_M queries, batch x head); keys and values stream through in BLOCK_N tiles with
an online softmax (running max and sum in fp32, exp2 with log2(e) folded into the scale), so the
S x S score matrix never reaches memory. Causal programs stop at their diagonal. fp32 inputs use
IEEE products so results meet 1e-4 tolerances. Family `triton_attention`, strategy tensor_cores.
Reads `facts["attention"]` (agents/builtin/patterns.py). Imports neither torch nor triton. Budget: 300 lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, literal, module_source
from kernelarc.agents.builtin.moves.triton_common import (
    LOW_PRECISION,
    claim,
    dedupe,
    describe_params,
    elem_bytes,
    launch_keywords,
    next_power_of_2,
    read_facts,
    require_leaf,
)

HEAD_DIMS = (16, 32, 64, 128, 256)
"""Head dims the template takes (a power of two, at least tl.dot's 16)."""
# (BLOCK_M, BLOCK_N, num_warps, num_stages), most promising first.
TILES_LOW_PRECISION = [(128, 64, 8, 3), (64, 64, 4, 3), (128, 128, 8, 2), (128, 32, 4, 3), (64, 32, 4, 2),
                       (64, 128, 4, 2)]
TILES_FP32 = [(64, 32, 4, 2), (32, 32, 4, 2), (64, 64, 4, 2), (32, 64, 4, 2)]


@dataclass(frozen=True)
class AttentionFacts:
    """`facts["attention"]` as this template uses it: the whole forward is attention (+ residual)."""

    q: str
    """Queries [batch, heads, seq_q, head_dim]."""
    k: str
    """Keys [batch, heads, seq_k, head_dim]."""
    v: str
    """Values [batch, heads, seq_k, head_dim]."""
    scale: float | None
    """Multiplier of q k^T; None means 1/sqrt(head_dim), computed at run time."""
    causal: bool
    """Query i sees keys j <= i (SDPA's is_causal: aligned top-left)."""
    residual: str | None
    """A tensor of the output's shape added to the result (fused into the store)."""
    shape: tuple[int, int, int, int]
    """q's shape on the first workload."""
    seq_k: int
    """Keys per head on the first workload."""
    dtype: str
    """Dtype of q, k, v and the output."""

    @classmethod
    def parse(cls, raw: dict[str, Any], analysis: TaskAnalysis) -> AttentionFacts:
        """From `facts["attention"]`; ValueError if this template cannot serve it."""
        if raw.get("attn_mask") is not None:
            raise ValueError("an explicit attention mask is not templated")
        shape = tuple(raw.get("shape") or ())
        k_shape, v_shape = (analysis.values.get(raw[n], (None, None))[0] for n in ("k", "v"))
        if len(shape) != 4 or k_shape is None or len(k_shape) != 4 or v_shape != k_shape:
            raise ValueError(f"q {shape}, k {k_shape}, v {v_shape}: [batch, heads, seq, head_dim] with k and v "
                             "alike is templated")
        if k_shape[:2] != shape[:2] or k_shape[3] != shape[3]:
            raise ValueError(f"q {shape} and k {k_shape} differ in batch, heads (GQA) or head dim")
        if shape[3] not in HEAD_DIMS:
            raise ValueError(f"head dim {shape[3]} is not one of {HEAD_DIMS}")
        residual = _residual(analysis, raw["out"], shape)
        for ref in (raw["q"], raw["k"], raw["v"], residual):
            if ref is not None:
                require_leaf(analysis, ref)
        scale = raw.get("scale")
        if scale is not None and not isinstance(scale, (int, float)):
            raise ValueError(f"scale {scale!r} is not a constant")
        return cls(q=raw["q"], k=raw["k"], v=raw["v"], scale=None if scale is None else float(scale),
                   causal=bool(raw["causal"]), residual=residual, shape=shape, seq_k=k_shape[2], dtype=raw["dtype"])


def _residual(analysis: TaskAnalysis, out: str, shape: tuple[int, ...]) -> str | None:
    """The residual when the forward returns attention + residual; None when it returns attention."""
    if analysis.returns_tuple or len(analysis.output_names) != 1:
        raise ValueError(f"the forward returns {len(analysis.output_names)} outputs; the template returns one")
    final = analysis.output_names[0]
    if final == out:
        return None
    node = next((n for n in analysis.nodes if n.name == final), None)
    if node is None or node.target != "aten.add.Tensor" or out not in node.args or len(node.args) != 2 or node.kwargs:
        raise ValueError(f"the forward returns {final}, not the attention result or attention + residual")
    residual = node.args[1] if node.args[0] == out else node.args[0]
    if analysis.values.get(residual, (None, None))[0] != tuple(shape):
        raise ValueError(f"{residual} added to the attention result is not of its shape {tuple(shape)}")
    return residual


def kernel_source(facts: AttentionFacts, params: dict[str, Any]) -> str:
    """`_attention_kernel`, specialized at render time for causality, residual and dtype."""
    precision = "" if facts.dtype in LOW_PRECISION else f', input_precision="{params.get("precision", "ieee")}"'
    residual_args = "residual_ptr, stride_rb, stride_rh, stride_rm, stride_rd,\n" if facts.residual else ""
    args = ("out_ptr, stride_ob, stride_oh, stride_om, stride_od,\n"
            "q_ptr, stride_qb, stride_qh, stride_qm, stride_qd,\n"
            "k_ptr, stride_kb, stride_kh, stride_kn, stride_kd,\n"
            "v_ptr, stride_vb, stride_vh, stride_vn, stride_vd,\n"
            f"{residual_args}n_heads, seq_q, seq_k, qk_scale,\n"
            "HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,")
    lines = [
        "pid_m = tl.program_id(0)",
        "pid_bh = tl.program_id(1)",
        "batch = (pid_bh // n_heads).to(tl.int64)",
        "head = (pid_bh % n_heads).to(tl.int64)",
        "offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
        "offs_d = tl.arange(0, HEAD_DIM)",
        "m_mask = offs_m < seq_q",
        "q_ptrs = q_ptr + batch * stride_qb + head * stride_qh + offs_m[:, None].to(tl.int64) * stride_qm "
        "+ offs_d[None, :] * stride_qd",
        "q = tl.load(q_ptrs, mask=m_mask[:, None], other=0.0)",
        "k_base = k_ptr + batch * stride_kb + head * stride_kh",
        "v_base = v_ptr + batch * stride_vb + head * stride_vh",
        "qk_scale = qk_scale * 1.4426950408889634  # log2(e): exp2 below computes exp",
        'm_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)  # running row max',
        "l_i = tl.zeros([BLOCK_M], dtype=tl.float32)  # running row sum",
        "acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)",
        ("n_end = tl.minimum(seq_k, (pid_m + 1) * BLOCK_M)  # causal: no key tile past the diagonal"
         if facts.causal else "n_end = seq_k"),
        "for n in range(0, tl.cdiv(n_end, BLOCK_N)):",
        "    offs_n = n * BLOCK_N + tl.arange(0, BLOCK_N)",
        "    n_mask = offs_n < seq_k",
        "    kt = tl.load(k_base + offs_n[None, :].to(tl.int64) * stride_kn + offs_d[:, None] * stride_kd,",
        "                 mask=n_mask[None, :], other=0.0)",
        f"    qk = tl.dot(q, kt{precision}) * qk_scale",
        ("    valid = n_mask[None, :] & (offs_m[:, None] >= offs_n[None, :])" if facts.causal
         else "    valid = n_mask[None, :]"),
        '    qk = tl.where(valid, qk, -float("inf"))',
        "    m_new = tl.maximum(m_i, tl.max(qk, axis=1))",
        "    alpha = tl.exp2(m_i - m_new)",
        "    p = tl.exp2(qk - m_new[:, None])",
        "    l_i = l_i * alpha + tl.sum(p, axis=1)",
        "    v = tl.load(v_base + offs_n[:, None].to(tl.int64) * stride_vn + offs_d[None, :] * stride_vd,",
        "                mask=n_mask[:, None], other=0.0)",
        f"    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v{precision})",
        "    m_i = m_new",
        "acc = acc / l_i[:, None]",
    ]
    rows = ("batch * stride_{p}b + head * stride_{p}h + offs_m[:, None].to(tl.int64) * stride_{p}m"
            " + offs_d[None, :] * stride_{p}d")
    if facts.residual:
        lines += [f"residual = tl.load(residual_ptr + {rows.format(p='r')}, mask=m_mask[:, None], other=0.0)",
                  "acc = acc.to(out_ptr.dtype.element_ty).to(tl.float32) + residual.to(tl.float32)"
                  "  # the reference rounds attention before the add"]
    lines.append(f"tl.store(out_ptr + {rows.format(p='o')}, acc.to(out_ptr.dtype.element_ty), mask=m_mask[:, None])")
    mask_text = ", causal" if facts.causal else ""
    return (f"@triton.jit\ndef _attention_kernel(\n{indent(args)}\n):\n"
            f'    """out = softmax(q k^T * scale{mask_text}) v{" + residual" if facts.residual else ""}, one '
            f'BLOCK_M x HEAD_DIM tile; online softmax in fp32."""\n{indent(chr(10).join(lines))}\n')


def wrapper_source(facts: AttentionFacts, params: dict[str, Any]) -> str:
    """Host function `attention(q, k, v[, residual])`: check, allocate, launch."""
    names = ["q", "k", "v", *(["residual"] if facts.residual else [])]
    scale = "head_dim ** -0.5" if facts.scale is None else literal(facts.scale)
    lines = [
        "batch, n_heads, seq_q, head_dim = q.shape",
        "seq_k = k.shape[2]",
        "if k.shape != (batch, n_heads, seq_k, head_dim) or v.shape != k.shape:",
        '    raise ValueError(f"attention: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} do not agree")',
        "out = torch.empty_like(q)",
    ]
    launch = ["out, *out.stride()", "q, *q.stride()", "k, *k.stride()", "v, *v.stride()"]
    if facts.residual:
        launch.append("residual, *residual.stride()")
    launch += [f"n_heads, seq_q, seq_k, {scale}", launch_keywords({"HEAD_DIM": facts.shape[3], **{
        k: v for k, v in params.items() if k != "precision"}})]
    lines.append(f"_attention_kernel[(triton.cdiv(seq_q, {params['BLOCK_M']}), batch * n_heads)](\n"
                 + indent(",\n".join(launch)) + ",\n)")
    lines.append("return out")
    return (f"def attention({', '.join(names)}):\n"
            f'    """FlashAttention-2 style forward over [batch, heads, seq, head_dim] tensors; one launch."""\n'
            f"{indent(chr(10).join(lines))}\n")


@dataclass(frozen=True)
class TritonAttentionFamily:
    """FlashAttention-2 style forward with tunable tiles."""

    name: str = "triton_attention"
    strategy: str = "tensor_cores"
    language: str = "triton"

    def facts(self, analysis: TaskAnalysis) -> tuple[AttentionFacts | None, str | None]:
        """The parsed attention facts, or why they are unusable."""
        return read_facts(analysis, "attention", AttentionFacts.parse)

    def applies(self, analysis: TaskAnalysis) -> str | None:
        return self.facts(analysis)[1]

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        facts, _ = self.facts(analysis)
        if facts is None:
            return []
        cap_m, cap_n = max(16, next_power_of_2(facts.shape[2])), max(16, next_power_of_2(facts.seq_k))
        table = TILES_LOW_PRECISION if facts.dtype in LOW_PRECISION else TILES_FP32
        points = [dict(BLOCK_M=min(m, cap_m), BLOCK_N=min(n, cap_n), num_warps=w, num_stages=s)
                  for m, n, w, s in table]
        if facts.dtype not in LOW_PRECISION:
            points = [dict(p, precision="ieee") for p in points] + [dict(points[0], precision="tf32")]
        return dedupe(points)

    def resources(self, params: dict[str, Any], analysis: TaskAnalysis | None = None) -> int:
        """Shared memory bytes one block needs: the q tile and, per stage, a k and a v tile.

        Without the analysis, head dim 128 and 4-byte elements are assumed (upper bounds in practice).
        """
        facts = self.facts(analysis)[0] if analysis is not None else None
        head_dim, size = (facts.shape[3], elem_bytes(facts.dtype)) if facts else (128, 4)
        return (params["BLOCK_M"] + 2 * params["BLOCK_N"] * params["num_stages"]) * head_dim * size

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        facts, reason = self.facts(analysis)
        if facts is None:
            raise ValueError(f"{self.name} cannot render: {reason}")
        batch, heads, seq_q, head_dim = facts.shape
        flops = 4 * batch * heads * seq_q * facts.seq_k * head_dim // (2 if facts.causal else 1)
        elem = elem_bytes(facts.dtype)
        moved = batch * heads * head_dim * elem * (2 * seq_q + 2 * facts.seq_k + (seq_q if facts.residual else 0))
        scale = f"1/sqrt({head_dim})" if facts.scale is None else literal(facts.scale)
        doc = (f"Triton FlashAttention-2 style forward: out = softmax(q k^T * {scale}"
               f"{', causal' if facts.causal else ''}) v{' + residual' if facts.residual else ''}.\n\n"
               f"batch {batch}, heads {heads}, seq {seq_q} x {facts.seq_k}, head dim {head_dim}, {facts.dtype}: "
               f"{flops} FLOPs, {moved} bytes at least.\nPoint: {describe_params(params)}. "
               f"Generated by kernelarc ({self.name}).")
        body = f"{kernel_source(facts, params)}\n\n{wrapper_source(facts, params)}"
        call = f"attention({', '.join([facts.q, facts.k, facts.v, *([facts.residual] if facts.residual else [])])})"
        text = (f"Triton flash attention {params['BLOCK_M']}x{params['BLOCK_N']} w{params['num_warps']} "
                f"s{params['num_stages']}: scores stay on chip{', residual add fused' if facts.residual else ''}")
        return Move(family=self.name, params=dict(params), source=module_source(analysis, doc=doc, body=body,
                                                                                 call=call), claim=claim(text))


FAMILIES = (register_family(TritonAttentionFamily()),)
"""The registered attention family."""

__all__ = ["AttentionFacts", "FAMILIES", "TritonAttentionFamily", "kernel_source", "wrapper_source"]
