"""Run task source (a KernelBench file, a SOL-ExecBench `reference`) as a fresh module, and
normalise what its entry point returns into a list of outputs.

The source is registered with `linecache` under its file name, so `inspect.getsource` works on its
functions even when the text came from definition.json (Triton's `@triton.jit` needs that), and the
module is entered in `sys.modules` under a unique name, so dataclasses and pickling inside it work.
Each call gives a new module: state never leaks from one load to the next. Imports without torch.
"""

from __future__ import annotations

import itertools
import linecache
import sys
import types

_counter = itertools.count()


def load_module(source: str, filename: str, stem: str = "task") -> types.ModuleType:
    """Execute `source` as a new module whose code reports `filename`; exceptions propagate."""
    name = f"_kernelarc_{''.join(c if c.isalnum() else '_' for c in stem)}_{next(_counter)}"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def output_list(result: object) -> list:
    """A result as a list of outputs: a tuple or list as is, anything else (a tensor) as one output."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


__all__ = ["load_module", "output_list"]
