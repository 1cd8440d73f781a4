"""Library moves: the faster library paths PyTorch already has, each a parameter point.

- `library_gemm`: a linear layer with bias and ReLU/GELU as one cuBLASLt call with a fused epilogue
  (`torch._addmm_activation`), or the bias folded into the GEMM (`torch.addmm`, `F.linear`).
- `library_sdpa`: attention through `F.scaled_dot_product_attention` with one backend forced
  (cuDNN, flash, memory-efficient, math) via `torch.nn.attention.sdpa_kernel`; off the GPU the
  default dispatch runs, since only the math kernels exist there.
- `library_ops`: one fused op for what the reference spells out: a running total of slice sums as
  one `torch.sum`, a hand-written RMSNorm as `F.rms_norm`.
- `library_channels_last`: convolutions on channels-last tensors (NHWC, what cuDNN's tensor-core
  kernels read natively).
The rest of the forward is the reference's captured graph, unchanged. Budget: about 220 lines.
"""

from __future__ import annotations

from typing import Any

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import IS_STRICT_UPPER_TRIANGLE
from kernelarc.agents.builtin.moves.facts import Patterns
from kernelarc.agents.builtin.notation import claim_text, point_text
from kernelarc.agents.builtin.pytorch_source import emit_reason, forward_body, pytorch_module, source_of


def _reshape_2d(a: str, analysis: TaskAnalysis, k: int, shape: tuple[int, ...] | None) -> tuple[str, str]:
    """(`a` as an M x K matrix, suffix restoring the leading dims of the result)."""
    if shape is None or len(shape) == 2:
        return a, ""
    return f"{a}.reshape(-1, {k})", f".view({', '.join(str(d) for d in shape[:-1])}, -1)"


class LibraryGemm:
    """Bias and activation folded into the cuBLAS(Lt) call."""

    name = "library_gemm"
    strategy = "library"
    language = "pytorch"

    def applies(self, analysis: TaskAnalysis) -> str | None:
        gemm = Patterns.of(analysis).gemm
        if gemm is None:
            return "no GEMM in the task"
        if gemm.batch is not None:
            return f"the GEMM is batched ({gemm.form}); cuBLASLt epilogues need a 2-D GEMM"
        return emit_reason(analysis) or (None if self.space(analysis) else "the GEMM already runs in the fused form")

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        gemm = Patterns.of(analysis).gemm
        first = gemm.epilogue[0] if gemm.epilogue else None
        act = first is not None and (first.op == "relu" or (first.op == "gelu" and first.approximate in ("none", "tanh")))
        forms = [{"form": "addmm_activation"}] if act and gemm.bias else []
        forms += [{"form": "addmm"}, {"form": "linear"}]
        return [p for p in forms if p["form"] != gemm.form and (p["form"] != "linear" or gemm.trans_b)]

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        gemm = Patterns.of(analysis).gemm
        shape_a = analysis.values.get(gemm.a, (None,))[0] or _node_shape(analysis, gemm.a)
        a, restore = _reshape_2d(gemm.a, analysis, gemm.K, shape_a)
        bias = gemm.bias
        form = params["form"]
        if form == "addmm_activation":
            step = gemm.epilogue[0]
            use_gelu = step.op == "gelu"
            rewrites = {step.node: f"torch._addmm_activation({bias}, {a}, {gemm.b_kn}, use_gelu={use_gelu}){restore}"}
            what = f"bias+{step.op} fused into the cuBLASLt GEMM epilogue"
        elif form == "addmm":
            expr = f"torch.addmm({bias}, {a}, {gemm.b_kn})" if bias else f"torch.mm({a}, {gemm.b_kn})"
            rewrites = {gemm.bias_node: expr + restore}
            what = "bias folded into one addmm call" if bias else "one mm call"
        else:
            rewrites = {gemm.bias_node: f"F.linear({gemm.a}, {gemm.b}, {bias})"}
            what = "matmul and bias as one F.linear call"
        return _move(self.name, analysis, params, rewrites, what, f"{gemm.M}x{gemm.N}x{gemm.K}")


SDPA_BACKENDS = {"cudnn": "CUDNN_ATTENTION", "flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                 "math": "MATH"}
"""Backend parameter value -> `torch.nn.attention.SDPBackend` member."""
_LOW_PRECISION_ONLY = ("cudnn", "flash")


class LibrarySdpa:
    """Attention through SDPA with a chosen backend."""

    name = "library_sdpa"
    strategy = "library"
    language = "pytorch"

    def applies(self, analysis: TaskAnalysis) -> str | None:
        if Patterns.of(analysis).attention is None:
            return "no attention (SDPA or matmul-softmax-matmul) in the task"
        return emit_reason(analysis)

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        att = Patterns.of(analysis).attention
        low = att.dtype in ("float16", "bfloat16")
        points = [{"backend": b} for b in SDPA_BACKENDS if low or b not in _LOW_PRECISION_ONLY]
        return ([] if att.form == "sdpa" else [{"backend": "default"}]) + points

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        att = Patterns.of(analysis).attention
        backend = params["backend"]
        masked = att.masked_fill
        options = [f"attn_mask={att.attn_mask}"] if att.attn_mask else []
        options += ["is_causal=True"] if att.causal else []
        options += [f"scale={att.scale!r}"] if att.scale is not None else []
        call = f"F.scaled_dot_product_attention(q, k, v{''.join(', ' + o for o in options)})"
        head, args = "def _attention(q, k, v):\n", f"{att.q}, {att.k}, {att.v}"
        if masked:  # the reference fills True positions with -inf: SDPA's boolean mask is the opposite
            call = call[:-1] + ", **_mask_options(masked))"
            head, args = "def _attention(q, k, v, masked):\n", f"{args}, {masked}"
        if backend == "default":
            helper, imports = f"{head}    return {call}\n", ""
        else:
            helper = (f"{head}"
                      f'    """SDPA on the {backend} backend on the GPU; default dispatch elsewhere."""\n'
                      f"    if not q.is_cuda:\n        return {call}\n"
                      f"    with sdpa_kernel([SDPBackend.{SDPA_BACKENDS[backend]}]):\n        return {call}\n")
            imports = "from torch.nn.attention import SDPBackend, sdpa_kernel\n"
        if masked:
            helper = _MASK_OPTIONS + "\n\n\n" + helper
        rewrites = {att.node: f"_attention({args})"}
        return _move(self.name, analysis, params, rewrites, f"attention via SDPA, {backend} backend",
                     "x".join(map(str, att.shape or ())), helpers=helper, imports=imports)


_MASK_OPTIONS = f'''def _mask_options(masked):
    """SDPA arguments for a boolean mask of positions to exclude: is_causal when it is exactly the
    strict upper triangle (the fast causal kernels), else the complement as attn_mask. The check runs
    on every call, on the mask's values, never cached: a different mask gives a different answer."""
    causal = masked.shape[-1] == masked.shape[-2] and {IS_STRICT_UPPER_TRIANGLE}
    return {{"is_causal": True}} if causal else {{"attn_mask": ~masked}}'''


class LibraryOps:
    """Fused library ops for computations the reference writes out by hand."""

    name = "library_ops"
    strategy = "library"
    language = "pytorch"

    def applies(self, analysis: TaskAnalysis) -> str | None:
        return emit_reason(analysis) or (None if self._rewrites(analysis) else
                                         "nothing hand-written that one library op computes (no unrolled sum, "
                                         "no decomposed RMSNorm)")

    def _rewrites(self, analysis: TaskAnalysis) -> dict[str, tuple[str, str]]:
        """Rewrite id -> (node, expression)."""
        found = {}
        patterns = Patterns.of(analysis)
        red, row = patterns.reduction, patterns.rowwise
        if red and red.unrolled > 1:
            found["sum"] = (red.out, f"torch.sum({red.input}, dim={red.dims}, keepdim={red.keepdim})")
        if row and row.op == "rms_norm" and row.form == "decomposed":
            eps = row.eps if isinstance(row.eps, str) else repr(float(row.eps))
            x = row.input_cast["node"] if row.input_cast else row.input  # the norm reads the cast value
            found["rms_norm"] = (row.node, f"F.rms_norm({x}, [{row.cols}], {row.weight}, {eps})")
        return found

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        ids = sorted(self._rewrites(analysis))
        return [{"ops": "+".join(ids)}] + ([{"ops": i} for i in ids] if len(ids) > 1 else [])

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        found = self._rewrites(analysis)
        chosen = params["ops"].split("+")
        rewrites = dict(found[i] for i in chosen)
        return _move(self.name, analysis, params, rewrites, f"hand-written {', '.join(chosen)} as one library op", "")


class LibraryChannelsLast:
    """Convolutions on channels-last tensors."""

    name = "library_channels_last"
    strategy = "library"
    language = "pytorch"

    def applies(self, analysis: TaskAnalysis) -> str | None:
        conv = Patterns.of(analysis).conv
        if conv is None:
            return "no convolution in the task"
        if conv.dims != 2:
            return f"channels_last applies to 2-d convolutions, this one is {conv.dims}-d"
        return emit_reason(analysis)

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        return [{"output": "contiguous"}, {"output": "channels_last"}]

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        conv = Patterns.of(analysis).conv
        node = next(n for n in analysis.nodes if n.name == conv.node)
        rest = ", ".join(source_of(analysis, a) for a in node.args[1:])
        expr = f"torch.ops.{node.target}({conv.input}.contiguous(memory_format=torch.channels_last), {rest})"
        if params["output"] == "contiguous":
            expr += ".contiguous()"
        init = "self.to(memory_format=torch.channels_last)" if analysis.param_names else ""
        return _move(self.name, analysis, params, {conv.node: expr}, "convolution on channels-last (NHWC) tensors",
                     "", init_extra=init)


def _node_shape(analysis: TaskAnalysis, name: str) -> tuple[int, ...] | None:
    return next((n.shape for n in analysis.nodes if n.name == name), None)


def _move(family: str, analysis: TaskAnalysis, params: dict[str, Any], rewrites: dict[str, str], what: str,
          shape: str, **frame: str) -> Move:
    """A Move whose forward is the captured graph with `rewrites` applied."""
    doc = (f"{what} {point_text(family, params)}.\n\n"
           f"Generated by kernelarc's built-in library agent for {analysis.task.name}"
           f"{' (' + shape + ')' if shape else ''}; the rest of the forward is the reference's graph.")
    source = pytorch_module(analysis, doc=doc, body=forward_body(analysis, rewrites), **frame)
    return Move(family=family, params=params, source=source, claim=claim_text(family, params, what))


for _family in (LibraryGemm(), LibrarySdpa(), LibraryOps(), LibraryChannelsLast()):
    register_family(_family)

__all__ = ["LibraryChannelsLast", "LibraryGemm", "LibraryOps", "LibrarySdpa", "SDPA_BACKENDS"]
