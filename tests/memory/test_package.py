"""The package surface: every exported name resolves, it imports without torch, and imports point one way."""

import ast
import subprocess
import sys
from pathlib import Path

import kernelarc.memory as memory

PACKAGE = Path(memory.__file__).parent
ALLOWED = ("kernelarc.memory", "kernelarc.errors", "kernelarc.paths", "kernelarc.guard.types", "kernelarc.task.model")


def test_every_exported_name_resolves():
    assert [name for name in memory.__all__ if not hasattr(memory, name)] == []


def test_imports_without_torch_the_worker_agents_or_campaign():
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "import kernelarc.memory, kernelarc.memory.commands, kernelarc.memory.schema_doc\n"
        "print(' '.join(m for m in sys.modules if m.startswith(('kernelarc.guard.worker', 'kernelarc.agents',"
        " 'kernelarc.campaign', 'kernelarc.cli'))))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={"PYTHONPATH": str(PACKAGE.parents[1])})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_imports_only_types_from_other_packages():
    strays = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            strays += [f"{path.name}: {n}" for n in names
                       if n.startswith("kernelarc") and not n.startswith(ALLOWED)]
    assert strays == []
