"""Triton attention template: a FlashAttention-2 style forward, out = softmax(q k^T * scale) v, causal
or not, with an optional residual add fused before the store, and the heads optionally written
merged ([batch, seq, heads * head_dim], what `attn.transpose(1, 2).reshape(...)` makes) by strides.
A reference that masks its scores with masked_fill(mask, -inf) gets the causal kernel when the mask
is exactly the strict upper triangle (checked on its values every call) and SDPA with that mask
otherwise.

One program per (BLOCK_M queries, batch x head); keys and values stream through in BLOCK_N tiles with
an online softmax (running max and sum in fp32, exp2 with log2(e) folded into the scale), so the
S x S score matrix never reaches memory. Causal programs stop at their diagonal. fp32 inputs use
IEEE products so results meet 1e-4 tolerances. Family `triton_attention`, strategy tensor_cores.
Reads `facts["attention"]` (agents/builtin/patterns.py). Imports neither torch nor triton. Budget: 300 lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import IS_STRICT_UPPER_TRIANGLE, indent, literal, module_source
from kernelarc.agents.builtin.moves.triton_common import (
    LOW_PRECISION,
    TemplateFacts,
    claim,
    dedupe,
    describe_params,
    elem_bytes,
    launch_keywords,
    next_power_of_2,
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
    masked: str | None
    """A boolean [seq_q, seq_k] tensor whose True positions the reference fills with -inf."""
    merged: bool
    """The forward returns the heads merged, [batch, seq_q, heads * head_dim]."""
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
        residual, merged = _output(analysis, raw["out"], shape)
        masked = raw.get("masked_fill")
        for ref in (raw["q"], raw["k"], raw["v"], residual, masked):
            if ref is not None:
                require_leaf(analysis, ref)
        scale = raw.get("scale")
        if scale is not None and not isinstance(scale, (int, float)):
            raise ValueError(f"scale {scale!r} is not a constant")
        return cls(q=raw["q"], k=raw["k"], v=raw["v"], scale=None if scale is None else float(scale),
                   causal=bool(raw["causal"]) or masked is not None, residual=residual, masked=masked,
                   merged=merged, shape=shape, seq_k=k_shape[2], dtype=raw["dtype"])


_RESHAPES = ("aten.reshape", "aten.view", "aten._unsafe_view")
_COPIES = ("aten.clone", "aten.contiguous")


def _node(analysis: TaskAnalysis, name: Any):
    return next((n for n in analysis.nodes if n.name == name), None) if isinstance(name, str) else None


def _merged_heads(analysis: TaskAnalysis, name: Any, out: str, shape: tuple[int, ...]) -> bool:
    """False when `name` is the attention result, True when it is that result with its heads merged
    (`out.transpose(1, 2).reshape(batch, seq, heads * head_dim)`); ValueError otherwise."""
    if name == out:
        return False
    batch, heads, seq, head_dim = shape
    node = _node(analysis, name)
    if node is None or node.target not in _RESHAPES or list(node.args[1]) != [batch, seq, heads * head_dim]:
        raise ValueError(f"{name} is not the attention result or its heads merged")
    source = _node(analysis, node.args[0])
    while source is not None and source.target in _COPIES:
        source = _node(analysis, source.args[0])
    if (source is None or source.target != "aten.transpose.int" or source.args[0] != out
            or sorted(d % 4 for d in source.args[1:3]) != [1, 2]):
        raise ValueError(f"{name} is not the attention result or its heads merged")
    return True


def _output(analysis: TaskAnalysis, out: str, shape: tuple[int, ...]) -> tuple[str | None, bool]:
    """(residual, merged): what the forward adds to the attention result (None: nothing), and whether
    it returns the heads merged."""
    if analysis.returns_tuple or len(analysis.output_names) != 1:
        raise ValueError(f"the forward returns {len(analysis.output_names)} outputs; the template returns one")
    final = analysis.output_names[0]
    try:
        return None, _merged_heads(analysis, final, out, shape)
    except ValueError:
        pass
    node = _node(analysis, final)
    if node is not None and node.target == "aten.add.Tensor" and len(node.args) == 2 and not node.kwargs:
        for attention, residual in (node.args, node.args[::-1]):
            try:
                merged = _merged_heads(analysis, attention, out, shape)
            except ValueError:
                continue
            batch, heads, seq, head_dim = shape
            want = (batch, seq, heads * head_dim) if merged else tuple(shape)
            if analysis.values.get(residual, (None, None))[0] != want:
                raise ValueError(f"{residual} added to the attention result is not of its shape {want}")
            return residual, merged
    raise ValueError(f"the forward returns {final}, not the attention result (heads merged or not) "
                     "or it plus a residual")


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
    """Host function `attention(q, k, v[, residual][, masked])`: check, allocate, launch."""
    names = ["q", "k", "v", *(["residual"] if facts.residual else []), *(["masked"] if facts.masked else [])]
    scale = "head_dim ** -0.5" if facts.scale is None else literal(facts.scale)
    lines = [
        "batch, n_heads, seq_q, head_dim = q.shape",
        "seq_k = k.shape[2]",
        "if k.shape != (batch, n_heads, seq_k, head_dim) or v.shape != k.shape:",
        '    raise ValueError(f"attention: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} do not agree")',
    ]
    merge = ".transpose(1, 2).reshape(batch, seq_q, n_heads * head_dim)" if facts.merged else ""
    if facts.masked:
        lines += [
            f"if masked.shape != (seq_q, seq_k) or not {IS_STRICT_UPPER_TRIANGLE}:",
            "    # not the causal triangle (checked on its values every call): SDPA takes any boolean mask",
            f"    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~masked, scale={scale})"
            f"{merge}",
            f"    return {'residual + out' if facts.residual else 'out'}",
        ]
    out, residual = ("out_heads", "residual_heads") if facts.merged else ("out", "residual")
    if facts.merged:
        lines += ["out = torch.empty((batch, seq_q, n_heads * head_dim), dtype=q.dtype, device=q.device)",
                  "out_heads = out.view(batch, seq_q, n_heads, head_dim).transpose(1, 2)  # heads merged by strides"]
        if facts.residual:
            lines.append("residual_heads = residual.reshape(batch, seq_q, n_heads, head_dim).transpose(1, 2)")
    else:
        lines.append("out = torch.empty_like(q)")
    launch = [f"{out}, *{out}.stride()", "q, *q.stride()", "k, *k.stride()", "v, *v.stride()"]
    if facts.residual:
        launch.append(f"{residual}, *{residual}.stride()")
    launch += [f"n_heads, seq_q, seq_k, {scale}", launch_keywords({"HEAD_DIM": facts.shape[3], **{
        k: v for k, v in params.items() if k != "precision"}})]
    lines.append(f"_attention_kernel[(triton.cdiv(seq_q, {params['BLOCK_M']}), batch * n_heads)](\n"
                 + indent(",\n".join(launch)) + ",\n)")
    lines.append("return out")
    layout = "[batch, seq, heads * head_dim]" if facts.merged else "[batch, heads, seq, head_dim]"
    return (f"def attention({', '.join(names)}):\n"
            f'    """FlashAttention-2 style forward over [batch, heads, seq, head_dim] tensors into {layout}; '
            f'one launch."""\n'
            f"{indent(chr(10).join(lines))}\n")


@dataclass(frozen=True)
class TritonAttentionFamily(TemplateFacts):
    """FlashAttention-2 style forward with tunable tiles."""

    name: str = "triton_attention"
    strategy: str = "tensor_cores"
    language: str = "triton"

    FACT_KEY: ClassVar[str] = "attention"
    PARSE: ClassVar = AttentionFacts.parse

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
        args = [facts.q, facts.k, facts.v, *([facts.residual] if facts.residual else []),
                *([facts.masked] if facts.masked else [])]
        call = f"attention({', '.join(args)})"
        text = (f"Triton flash attention {params['BLOCK_M']}x{params['BLOCK_N']} w{params['num_warps']} "
                f"s{params['num_stages']}: scores stay on chip{', residual add fused' if facts.residual else ''}")
        return Move(family=self.name, params=dict(params), source=module_source(analysis, doc=doc, body=body,
                                                                                 call=call), claim=claim(text))


FAMILIES = (register_family(TritonAttentionFamily()),)
"""The registered attention family."""

__all__ = ["AttentionFacts", "FAMILIES", "TritonAttentionFamily", "kernel_source", "wrapper_source"]
