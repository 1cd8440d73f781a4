"""What the CUDA C++ move families share: C++ types of the task's dtypes, float literals, and pointwise
maths as C++ that compiles for the host and the device alike (so a family's serial CPU fallback and
its kernel apply the same expressions). Imports neither torch nor triton at import. Budget: 180 lines.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from kernelarc.agents.builtin.moves.base import TaskAnalysis
from kernelarc.agents.builtin.moves.extension_headers import CUDA_INCLUDES, HOST_INCLUDES
from kernelarc.agents.builtin.moves.triton_common import BINARY as TRITON_BINARY
from kernelarc.agents.builtin.moves.triton_common import UNARY as TRITON_UNARY
from kernelarc.agents.builtin.moves.triton_common import EpilogueStep
from kernelarc.agents.builtin.pytorch_source import pytorch_module
from kernelarc.task.model import TaskFormat

CPP_TYPES = {"float32": "float", "bfloat16": "at::BFloat16", "float16": "at::Half"}
TORCH_TYPES = {"float32": "at::kFloat", "bfloat16": "at::kBFloat16", "float16": "at::kHalf"}
UNARY = {
    "relu": "fmaxf({x}, 0.0f)",
    "gelu": "0.5f * {x} * (1.0f + erff({x} * 0.70710678118654752f))",
    "gelu_tanh": "0.5f * {x} * (1.0f + tanhf(0.79788456080286536f * ({x} + 0.044715f * {x} * {x} * {x})))",
    "silu": "{x} / (1.0f + expf(-{x}))",
    "sigmoid": "1.0f / (1.0f + expf(-{x}))",
    "tanh": "tanhf({x})",
    "exp": "expf({x})",
    "log": "logf({x})",
    "abs": "fabsf({x})",
    "neg": "(-{x})",
    "sqrt": "sqrtf({x})",
    "rsqrt": "(1.0f / sqrtf({x}))",
    "reciprocal": "(1.0f / {x})",
    "exp2": "exp2f({x})",
    "log2": "log2f({x})",
    "log1p": "log1pf({x})",
    "expm1": "expm1f({x})",
    "sin": "sinf({x})",
    "cos": "cosf({x})",
    "erf": "erff({x})",
    "floor": "floorf({x})",
    "ceil": "ceilf({x})",
    "sign": "(({x} > 0.0f) ? 1.0f : (({x} < 0.0f) ? -1.0f : 0.0f))",
    "hardsigmoid": "fminf(fmaxf({x} / 6.0f + 0.5f, 0.0f), 1.0f)",
    "hardswish": "({x} * fminf(fmaxf({x} + 3.0f, 0.0f), 6.0f) / 6.0f)",
    "selu": "(1.0507009873554805f * ({x} > 0.0f ? {x} : 1.6732632423543772f * (expf({x}) - 1.0f)))",
    "mish": "({x} * tanhf({x} > 20.0f ? {x} : log1pf(expf({x}))))",
}
"""Pointwise ops on the fp32 value `{x}`."""
BINARY = {"add": "{x} + {y}", "sub": "{x} - {y}", "mul": "{x} * {y}", "div": "{x} / {y}",
          "maximum": "fmaxf({x}, {y})", "minimum": "fminf({x}, {y})"}
assert UNARY.keys() == TRITON_UNARY.keys() and BINARY.keys() == TRITON_BINARY.keys()  # every parsed step has C++


def cpp_float(value: float) -> str:
    """A float literal of C++ (`1e-05f`); ValueError for inf and nan, which have none."""
    if not math.isfinite(value):
        raise ValueError(f"the constant {value!r} has no C++ literal")
    return f"{float(value)!r}f"


def rounded(name: str, dtype: str) -> str:
    """fp32 `name` rounded to `dtype` (to nearest even, as the GPU casts) and kept in fp32."""
    return f"static_cast<float>(static_cast<{CPP_TYPES[dtype]}>({name}))" if dtype != "float32" else name


def step_expression(step: EpilogueStep, x: str, operand: str | None = None) -> str:
    """The C++ value of `step` applied to the fp32 `x`; `operand` reads its tensor operand as fp32."""
    if step.op == "leaky_relu":
        return f"({x} >= 0.0f ? {x} : {x} * {cpp_float(step.negative_slope)})"
    if step.op in BINARY:
        return BINARY[step.op].format(x=x, y=operand if step.tensor else cpp_float(step.scalar))
    return UNARY[step.op].format(x=x)


def unreadable(inputs: list[tuple[str, str | None]]) -> str | None:
    """Why a kernel cannot read one of these (source expression, dtype) tensors, or None."""
    for ref, dtype in inputs:
        if dtype not in CPP_TYPES:
            return f"{ref} is {dtype or 'of an unknown dtype'}, which the kernel does not read"
    return None


def contiguous_inputs(inputs: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """For (name, dtype) pairs of a host function's `const at::Tensor& <name>_in` arguments: statements
    making each contiguous as `<name>` and checking its dtype, and each one's typed data pointer."""
    checks, pointers = [], []
    for name, dtype in inputs:
        checks += [f"const at::Tensor {name} = {name}_in.contiguous();",
                   f'TORCH_CHECK({name}.scalar_type() == {TORCH_TYPES[dtype]}, "{name}: expected {dtype}");']
        pointers.append(f"{name}.data_ptr<{CPP_TYPES[dtype]}>()")
    return checks, pointers


HOST_HEAD = f"{HOST_INCLUDES}#include <cmath>\n#define KA_FN\n"
"""The host translation unit's head: KA_FN marks the functions both builds compile (plain C++ here)."""
CUDA_HEAD = f"{CUDA_INCLUDES}#include <cmath>\n#define KA_FN __device__\n"
"""The nvcc translation unit's head."""


def extension_module(analysis: TaskAnalysis, *, family: str, doc: str, cpp: str, cuda: str, function: str,
                     args: list[str]) -> str:
    """A candidate module whose forward returns `function(*args)` of an extension it builds at import: the
    CUDA kernel (`cuda`) where torch sees a GPU, the host code (`cpp`) alone elsewhere. The build is named
    after the family and the sources' hash, both names literal: the guard's build cache keeps a
    candidate's builds by the names its source holds."""
    module = f"kernelarc_{family}_" + hashlib.sha256((cuda + cpp).encode()).hexdigest()[:12]
    helpers = f'''_CPP_SOURCE = r"""
{cpp}"""

_CUDA_SOURCE = r"""
{cuda}"""

_ON_GPU = torch.cuda.is_available()
_kernel = load_inline(
    name="{module}_cuda" if _ON_GPU else "{module}",
    cpp_sources=_CPP_SOURCE,
    cuda_sources=_CUDA_SOURCE if _ON_GPU else None,
    functions=["{function}"],
    extra_cflags=["-O2"] + (["-DKERNELARC_WITH_CUDA"] if _ON_GPU else []),
    extra_cuda_cflags=["-O3"],
    with_cuda=_ON_GPU,
    no_implicit_headers=True,
).{function}
'''
    return pytorch_module(analysis, doc=doc, body=f"return _kernel({', '.join(args)})", helpers=helpers,
                          imports="from torch.utils.cpp_extension import load_inline\n")


def gpu_reason() -> str | None:
    """None where torch sees a CUDA device and can build for it. Off the GPU a CUDA family's candidate is
    its serial C++ fallback (kept so that the file runs anywhere and CI checks its maths): a build of a
    minute for nothing."""
    import torch

    return nvcc_reason() if torch.cuda.is_available() else "a CUDA kernel: no CUDA device is visible"


def nvcc_reason() -> str | None:
    """None where torch's extension builder finds nvcc; without it every CUDA candidate is a failed build
    (a GPU machine with torch's wheels but no CUDA toolkit)."""
    from torch.utils import cpp_extension

    home = cpp_extension.CUDA_HOME
    if home is None or not (Path(home) / "bin" / "nvcc").is_file():
        return "a CUDA kernel: torch finds no nvcc (install the CUDA toolkit, or set CUDA_HOME to it)"
    return None


class OneKernelFamily:
    """What the families whose candidate is the whole forward as one CUDA kernel launched from C++ share:
    their place in the catalogue and the search, and where they apply. A subclass reads its `facts`."""

    strategy = "fusion"
    language = "cuda_cpp"
    slow_to_judge = True
    """A build takes 8-9 s on a 2-core CPU with the headers it names (extension_headers.py), where a
    Triton candidate's first call takes 1-2 s: except on launch-bound tasks (`one_launch`), the search
    tries cheaper families first."""
    one_launch = True
    """The whole forward is this one kernel: on a launch-bound task the search tries it first."""

    def facts(self, analysis: TaskAnalysis) -> tuple[Any, str | None]:
        """(the family's facts about the task, None) or (None, why it cannot serve it)."""
        raise NotImplementedError

    def task_reason(self, analysis: TaskAnalysis) -> str | None:
        """Why the family skips the task before reading its facts; None: it does not."""
        return None

    def applies(self, analysis: TaskAnalysis) -> str | None:
        if analysis.task.format is not TaskFormat.KERNELBENCH:
            return "SOL-ExecBench refuses C++ builds inside Python solutions"
        return self.task_reason(analysis) or self.facts(analysis)[1] or gpu_reason()


def indent(text: str, level: int = 1) -> str:
    """`text` indented by `level` C++ levels of four spaces, blank lines left blank."""
    return "\n".join(("    " * level + line) if line else line for line in text.splitlines())


__all__ = ["BINARY", "CPP_TYPES", "CUDA_HEAD", "HOST_HEAD", "TORCH_TYPES", "UNARY", "OneKernelFamily",
           "contiguous_inputs", "cpp_float", "extension_module", "gpu_reason", "indent", "nvcc_reason", "rounded",
           "step_expression", "unreadable"]
