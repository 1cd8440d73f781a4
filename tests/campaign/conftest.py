"""Campaigns shared by several tests of this package (built once per session, see runs.shared_run)."""

from __future__ import annotations

import pytest

from campaign.mixed import build_mixed
from campaign.runs import SharedRun, build_robust, shared_run


@pytest.fixture(scope="session")
def mixed(tmp_path_factory) -> SharedRun:
    """The mixed campaign of campaign/mixed.py, finished."""
    return shared_run(tmp_path_factory, "mixed", build_mixed)


@pytest.fixture(scope="session")
def robust(tmp_path_factory) -> SharedRun:
    """The robust campaign (robust.json, seed 7), run once without interruption."""
    return shared_run(tmp_path_factory, "robust", build_robust)
