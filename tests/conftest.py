"""Shared test set-up: user data, caches and GPU markers.

Tests never touch the user's real data directory: KERNELARC_HOME points at a temp dir for every test.
GPU tests (marker `gpu`) skip cleanly when CUDA is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("kernelarc_home")
    monkeypatch.setenv("KERNELARC_HOME", str(home))
    yield home


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


SHARED_ABSENT = "../shared is absent"
"""The skip reason of every test that needs ../shared; the terminal summary counts them loudly."""


@pytest.fixture
def shared_dir() -> Path:
    """../shared beside the checkout (third-party problems); tests using it skip when it is absent."""
    if not SHARED.is_dir():
        pytest.skip(SHARED_ABSENT)
    return SHARED


def pytest_terminal_summary(terminalreporter):
    """A run without ../shared passes with fewer tests: say how many, where nobody can miss it."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if SHARED_ABSENT in str(r.longrepr)]
    if skipped:
        terminalreporter.write_sep("!", f"{len(skipped)} tests SKIPPED because {SHARED_ABSENT} ({SHARED}): "
                                        "the third-party problems they read were not checked", red=True, bold=True)


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a dependency
        return False


if not _has_cuda():  # in-process Triton tests run through the interpreter on CPU tensors
    os.environ.setdefault("TRITON_INTERPRET", "1")
