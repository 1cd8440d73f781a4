"""The typed facts the move families read, so that no family reads the analysis' raw dicts or imports
another family's parser. Two layers:

- `Patterns.of(analysis)`: every pattern of `TaskAnalysis.facts` (agents/builtin/patterns.py) as found, one
  frozen record each (`GemmPattern`, `GemmOperands`, `AttentionPattern`, `RowwisePattern`,
  `ReductionPattern`, `ConvPattern`): what the PyTorch families (library, precision, algebraic) rewrite,
  since they keep the rest of the graph as it is.
- Template facts (`GemmFacts`, `RowwiseFacts`): a pattern checked against what a generated kernel can
  compute (the whole forward, leaf operands, fusable epilogue steps), for the patterns more than one
  template serves. A family that alone serves a pattern keeps its template facts beside its template.
Imports neither torch nor triton.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves.base import TaskAnalysis
from kernelarc.agents.builtin.moves.triton_common import (
    SUPPORTED_DTYPES,
    EpilogueStep,
    operand_names,
    parse_epilogue,
    require_leaf,
    require_whole_forward,
)

# --- the patterns as found -----------------------------------------------------------------------

@dataclass(frozen=True)
class PatternStep:
    """One pointwise step (or dtype cast) after a pattern's op, as the analysis found it."""

    op: str
    """`gelu`, `add`, `mul`, `leaky_relu`, `cast`, ..."""
    node: str
    """The node holding this step's result."""
    scalar: float | None = None
    tensor: str | None = None
    broadcast: str | None = None
    """For a tensor operand: `full` or `row`."""
    approximate: str | None = None
    """gelu's approximation (`none`, `tanh`)."""
    negative_slope: float | None = None
    dtype: str | None = None
    """A cast's target dtype."""


@dataclass(frozen=True)
class GemmOperands:
    """One matmul of the forward, an entry of `facts["gemms"]`: the plain product (no epilogue)."""

    node: str
    form: str
    """linear, matmul, mm, addmm, bmm or baddbmm."""
    a: str
    """The M x K operand (leading dims flattened into M for linear and matmul)."""
    b: str
    """The weight as stored."""
    trans_b: bool
    """The op uses b transposed (nn.Linear's [N, K] weight)."""
    bias: str | None
    """The op's own bias argument."""
    M: int
    N: int
    K: int
    batch: int | None
    """None, or the batch of a bmm."""
    dtype: str
    flops: int

    @property
    def b_kn(self) -> str:
        """B as the product's K x N operand, as source: `self.linear.weight.t()` for nn.Linear's."""
        return f"{self.b}.t()" if self.trans_b else self.b


@dataclass(frozen=True)
class GemmPattern(GemmOperands):
    """`facts["gemm"]`: the largest matmul, with the pointwise steps that consume it one after another."""

    epilogue: tuple[PatternStep, ...] = ()
    bias_node: str = ""
    """The node holding matmul + bias: the GEMM itself, or the add that applies a separate bias."""
    out: str = ""
    """The node holding the epilogue's result."""


@dataclass(frozen=True)
class AttentionPattern:
    """`facts["attention"]`: matmul, optional scale and mask, softmax, matmul (or SDPA itself)."""

    form: str
    """`sdpa` or `matmul_softmax`."""
    q: str
    k: str
    v: str
    scale: float | None
    """None: 1/sqrt(head_dim)."""
    causal: bool
    attn_mask: str | None
    masked_fill: str | None
    """The boolean mask whose True positions the reference fills with -inf, if it spells the mask so."""
    node: str
    out: str
    shape: tuple[int, ...] | None
    """q's shape."""
    dtype: str


@dataclass(frozen=True)
class RowwisePattern:
    """`facts["rowwise"]`: a softmax, log_softmax, norm or cross-entropy over rows, fused or written out."""

    op: str
    form: str
    """`fused` (one aten op) or `decomposed` (the maths written out)."""
    node: str
    input: str
    """As stored: a cast that only the pattern reads is looked through (`input_cast`)."""
    input_cast: dict[str, str] | None
    dim: int
    rows: int
    cols: int
    dtype: str
    weight: str | None
    bias: str | None
    eps: float | str | None
    """A constant, or the name of the input that holds it (SOL-ExecBench scalars)."""
    target: str | None
    epilogue: tuple[PatternStep, ...]
    out: str


@dataclass(frozen=True)
class ReductionPattern:
    """`facts["reduction"]`: a sum, mean, amax or amin, partial sums of slices folded into one."""

    op: str
    input: str
    dims: list[int]
    keepdim: bool
    node: str
    out: str
    input_shape: tuple[int, ...] | None
    dtype: str
    unrolled: int
    """How many partial reductions were folded into it (1: none)."""


@dataclass(frozen=True)
class ConvPattern:
    """`facts["conv"]`: the forward's first convolution."""

    node: str
    target: str
    input: str
    weight: str
    bias: str | None
    dims: int
    """1, 2 or 3."""


@dataclass(frozen=True)
class Patterns:
    """Every pattern the analysis found, typed; None (or empty) where it found none."""

    gemm: GemmPattern | None
    gemms: tuple[GemmOperands, ...]
    attention: AttentionPattern | None
    rowwise: RowwisePattern | None
    reduction: ReductionPattern | None
    conv: ConvPattern | None

    @classmethod
    def of(cls, analysis: TaskAnalysis) -> Patterns:
        raw = analysis.facts
        return cls(gemm=_record(GemmPattern, raw.get("gemm")),
                   gemms=tuple(_record(GemmOperands, g) for g in raw.get("gemms") or ()),
                   attention=_record(AttentionPattern, raw.get("attention")),
                   rowwise=_record(RowwisePattern, raw.get("rowwise")),
                   reduction=_record(ReductionPattern, raw.get("reduction")),
                   conv=_record(ConvPattern, raw.get("conv")))


def _record(cls: type, raw: dict[str, Any] | None) -> Any:
    """`raw` as `cls`, its epilogue steps typed; a field the analysis did not write is its default or None."""
    if raw is None:
        return None
    values = {}
    for f in dataclasses.fields(cls):
        value = raw.get(f.name, f.default if f.default is not dataclasses.MISSING else None)
        if f.name == "epilogue":
            value = tuple(PatternStep(**step) for step in value or ())
        elif f.name in ("shape", "input_shape") and value is not None:
            value = tuple(value)
        values[f.name] = value
    return cls(**values)


# --- a GEMM and its epilogue (triton_gemm, cuda_small_gemm, cutlass_gemm, gemm_then_rowwise) -------

@dataclass(frozen=True)
class GemmFacts:
    """`facts["gemm"]`: the whole forward is epilogue(A @ B), one 2-D B (a weight or an input)."""

    M: int
    """Rows of A once its leading dims are flattened."""
    N: int
    """Columns of the result."""
    K: int
    """The reduction dim."""
    a: str
    """Source expression of A as stored: an input name or a `self.<param>` accessor."""
    b: str
    """Source expression of B: an input name or a `self.<param>` accessor."""
    b_layout: str
    """`nk`: B is stored `[N, K]` and used transposed (nn.Linear's weight); `kn`: stored `[K, N]`."""
    epilogue: tuple[EpilogueStep, ...]
    """Pointwise steps after the product, bias first when there is one."""
    dtype: str
    """Dtype of A, B and C."""
    a_layout: str = "mk"
    """`mk`: A is stored `[..., K]`; `km`: A is stored `[K, M]` and used transposed (`A.T @ B`)."""

    @classmethod
    def parse(cls, raw: dict[str, Any], analysis: TaskAnalysis, whole_forward: bool = True,
              transposed_a: bool = False) -> GemmFacts:
        """From `facts["gemm"]` (see agents/builtin/patterns.py); ValueError if this template cannot serve it.

        `whole_forward=False` when another kernel of the candidate consumes C (gemm_then_rowwise);
        `transposed_a=True` for a template that reads A through its strides, so that A may be the transpose
        of a stored `[K, M]` tensor (`a_layout` km).
        """
        if raw.get("batch"):
            raise ValueError(f"batched GEMM (batch {raw['batch']}) is not templated")
        if whole_forward:
            require_whole_forward(analysis, raw["out"])
        steps = list(raw.get("epilogue") or ())
        if raw.get("bias") is not None:
            steps.insert(0, {"op": "add", "tensor": raw["bias"], "broadcast": "row"})
        epilogue = parse_epilogue(steps)
        a, a_layout = raw["a"], "mk"
        if transposed_a and raw.get("a_stored") is not None:
            a, a_layout = raw["a_stored"], "km"
        for ref in (a, raw["b"], *(s.tensor for s in epilogue if s.tensor)):
            require_leaf(analysis, ref)
        return cls(M=int(raw["M"]), N=int(raw["N"]), K=int(raw["K"]), a=a, b=raw["b"],
                   b_layout="nk" if raw["trans_b"] else "kn", epilogue=epilogue, dtype=raw["dtype"], a_layout=a_layout)

    @property
    def formula(self) -> str:
        """`gelu(A @ B^T + bias)`."""
        expr = ("A^T" if self.a_layout == "km" else "A") + (" @ B^T" if self.b_layout == "nk" else " @ B")
        for step in self.epilogue:
            expr = step.formula(expr)
        return expr


# --- a row-wise op and its epilogue (triton_rowwise, cuda_rowwise, gemm_then_rowwise) --------------

IGNORE_INDEX = -100
"""F.cross_entropy's default ignore_index."""
DEFAULT_EPS = {"float32": 1.1920928955078125e-07, "float16": 0.0009765625, "bfloat16": 0.0078125}
"""torch.finfo(dtype).eps: rms_norm's eps when none is given."""
OPS = ("softmax", "log_softmax", "layer_norm", "rms_norm", "cross_entropy")
FORMULAS = {
    "softmax": "y = exp(x - max(x)) / sum(exp(x - max(x)))",
    "log_softmax": "y = x - max(x) - log(sum(exp(x - max(x))))",
    "layer_norm": "y = (x - mean(x)) * rsqrt(var(x) + eps) * weight + bias",
    "rms_norm": "y = x * rsqrt(mean(x^2) + eps) * weight",
    "cross_entropy": "loss = mean over rows of (logsumexp(x) - x[target])",
}
KERNEL_NAMES = ("x", "y", "rows", "row", "offs", "cols", "mask", "row_mask", "col_mask", "rstd", "mean", "centered",
                "acc", "row_max", "new_max", "numerator", "denominator", "chunk", "eps", "n_rows", "n_cols", "x2",
                "residual2", "residual_sum", "losses", "counted", "target_logit", "torch", "nn", "triton", "tl")
"""Names the kernels and wrappers use themselves, so no epilogue operand takes them."""


@dataclass(frozen=True)
class RowStep:
    """One step of the epilogue after the row-wise op, as the reference computes it."""

    step: EpilogueStep | None
    """The pointwise op, or None for a dtype cast."""
    dtype: str
    """The dtype the reference holds this step's result in."""
    operand: str | None = None
    """Kernel name of the step's per-column vector, if it has one."""

    def describe(self) -> str:
        """`gelu`, `mul self.weight`, `to bfloat16`."""
        return self.step.describe() if self.step else f"to {self.dtype}"


@dataclass(frozen=True)
class RowwiseFacts:
    """`facts["rowwise"]` as this template uses it: the whole forward is one row-wise op."""

    op: str
    """One of OPS."""
    x: str
    """The input (a forward input or parameter, or the value `parse` was told is produced before the op);
    rows along its last dim."""
    residual: str | None
    """Norms: a tensor added to x before normalizing (the add is fused)."""
    weight: str | None
    """Norms: the per-column scale, if any."""
    bias: str | None
    """layer_norm: the per-column shift, if any."""
    eps: float
    """Norms: added to the variance (mean square)."""
    target: str | None
    """cross_entropy: the class index per row."""
    rows: int
    """Rows on the first workload."""
    cols: int
    """Columns (row length) on the first workload."""
    dtype: str
    """Dtype the op computes in (x's, unless the forward casts x first)."""
    sum_output: str | None = None
    """Norms with a residual whose sum the forward also returns: `first` or `second` in its tuple."""
    x_dtype: str = ""
    """Dtype of x as stored."""
    input_round: str | None = None
    """A narrower dtype the forward casts x to before the op: the kernel rounds x to it after loading."""
    epilogue: tuple[RowStep, ...] = ()
    """Pointwise ops and casts applied to the op's result before the store."""
    out_dtype: str = ""
    """Dtype of the forward's result (y)."""

    @classmethod
    def parse(cls, raw: dict[str, Any], analysis: TaskAnalysis, produced: str | None = None) -> RowwiseFacts:
        """From `facts["rowwise"]`; ValueError if this template cannot serve it.

        `produced` names a value an earlier kernel of the candidate computes (gemm_then_rowwise's C): the
        op may read it as x, taken as it is (not split into a residual add).
        """
        op = raw["op"]
        if op not in OPS:
            raise ValueError(f"row-wise op {op!r} is not templated")
        outputs = tuple(analysis.output_names)
        sum_output = None
        if op in ("layer_norm", "rms_norm") and len(outputs) == 2 and set(outputs) == {raw["out"], raw["input"]}:
            sum_output = "second" if outputs[0] == raw["out"] else "first"  # `h = x + r; return norm(h), h`
        else:
            require_whole_forward(analysis, raw["out"])
        x, residual = raw["input"], None
        shape = _shape(analysis, x)
        if shape is None or raw["dim"] != len(shape) - 1:
            raise ValueError(f"{op} over dim {raw['dim']} of a {shape} input: only the last dim is templated")
        if op in ("layer_norm", "rms_norm") and x != produced:
            x, residual = _residual_add(analysis, x)
        if sum_output and residual is None:
            raise ValueError("the forward also returns the normalized input, which is not a residual add")
        if op == "cross_entropy":
            _check_cross_entropy(analysis, raw)
        for ref in (x, residual, raw.get("weight"), raw.get("bias"), raw.get("target")):
            if ref is not None and ref != produced:
                require_leaf(analysis, ref)
        eps = raw.get("eps")
        if eps is not None and not isinstance(eps, (int, float)):
            raise ValueError(f"eps {eps!r} is not a constant")
        x_dtype, cast = value_dtype(analysis, x), raw.get("input_cast")
        if cast and x_dtype not in SUPPORTED_DTYPES:
            raise ValueError(f"the input {x} is stored as {x_dtype}, which the kernel does not read")
        facts = cls(op=op, x=x, residual=residual, weight=raw.get("weight"), bias=raw.get("bias"),
                    eps=float(DEFAULT_EPS.get(raw["dtype"], 1e-6) if eps is None else eps), target=raw.get("target"),
                    rows=int(raw["rows"]), cols=int(raw["cols"]), dtype=raw["dtype"], sum_output=sum_output,
                    x_dtype=x_dtype, out_dtype=value_dtype(analysis, raw["out"]),
                    input_round=cast["dtype"] if cast and cast["dtype"] not in ("float32", x_dtype) else None)
        reserved = KERNEL_NAMES + tuple(name for name, _ in facts.operands())
        return dataclasses.replace(facts, epilogue=_epilogue(analysis, raw, reserved))

    def operands(self) -> list[tuple[str, str]]:
        """(kernel name, source expression) of the tensors read besides x, in kernel argument order."""
        named = [("residual", self.residual), ("weight", self.weight), ("bias", self.bias), ("target", self.target)]
        named += [(row.operand, row.step.tensor) for row in self.epilogue if row.operand]
        return [(name, ref) for name, ref in named if ref is not None]

    @property
    def formula(self) -> str:
        """The op's formula for docstrings, without an absent weight or bias, then the epilogue's steps."""
        text = FORMULAS[self.op]
        if not self.weight:
            text = text.replace(" * weight", "")
        if not self.bias:
            text = text.replace(" + bias", "")
        return text + ("; then " + ", ".join(row.describe() for row in self.epilogue) if self.epilogue else "")


def _epilogue(analysis: TaskAnalysis, raw: dict[str, Any], reserved: tuple[str, ...]) -> tuple[RowStep, ...]:
    """The analysis' steps after the op; ValueError naming the first one the kernel cannot apply."""
    rows = []
    for step in raw.get("epilogue") or ():
        if raw["op"] == "cross_entropy":
            raise ValueError(f"{step['op']} after the cross_entropy loss is not templated")
        dtype = value_dtype(analysis, step["node"])
        if dtype not in SUPPORTED_DTYPES:
            raise ValueError(f"{step['op']} after the {raw['op']} gives {dtype}, which the kernel does not store")
        if step["op"] == "cast":
            rows.append(RowStep(None, dtype))
            continue
        parsed = EpilogueStep.parse(step)
        if parsed.tensor and parsed.broadcast != "row":
            raise ValueError(f"{step['op']} by the full tensor {parsed.tensor} after the {raw['op']} is not "
                             "templated (only per-column vectors are)")
        if parsed.tensor:
            require_leaf(analysis, parsed.tensor)
        rows.append(RowStep(parsed, dtype))
    names = iter(operand_names(tuple(row.step for row in rows if row.step), reserved))
    return tuple(dataclasses.replace(row, operand=next(names)) if row.step and row.step.tensor else row
                 for row in rows)


def _shape(analysis: TaskAnalysis, ref: str) -> tuple[int, ...] | None:
    node = next((n for n in analysis.nodes if n.name == ref), None)
    return node.shape if node is not None else analysis.values.get(ref, (None, None))[0]


def value_dtype(analysis: TaskAnalysis, ref: str) -> str | None:
    """The dtype of a forward value, input or parameter (`self.<param>`), as the analysis recorded it."""
    node = next((n for n in analysis.nodes if n.name == ref), None)
    return node.dtype if node is not None else analysis.values.get(ref, (None, None))[1]


def _residual_add(analysis: TaskAnalysis, ref: str) -> tuple[str, str | None]:
    """(x, residual) when `ref` is `x + residual` of two same-shape leaves, else (ref, None)."""
    node = next((n for n in analysis.nodes if n.name == ref), None)
    if (node is None or node.target != "aten.add.Tensor" or len(node.args) != 2 or node.kwargs
            or any(_shape(analysis, a) != node.shape for a in node.args)):
        return ref, None
    return node.args[0], node.args[1]


def _check_cross_entropy(analysis: TaskAnalysis, raw: dict[str, Any]) -> None:
    """Only F.cross_entropy's defaults are templated: no class weights, mean, ignore -100, no smoothing."""
    node = next(n for n in analysis.nodes if n.name == raw["node"])
    args = list(node.args) + [None, 1, IGNORE_INDEX, 0.0][len(node.args) - 2:]
    weight, reduction, ignore, smoothing = (node.kwargs.get(k, v) for k, v in zip(
        ("weight", "reduction", "ignore_index", "label_smoothing"), args[2:6]))
    if weight is not None or reduction != 1 or ignore != IGNORE_INDEX or smoothing:
        raise ValueError("cross_entropy with class weights, a reduction other than mean, another ignore_index "
                         "or label smoothing is not templated")
    if raw["cols"] < 2 or _shape(analysis, raw["input"]) is None or len(_shape(analysis, raw["input"])) != 2:
        raise ValueError("cross_entropy is templated for [batch, classes] logits")


__all__ = ["AttentionPattern", "ConvPattern", "DEFAULT_EPS", "FORMULAS", "GemmFacts", "GemmOperands", "GemmPattern",
           "IGNORE_INDEX", "KERNEL_NAMES", "OPS", "PatternStep", "Patterns", "ReductionPattern", "RowStep", "RowwiseFacts",
           "RowwisePattern", "ConvPattern", "value_dtype"]
