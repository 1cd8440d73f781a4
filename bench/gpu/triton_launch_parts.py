"""Where Triton 3.6's launch path spends host time, in us per call (one process, no guard).

    python3 bench/gpu/triton_launch_parts.py OUT.json

Times, on a 256x256 level1-12 region kernel of 14 arguments (bench/gpu/candidates/diag_mul_regions_cached.py):
the whole `kernel[grid](...)`, and each step of JITFunction.run alone (the binder's specialization, the
cache key, the launch metadata, the compiled kernel's own launcher), next to torch.empty and eager's
multiply. Reaches into Triton's internals (`device_caches`, `CompiledKernel.run`): a probe, not a tool.
"""
import json, sys, time
import torch, triton, triton.language as tl
from triton.runtime.jit import compute_cache_key
from triton.runtime.driver import driver
from triton import knobs
sys.path.insert(0, "bench/gpu/candidates")
import diag_mul_regions_cached as gen_min

A = torch.rand(256, device="cuda"); B = torch.rand(256, 256, device="cuda")
fn = gen_min._pointwise_region_0
shape = (256, 256)
out = torch.empty(shape, device="cuda")
a = A.unsqueeze(1).expand(shape)
args = (out, a, B, 65536, 256, 256, *a.stride(), *B.stride())
kw = dict(IN_V_UNSQUEEZE_FLAT=False, IN_B_FLAT=True, INDEX_64=False, BLOCK_SIZE=1024, num_warps=4)
grid = (64,)
k = fn[grid](*args, **kw)
torch.cuda.synchronize()
dev = driver.active.get_current_device()
kernel_cache, kernel_key_cache, target, backend, binder = fn.device_caches[dev]

def t(name, f, n=5000):
    for _ in range(50): f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n): f()
    torch.cuda.synchronize()
    res[name] = (time.perf_counter() - t0) * 1e6 / n

res = {}
kw2 = dict(kw); kw2["debug"] = False; kw2["instrumentation_mode"] = knobs.compilation.instrumentation_mode
bound, spec, opts = binder(*args, **kw2)
vals = tuple(bound.values())
stream = driver.active.get_current_stream(dev)
lm = k.launch_metadata(grid, stream, *vals)
t("full launch fn[grid](...)", lambda: fn[grid](*args, **kw))
t("fn.run(grid=...)", lambda: fn.run(*args, grid=grid, warmup=False, **kw))
t("device+stream", lambda: (driver.active.get_current_device(), driver.active.get_current_stream(dev)))
t("binder", lambda: binder(*args, **kw2))
t("compute_cache_key", lambda: compute_cache_key(kernel_key_cache, spec, opts))
t("launch_metadata", lambda: k.launch_metadata(grid, stream, *vals))
t("kernel.run direct", lambda: k.run(64, 1, 1, stream, k.function, k.packed_metadata, lm,
                                     knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *vals))
t("kernel.run direct + stream", lambda: k.run(64, 1, 1, torch.cuda.current_stream().cuda_stream, k.function, k.packed_metadata, None,
                                     None, None, *vals))
t("torch.empty", lambda: torch.empty(shape, device="cuda"))
t("eager mul", lambda: A.unsqueeze(1) * B)
ok = torch.allclose(out, A[:, None] * B)
res["direct_output_correct"] = bool(ok)
res["n_bound"] = len(vals)
print(json.dumps(res, indent=1))
json.dump(res, open(sys.argv[1], "w"), indent=1)
