"""The static gate: refuse a candidate whose source could cheat, before any of it runs.

Owns the rule table and the scan: Python sources through `ast`, C++ (solution files, and the string
literals of Python files, where the sources handed to `load_inline` live) through a token scan. It reads text only and
imports neither torch nor the candidate, so it is cheap and cannot be attacked by what it reads.
It is the first line, not a sandbox: caching, wrong dtypes, mutated inputs and forged prints are
left to the worker's isolation and the run-time checks. Budget: 400 lines.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from kernelarc.guard.candidate import PYTHON_LANGUAGES, Candidate, CandidateKind

# Rule id -> what the author must change. Dict order is priority: when a source breaks several
# rules, the finding of the earliest rule here (then the earliest line) is reported.
RULES: dict[str, str] = {
    "syntax": "fix the syntax error",
    "monkey-patch": "leave library attributes, global settings and op registrations alone (the reference and the "
                    "harness share them); compute the outputs in your own functions",
    "tensor-subclass": "return plain, fully computed torch.Tensor outputs; no Tensor subclasses or "
                       "__torch_function__/__torch_dispatch__ hooks",
    "reference-fallback": "compute the result yourself; do not import, subclass, call or fall back to the reference",
    "process": "do not start, signal, redirect or end processes; compute the outputs in this process and return them",
    "thread": "launch all work from the calling thread; no threads, process pools or event loops",
    "network": "remove network access; a kernel needs none",
    "native-code": "load no native libraries; use Triton, or CUDA C++ through torch.utils.cpp_extension.load_inline",
    "dynamic-code": "write plain imports and plain code; import or execute nothing named by a string",
    "introspection": "use only the arguments you are given; no frames, garbage collector, module tables or object "
                     "internals",
    "environment": "do not read or change environment variables; nothing a kernel needs is there",
    "jit-build": "SOL-ExecBench blocks C++ builds inside Python solutions: submit the C++ as a cuda_cpp solution, "
                 "or write the kernel in Triton or PyTorch",
    "clock": "remove clock reads and timing code; the guard does all timing",
    "system-file": "do not touch /proc, /dev or /sys",
    "entry-point": "define it at module top level (not inside an if, try or function); the harness imports it by name",
}

# Imported modules and qualified names (fnmatch patterns allowed) -> rule. A name matches when it,
# or any dotted prefix of it, is listed: `subprocess` covers `subprocess.run`.
NAME_RULES: dict[str, str] = {
    **dict.fromkeys(["subprocess", "multiprocessing", "torch.multiprocessing", "signal", "pty", "os.system",
                     "os.popen", "os.fork*", "os.exec*", "os.spawn*", "os.posix_spawn*", "os.kill*", "os._exit",
                     "os.dup*", "os.write*", "os.pwrite*", "os.close*", "os.register_at_fork", "sys.exit",
                     "atexit"], "process"),
    **dict.fromkeys(["threading", "_thread", "concurrent.futures", "asyncio"], "thread"),
    **dict.fromkeys(["socket", "ssl", "http", "urllib", "urllib3", "requests", "httpx", "aiohttp", "ftplib",
                     "smtplib"], "network"),
    **dict.fromkeys(["ctypes", "cffi", "torch.ops.load_library", "torch.classes.load_library"], "native-code"),
    **dict.fromkeys(["importlib", "builtins", "runpy", "torch._inductor.codecache.PyCodeCache",
                     "torch._inductor.async_compile"], "dynamic-code"),  # Inductor's loaders run any source
    **dict.fromkeys(["inspect", "gc", "sys._getframe", "sys._current_frames", "sys.modules", "sys.settrace",
                     "sys.setprofile", "traceback.walk_stack", "traceback.walk_tb"], "introspection"),
    **dict.fromkeys(["os.environ", "os.environb", "os.getenv*", "os.putenv", "os.unsetenv"], "environment"),
    **dict.fromkeys(["time", "timeit"], "clock"),
    **dict.fromkeys(["torch.set_float32_matmul_precision", "torch.set_default_dtype", "torch.set_default_device",
                     "torch.set_default_tensor_type", "torch.set_flush_denormal", "torch.set_num_threads",
                     "torch.set_num_interop_threads", "torch.library.Library", "torch.library.impl",
                     "torch.library._scoped_library", "torch.nn.modules.module.register_module_*"], "monkey-patch"),
    **dict.fromkeys(["torch.overrides", "torch.utils._python_dispatch", "torch.Tensor._make_subclass",
                     "torch.Tensor._make_wrapper_subclass"], "tensor-subclass"),
}
# Refused only where C++ JIT builds are blocked (Python-family SOL-ExecBench solutions).
JIT_BUILD_RULES: dict[str, str] = dict.fromkeys(
    ["torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline",
     "torch._inductor.codecache.CppPythonBindingsCodeCache", "torch._inductor.codecache.CppCodeCache",
     "torch._inductor.codecache.CUDACodeCache"], "jit-build")
# Builtins refused when used by name (not shadowed by an import).
BUILTIN_RULES: dict[str, str] = {
    **dict.fromkeys(["exec", "eval", "compile", "__import__", "__builtins__"], "dynamic-code"),
    **dict.fromkeys(["globals", "locals", "vars", "breakpoint"], "introspection"),
    **dict.fromkeys(["exit", "quit"], "process"),
}
# Attribute names refused on any object: interpreter internals and frame links.
ATTRIBUTE_RULES: dict[str, str] = dict.fromkeys(
    ["__class__", "__subclasses__", "__bases__", "__base__", "__mro__", "__globals__", "__code__", "__closure__",
     "__builtins__", "__dict__", "__setattr__", "__delattr__", "__getattribute__", "__self__", "__loader__",
     "__spec__", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "gi_frame", "cr_frame"],
    "introspection")
# C++ calls refused in solution sources and in the C++ strings of Python files (token scan).
CPP_CALL_RULES: dict[str, str] = {
    **dict.fromkeys(["system", "popen", "fork", "vfork", "posix_spawn", "execl", "execle", "execlp", "execv",
                     "execve", "execvp", "execvpe", "fexecve", "kill"], "process"),
    **dict.fromkeys(["dlopen", "dlsym"], "native-code"),
    **dict.fromkeys(["getenv", "secure_getenv", "setenv", "putenv"], "environment"),
    **dict.fromkeys(["socket"], "network"),
    **dict.fromkeys(["pthread_create"], "thread"),
}
TENSOR_BASES = {"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase"}
TENSOR_HOOKS = {"__torch_function__", "__torch_dispatch__"}
SYSTEM_PATH_PREFIXES = ("/proc/", "/dev/", "/sys/")
REFERENCE_CLASS = "Model"
CPP_SUFFIXES = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp"}

_CPP_CALL = re.compile(r"\b(" + "|".join(sorted(CPP_CALL_RULES, key=len, reverse=True)) + r")\s*\(")
# String and char literals are matched (and kept) so that `//` inside them is not taken for a comment.
_CPP_COMMENT_OR_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


@dataclass(frozen=True)
class GateFinding:
    """Why the gate refused a source: the highest-priority rule it broke."""

    rule: str
    """Short kebab-case rule id, a key of `RULES`."""
    line: int
    """1-based line in the file named in the message."""
    message: str
    """`file:line: what was found` and what to change, for the author (an LLM) to act on."""


def check_source(source: str, *, entry: str | None, filename: str = "candidate.py",
                 allow_jit_build: bool = True) -> GateFinding | None:
    """Scan one Python source; None when it passes.

    Args:
        source: the Python text.
        entry: `ModelNew` (a KernelBench candidate: the reference `Model` is off limits), a function name
            (`run` or the function of a `file::function` entry point), or None for a helper file.
        filename: named in the finding's message.
        allow_jit_build: False refuses torch.utils.cpp_extension load/load_inline.

    Returns:
        The highest-priority finding (earliest line among equals), or None.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError) as e:
        line = getattr(e, "lineno", None) or 1
        return _first([("syntax", line, str(getattr(e, "msg", e)))], filename)
    scan = _Scan(tree, kernelbench=entry == "ModelNew", allow_jit_build=allow_jit_build)
    scan.visit(tree)
    if entry is not None and not _defines_entry(tree, entry):
        what = f"class {entry}" if entry == "ModelNew" else f"def {entry}"
        scan.add("entry-point", 1, f"no top-level `{what}`")
    return _first(scan.findings, filename)


def check_candidate(candidate: Candidate) -> GateFinding | None:
    """Scan every source of a candidate; None when all pass.

    Python files get the AST scan (the entry file also the entry-point check). For a Python-family
    solution.json, C++ JIT builds are refused as SOL-ExecBench does; the C++ sources of any
    solution get the token scan.
    """
    entry_file, _, entry_name = candidate.entry.rpartition("::")
    is_solution = candidate.kind is CandidateKind.SOLUTION
    allow_jit_build = not (is_solution and candidate.language in PYTHON_LANGUAGES)
    for path, text in candidate.python_sources().items():
        entry = entry_name if not is_solution or path == entry_file else None
        finding = check_source(text, entry=entry, filename=path, allow_jit_build=allow_jit_build)
        if finding:
            return finding
    if is_solution:
        for source in json.loads(candidate.source)["sources"]:
            if PurePosixPath(source["path"]).suffix in CPP_SUFFIXES:
                finding = _first(_cpp_findings(source["content"], first_line=1), source["path"])
                if finding:
                    return finding
    return None


def _first(found: list[tuple[str, int, str]], filename: str) -> GateFinding | None:
    """The finding to report from (rule, line, subject) triples: earliest rule in `RULES`, then earliest line."""
    if not found:
        return None
    priority = list(RULES)
    rule, line, subject = min(found, key=lambda f: (priority.index(f[0]), f[1]))
    return GateFinding(rule, line, f"{filename}:{line}: {subject} ({rule}): {RULES[rule]}")


def _cpp_findings(text: str, first_line: int) -> list[tuple[str, int, str]]:
    """(rule, line, subject) for each refused C++ call; comments are ignored, line numbers kept."""
    code = _CPP_COMMENT_OR_LITERAL.sub(
        lambda m: m.group() if m.group()[0] in "\"'" else "\n" * m.group().count("\n"), text)
    return [(CPP_CALL_RULES[m.group(1)], first_line + code.count("\n", 0, m.start()), f"C++ call `{m.group(1)}(`")
            for m in _CPP_CALL.finditer(code)]


def _defines_entry(tree: ast.Module, entry: str) -> bool:
    """ModelNew must be a top-level class; a function entry a top-level def, assignment or import."""
    for node in tree.body:
        if entry == "ModelNew":
            if isinstance(node, ast.ClassDef) and node.name == entry:
                return True
        elif isinstance(node, ast.FunctionDef) and node.name == entry:
            return True
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == entry for t in node.targets):
            return True
        elif isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == entry for a in node.names):
            return True
    return False


def _name_rule(qualname: str, table: dict[str, str]) -> str | None:
    """The rule for a dotted name: its own entry or that of its shortest listed prefix."""
    parts = qualname.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        for key, rule in table.items():
            if prefix == key or ("*" in key and fnmatchcase(prefix, key)):
                return rule
    return None


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the qualified name it is bound to, by imports or plain `x = mod.attr` assignments."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                root = a.name.split(".")[0]
                aliases[a.asname or root] = a.name if a.asname else root
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                aliases[a.asname or a.name] = _imported_name(node, a.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = _qualname(node.value, aliases)
            if target:
                aliases[node.targets[0].id] = target
    return aliases


def _imported_name(node: ast.ImportFrom, name: str) -> str:
    """`pkg.mod.name` for `from pkg.mod import name`; relative imports keep their dots (`.mod.name`)."""
    return "." * node.level + (f"{node.module}." if node.module else "") + name


def _qualname(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """`torch.nn.functional.gelu` for `F.gelu` after `import torch.nn.functional as F`; None if not imported."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(attrs)])


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring nodes, which the C++ and path scans skip."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


class _Scan(ast.NodeVisitor):
    """One pass over a module, collecting every rule it breaks."""

    def __init__(self, tree: ast.Module, *, kernelbench: bool, allow_jit_build: bool):
        self.kernelbench = kernelbench
        self.table = NAME_RULES if allow_jit_build else {**NAME_RULES, **JIT_BUILD_RULES}
        self.findings: list[tuple[str, int, str]] = []  # (rule, line, subject) for every rule broken
        self.docstrings = _docstrings(tree)
        self.tensor_classes: set[str] = set()
        self.local_reference = any(
            isinstance(n, ast.ClassDef) and n.name == REFERENCE_CLASS for n in tree.body)
        self.aliases = _aliases(tree)

    def add(self, rule: str, line: int, subject: str) -> None:
        self.findings.append((rule, line, subject))

    def _qualname(self, node: ast.expr) -> str | None:
        return _qualname(node, self.aliases)

    def _check_name(self, qualname: str, line: int) -> None:
        rule = _name_rule(qualname, self.table)
        if rule:
            self.add(rule, line, f"`{qualname}`")

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._check_name(a.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for a in node.names:
            self._check_name(_imported_name(node, a.name), node.lineno)
            if self.kernelbench and a.name == REFERENCE_CLASS:
                self.add("reference-fallback", node.lineno, f"`from {node.module} import {REFERENCE_CLASS}`")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.aliases:
            self._check_name(self.aliases[node.id], node.lineno)
        elif node.id in BUILTIN_RULES:
            self.add(BUILTIN_RULES[node.id], node.lineno, f"`{node.id}`")
        if node.id in TENSOR_HOOKS:
            self.add("tensor-subclass", node.lineno, f"`{node.id}`")
        if self.kernelbench and node.id == REFERENCE_CLASS and not self.local_reference:
            self.add("reference-fallback", node.lineno, f"the reference class `{REFERENCE_CLASS}`")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ATTRIBUTE_RULES:
            self.add(ATTRIBUTE_RULES[node.attr], node.lineno, f"`.{node.attr}`")
        qualname = self._qualname(node)
        if qualname:
            self._check_name(qualname, node.lineno)
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                self.add("monkey-patch", node.lineno, f"assignment to `{qualname}`")
            if self.kernelbench and node.attr == REFERENCE_CLASS:
                self.add("reference-fallback", node.lineno, f"the reference class `{qualname}`")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        qualname = self._qualname(node.value)
        if qualname and isinstance(node.ctx, (ast.Store, ast.Del)):
            self.add("monkey-patch", node.lineno, f"item assignment into `{qualname}`")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in {"getattr", "setattr", "delattr"} and node.args:
            target = self._qualname(node.args[0])
            if target and func.id not in self.aliases:
                rule = "introspection" if func.id == "getattr" else "monkey-patch"
                self.add(rule, node.lineno, f"`{func.id}` on the module `{target}`")
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if self._qualname(base) in TENSOR_BASES or (isinstance(base, ast.Name) and base.id in self.tensor_classes):
                self.tensor_classes.add(node.name)
                self.add("tensor-subclass", node.lineno, f"`class {node.name}` (a torch.Tensor subclass)")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in TENSOR_HOOKS:
            self.add("tensor-subclass", node.lineno, f"`def {node.name}`")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Try(self, node: ast.Try) -> None:
        for handler in node.handlers:
            for sub in (n for stmt in handler.body for n in ast.walk(stmt)):
                if self._is_reference_call(sub):
                    self.add("reference-fallback", sub.lineno, "an except handler calling the reference")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def _is_reference_call(self, node: ast.AST) -> bool:
        """`Model`, `super().forward(...)` or `<imported module>.run(...)`: the reference in disguise."""
        if isinstance(node, ast.Name):
            return node.id == REFERENCE_CLASS and not self.local_reference
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            return False
        owner = node.func.value
        if node.func.attr == "forward":
            return isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"
        return node.func.attr == "run" and self._qualname(owner) is not None

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str) or id(node) in self.docstrings:
            return
        if node.value.startswith(SYSTEM_PATH_PREFIXES):
            self.add("system-file", node.lineno, f"the path {node.value!r}")
        for rule, line, subject in _cpp_findings(node.value, first_line=node.lineno):
            self.add(rule, line, subject)


__all__ = ["GateFinding", "check_source", "check_candidate", "RULES"]
