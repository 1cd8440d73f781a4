"""What `kernelarc model` optimizes: TARGET (a KernelBench-style file or `pkg.module:factory`), the
input shapes and dtype of the run, written as one self-contained KernelBench file for the whole model.

That file is the model's task: the profile builds the model from it in this process (the user's own
code, with hooks on its modules), and the guard judges the patched model against it in its sides,
like any candidate against any reference. A factory target is imported from where it was found, so
it must be importable inside the guard's sandbox too (an installed package, not a hidden home dir).
Budget: about 150 lines.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from kernelarc.errors import UserError

DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16", "half": "float16",
          "fp32": "float32", "float32": "float32", "float": "float32", "fp64": "float64", "float64": "float64",
          "int64": "int64", "long": "int64", "int32": "int32", "int": "int32", "bool": "bool"}
"""`--dtype` and `--input-shapes` dtype names -> torch dtype names."""
FLOAT_DTYPES = {"bfloat16", "float16", "float32", "float64"}
DEFAULT_INT_HIGH = 100
"""Integer inputs are drawn from [0, HIGH); `SHAPE:int64:HIGH` sets HIGH (a vocabulary size)."""


class TargetError(UserError):
    """TARGET, `--input-shapes` or `--dtype` cannot be used (the message says which and why)."""


@dataclass(frozen=True)
class InputShape:
    """One input of `--input-shapes`: `4x2048`, `4x2048:bf16` or `4x2048:int64:32000`."""

    shape: tuple[int, ...]
    dtype: str | None = None
    """torch dtype name; None: `--dtype` for a factory, the file's own dtype for a file."""
    high: int = DEFAULT_INT_HIGH


@dataclass(frozen=True)
class Target:
    """The whole model as a KernelBench source, and its name."""

    name: str
    source: str


def parse_dtype(text: str | None, option: str = "--dtype") -> str | None:
    """A dtype name of the command line as a torch dtype name (None stays None)."""
    if text is None:
        return None
    if text.lower() not in DTYPES:
        raise TargetError(f"{option}: unknown dtype {text!r}; use one of {', '.join(sorted(DTYPES))}")
    return DTYPES[text.lower()]


def parse_input_shapes(text: str | None) -> list[InputShape] | None:
    """`--input-shapes 4x2048:int64:32000,4x2048x4096`: one item per input, in call order."""
    if text is None:
        return None
    shapes = []
    for item in (part.strip() for part in text.split(",")):
        dims, _, rest = item.partition(":")
        dtype_text, _, high = rest.partition(":")
        if not re.fullmatch(r"\d+(x\d+)*", dims) or (high and not high.isdigit()):
            raise TargetError(f"--input-shapes: cannot read {item!r}; write DIMS[:DTYPE[:HIGH]], e.g. 4x2048x4096 "
                              "or 4x2048:int64:32000, inputs separated by commas")
        dtype = parse_dtype(dtype_text, "--input-shapes") if dtype_text else None
        shapes.append(InputShape(tuple(int(d) for d in dims.split("x")), dtype,
                                 int(high) if high else DEFAULT_INT_HIGH))
    return shapes


def _input_expr(spec: InputShape, dtype: str) -> str:
    if dtype in FLOAT_DTYPES:
        return f"torch.randn({spec.shape}, dtype=torch.{dtype})"
    if dtype == "bool":
        return f"torch.rand({spec.shape}) < 0.5"
    return f"torch.randint(0, {spec.high}, {spec.shape}, dtype=torch.{dtype})"


def _inputs_block(shapes: list[InputShape], dtype: str | None) -> str:
    exprs = [_input_expr(s, s.dtype or dtype or "float32") for s in shapes]
    return "def get_inputs():\n    return [" + ", ".join(exprs) + "]\n"


def _file_target(path: Path, shapes: list[InputShape] | None, dtype: str | None) -> Target:
    if not path.is_file():
        raise TargetError(f"{path}: not found (TARGET is a .py file with Model, get_inputs, get_init_inputs, "
                          "or pkg.module:factory)")
    source = path.read_text()
    block = ""
    if dtype is not None:
        block += (f"\n\n# --- kernelarc model: the model in {dtype} ---\n_KernelarcModel = Model\n\n\n"
                  f"class Model(_KernelarcModel):\n    def __init__(self, *args):\n        super().__init__(*args)\n"
                  f"        self.to(torch.{dtype})\n")
    if shapes is not None:
        block += "\n\n# --- kernelarc model: this run's inputs ---\n" + _inputs_block(shapes, dtype)
    elif dtype is not None:
        block += ("\n\n# --- kernelarc model: floating inputs in the model's dtype ---\n_kernelarc_get_inputs = get_inputs\n"
                  "\n\ndef get_inputs():\n    return [x.to(torch." + dtype + ") if isinstance(x, torch.Tensor) and "
                  "x.is_floating_point() else x for x in _kernelarc_get_inputs()]\n")
    header = "" if re.search(r"^import torch$", source, re.M) else "import torch\n"
    return Target(name=path.stem, source=header + source + block)


def _factory_target(spec: str, shapes: list[InputShape] | None, dtype: str | None) -> Target:
    module_name, _, factory = spec.partition(":")
    if not factory.isidentifier():
        raise TargetError(f"{spec}: write pkg.module:factory (factory() returns the nn.Module)")
    if shapes is None:
        raise TargetError(f"{spec}: a factory target needs --input-shapes (it has no get_inputs)")
    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError) as e:
        raise TargetError(f"{spec}: cannot import {module_name}: {e}") from None
    if found is None or found.origin is None:
        raise TargetError(f"{spec}: no module {module_name} on this Python's path")
    depth = module_name.count(".") + (1 if Path(found.origin).name == "__init__.py" else 0)
    root = Path(found.origin).resolve().parents[depth]
    cast = f"\n        self.model.to(torch.{dtype})" if dtype else ""
    source = (f'"""{spec} as a KernelBench task, written by kernelarc model."""\n\nimport sys\n\n'
              f"sys.path.insert(0, {str(root)!r})\n\nimport torch\nfrom {module_name} import {factory} as _factory\n\n\n"
              f"class Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              f"        self.model = _factory(){cast}\n\n    def forward(self, *args):\n        return self.model(*args)\n\n\n"
              + _inputs_block(shapes, dtype) + "\n\ndef get_init_inputs():\n    return []\n")
    return Target(name=re.sub(r"\W", "_", factory), source=source)


def load_target(spec: str, input_shapes: str | None = None, dtype: str | None = None) -> Target:
    """TARGET with this run's shapes and dtype, as a KernelBench source.

    Raises:
        TargetError: no such file or module, a bad `--input-shapes` or `--dtype`.
    """
    shapes, dtype = parse_input_shapes(input_shapes), parse_dtype(dtype)
    if spec.endswith(".py") or "/" in spec or Path(spec).is_file():
        return _file_target(Path(spec).resolve(), shapes, dtype)
    if ":" in spec:
        return _factory_target(spec, shapes, dtype)
    raise TargetError(f"{spec}: TARGET is a .py file (Model, get_inputs, get_init_inputs) or pkg.module:factory")


__all__ = ["InputShape", "Target", "TargetError", "load_target", "parse_dtype", "parse_input_shapes"]
