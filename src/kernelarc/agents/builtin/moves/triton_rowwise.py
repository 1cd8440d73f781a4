"""Triton row-wise templates: softmax, log_softmax, layer_norm (optional residual add first), rms_norm
and mean cross-entropy over the last dim, each row read once from global memory.

The norms and softmaxes also fuse what surrounds them: a dtype cast of the input (the kernel reads x
as stored and computes in fp32 anyway) and a chain of pointwise ops after the op (activations,
scalars, per-column vectors, casts), applied in fp32 before the one store in the dtype the forward
returns. Where the reference holds an intermediate in bf16 or fp16 the kernel rounds to it there, so
a norm written out with casts around it stays faithful.

Two families, both strategy memory:
- `triton_rowwise`: a whole row (BLOCK_SIZE = next power of two of n_cols) in registers,
  ROWS_PER_PROGRAM rows per program as one 2-D block.
- `triton_rowwise_looped`: one row per program walked in BLOCK_SIZE chunks (online max and sum for
  the softmax family), for rows too wide for registers (vocabularies of 32k to 128k).

Reads `facts["rowwise"]` (agents/builtin/patterns.py). Imports neither torch nor triton. Budget: 540 lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, literal, module_source
from kernelarc.agents.builtin.moves.facts import IGNORE_INDEX, RowwiseFacts
from kernelarc.agents.builtin.moves.triton_common import (
    TemplateFacts,
    claim,
    dedupe,
    describe_params,
    elem_bytes,
    launch_keywords,
    next_power_of_2,
)

MAX_SINGLE_BLOCK = 65536
"""Widest row (as a power of two) the single-block family keeps in registers."""
MAX_ELEMENTS_PER_PROGRAM = 16384
"""ROWS_PER_PROGRAM x BLOCK_SIZE stays under this, so a program's block does not spill."""
ELEMENTS_PER_THREAD = 16
"""Whole-row points start with the most rows per program that keep each thread at 16 values or fewer
per operand. On the H200 (docs/benchmarks.md, run 4), 4 rows of 4096 on 8 warps (64 values per
thread) ran layernorm_residual_bf16 at 0.74-0.77x eager, and the campaign never reached 1 row;
one row of 8192 on 16 warps (16 per thread) won rmsnorm_bf16 and softmax_fp32. The new first point
has not run on the card yet."""
LOOPED_MIN_COLS = 256
"""Rows narrower than this fit one block: looping over chunks only adds passes."""
ROUND_TO_BF16 = '''@triton.jit
def _round_to_bfloat16(x):
    """fp32 x rounded to the nearest bfloat16 (ties to even), kept in fp32: what x.to(tl.bfloat16) gives
    on the GPU, in integer ops because the CPU interpreter's cast truncates instead."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.to(tl.float32, bitcast=True)
'''
"""Emitted (once) when a kernel rounds an intermediate to bfloat16 as the reference does."""
# --- kernel sources --------------------------------------------------------------------------------

def _signature(facts: RowwiseFacts, tiles: str) -> str:
    outputs = "loss_ptr," if facts.op == "cross_entropy" else "y_ptr, stride_yr,"
    if facts.sum_output:
        outputs += " sum_ptr, stride_sumr,"
    inputs = ["x_ptr, stride_xr,"]
    for name, _ in facts.operands():
        inputs.append(f"{name}_ptr, stride_{name}r," if name == "residual" else f"{name}_ptr,")
    sizes = "n_rows, n_cols, eps," if facts.op in ("layer_norm", "rms_norm") else "n_rows, n_cols,"
    if facts.op == "cross_entropy":
        tiles += ", IGNORE_INDEX: tl.constexpr"
    args = "\n".join([outputs, *inputs, sizes, tiles + ","])
    doc = ("loss[r] = logsumexp(x[r]) - x[r, target[r]], 0 where the target is ignored" if facts.op == "cross_entropy"
           else f"{facts.formula}, per row")
    return f"@triton.jit\ndef _{facts.op}_kernel(\n{indent(args)}\n):\n    \"\"\"{doc}.\"\"\"\n"


def _load_x(facts: RowwiseFacts, at: str, mask: str, other: str) -> list[str]:
    """Lines leaving x (plus the residual, rounded as the reference rounds it) in fp32."""
    lines = [f"x = tl.load(x_ptr + {at.format('x')}, mask={mask}, other={other}).to(tl.float32)"]
    if facts.residual is not None:
        lines += [f"residual = tl.load(residual_ptr + {at.format('residual')}, mask={mask}, other=0.0).to(tl.float32)",
                  "x = (x + residual).to(x_ptr.dtype.element_ty).to(tl.float32)  # the reference adds in its dtype"]
    if facts.input_round:
        lines.append(f"x = {_rounded('x', facts.input_round)}  # the reference casts x to {facts.input_round}")
    return lines


def _rounded(name: str, dtype: str) -> str:
    """fp32 `name` rounded to `dtype` and kept in fp32."""
    return f"_round_to_bfloat16({name})" if dtype == "bfloat16" else f"{name}.to(tl.{dtype}).to(tl.float32)"


def _epilogue_lines(facts: RowwiseFacts, cols: str, col_mask: str, bcast: str) -> list[str]:
    """Lines applying the epilogue to `y` (fp32), first rounding each step's input to the dtype the
    reference holds it in; the store rounds the last result."""
    lines = []
    held = [facts.dtype, *(row.dtype for row in facts.epilogue)]
    for row, dtype in zip(facts.epilogue, held):
        if dtype != "float32":
            lines.append(f"y = {_rounded('y', dtype)}  # the reference holds {dtype} here")
        if row.step is None:
            continue  # a cast: it sets the dtype the next step rounds to
        operand = None
        if row.operand:
            lines.append(f"{row.operand} = tl.load({row.operand}_ptr + {cols}, mask={col_mask}, other=0.0)"
                         ".to(tl.float32)")
            operand = f"{row.operand}{bcast}"
        lines.append(f"y = {row.step.expression('y', operand)}  # {row.describe()}")
    return lines


def _store_sum(facts: RowwiseFacts, at: str, mask: str) -> list[str]:
    """The residual sum x + residual, stored when the forward returns it too (first pass only)."""
    if not facts.sum_output:
        return []
    return [f"tl.store(sum_ptr + {at.format('sum')}, x.to(sum_ptr.dtype.element_ty), mask={mask})"]


def _affine(facts: RowwiseFacts, cols: str, col_mask: str, bcast: str) -> list[str]:
    """Lines turning the normalized `y` into y * weight + bias."""
    lines = []
    if facts.weight:
        lines += [f"weight = tl.load(weight_ptr + {cols}, mask={col_mask}, other=0.0).to(tl.float32)",
                  f"y = y * weight{bcast}"]
    if facts.bias:
        lines += [f"bias = tl.load(bias_ptr + {cols}, mask={col_mask}, other=0.0).to(tl.float32)",
                  f"y = y + bias{bcast}"]
    return lines


def single_block_kernel(facts: RowwiseFacts) -> str:
    """ROWS_PER_PROGRAM whole rows per program as one [rows, BLOCK_SIZE] block."""
    at = "rows[:, None] * stride_{}r + offs[None, :]"
    lines = [
        "rows = tl.program_id(0) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)",
        "offs = tl.arange(0, BLOCK_SIZE)",
        "row_mask = rows < n_rows",
        "col_mask = offs < n_cols",
        "mask = row_mask[:, None] & col_mask[None, :]",
        "rows = rows.to(tl.int64)",
    ]
    if facts.op in ("softmax", "log_softmax", "cross_entropy"):
        lines += _load_x(facts, at, "mask", '-float("inf")')
        lines += ["row_max = tl.max(x, axis=1)",
                  "numerator = tl.exp(x - row_max[:, None])  # 0 where masked",
                  "denominator = tl.sum(numerator, axis=1)"]
        if facts.op == "softmax":
            lines.append("y = numerator / denominator[:, None]")
        elif facts.op == "log_softmax":
            lines.append("y = x - row_max[:, None] - tl.log(denominator)[:, None]")
        else:
            lines += ["target = tl.load(target_ptr + rows, mask=row_mask, other=IGNORE_INDEX)",
                      "target_logit = tl.sum(tl.where(offs[None, :] == target[:, None], x, 0.0), axis=1)",
                      "loss = row_max + tl.log(denominator) - target_logit",
                      "loss = tl.where(target != IGNORE_INDEX, loss, 0.0)",
                      "tl.store(loss_ptr + rows, loss, mask=row_mask)"]
            return _signature(facts, "BLOCK_SIZE: tl.constexpr, ROWS_PER_PROGRAM: tl.constexpr") + indent(
                "\n".join(lines)) + "\n"
    else:
        lines += _load_x(facts, at, "mask", "0.0") + _store_sum(facts, at, "mask")
        if facts.op == "layer_norm":
            lines += ["mean = tl.sum(x, axis=1) / n_cols",
                      "centered = tl.where(mask, x - mean[:, None], 0.0)",
                      "rstd = tl.rsqrt(tl.sum(centered * centered, axis=1) / n_cols + eps)",
                      "y = centered * rstd[:, None]"]
        else:
            lines += ["rstd = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)",
                      "y = x * rstd[:, None]"]
        lines += _affine(facts, "offs", "col_mask", "[None, :]")
    lines += _epilogue_lines(facts, "offs", "col_mask", "[None, :]")
    lines.append(f"tl.store(y_ptr + {at.format('y')}, y.to(y_ptr.dtype.element_ty), mask=mask)")
    return _signature(facts, "BLOCK_SIZE: tl.constexpr, ROWS_PER_PROGRAM: tl.constexpr") + indent(
        "\n".join(lines)) + "\n"


def _chunk_loop(body: list[str]) -> list[str]:
    """A loop over the row's BLOCK_SIZE chunks, `cols` and `mask` set for each."""
    return ["for chunk in range(0, tl.cdiv(n_cols, BLOCK_SIZE)):",
            "    cols = chunk * BLOCK_SIZE + offs",
            "    mask = cols < n_cols",
            *("    " + line for line in body)]


def looped_kernel(facts: RowwiseFacts) -> str:
    """One row per program, read in BLOCK_SIZE chunks: statistics first, then the output."""
    at = "row * stride_{}r + cols"
    lines = ["row = tl.program_id(0).to(tl.int64)", "offs = tl.arange(0, BLOCK_SIZE)"]
    store = [*_epilogue_lines(facts, "cols", "mask", ""),
             f"tl.store(y_ptr + {at.format('y')}, y.to(y_ptr.dtype.element_ty), mask=mask)"]
    if facts.op in ("softmax", "log_softmax", "cross_entropy"):
        if facts.op == "cross_entropy":
            lines += ["target = tl.load(target_ptr + row)", "target_logit = 0.0"]
        lines += ['row_max = -float("inf")', "denominator = 0.0"]
        online = [*_load_x(facts, at, "mask", '-float("inf")'),
                  "new_max = tl.maximum(row_max, tl.max(x, axis=0))",
                  "denominator = denominator * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)",
                  "row_max = new_max"]
        if facts.op == "cross_entropy":
            online.append("target_logit += tl.sum(tl.where(cols == target, x, 0.0), axis=0)")
        lines += _chunk_loop(online)
        if facts.op == "cross_entropy":
            lines += ["loss = row_max + tl.log(denominator) - target_logit",
                      "tl.store(loss_ptr + row, tl.where(target != IGNORE_INDEX, loss, 0.0))"]
            return _signature(facts, "BLOCK_SIZE: tl.constexpr") + indent("\n".join(lines)) + "\n"
        y = ("y = tl.exp(x - row_max) / denominator" if facts.op == "softmax"
             else "y = x - row_max - tl.log(denominator)")
        lines += _chunk_loop([*_load_x(facts, at, "mask", "0.0"), y, *store])
    else:
        lines.append("acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)")
        if facts.op == "layer_norm":
            lines += _chunk_loop([*_load_x(facts, at, "mask", "0.0"), *_store_sum(facts, at, "mask"), "acc += x"])
            lines += ["mean = tl.sum(acc, axis=0) / n_cols", "acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)"]
            lines += _chunk_loop([*_load_x(facts, at, "mask", "0.0"), "centered = tl.where(mask, x - mean, 0.0)",
                                  "acc += centered * centered"])
            normalized = ["y = (x - mean) * rstd"]
        else:
            lines += _chunk_loop([*_load_x(facts, at, "mask", "0.0"), *_store_sum(facts, at, "mask"), "acc += x * x"])
            normalized = ["y = x * rstd"]
        lines.append("rstd = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)")
        lines += _chunk_loop([*_load_x(facts, at, "mask", "0.0"), *normalized,
                              *_affine(facts, "cols", "mask", ""), *store])
    return _signature(facts, "BLOCK_SIZE: tl.constexpr") + indent("\n".join(lines)) + "\n"


def wrapper_source(facts: RowwiseFacts, params: dict[str, Any], looped: bool) -> str:
    """Host function `<op>(x, <operands>)`: flatten to rows, check, allocate, launch."""
    names = [name for name, _ in facts.operands()]
    lines = ["n_cols = x.shape[-1]",
             "x2 = x.reshape(-1, n_cols)",
             "if x2.stride(1) != 1:",
             "    x2 = x2.contiguous()",
             "n_rows = x2.shape[0]"]
    launch = []
    for name in names:
        if name == "residual":
            lines += ["if residual.shape != x.shape:",
                      '    raise ValueError(f"residual {tuple(residual.shape)} does not match x {tuple(x.shape)}")',
                      "residual2 = residual.reshape(-1, n_cols).contiguous()"]
            launch.append("residual2, residual2.stride(0)")
        elif name == "target":
            lines += ["if target.shape != (n_rows,):",
                      '    raise ValueError(f"target {tuple(target.shape)} does not match {n_rows} rows")']
            launch.append("target")
        else:
            launch.append(f"{name}.contiguous()")
    if facts.op == "cross_entropy":
        lines.append("losses = torch.empty(n_rows, device=x.device, dtype=torch.float32)")
        out = "losses"
    else:
        lines.append(f"y = torch.empty_like(x2, dtype=torch.{facts.out_dtype})")
        out = "y, y.stride(0)"
        if facts.sum_output:
            lines.append("residual_sum = torch.empty_like(x2)  # the forward returns x + residual too")
            out += ", residual_sum, residual_sum.stride(0)"
    rows_per_program = 1 if looped else params["ROWS_PER_PROGRAM"]
    sizes = "n_rows, n_cols, eps" if facts.op in ("layer_norm", "rms_norm") else "n_rows, n_cols"
    if facts.op in ("layer_norm", "rms_norm"):
        lines.insert(0, f"eps = {literal(facts.eps)}")
    tiles = dict(params)
    if facts.op == "cross_entropy":
        tiles = {**{k: v for k, v in params.items() if k.isupper()}, "IGNORE_INDEX": IGNORE_INDEX,
                 **{k: v for k, v in params.items() if not k.isupper()}}
    args = ",\n".join([out, "x2, x2.stride(0)", *launch, sizes, launch_keywords(tiles)])
    lines.append(f"_{facts.op}_kernel[(triton.cdiv(n_rows, {rows_per_program}),)](\n{indent(args)},\n)")
    if facts.op == "cross_entropy":
        lines += [f"counted = (target != {IGNORE_INDEX}).sum()  # rows not ignored, as F.cross_entropy averages",
                  f"return (losses.sum() / counted).to(torch.{facts.dtype})  # the reference's loss dtype"]
    elif facts.sum_output:
        pair = ["y.reshape(x.shape)", "residual_sum.reshape(x.shape)"]
        lines.append(f"return {', '.join(pair if facts.sum_output == 'second' else pair[::-1])}")
    else:
        lines.append("return y.reshape(x.shape)")
    doc = f'"""{facts.formula} over the last dim; one launch of `_{facts.op}_kernel`."""'
    return f"def {facts.op}({', '.join(['x', *names])}):\n    {doc}\n{indent(chr(10).join(lines))}\n"


def kernel_source(facts: RowwiseFacts, looped: bool) -> str:
    """The row-wise `@triton.jit` kernel, after the bf16 rounding helper when it calls it."""
    kernel = looped_kernel(facts) if looped else single_block_kernel(facts)
    return f"{ROUND_TO_BF16}\n\n{kernel}" if "_round_to_bfloat16(" in kernel else kernel


def row_points(facts: RowwiseFacts, looped: bool) -> list[dict[str, Any]]:
    """Block, rows-per-program and warp points for these rows, most promising first."""
    width = next_power_of_2(facts.cols)
    if looped:
        blocks = [b for b in (4096, 8192, 2048, 16384, 1024) if b < width] or [max(16, width // 2)]
        return dedupe([dict(BLOCK_SIZE=b, num_warps=w) for b in blocks for w in (8, 16, 4)])
    warps = 4 if width < 2048 else 8 if width < 8192 else 16
    rows = [r for r in (1, 2, 4, 8, 16) if r * width <= MAX_ELEMENTS_PER_PROGRAM
            and r <= next_power_of_2(facts.rows)] or [1]
    per_thread = {r: r * width // (warps * 32) for r in rows}
    rows.sort(key=lambda r: (per_thread[r] > ELEMENTS_PER_THREAD, -r if per_thread[r] <= ELEMENTS_PER_THREAD else r))
    return dedupe([dict(BLOCK_SIZE=width, ROWS_PER_PROGRAM=r, num_warps=w)
                   for r in rows for w in (warps, max(1, warps // 2), warps * 2)])


@dataclass(frozen=True)
class TritonRowwiseFamily(TemplateFacts):
    """Row-wise kernels, whole rows in registers or walked in chunks."""

    name: str
    """Registered family id."""
    looped: bool
    """Walk each row in BLOCK_SIZE chunks (one row per program) instead of holding it whole."""
    strategy: str = "memory"
    language: str = "triton"

    FACT_KEY: ClassVar[str] = "rowwise"
    PARSE: ClassVar = RowwiseFacts.parse

    def applies(self, analysis: TaskAnalysis) -> str | None:
        facts, reason = self.facts(analysis)
        if facts is None:
            return reason
        if self.looped and facts.cols < LOOPED_MIN_COLS:
            return f"rows of {facts.cols} fit one block; chunked rows are for n_cols >= {LOOPED_MIN_COLS}"
        if not self.looped and next_power_of_2(facts.cols) > MAX_SINGLE_BLOCK:
            return f"rows of {facts.cols} exceed one block ({MAX_SINGLE_BLOCK}); use the looped family"
        return None

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        facts, _ = self.facts(analysis)
        return row_points(facts, self.looped) if facts is not None else []

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        facts, reason = self.facts(analysis)
        if facts is None:
            raise ValueError(f"{self.name} cannot render: {reason}")
        body = f"{kernel_source(facts, self.looped)}\n\n{wrapper_source(facts, params, self.looped)}"
        reads = (2 if facts.residual else 1) * elem_bytes(facts.x_dtype)
        moved = facts.rows * facts.cols * (reads + (0 if facts.op == "cross_entropy" else elem_bytes(facts.out_dtype)))
        passes = {"softmax": 2, "log_softmax": 2, "layer_norm": 3, "rms_norm": 2, "cross_entropy": 1}[facts.op]
        shape = f"{facts.rows} rows x {facts.cols} cols {facts.x_dtype}"
        if facts.op != "cross_entropy" and facts.out_dtype != facts.x_dtype:
            shape += f" -> {facts.out_dtype}"
        how = (f"each row read {passes}x in chunks of {params['BLOCK_SIZE']}" if self.looped
               else f"{params['ROWS_PER_PROGRAM']} whole rows per program")
        doc = (f"Triton {facts.op}{' (residual add fused)' if facts.residual else ''}: {facts.formula}.\n\n"
               f"{shape}: {moved} bytes at least, no matmul FLOPs; {how}.\n"
               f"Point: {describe_params(params)}. Generated by kernelarc ({self.name}).")
        call = f"{facts.op}({', '.join([facts.x, *(ref for _, ref in facts.operands())])})"
        fused = "".join(f"+{row.step.op if row.step else 'cast'}" for row in facts.epilogue)
        text = f"Triton {facts.op}{fused}: {how}, fp32 statistics, one kernel instead of several passes through memory"
        return Move(family=self.name, params=dict(params), source=module_source(analysis, doc=doc, body=body,
                                                                                 call=call), claim=claim(text))


FAMILIES = tuple(register_family(f) for f in (
    TritonRowwiseFamily("triton_rowwise", looped=False),
    TritonRowwiseFamily("triton_rowwise_looped", looped=True),
))
"""The registered row-wise families."""

__all__ = ["FAMILIES", "MAX_SINGLE_BLOCK", "TritonRowwiseFamily", "kernel_source", "looped_kernel", "row_points",
           "single_block_kernel", "wrapper_source"]
