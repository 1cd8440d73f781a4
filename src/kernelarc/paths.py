"""Where kernelarc keeps per-user files: the long-term memory (data dir) and compile caches (cache dir).

`KERNELARC_HOME`, when set, replaces both (data in it, caches in its `cache/`): tests point it at a
temp dir so they never touch a user's real files. Nothing is created here. Budget: 40 lines.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

HOME_ENV = "KERNELARC_HOME"
"""Environment variable that moves every per-user file under one directory."""
APP_NAME = "kernelarc"


def user_data_dir() -> Path:
    """The directory for data kept across runs (the long-term memory): $KERNELARC_HOME or the platform's."""
    home = os.environ.get(HOME_ENV)
    return Path(home) if home else platformdirs.user_data_path(APP_NAME)


def user_cache_dir() -> Path:
    """The directory for caches that can be rebuilt (device ceilings, compiled kernels)."""
    home = os.environ.get(HOME_ENV)
    return Path(home) / "cache" if home else platformdirs.user_cache_path(APP_NAME)


__all__ = ["HOME_ENV", "user_data_dir", "user_cache_dir"]
