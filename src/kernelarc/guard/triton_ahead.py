"""Triton kernels compiled for a GPU in a side that has none (Judge.prebuild), so that the candidate's GPU side
finds them in its Triton cache instead of compiling them while it holds the device lock.

On an H100 (2026-12-06, docs/benchmarks.md session 30) a Triton candidate's first call, its kernels' JIT
compilation and ptxas, took 1.2-3.5 s of lock time, about half of what judging it cost beyond that. Compiling
needs no GPU: only the target (the compute capability the judge names) and each launch's specialization
(argument dtypes, pointers' 16-byte alignment, integers equal to 1 or divisible by 16, constexprs), which CPU
tensors of the same shapes share with CUDA ones (both allocators align to more than 16 bytes). So here the
candidate's forward runs on CPU inputs of every workload with each Triton launch made a compilation only
(`JITFunction.run` with `warmup=True`, Triton's own compile-without-launch), and an autotuner compiles every
configuration it would time instead of timing them (the timing stays under the lock, in the GPU side).

Triton also builds C modules with the host's compiler for each GPU process (`cuda_utils`) and each kernel
signature (its launcher), into the same cache; they link against the GPU's driver library, which a GPU-less
side may still find on the host (nothing here needs a GPU to run). Where it does, they are built here too;
where not, the GPU side builds them as before.

What lands in the side's Triton cache is kept under the candidate's hash and copied into its GPU sides only
(guard/build_cache.py). A launch specialized otherwise there (a pointer aligned differently, a kernel the CPU
path never reached, code that asks the CPU side for CUDA) compiles there, as before: this saves time and
decides nothing. Runs in the side process only.
"""

from __future__ import annotations


def compile_ahead(capability: str) -> None:
    """From now on in this process, Triton launches compile for CUDA compute capability `capability` ("9.0")
    and launch nothing; autotuners compile each configuration and time none."""
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase
    from triton.runtime import driver
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    major, minor = (int(part) for part in capability.split("."))
    target = GPUTarget("cuda", major * 10 + minor, 32)

    class AheadDriver(DriverBase):
        """Triton's view of a GPU that is not there: its target, a device 0 and a null stream."""

        @classmethod
        def is_active(cls):
            return False

        def map_python_to_cpp_type(self, ty: str) -> str:
            return ty

        def get_current_target(self):
            return target

        def get_active_torch_device(self):
            return torch.device("cpu")

        def get_current_device(self) -> int:
            return 0

        def get_current_stream(self, device=None) -> int:
            return 0

        def get_benchmarker(self):
            raise RuntimeError("nothing is timed in a side that compiles ahead")

    try:
        from triton.backends.nvidia.driver import CudaLauncher, CudaUtils
    except ImportError:  # another Triton's layout: the GPU side builds its host modules itself
        CudaLauncher = CudaUtils = None
    launch = JITFunction.run
    launchers: set[str] = set()

    def compile_only(self, *args, grid, warmup, **kwargs):
        kernel = launch(self, *args, grid=grid, warmup=True, **kwargs)
        if kernel is not None and CudaLauncher is not None and kernel.hash not in launchers:
            launchers.add(kernel.hash)
            _build_host_module(lambda: CudaLauncher(kernel.src, kernel.metadata))
        return kernel

    def compile_every_config(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        try:
            for config in self.prune_configs(kwargs):
                self.fn.run(*args, **kwargs, **config.all_kwargs())
        finally:
            self.nargs = None

    driver.set_active(AheadDriver())
    JITFunction.run = compile_only
    Autotuner.run = compile_every_config
    if CudaUtils is not None:
        _build_host_module(CudaUtils)


def _build_host_module(build) -> None:
    """Build one of Triton's host modules into its cache, if this side can (see the module's docstring)."""
    try:
        build()
    except Exception:  # noqa: BLE001 - no driver library here, or another Triton: the GPU side builds it
        pass


__all__ = ["compile_ahead"]
