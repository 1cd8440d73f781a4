"""Page-locked mailboxes for CUDA sides: tensors cross between the card and a side's mailbox by DMA.

A pageable mapping makes the driver stage every copy through its own pinned buffers: on the H200 the
5 correctness calls and 4 audits of an 8192 x 8192 fp32 softmax moved 256 MiB each through the
mailboxes at 2.5-3.5 GB/s, about 1.2 s of a 4.8 s evaluation (docs/benchmarks.md, session 24).

Through the CUDA driver (libcuda's cuMemHostRegister), not torch's runtime binding of cudaHostRegister:
a failed runtime call leaves its error to the runtime's next check, which would raise it inside the
candidate's first kernel launch. A registration that fails leaves the mapping pageable: slower, as correct.
Imports without torch.
"""

from __future__ import annotations

import ctypes
import functools

PORTABLE = 0x01
"""CU_MEMHOSTREGISTER_PORTABLE: pinned for every context of the process, not only the current one."""


@functools.lru_cache(maxsize=1)
def _driver():
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    register, unregister = lib.cuMemHostRegister_v2, lib.cuMemHostUnregister
    register.argtypes, register.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint], ctypes.c_int
    unregister.argtypes, unregister.restype = [ctypes.c_void_p], ctypes.c_int
    return register, unregister


def pin(address: int, size: int) -> bool:
    """Page-lock `size` bytes at `address` for the GPU; False where the driver is absent or refuses."""
    driver = _driver()
    return driver is not None and driver[0](address, size, PORTABLE) == 0


def unpin(address: int) -> None:
    """Undo `pin` (before the memory is unmapped)."""
    driver = _driver()
    if driver is not None:
        driver[1](address)


__all__ = ["pin", "unpin"]
