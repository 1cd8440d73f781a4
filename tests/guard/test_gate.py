"""The static gate against the candidate corpus, rule by rule, and on solution.json candidates."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernelarc.guard import gate
from kernelarc.guard.candidate import Candidate, CandidateKind, solution_candidate
from kernelarc.guard.gate import RULES, check_candidate, check_source
from kernelarc.guard.types import Status

REPO = Path(__file__).resolve().parents[2]
CANDIDATES = REPO / "tests" / "fixtures" / "candidates"
EXAMPLES = REPO / "examples"

# Every candidate fixture -> the gate rule that must refuse it, or None when the source passes the gate and
# catching it is the run-time guard's job. The refused line is marked `<- gate: <rule>` in the fixture.
EXPECTED_RULE: dict[str, str | None] = {
    "honest_torch.py": None,
    "honest_output_buffer.py": None,
    "honest_triton.py": None,
    "honest_cuda_inline.py": None,
    "evil_cache_data_ptr.py": None,
    "evil_cache_call_count.py": None,
    "evil_timer_patch.py": "monkey-patch",
    "evil_cuda_event_patch.py": "monkey-patch",
    "evil_allclose_patch.py": "monkey-patch",
    "evil_patch_reference_op.py": "monkey-patch",
    "evil_frame_getframe.py": "introspection",
    "evil_frame_inspect.py": "introspection",
    "evil_gc_objects.py": "introspection",
    "evil_background_thread.py": "thread",
    "evil_os_exit.py": "process",
    "evil_forged_result.py": None,
    "evil_input_mutation.py": None,
    "evil_tensor_subclass.py": "tensor-subclass",
    "evil_wrong_dtype.py": None,
    "evil_partial_rows.py": None,
    "evil_hardcoded_seed.py": None,
    "evil_read_api_keys.py": "environment",
    "evil_subprocess.py": "process",
    "evil_reference_fallback.py": "reference-fallback",
    "evil_inherit_reference.py": "reference-fallback",
    "evil_importlib.py": "dynamic-code",
    "evil_exec_string.py": "dynamic-code",
    "evil_ctypes.py": "native-code",
    "evil_socket.py": "network",
    "evil_cuda_system.py": "process",
}
MARKER = re.compile(r"<- gate: ([a-z-]+)")


def _module_candidate(path: Path) -> Candidate:
    return Candidate(kind=CandidateKind.MODULE, source=path.read_text(), entry="ModelNew", name=path.stem)


def _result(source: str, entry: str | None = None, **kwargs) -> tuple[str, int] | None:
    finding = check_source(source, entry=entry, **kwargs)
    return (finding.rule, finding.line) if finding else None


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_fixture_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _randn(seed: int) -> torch.Tensor:
    return torch.randn(8, 16, generator=torch.Generator().manual_seed(seed))


# --- the corpus ------------------------------------------------------------------------------------------------

def test_every_fixture_is_in_the_table():
    assert sorted(p.name for p in CANDIDATES.glob("*.py")) == sorted(EXPECTED_RULE)


@pytest.mark.parametrize("name", sorted(EXPECTED_RULE))
def test_fixture_meets_the_gate_as_expected(name):
    path = CANDIDATES / name
    finding = check_candidate(_module_candidate(path))
    marked = [(m.group(1), i) for i, line in enumerate(path.read_text().splitlines(), 1) if (m := MARKER.search(line))]
    if EXPECTED_RULE[name] is None:
        assert finding is None, finding.message
        assert marked == []
    else:
        assert finding is not None, f"{name} passed the gate"
        assert marked == [(EXPECTED_RULE[name], finding.line)], finding.message
        assert finding.rule == EXPECTED_RULE[name], finding.message


@pytest.mark.parametrize("name", sorted(EXPECTED_RULE))
def test_fixture_docstring_names_the_layer_that_catches_it(name):
    doc = ast.get_docstring(ast.parse((CANDIDATES / name).read_text()))
    expected = EXPECTED_RULE[name]
    if name.startswith("honest_"):
        assert doc.startswith("Honest:") and "gate" in doc
    elif expected:
        assert f"Layer: gate, rule {expected}" in doc
    else:
        assert "Layer: runtime" in doc
        assert any(s.value in doc for s in Status if s is not Status.PASSED)


@pytest.mark.parametrize("name", ["honest_torch.py", "honest_triton.py"])
def test_honest_fixture_computes_relu(name):
    x = _randn(1)
    assert torch.equal(_load(CANDIDATES / name).ModelNew()(x), torch.relu(x))


def _stale_by_pointer(model, x):
    model(x)
    x.copy_(_randn(2))
    return not torch.equal(model(x), torch.relu(x))


def _stale_by_count(model, x):
    outs = [model(_randn(seed)) for seed in range(5)]
    return not torch.equal(outs[-1], torch.relu(_randn(4)))


def _mutates_input(model, x):
    before = x.clone()
    model(x)
    return not torch.equal(x, before)


def _right_only_for_seed_zero(model, x):
    return torch.equal(model(_randn(0)), torch.relu(_randn(0))) and not torch.equal(model(x), torch.relu(x))


# What the run-time guard sees from each fixture the gate lets through (True: it misbehaves there).
RUNTIME_MISBEHAVIOUR = {
    "evil_cache_data_ptr.py": _stale_by_pointer,
    "evil_cache_call_count.py": _stale_by_count,
    "evil_forged_result.py": lambda model, x: not torch.equal(model(x), torch.relu(x)),
    "evil_input_mutation.py": _mutates_input,
    "evil_wrong_dtype.py": lambda model, x: model(x).dtype != x.dtype,
    "evil_partial_rows.py": lambda model, x: not torch.equal(model(x), torch.relu(x)),
    "evil_hardcoded_seed.py": _right_only_for_seed_zero,
}


@pytest.mark.parametrize("name", sorted(n for n, r in EXPECTED_RULE.items() if r is None and n.startswith("evil_")))
def test_runtime_fixture_really_cheats(name):
    assert RUNTIME_MISBEHAVIOUR[name](_load(CANDIDATES / name).ModelNew(), _randn(1))


# --- rules, one construct at a time ----------------------------------------------------------------------------

@pytest.mark.parametrize(("source", "expected"), [
    ("import torch as t\nt.relu = abs\n", ("monkey-patch", 2)),
    ("import torch.nn.functional as F\nF.gelu = abs\n", ("monkey-patch", 2)),
    ("from torch import nn\nnn.Module.__call__ = abs\n", ("monkey-patch", 2)),
    ("import torch\nT = torch.Tensor\nT.add = abs\n", ("monkey-patch", 3)),
    ("import numpy as np\nnp.sum = abs\n", ("monkey-patch", 2)),
    ("import triton\ntriton.cdiv = abs\n", ("monkey-patch", 2)),
    ("from os import environ as E\n", ("environment", 1)),
    ("import os as o\n\no.system('ls')\n", ("process", 3)),
    ("import subprocess as sp\n", ("process", 1)),
    ("from concurrent import futures\n", ("thread", 1)),
    ("import http.client\n", ("network", 1)),
    ("import ctypes.util\n", ("native-code", 1)),
    ("import os\n\nos.write(9, b'forged')\n", ("process", 3)),  # writing raw fds: the result channel's
    ("import atexit\n", ("process", 1)),  # code that runs after the guard has its result
])
def test_aliases_are_resolved(source, expected):
    assert _result(source) == expected


@pytest.mark.parametrize(("source", "expected"), [
    ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", ("monkey-patch", 2)),
    ("import torch\ntorch.set_float32_matmul_precision('medium')\n", ("monkey-patch", 2)),
    ("import torch\ntorch.library.Library('aten', 'IMPL')\n", ("monkey-patch", 2)),
    ("import torch\ntorch.cuda.synchronize = lambda: None\n", ("monkey-patch", 2)),
    ("import torch\ntorch.testing.assert_close = print\n", ("monkey-patch", 2)),
    ("import torch\ndel torch.relu\n", ("monkey-patch", 2)),
    ("import torch\ntorch.relu += 0\n", ("monkey-patch", 2)),
    ("import torch\ntorch.flag: bool = True\n", ("monkey-patch", 2)),
    ("import torch\nfor torch.x in range(3):\n    pass\n", ("monkey-patch", 2)),
    ("import torch\nsetattr(torch, 'relu', abs)\n", ("monkey-patch", 2)),
    ("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n", ("monkey-patch", 2)),
    ("import time\ntime.perf_counter = time.process_time\n", ("monkey-patch", 2)),
    ("import time\nt0 = time.perf_counter()\n", ("clock", 1)),
    ("import torch\nrelu = getattr(torch, 'rel' + 'u')\n", ("introspection", 2)),
    ("import sys\nmods = sys.modules\n", ("introspection", 2)),
    ("import sys\nsys.settrace(print)\n", ("introspection", 2)),
    ("g = globals()\n", ("introspection", 1)),
    ("t = ().__class__.__bases__[0].__subclasses__()\n", ("introspection", 1)),
    ("def f():\n    return f.__globals__\n", ("introspection", 2)),
    ("import sys\nsys.exit(0)\n", ("process", 2)),
    ("import os\nos.execv('sh', [])\n", ("process", 2)),
    ("import os\nos.kill(1, 9)\n", ("process", 2)),
    ("quit()\n", ("process", 1)),
    ("import os\nhome = os.getenv('HOME')\n", ("environment", 2)),
    ("os = __import__('os')\n", ("dynamic-code", 1)),
    ("y = eval('1 + 1')\n", ("dynamic-code", 1)),
    ("code = compile('x = 1', 'x', 'exec')\n", ("dynamic-code", 1)),
    ("import builtins\n", ("dynamic-code", 1)),
    ("maps = open('/proc/self/maps').read()\n", ("system-file", 1)),
    ("import torch\nclass Lazy(torch.Tensor):\n    pass\n", ("tensor-subclass", 2)),
    ("from torch import Tensor\nclass A(Tensor):\n    pass\nclass B(A):\n    pass\n", ("tensor-subclass", 2)),
    ("class Hook:\n    __torch_function__ = None\n", ("tensor-subclass", 2)),
    ("class Hook:\n    def __torch_dispatch__(self):\n        pass\n", ("tensor-subclass", 2)),
    ("from torch.utils._python_dispatch import TorchDispatchMode\n", ("tensor-subclass", 1)),
    ("from torch.nn.modules.module import register_module_forward_hook\n", ("monkey-patch", 1)),
])
def test_refused_constructs(source, expected):
    assert _result(source) == expected


@pytest.mark.parametrize(("source", "expected"), [
    ("from reference import Model\n\nclass ModelNew:\n    pass\n", ("reference-fallback", 1)),
    ("import reference\n\nclass ModelNew:\n    def forward(self, x):\n        return reference.Model()(x)\n",
     ("reference-fallback", 5)),
    ("import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        try:\n"
     "            return fast(x)\n        except Exception:\n            return super().forward(x)\n",
     ("reference-fallback", 8)),
])
def test_kernelbench_candidate_may_not_use_the_reference(source, expected):
    assert _result(source, entry="ModelNew") == expected


def test_run_entry_may_not_fall_back_to_a_reference_module():
    source = "import reference_impl\n\ndef run(x):\n    try:\n        return fast(x)\n    except Exception:\n" \
             "        return reference_impl.run(x)\n"
    assert _result(source, entry="run") == ("reference-fallback", 7)


@pytest.mark.parametrize("source", [
    "import torch\ns = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    pass\ntorch.cuda.set_stream(s)\n",
    "import math\nimport shutil\nimport pickle\nimport triton\nimport triton.language as tl\n",
    "from torch.utils.cpp_extension import load_inline\n",
    "class A:\n    def __init__(self):\n        self.x = 1\n\nobj = A()\nobj.y = 2\nobj.d = {}\nobj.d['k'] = 3\n",
    "import os\npath = os.path.join('a', 'b')\n",
    "import torch\nf = torch.compile(torch.relu)\nout = torch.empty(3)\nout[0] = 1.0\n",
    "try:\n    import triton\nexcept ImportError:\n    triton = None\n",
    '"""Makes no system() calls and reads nothing under /proc/."""\n',
    "import torch\nevent = torch.cuda.Event(enable_timing=False)\n",
    "from . import time\nfrom .kernels import subprocess_free_relu\n",
    "import torch.nn as nn\n\nclass Model(nn.Module):\n    pass\n\nclass ModelNew(Model):\n    pass\n",
])
def test_honest_constructs_pass(source):
    assert _result(source, entry="ModelNew" if "ModelNew" in source else None) is None


def test_syntax_error_reports_its_line():
    finding = check_source("import torch\n\ndef f(:\n    pass\n", entry="ModelNew", filename="k.py")
    assert (finding.rule, finding.line) == ("syntax", 3)
    assert finding.message.startswith("k.py:3: ")


@pytest.mark.parametrize(("source", "entry", "passes"), [
    ("class ModelNew:\n    pass\n", "ModelNew", True),
    ("if True:\n    class ModelNew:\n        pass\n", "ModelNew", False),
    ("def ModelNew():\n    pass\n", "ModelNew", False),
    ("def run(x):\n    return x\n", "run", True),
    ("run = print\n", "run", True),
    ("from .impl import run\n", "run", True),
    ("def run(x):\n    return x\n", "kernel", False),
])
def test_entry_point_must_be_at_top_level(source, entry, passes):
    finding = check_source(source, entry=entry)
    if passes:
        assert finding is None, finding.message
    else:
        assert (finding.rule, finding.line) == ("entry-point", 1)
        assert f" {entry}` (entry-point)" in finding.message


def test_most_serious_rule_wins_over_earlier_line():
    finding = check_source("import time\nimport torch\ntime.perf_counter = abs\n", entry=None, filename="c.py")
    assert (finding.rule, finding.line) == ("monkey-patch", 3)
    assert finding.message == f"c.py:3: assignment to `time.perf_counter` (monkey-patch): {RULES['monkey-patch']}"


def test_rule_tables_name_only_known_kebab_case_rules():
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", rule) for rule in RULES)
    for table in (gate.NAME_RULES, gate.JIT_BUILD_RULES, gate.BUILTIN_RULES, gate.ATTRIBUTE_RULES,
                  gate.CPP_CALL_RULES):
        assert set(table.values()) <= set(RULES)


def test_gate_imports_without_torch():
    code = "import sys, kernelarc.guard.gate; assert 'torch' not in sys.modules, 'torch imported'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={"PYTHONPATH": str(REPO / "src")})
    assert result.returncode == 0, result.stderr


# --- solution.json candidates ----------------------------------------------------------------------------------

CPP_RELU = """#include <torch/extension.h>

torch::Tensor run(torch::Tensor x) {
    // no system() or getenv() calls here
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor, got device ", x.device());
    return torch::relu(x);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
"""
PY_JIT = "from torch.utils.cpp_extension import load_inline\n\n\ndef run(x):\n    return x\n"


def _solution(languages: list[str], entry: str, sources: dict[str, str]) -> Candidate:
    files = [{"path": path, "content": text} for path, text in sources.items()]
    spec = {"languages": languages, "entry_point": entry, "destination_passing_style": False}
    return solution_candidate(json.dumps({"name": "relu", "definition": "relu", "spec": spec, "sources": files}))


def test_python_solution_may_not_jit_build_cpp():
    finding = check_candidate(_solution(["pytorch"], "main.py::run", {"main.py": PY_JIT}))
    assert (finding.rule, finding.line) == ("jit-build", 1)
    assert finding.message.startswith("main.py:1: ")
    module = Candidate(kind=CandidateKind.MODULE, source=PY_JIT, entry="run")
    assert check_candidate(module) is None


def test_python_solution_jit_build_through_an_alias():
    source = "from torch.utils import cpp_extension as ce\n\n\ndef run(x):\n    return ce.load('k', ['k.cu'])(x)\n"
    assert check_candidate(_solution(["triton"], "main.py::run", {"main.py": source})).rule == "jit-build"


def test_python_solution_scans_helper_files_and_checks_the_entry_file():
    helper = "import subprocess\n"
    finding = check_candidate(_solution(["pytorch"], "main.py::run", {"main.py": "from kernel import run\n",
                                                                    "kernel.py": helper}))
    assert (finding.rule, finding.line) == ("process", 1) and finding.message.startswith("kernel.py:1: ")
    finding = check_candidate(_solution(["pytorch"], "main.py::run", {"main.py": "def forward(x):\n    return x\n"}))
    assert finding.rule == "entry-point" and finding.message.startswith("main.py:1: ")


def test_cpp_solution_passes_when_clean():
    assert check_candidate(_solution(["cuda_cpp"], "main.cpp::run", {"main.cpp": CPP_RELU})) is None


@pytest.mark.parametrize(("inserted", "rule"), [
    ('    std::system("nvidia-smi -lgc 1980");', "process"),
    ('    auto key = getenv("OPENAI_API_KEY");', "environment"),
    ('    void* lib = dlopen("libcuda.so", RTLD_NOW);', "native-code"),
    ("    int fd = socket(AF_INET, SOCK_STREAM, 0);", "network"),
    ("    pid_t pid = fork();", "process"),
    ('    execvp("sh", args);', "process"),
])
def test_cpp_solution_refuses_system_calls(inserted, rule):
    lines = CPP_RELU.splitlines()
    lines.insert(4, inserted)
    finding = check_candidate(_solution(["cuda_cpp"], "main.cpp::run", {"main.cpp": "\n".join(lines)}))
    assert (finding.rule, finding.line) == (rule, 5)
    assert finding.message.startswith("main.cpp:5: ")


def test_cpp_scan_reads_headers_and_skips_block_comments():
    header = "/* a header\n   that never calls system() */\n#pragma once\nint f() { return kill(1, 9); }\n"
    finding = check_candidate(_solution(["cuda_cpp"], "main.cpp::run", {"main.cpp": CPP_RELU, "relu.h": header}))
    assert (finding.rule, finding.line) == ("process", 4) and finding.message.startswith("relu.h:4: ")


# --- the project's examples ------------------------------------------------------------------------------------

def _example_candidates() -> list[Candidate]:
    candidates = []
    for path in sorted(EXAMPLES.rglob("*.py")):
        text = path.read_text()
        entry = next((e for e, pattern in (("ModelNew", r"^class ModelNew\b"), ("run", r"^def run\b"))
                      if re.search(pattern, text, re.M)), None)
        if entry:
            candidates.append(Candidate(kind=CandidateKind.MODULE, source=text, entry=entry, name=path.stem))
    candidates += [solution_candidate(p.read_text()) for p in sorted(EXAMPLES.rglob("solution.json"))]
    return candidates


def test_project_examples_pass_the_gate():
    candidates = _example_candidates()
    if not candidates:
        pytest.skip("no examples/ candidates yet")
    failures = [f.message for f in map(check_candidate, candidates) if f]
    assert failures == []
