"""What the Triton move families share: pointwise maths as Triton expressions, epilogue steps and the
kernel names of their operands, facts lookup, launch keywords and the shared-memory estimate.

The analysis (agents/builtin/analysis.py) states what it found in `TaskAnalysis.facts`; each family
reads its own key (`gemm`, `rowwise`, `reduction`, `attention`) through `read_facts`, which turns a
malformed or missing entry into the one-line reason `applies()` returns. Pointwise maths is written
once here so the GEMM epilogue, the attention epilogue and the fused elementwise kernel agree.
Imports neither torch nor triton. Budget: 250 lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, TypeVar

from kernelarc.agents.builtin.moves.base import TaskAnalysis
from kernelarc.agents.builtin.moves.emit import literal
from kernelarc.task.model import dtype_bits

SMEM_PER_BLOCK_BYTES = 232448
"""H200 (sm_90) shared memory a block may opt into: 227 KiB. Configs above it fail to launch."""
CLAIM_MAX = 160
"""A Move's claim is at most this many characters."""
LOW_PRECISION = ("float16", "bfloat16")
"""Dtypes whose tl.dot runs on tensor cores without tf32 questions."""
SUPPORTED_DTYPES = ("float32", "float16", "bfloat16")

# Unary pointwise ops on a plain name `{x}` (already fp32), as Triton expressions. tanh has no tl
# primitive: tanh(x) = 2 sigmoid(2x) - 1; gelu(tanh) = x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) exactly.
UNARY: dict[str, str] = {
    "relu": "tl.maximum({x}, 0.0)",
    "gelu": "0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476))",
    "gelu_tanh": "{x} * tl.sigmoid(1.5957691216057308 * ({x} + 0.044715 * {x} * {x} * {x}))",
    "silu": "{x} * tl.sigmoid({x})",
    "sigmoid": "tl.sigmoid({x})",
    "tanh": "2.0 * tl.sigmoid(2.0 * {x}) - 1.0",
    "exp": "tl.exp({x})",
    "log": "tl.log({x})",
    "abs": "tl.abs({x})",
    "neg": "-{x}",
    "sqrt": "tl.sqrt({x})",
    "rsqrt": "tl.rsqrt({x})",
    "reciprocal": "1.0 / {x}",
    "exp2": "tl.exp2({x})",
    "log2": "tl.log2({x})",
    "log1p": "tl.log(1.0 + {x})",
    "expm1": "tl.exp({x}) - 1.0",
    "sin": "tl.sin({x})",
    "cos": "tl.cos({x})",
    "erf": "tl.erf({x})",
    "floor": "tl.floor({x})",
    "ceil": "tl.ceil({x})",
    "sign": "tl.where({x} > 0.0, 1.0, tl.where({x} < 0.0, -1.0, 0.0))",
    "hardsigmoid": "tl.minimum(tl.maximum({x} / 6.0 + 0.5, 0.0), 1.0)",
    "hardswish": "{x} * tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0",
    "selu": "1.0507009873554805 * tl.where({x} > 0.0, {x}, 1.6732632423543772 * (tl.exp({x}) - 1.0))",
    # mish(x) = x tanh(softplus(x)), softplus with PyTorch's threshold of 20
    "mish": "{x} * (2.0 * tl.sigmoid(2.0 * tl.where({x} > 20.0, {x}, tl.log(1.0 + tl.exp({x})))) - 1.0)",
}
# Binary pointwise ops on plain names or literals `{x}`, `{y}`.
BINARY: dict[str, str] = {
    "add": "{x} + {y}",
    "sub": "{x} - {y}",
    "mul": "{x} * {y}",
    "div": "{x} / {y}",
    "maximum": "tl.maximum({x}, {y})",
    "minimum": "tl.minimum({x}, {y})",
}

SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def unary(op: str, x: str, *, negative_slope: float = 0.01) -> str:
    """Triton expression for a unary op of the name `x`; leaky_relu takes its slope."""
    if op == "leaky_relu":
        return f"tl.where({x} >= 0.0, {x}, {x} * {literal(negative_slope)})"
    return UNARY[op].format(x=x)


def binary(op: str, x: str, y: str) -> str:
    """Triton expression for a binary op of two names or literals."""
    return BINARY[op].format(x=x, y=y)


def power(x: str, exponent: float) -> str:
    """`x ** exponent` for a constant exponent: small integers as products, +-0.5 as (r)sqrt.

    Raises:
        ValueError: another exponent (no exact Triton form for negative bases).
    """
    if exponent == 0.5:
        return f"tl.sqrt({x})"
    if exponent == -0.5:
        return f"tl.rsqrt({x})"
    if float(exponent).is_integer() and 1 <= abs(exponent) <= 4:
        product = " * ".join([x] * int(abs(exponent)))
        return product if exponent > 0 else f"1.0 / ({product})"
    raise ValueError(f"pow by {exponent!r} is not supported (integers -4..4 and +-0.5 are)")


@dataclass(frozen=True)
class EpilogueStep:
    """One pointwise op applied to a kernel's fp32 result before the store.

    As the analysis writes it: {"op": "gelu", "approximate": "tanh"}, {"op": "mul", "scalar": 0.5},
    {"op": "add", "tensor": "residual", "broadcast": "full"}, {"op": "leaky_relu", "negative_slope": 0.2}.
    """

    op: str
    """A key of UNARY or BINARY, or leaky_relu; gelu with approximate="tanh" becomes gelu_tanh."""
    scalar: float | None = None
    """The other operand of a binary op, when it is a constant."""
    tensor: str | None = None
    """The other operand of a binary op, when it is a tensor: an input name or a `self.<param>` accessor."""
    broadcast: str = "full"
    """For a tensor operand: `full` (the result's shape) or `row` (a vector along the last dim)."""
    negative_slope: float = 0.01
    """leaky_relu's slope."""

    @classmethod
    def parse(cls, step: dict[str, Any]) -> EpilogueStep:
        """From the analysis' dict; ValueError quoting a step this kernel cannot fuse."""
        op = step.get("op")
        if op == "gelu" and step.get("approximate", "none") == "tanh":
            op = "gelu_tanh"
        if op in UNARY or op == "leaky_relu":
            return cls(op=op, negative_slope=float(step.get("negative_slope", 0.01)))
        if op not in BINARY:
            raise ValueError(f"epilogue op {step.get('op')!r} is not supported")
        if ("scalar" in step) == ("tensor" in step):
            raise ValueError(f"epilogue step {step!r} needs exactly one of scalar or tensor")
        if step.get("broadcast", "full") not in ("full", "row"):
            raise ValueError(f"epilogue broadcast {step.get('broadcast')!r} is not full or row")
        scalar = float(step["scalar"]) if "scalar" in step else None
        return cls(op=op, scalar=scalar, tensor=step.get("tensor"), broadcast=step.get("broadcast", "full"))

    def expression(self, acc: str, operand: str | None = None) -> str:
        """The new value of `acc`; `operand` is the loaded fp32 tensor operand's name."""
        if self.op in BINARY:
            return binary(self.op, acc, operand if self.tensor else literal(self.scalar))
        return unary(self.op, acc, negative_slope=self.negative_slope)

    def formula(self, expr: str) -> str:
        """`expr` with this step applied, for docstrings: `gelu(A @ B^T + bias)`."""
        other = self.tensor if self.tensor else (literal(self.scalar) if self.scalar is not None else "")
        if self.op in SYMBOLS:
            left = expr if self.op in ("add", "sub") else f"({expr})"
            return f"{left} {SYMBOLS[self.op]} {other}"
        if self.op in BINARY:
            return f"{self.op}({expr}, {other})"
        return f"{self.op}({expr})"

    def describe(self) -> str:
        """Short text for docstrings: `gelu`, `mul 0.5`, `add residual`."""
        other = self.tensor if self.tensor else (literal(self.scalar) if self.scalar is not None else "")
        return f"{self.op} {other}".strip()


def parse_epilogue(steps: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> tuple[EpilogueStep, ...]:
    """All steps parsed; ValueError naming the first unsupported one."""
    return tuple(EpilogueStep.parse(dict(s)) for s in steps)


def operand_names(steps: tuple[EpilogueStep, ...], reserved: tuple[str, ...]) -> list[str]:
    """A readable kernel argument stem per tensor operand (`bias`, `residual`), unique and not `reserved`."""
    names: list[str] = []
    for step in steps:
        if step.tensor:
            stem = re.sub(r"\W", "_", step.tensor.split(".")[-1]).strip("_") or "operand"
            if stem in names or stem in reserved:
                stem = f"{stem}{len(names)}"
            names.append(stem)
    return names


F = TypeVar("F")


def read_facts(analysis: TaskAnalysis, key: str,
               parse: Callable[[dict[str, Any], TaskAnalysis], F]) -> tuple[F | None, str | None]:
    """`(facts, None)` when the analysis found `key`, `parse` accepts it and its dtype is templated,
    else `(None, reason)`.

    `parse` raises KeyError, TypeError or ValueError for facts this template cannot serve; the parsed
    facts carry a `dtype`.
    """
    raw = analysis.facts.get(key)
    if raw is None:
        found = ", ".join(sorted(k for k, v in analysis.facts.items() if isinstance(v, dict))) or "none"
        return None, f"the analysis found no {key} pattern (patterns found: {found})"
    try:
        facts = parse(raw, analysis)
    except (KeyError, TypeError, ValueError) as e:
        return None, f"{key}: {e}"
    reason = check_dtype(facts.dtype)
    return (None, reason) if reason else (facts, None)


class TemplateFacts:
    """The `facts` and `applies` of a family whose template serves one pattern: `FACT_KEY` of the analysis,
    parsed by `PARSE` (`read_facts`); it applies exactly when the facts parse."""

    FACT_KEY: ClassVar[str]
    PARSE: ClassVar[Callable[[dict[str, Any], TaskAnalysis], Any]]

    def facts(self, analysis: TaskAnalysis) -> tuple[Any, str | None]:
        """The parsed facts, or why they are unusable."""
        return read_facts(analysis, self.FACT_KEY, self.PARSE)

    def applies(self, analysis: TaskAnalysis) -> str | None:
        return self.facts(analysis)[1]


def require_whole_forward(analysis: TaskAnalysis, out: str) -> None:
    """ValueError unless `out` is the forward's one output: the template computes nothing else."""
    if analysis.returns_tuple or tuple(analysis.output_names) != (out,):
        raise ValueError(f"the pattern ends at {out} but the forward returns {', '.join(analysis.output_names)}")


def require_leaf(analysis: TaskAnalysis, ref: Any) -> None:
    """ValueError unless `ref` is a forward input or a parameter: templates compute no other ops first."""
    if ref not in analysis.input_names and ref not in analysis.param_names:
        raise ValueError(f"operand {ref!r} is computed inside the forward; the template reads only inputs "
                         "and parameters")


def check_dtype(dtype: str) -> str | None:
    """None for a dtype the Triton templates handle, else why not."""
    return None if dtype in SUPPORTED_DTYPES else f"dtype {dtype} is not one of {', '.join(SUPPORTED_DTYPES)}"


def next_power_of_2(n: int) -> int:
    """Smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def elem_bytes(dtype: str) -> int:
    """Bytes per element of `dtype`."""
    return dtype_bits(dtype) // 8


def launch_keywords(params: dict[str, Any]) -> str:
    """`BLOCK_M=64, ..., num_warps=4, num_stages=3`: constexpr tiles (capitalized keys) then the pinned
    launch options, in the order given."""
    tiles = [f"{k}={literal(v)}" for k, v in params.items() if k.isupper()]
    launch = [f"{k}={literal(params[k])}" for k in ("num_warps", "num_stages") if k in params]
    return ", ".join(tiles + launch)


def describe_params(params: dict[str, Any]) -> str:
    """`BLOCK_M=64 BLOCK_N=64 num_warps=4` for docstrings and claims."""
    return " ".join(f"{k}={v}" for k, v in params.items())


def claim(text: str) -> str:
    """A claim trimmed to CLAIM_MAX characters."""
    return text if len(text) <= CLAIM_MAX else text[: CLAIM_MAX - 3] + "..."


def dedupe(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parameter points in order, duplicates dropped."""
    seen: set[tuple] = set()
    out = []
    for p in points:
        key = tuple(sorted(p.items()))
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


__all__ = [
    "BINARY", "CLAIM_MAX", "EpilogueStep", "LOW_PRECISION", "SMEM_PER_BLOCK_BYTES", "SUPPORTED_DTYPES", "UNARY",
    "binary", "check_dtype", "claim", "dedupe", "describe_params", "elem_bytes", "launch_keywords",
    "next_power_of_2", "operand_names", "parse_epilogue", "power", "read_facts", "require_leaf",
    "require_whole_forward", "unary",
]
