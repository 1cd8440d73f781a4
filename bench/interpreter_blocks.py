"""How the Triton interpreter's time on the CPU follows the number of programs, not the block width
(the measurement behind agents/builtin/search.py's `interpreter_order`).

    TRITON_INTERPRET=1 python bench/interpreter_blocks.py

Times one call (after one untimed call) of an elementwise kernel on 2^16 and 2^20 fp32 elements and
of a looped row sum, at several block sizes. CPU seconds of this machine: an order of cost on the
interpreter, never a GPU speed.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def elementwise(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0) * 1.5 + tl.sigmoid(x), mask=mask)


@triton.jit
def row_sum(x_ptr, y_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        acc += tl.load(x_ptr + row * N + start + offs, mask=start + offs < N, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, 0))


def _ms(launch) -> float:
    launch()
    t0 = time.perf_counter()
    launch()
    return (time.perf_counter() - t0) * 1000.0


def main() -> None:
    for numel in (1 << 16, 1 << 20):
        x = torch.randn(numel)
        y = torch.empty_like(x)
        for block in (256, 1024, 4096, 16384, 65536):
            grid = (triton.cdiv(numel, block),)
            ms = _ms(lambda: elementwise[grid](x, y, numel, BLOCK=block))
            print(f"elementwise {numel} elements, BLOCK={block}: {ms:.1f} ms ({grid[0]} programs)")
    for rows, cols in ((256, 4096), (4096, 256)):
        x = torch.randn(rows, cols)
        y = torch.empty(rows)
        for block in (64, 256, 1024, 4096):
            ms = _ms(lambda: row_sum[(rows,)](x, y, cols, BLOCK=block))
            print(f"row sum {rows}x{cols}, BLOCK={block}: {ms:.1f} ms ({rows} programs, {triton.cdiv(cols, block)} steps each)")


if __name__ == "__main__":
    main()
