"""The registry of move families, keyed by the strategy each serves.

A family module (library.py, triton_gemm.py, ...) calls `register_family(FamilyClass())` at import.
Every module of this package is imported on the first lookup, so adding a family is adding a file:
no central list to edit.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

from kernelarc.agents.builtin.moves.base import Move, MoveFamily, OpNode, TaskAnalysis

_FAMILIES: dict[str, MoveFamily] = {}
_loaded = False
_LOAD_LOCK = threading.RLock()


def register_family(family: MoveFamily) -> MoveFamily:
    """Make `family` known to the agents; a second family under the same name is our bug."""
    if family.name in _FAMILIES and _FAMILIES[family.name] is not family:
        raise ValueError(f"move family {family.name!r} is registered twice")
    _FAMILIES[family.name] = family
    return family


def _load_all() -> None:
    """Import every family module of this package once, so each registers itself.

    Agents look families up from several threads at once: the lock makes the others wait until every
    module is imported (marking the registry loaded first let them see half of it).
    """
    global _loaded
    with _LOAD_LOCK:
        if _loaded:
            return
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
            if info.name != "base":
                importlib.import_module(f"{__name__}.{info.name}")
        _loaded = True


def all_families() -> tuple[MoveFamily, ...]:
    """Every registered family, sorted by name (a stable order keeps searches deterministic)."""
    _load_all()
    return tuple(_FAMILIES[n] for n in sorted(_FAMILIES))


def families_for(strategy: str) -> tuple[MoveFamily, ...]:
    """The families serving `strategy`, sorted by name; empty for a strategy with no built-in moves."""
    return tuple(f for f in all_families() if f.strategy == strategy)


def get_family(name: str) -> MoveFamily | None:
    """The family registered as `name`, or None."""
    _load_all()
    return _FAMILIES.get(name)


__all__ = ["Move", "MoveFamily", "OpNode", "TaskAnalysis", "all_families", "families_for", "get_family",
           "register_family"]
