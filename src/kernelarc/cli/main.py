"""Entry point of the `kernelarc` command: importing the command modules registers them on the app."""

from kernelarc.cli import bench_cmd, config_cmd, eval_cmd, memory_cmd, model_cmd, optimize_cmd, report_cmd  # noqa: F401  (register their commands)
from kernelarc.cli.app import app, main, run_app

__all__ = ["app", "main", "run_app"]
