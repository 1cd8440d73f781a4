"""The package map holds: imports point one way (cli -> bench, model -> campaign -> agents, guard, memory ->
task, roofline), and every name a package exports resolves."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kernelarc"

# What each package may import from kernelarc (besides itself and the leaf modules errors/paths).
ALLOWED = {
    "task": set(),
    "roofline": {"task"},
    "guard": {"task", "roofline"},
    "memory": {"guard", "task"},
    "strategies": {"task", "memory"},
    "agents": {"task", "guard", "memory", "strategies"},
    "report": set(),
    "campaign": {"task", "roofline", "guard", "memory", "strategies", "agents", "report"},
    "bench": {"task", "roofline", "guard", "memory", "strategies", "agents", "report", "campaign"},
    "model": {"task", "roofline", "guard", "memory", "strategies", "agents", "report", "campaign"},
    "cli": {"task", "roofline", "guard", "memory", "strategies", "agents", "report", "campaign", "bench", "model"},
}
LEAVES = {"errors", "paths", "__init__"}


def _imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "kernelarc" and len(parts) > 1 and parts[1] not in LEAVES:
                found.add(parts[1])
    return found


def test_every_package_is_on_the_map():
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(ALLOWED)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_one_way(package):
    strays = {}
    for path in (SRC / package).rglob("*.py"):
        bad = _imported_packages(path) - ALLOWED[package] - {package}
        if bad:
            strays[str(path.relative_to(SRC))] = sorted(bad)
    assert strays == {}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_exported_names_resolve(package):
    module = importlib.import_module(f"kernelarc.{package}")
    for name in getattr(module, "__all__", ()):
        assert getattr(module, name) is not None, f"kernelarc.{package}.{name}"
