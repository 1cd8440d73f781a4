"""Convolution nodes of a lowered graph (`aten.convolution`) as one generated Triton kernel each.

One template serves 1-D, 2-D and 3-D, forward and transposed, with any stride, padding, dilation,
groups, output padding and an optional bias: the host views every operand with three spatial dims
(missing ones of size 1), so the kernel never knows the rank. Gather form: a program owns a block of
flattened output elements and sums, in fp32 tiles of BLOCK_R, over the input channels of their group
and the kernel window; a transposed convolution reads input position (o + pad - k * dil) / stride
where that divides evenly and lies in range, so nothing is scattered and no atomics are needed.
Used by triton_lowered_regions. Imports neither torch nor triton. Budget: 180 lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves.base import OpNode, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, jit_kernel, launch

CONV = "aten.convolution"
CONV_DTYPES = frozenset({"float32", "float16", "bfloat16"})


@dataclass(frozen=True)
class Conv:
    node: OpNode
    x: str
    w: str
    bias: str | None
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    transposed: bool
    output_padding: tuple[int, ...]
    groups: int

    @property
    def kernel(self) -> str:
        return f"_conv_{self.node.name}"

    @property
    def call(self) -> str:
        return f"{self.kernel}_call({self.x}, {self.w}, {self.bias or 'None'})"


def int_tuple(value: Any, rank: int) -> tuple[int, ...] | None:
    """`value` as `rank` ints (one int repeated), or None when it is anything else."""
    ints = [value] if isinstance(value, int) else value if isinstance(value, (list, tuple)) else [None]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints) or len(ints) not in (1, rank):
        return None
    return tuple(ints) * rank if len(ints) == 1 else tuple(ints)


def find_convs(analysis: TaskAnalysis) -> list[Conv]:
    """The convolutions whose input and weight are tensors of the node's (float) dtype."""
    values = analysis.typed_refs()
    found = []
    for node in analysis.nodes:
        if node.target != CONV or node.dtype not in CONV_DTYPES or len(node.args) < 9 or node.shape is None:
            continue
        x, w, bias, stride, padding, dilation, transposed, output_padding, groups = node.args[:9]
        rank = len(node.shape) - 2
        if not (isinstance(x, str) and isinstance(w, str) and 1 <= rank <= 3):
            continue
        if not all(values.get(r, (None, None))[1] == node.dtype for r in (x, w)):
            continue
        if bias is not None and not (isinstance(bias, str) and values.get(bias, (None, None))[0] is not None):
            continue
        geometry = [int_tuple(v, rank) for v in (stride, padding, dilation, output_padding)]
        if any(g is None for g in geometry) or not isinstance(groups, int) or not isinstance(transposed, bool):
            continue
        found.append(Conv(node, x, w, bias, *geometry[:3], transposed, geometry[3], groups))
    return found


def kernel_source(c: Conv) -> str:
    """Index maths for the real spatial dims only, bounds checks only where a tap can leave the input;
    int64 throughout (no overflow, none of the interpreter's int32 overflow checks)."""
    dims = [("d", 2), ("h", 3), ("w", 4)][3 - len(c.stride):]
    split, hoist, ksplit, checks = [], [], [], []
    for (d, s), stride, pad in reversed(list(zip(dims, c.stride, c.padding))):
        D = d.upper()
        split += [f"o{d} = t % O{D}", f"t = t // O{D}"]
        ksplit += [f"k{d} = q % K{D}", f"q = q // K{D}"]
        if c.transposed:  # input position i where i * stride == o + pad - k * dil
            hoist.append(f"b{d} = o{d} + P{D}")
            checks += [f"t{d} = b{d}[:, None] - (k{d} * D{D})[None, :]", f"ok = ok & (t{d} >= 0)"]
            checks += [f"ok = ok & (t{d} % S{D} == 0)", f"i{d} = t{d} // S{D}"] if stride > 1 else [f"i{d} = t{d}"]
            checks += [f"ok = ok & (i{d} < I{D})", f"x_off += i{d} * s_x{s}"]
        else:
            hoist += [f"b{d} = o{d} * S{D} - P{D}", f"x_base += b{d} * s_x{s}"]
            ksplit.append(f"x_tap += k{d} * (D{D} * s_x{s})")
            if pad:
                checks += [f"i{d} = b{d}[:, None] + (k{d} * D{D})[None, :]", f"ok = ok & (i{d} >= 0) & (i{d} < I{D})"]
    w_col = "cn * s_w1 + grp * (CIN_G * s_w0)" if c.transposed else "co * s_w0"
    w_tap = "ci * s_w0" if c.transposed else "ci * s_w1"
    window = " * ".join(["CIN_G", *(f"K{d.upper()}" for d, _ in dims)])
    body = f"""pos = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
cn = tl.program_id(1).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
grp = tl.program_id(2).to(tl.int64)
m_ok = pos < n_pos
n_ok = cn < COUT_G
co = grp * COUT_G + cn
t = pos
{chr(10).join(split)}
n = t
x_base = n * s_x0 + grp * (CIN_G * s_x1)
{chr(10).join(hoist)}
w_col = {w_col}
rr = tl.arange(0, BLOCK_K).to(tl.int64)
acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
for r0 in range(0, {window}, BLOCK_K):
    r = r0 + rr
    r_ok = r < {window}
    q = r
    x_tap = tl.zeros_like(r)
{indent(chr(10).join(ksplit))}
    ci = q
    x_tap += ci * s_x1
    ok = m_ok[:, None] & r_ok[None, :]
    x_off = x_base[:, None] + x_tap[None, :]
{indent(chr(10).join(checks))}
    w_tap = {w_tap}{"".join(f" + k{d} * s_w{s}" for d, s in dims)}
    x = tl.load(x_ptr + x_off, mask=ok, other=0.0)
    w = tl.load(w_ptr + w_tap[:, None] + w_col[None, :], mask=r_ok[:, None] & n_ok[None, :], other=0.0)
    if IEEE:
        acc += tl.dot(x, w, input_precision="ieee")
    else:
        acc += tl.dot(x, w)
if HAS_BIAS:
    acc += tl.load(b_ptr + co, mask=n_ok, other=0.0).to(tl.float32)[None, :]
spatial = pos - n * (OD * OH * OW)
out_off = (n * C_OUT * OD * OH * OW + spatial)[:, None] + (co * (OD * OH * OW))[None, :]
tl.store(out_ptr + out_off, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])"""
    args = ["out_ptr, x_ptr, w_ptr, b_ptr,", "n_pos, C_OUT, ID, IH, IW, OD, OH, OW,",
            "s_x0, s_x1, s_x2, s_x3, s_x4, s_w0, s_w1, s_w2, s_w3, s_w4,",
            "CIN_G: tl.constexpr, COUT_G: tl.constexpr, KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,",
            "SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PD: tl.constexpr, PH: tl.constexpr,",
            "PW: tl.constexpr, DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,",
            "HAS_BIAS: tl.constexpr, IEEE: tl.constexpr,",
            "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,"]
    kind = "transposed convolution" if c.transposed else "convolution"
    return jit_kernel(c.kernel, args, f"{kind} of the forward: output positions x channels of a group.", body)


def wrapper_source(c: Conv, params: dict[str, Any]) -> str:
    """Host function: operands viewed with three spatial dims, the output size from the node's geometry."""
    pad = 3 - len(c.stride)
    stride, padding, dilation = ((1,) * pad + c.stride, (0,) * pad + c.padding, (1,) * pad + c.dilation)
    extra = (0,) * pad + c.output_padding
    size = ("(i - 1) * s - 2 * p + d * (k - 1) + e + 1" if c.transposed
            else "(i + 2 * p - d * (k - 1) - 1) // s + 1")
    c_out = f"w.shape[1] * {c.groups}" if c.transposed else "w.shape[0]"
    bm, bk = params["conv_m"], params["conv_k"]
    lines = ["x5, w5 = x, w", f"for _ in range({pad}):", "    x5, w5 = x5.unsqueeze(2), w5.unsqueeze(2)",
             f"c_out = {c_out}",
             f"spatial = [{size} for i, k, s, p, d, e in zip(x5.shape[2:], w5.shape[2:], {stride}, {padding}, "
             f"{dilation}, {extra})]",
             f"out = torch.empty(x.shape[0], c_out, *spatial, device=x.device, dtype=torch.{c.node.dtype})",
             f"cin_g, cout_g = x.shape[1] // {c.groups}, c_out // {c.groups}",
             "n_pos = out.numel() // max(c_out, 1)",
             f"block_n = min(max(triton.next_power_of_2(cout_g), 16), {params['conv_n']})  # tl.dot's least is 16",
             f"grid = (triton.cdiv(n_pos, {bm}), triton.cdiv(cout_g, block_n), {c.groups})",
             "if out.numel():",
             indent(launch(c.kernel, "grid", [
                 "out, x5, w5, out if bias is None else bias", "n_pos, c_out, *x5.shape[2:], *spatial",
                 "*x5.stride(), *w5.stride()", "CIN_G=cin_g, COUT_G=cout_g, KD=w5.shape[2], KH=w5.shape[3], "
                 "KW=w5.shape[4]", "SD={}, SH={}, SW={}, PD={}, PH={}, PW={}, DD={}, DH={}, DW={}".format(
                     *stride, *padding, *dilation),
                 "HAS_BIAS=bias is not None, IEEE=x.dtype == torch.float32",
                 f"BLOCK_M={bm}, BLOCK_N=block_n, BLOCK_K={bk}, num_warps={params['num_warps']}"])),
             f"return out.reshape(out.shape[:2] + out.shape[{2 + pad}:])"]
    return (f"def {c.kernel}_call(x, w, bias):\n    \"\"\"{c.node.target} as one kernel launch.\"\"\"\n"
            f"{indent(chr(10).join(lines))}\n")


__all__ = ["CONV", "Conv", "find_convs", "int_tuple", "kernel_source", "wrapper_source"]
