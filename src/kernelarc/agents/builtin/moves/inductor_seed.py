"""The `inductor_seed` family: torch.compile's own kernels as a standalone candidate (issue 16 item 3).

Inductor's output module for the reference (agents/builtin/inductor_code.py generates it on the
campaign's device) becomes plain source: its Triton kernels written out as top-level functions (the
`@triton_heuristics` decorators kept, so they autotune at their first call as under torch.compile),
its C++ kernels (CPU) built through Inductor's own loader, its `call` renamed per code (one per input
pattern: sizes that vary between workloads are symbolic), and a forward that picks the `call` whose
pattern the inputs fit. What is dropped: the asynchronous compile pool, the benchmark harness, unused
imports. So the search starts at the compiler's level, without Dynamo's guards and wrappers on every
call (15-165 us per call on the H200, docs/benchmarks.md session 12), and the code is there to be read
and changed. Imports no torch. Budget: about 280 lines.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelarc.agents.builtin.inductor_code import TUNING, InductorCode, generate
from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import TRITON_IMPORTS, module_source
from kernelarc.agents.builtin.notation import point_text
from kernelarc.task.model import TaskFormat

_HARNESS_FUNCTIONS = {"get_args", "benchmark_compiled_module"}
"""Inductor's benchmark harness at the end of every output module."""
_DEVICE_INDEX_CALLS = {"_DeviceGuard", "set_device", "get_raw_stream"}
"""Calls whose literal device index is replaced by the current device (the code was generated on card 0
of a child that saw only the campaign's card)."""
_CPP_LOADER = "CppPythonBindingsCodeCache"

DISPATCH = '''def _fits(pattern, inputs):
    """Whether `inputs` fit the code generated for `pattern`: each tensor's dtype and sizes (a named size
    takes any value of 2 or more, the same wherever the name recurs), each other input's value."""
    if len(pattern) != len(inputs):
        return False
    sizes = {{}}
    for (kind, *spec), x in zip(pattern, inputs):
        if kind == "value":
            if type(x) is not type(spec[0]) or x != spec[0]:
                return False
        elif not isinstance(x, torch.Tensor) or str(x.dtype) != spec[1] or x.dim() != len(spec[0]):
            return False
        else:
            for want, got in zip(spec[0], x.shape):
                if isinstance(want, str) and (got < 2 or sizes.setdefault(want, got) != got):
                    return False  # symbolic code was generated for sizes of 2 or more, as Dynamo does
                if isinstance(want, int) and want != got:
                    return False
    return True


def _compiled_forward(weights, inputs):
    """Inductor's `call` for code whose pattern these inputs fit, given the weights then the tensor inputs."""
    call = next((call for pattern, call in _CALLS if _fits(pattern, inputs)), None)
    if call is None:
        raise ValueError(f"no compiled code for inputs {{[tuple(x.shape) if isinstance(x, torch.Tensor) else x for x in inputs]}}")
    outputs = call([*weights, *(x for x in inputs if isinstance(x, torch.Tensor))])
    return {result}
'''


def standalone(code: str, prefix: str) -> tuple[list[str], dict[str, str], list[str]]:
    """(imports, shared assignments by name, specialized statements) of one Inductor output module, as text.

    Specialized statements (kernels, the runner, `call`) get `prefix` on every top-level name they
    bind; shared ones (`aten = torch.ops.aten`, allocator aliases) bind the same text in every module.
    Statements keep Inductor's own layout (kernels stay readable); only names and device indices change.

    Raises:
        ValueError: a construct this does not know how to make standalone (another async compile kind).
    """
    imports: list[str] = []
    shared: dict[str, str] = {}
    specialized: list[tuple[str, ast.stmt]] = []
    for text, stmt in _statements(code):
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(ast.unparse(stmt))
        elif _is_harness(stmt):
            continue
        elif (kernel := _async_compile_call(stmt)) is not None:
            kind, call = kernel
            if kind == "triton":
                for part_text, part in _statements(ast.literal_eval(call.args[1])):
                    if isinstance(part, (ast.Import, ast.ImportFrom)):
                        imports.append(ast.unparse(part))
                    elif ast.unparse(part) != "triton_helpers.set_driver_to_gpu()":
                        specialized.append((part_text, part))  # that call only repeats the default
            elif kind == "cpp_pybinding":
                imports.append(f"from torch._inductor.codecache import {_CPP_LOADER}")
                specialized.append(_edited(text, [(call.func, f"{_CPP_LOADER}.load_pybinding")]))
            else:
                raise ValueError(f"Inductor's code compiles with async_compile.{kind}: not made standalone yet")
        elif "async_compile" in _names(stmt):
            raise ValueError(f"Inductor's code uses its compile pool in `{ast.unparse(stmt)[:80]}`")
        else:
            specialized.append((text, stmt))
    bound = {name for _, stmt in specialized for name in _binds(stmt)}
    for text, stmt in list(specialized):
        if isinstance(stmt, ast.Assign) and not isinstance(stmt.value, ast.Call) and not _names(stmt.value) & bound:
            specialized.remove((text, stmt))
            shared.update(dict.fromkeys(_binds(stmt), text))
    local = {name for _, stmt in specialized for name in _binds(stmt)}
    return imports, shared, [_localized(text, stmt, local, prefix) for text, stmt in specialized]


def module_body(code: InductorCode) -> str:
    """Every code as top-level source, then the `_CALLS` table of (input pattern, call) and `_compiled_forward`."""
    imports: list[str] = []
    shared: dict[str, str] = {}
    blocks, table = [], []
    for i, (signature, text) in enumerate(code.specializations):
        prefix = f"s{i}_"
        found, common, specialized = standalone(text, prefix)
        imports += [line for line in found if line not in imports]
        for name, assignment in common.items():
            if shared.setdefault(name, assignment) != assignment:
                raise ValueError(f"the specializations disagree on `{name}`")
        blocks.append(f"# --- Inductor's code for inputs {signature} ---\n" + "\n\n".join(specialized))
        table.append(f"    ({signature}, {prefix}call),")
    result = f"tuple(outputs[:{code.outputs}])" if code.returns_tuple else "outputs[0]"
    tail = f"_CALLS = [\n{chr(10).join(table)}\n]\n\n\n" + DISPATCH.format(result=result)
    used = _names(ast.parse("\n\n".join(blocks) + "\n" + tail))
    kept_shared = [text for name, text in shared.items() if name in used]
    used |= _names(ast.parse("\n".join(kept_shared))) | {"torch"}
    kept = [line for line in dict.fromkeys(imports) if line not in TRITON_IMPORTS.splitlines() and _imported(line) & used]
    return "\n\n\n".join(["\n".join(kept) + "\n\n" + "\n".join(kept_shared), *blocks, tail])


# --- source helpers ------------------------------------------------------------------------------

def _statements(code: str) -> list[tuple[str, ast.stmt]]:
    """Each top-level statement of `code` with its own text (decorators included), parsed again from that
    text so that positions are relative to it."""
    lines = code.splitlines()
    out = []
    for stmt in ast.parse(code).body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        text = "\n".join(lines[first - 1:stmt.end_lineno])
        out.append((text, ast.parse(text).body[0]))
    return out


def _edited(text: str, edits: list[tuple[ast.expr, str]]) -> tuple[str, ast.stmt]:
    """`text` with each node's span replaced (right to left, so earlier positions stay valid)."""
    lines = text.splitlines()
    for node, new in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        if node.lineno != node.end_lineno:
            raise ValueError("a renamed name spans lines")
        line = lines[node.lineno - 1]
        lines[node.lineno - 1] = line[:node.col_offset] + new + line[node.end_col_offset:]
    text = "\n".join(lines)
    return text, ast.parse(text).body[0]


def _localized(text: str, stmt: ast.stmt, names: set[str], prefix: str) -> str:
    """The statement with its module-level `names` prefixed and literal CUDA device indices made the
    current device's; a parameter named like a module-level name is refused."""
    edits: list[tuple[ast.expr, str]] = []
    current = "torch.cuda.current_device()"
    for node in ast.walk(stmt):
        if isinstance(node, ast.arg) and node.arg in names:
            raise ValueError(f"a parameter `{node.arg}` shadows a module-level name of Inductor's code")
        if isinstance(node, ast.Name) and node.id in names:
            edits.append((node, prefix + node.id))
        elif isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in _DEVICE_INDEX_CALLS and node.args and isinstance(node.args[0], ast.Constant):
                edits.append((node.args[0], current))
            if called == "DeviceProperties":
                edits += [(kw.value, current) for kw in node.keywords
                          if kw.arg == "index" and isinstance(kw.value, ast.Constant)]
    text, stmt = _edited(text, edits)
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and stmt.name in names:
        keyword = "class" if isinstance(stmt, ast.ClassDef) else "def"
        text = text.replace(f"{keyword} {stmt.name}", f"{keyword} {prefix}{stmt.name}", 1)
    return text


def _is_harness(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.FunctionDef) and stmt.name in _HARNESS_FUNCTIONS:
        return True
    if isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test):
        return True
    text = ast.unparse(stmt)
    return text in ("async_compile = AsyncCompile()", "del async_compile") or text.startswith("async_compile.wait(")


def _async_compile_call(stmt: ast.stmt) -> tuple[str, ast.Call] | None:
    if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute) and isinstance(stmt.value.func.value, ast.Name)
            and stmt.value.func.value.id == "async_compile"):
        return stmt.value.func.attr, stmt.value
    return None


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _binds(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, ast.Assign):
        return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _imported(line: str) -> set[str]:
    return {(a.asname or a.name).split(".")[0] for a in ast.parse(line).body[0].names}


# --- the family ----------------------------------------------------------------------------------

class InductorSeed:
    """torch.compile's code for the task, called directly."""

    name = "inductor_seed"
    strategy = "fusion"
    language = "triton"
    first_try = True
    """Its default point is the compiler's own result: the search starts there (issue 16 item 3)."""
    gpu_only = True
    """Off the GPU Inductor writes C++ that takes 10-40 s to build per candidate on a 2-core machine, where
    CPU campaigns have seconds per candidate; the CPU path exists for the tests, which render it directly."""

    def applies(self, analysis: TaskAnalysis) -> str | None:
        if analysis.device is None:
            return "no device known: Inductor's code is generated for the campaign's device"
        if analysis.capture_error:
            return f"the reference did not trace: {analysis.capture_error}"
        signature = _signature(analysis)
        if signature.vararg or signature.kwarg or signature.kwonlyargs:
            return "the forward takes *args, **kwargs or keyword-only inputs"
        return None

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        on_gpu = str(analysis.device).startswith("cuda")
        return [{"tuning": t} for t in TUNING if on_gpu or t == "default"]  # the rest tune Triton only

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        code = generate(analysis.task, str(analysis.device), params["tuning"])
        signature = _signature(analysis)
        names = [a.arg for a in signature.posonlyargs + signature.args if a.arg != "self"]
        inputs = ", ".join(names[:code.inputs])  # the ones the workloads pass, in the traced order
        weights = ("[t for _, t in self.named_parameters()] + [t for _, t in self.named_buffers()]"
                   if analysis.task.format is TaskFormat.KERNELBENCH else "[]")
        doc = (f"torch.compile's (Inductor's) code for {analysis.task.name}, generated on {analysis.device} "
               f"{point_text(self.name, params)}, called without Dynamo: {len(code.specializations)} code(s), "
               "each for the input pattern above it.")
        source = module_source(analysis, doc=doc, body=module_body(code),
                               call=f"_compiled_forward({weights}, ({inputs}{',' if inputs else ''}))")
        return Move(family=self.name, params=params, source=source,
                    claim=f"{point_text(self.name, params)} torch.compile's kernels called directly, "
                          "no Dynamo guards per call")


def _signature(analysis: TaskAnalysis) -> ast.arguments:
    """The forward's (KernelBench) or `run`'s (SOL) parameters, parsed."""
    return ast.parse(f"def f({analysis.forward_signature}): pass").body[0].args


register_family(InductorSeed())

__all__ = ["InductorSeed", "module_body", "standalone"]
