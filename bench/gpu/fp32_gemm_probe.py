"""Can an fp32 GEMM beat cuBLAS's fp32 SGEMM on tensor cores and still pass an fp32 tolerance?

    python bench/gpu/fp32_gemm_probe.py OUT.json

PyTorch's default fp32 matmul (`allow_tf32=False`) runs cuBLAS on the CUDA cores. Triton's `tl.dot` with
`input_precision="tf32x3"` splits each operand into a tf32 high part and a tf32 remainder and sums three
tensor-core products (big*big + big*small + small*big), which keeps about fp32's accuracy. For each shape
(those of KernelBench's fp32 GEMM problems and a square one) this times torch.mm and one Triton kernel per
(precision, tile: all of TILES for tf32x3, the first two for the others) with `triton.testing.do_bench` (median over its repetitions, the L2 cleared before each),
and measures each result's error against a float64 product on rand (all-positive) and randn inputs: the
largest relative error over elements whose magnitude is above the median, and whether it passes
`torch.allclose(atol=1e-4, rtol=1e-4)` against cuBLAS's fp32 result (KernelBench's fp32 tolerance).
"""

from __future__ import annotations

import json
import sys

import torch
import triton
import triton.language as tl

SHAPES = {  # name: (M, N, K)
    "square_4096": (4096, 4096, 4096),
    "kb_l1_10_3d_tensor_matrix": (16 * 1024, 768, 2048),
    "kb_l1_18_transposed_both": (2048, 4096, 8192),
    "kb_l2_14_gemm_8192": (1024, 8192, 8192),
    "kb_l2_56_wide_128": (128, 32768, 32768),
}
TILES = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages
    (128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (128, 128, 64, 8, 3), (64, 128, 32, 4, 4), (256, 128, 32, 8, 3),
]
PRECISIONS = ("ieee", "tf32", "tf32x3")


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr):
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    group = 8 * num_n
    first_m = (pid // group) * 8
    size_m = tl.minimum(tl.cdiv(M, BM) - first_m, 8)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.)
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.)
        acc = tl.dot(a, b, acc, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_mm(a, b, tile, precision):
    bm, bn, bk, warps, stages = tile
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    _mm[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
              BM=bm, BN=bn, BK=bk, PREC=precision, num_warps=warps, num_stages=stages)
    return c


def errors(out, exact, cublas):
    big = exact.abs() >= exact.abs().median()
    rel = ((out.double() - exact).abs() / exact.abs().clamp_min(1e-30))[big].max().item()
    return {"max_rel_err_upper_half": rel, "allclose_1e-4_vs_cublas": bool(torch.allclose(out, cublas, 1e-4, 1e-4))}


def probe(name, m, n, k):
    rows = []
    torch.backends.cuda.matmul.allow_tf32 = False
    for dist in ("rand", "randn"):
        gen = torch.rand if dist == "rand" else torch.randn
        a, b = gen(m, k, device="cuda"), gen(k, n, device="cuda")
        exact = a.double() @ b.double()
        cublas = a @ b
        row = {"shape": name, "M": m, "N": n, "K": k, "inputs": dist}
        if dist == "rand":
            ms = triton.testing.do_bench(lambda: a @ b)
            rows.append({**row, "impl": "cublas_fp32", "ms": ms, "tflops": 2 * m * n * k / ms / 1e9,
                         **errors(cublas, exact, cublas)})
        for precision in PRECISIONS:
            for tile in TILES if precision == "tf32x3" else TILES[:2]:
                try:
                    out = triton_mm(a, b, tile, precision)
                    torch.cuda.synchronize()
                except Exception as e:  # a tile that does not fit: said, not fatal
                    rows.append({**row, "impl": f"triton_{precision}", "tile": tile, "error": str(e)[:200]})
                    continue
                entry = {**row, "impl": f"triton_{precision}", "tile": tile, **errors(out, exact, cublas)}
                if dist == "rand":
                    ms = triton.testing.do_bench(lambda: triton_mm(a, b, tile, precision))
                    entry.update(ms=ms, tflops=2 * m * n * k / ms / 1e9)
                rows.append(entry)
        del a, b, exact, cublas
        torch.cuda.empty_cache()
    return rows


def conv_tf32_note():
    """cuDNN convolutions run tf32 by default (`torch.backends.cudnn.allow_tf32`): how far is that from fp32?"""
    torch.manual_seed(0)
    conv = torch.nn.ConvTranspose2d(64, 64, 3, stride=1, padding=1).cuda()
    x = torch.rand(128, 64, 128, 128, device="cuda")
    with torch.no_grad():
        torch.backends.cudnn.allow_tf32 = True
        tf32 = conv(x)
        torch.backends.cudnn.allow_tf32 = False
        fp32 = conv(x)
        torch.backends.cudnn.allow_tf32 = True
    return {"default_cudnn_allow_tf32": True, "max_abs_diff": (tf32 - fp32).abs().max().item(),
            "allclose_1e-4": bool(torch.allclose(tf32, fp32, 1e-4, 1e-4)),
            "share_outside_1e-4": ((tf32 - fp32).abs() > 1e-4 + 1e-4 * fp32.abs()).float().mean().item()}


def main(path):
    result = {"card": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "rows": []}
    for name, (m, n, k) in SHAPES.items():
        result["rows"] += probe(name, m, n, k)
        print(name, "done", flush=True)
    result["conv_tf32"] = conv_tf32_note()
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    for r in result["rows"]:
        if "ms" in r:
            print(f"{r['shape']:28} {r['impl']:14} {str(r.get('tile', '')):24} {r['ms']:.3f} ms {r['tflops']:.0f} TF/s"
                  f" rel {r['max_rel_err_upper_half']:.1e} ok {r['allclose_1e-4_vs_cublas']}")
        elif "error" not in r:
            print(f"{r['shape']:28} {r['impl']:14} {str(r.get('tile', '')):24} randn rel {r['max_rel_err_upper_half']:.1e}"
                  f" ok {r['allclose_1e-4_vs_cublas']}")
    print(result["conv_tf32"])


if __name__ == "__main__":
    main(sys.argv[1])
