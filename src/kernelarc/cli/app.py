"""The typer application object and the error boundary shared by every command.

A user's mistake (UserError, a bad option) ends as one line on stderr and exit code 2; a command's
own outcome decides 0 or 1.
"""

from __future__ import annotations

import logging
import sys
from enum import Enum

import typer
from rich.console import Console
from rich.markup import escape

from kernelarc import __version__
from kernelarc.errors import UserError

try:  # typer >= 0.29 vendors click privately and raises its own exceptions, even where click is installed too
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - depends on the installed typer (< 0.29 uses click)
    from click.exceptions import UsageError  # type: ignore[no-redef]

app = typer.Typer(
    name="kernelarc",
    help="Make GPU kernels fast with strategy-specialized agents judged by one deterministic guard.",
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
# Humans read stdout (issue 19: `eval` printed its summary on stderr); errors and logging go to stderr;
# with --json stdout carries only the JSON, and the human lines move to stderr (`human`).
# A line stays one line in pipes and logs; tables get room there (a terminal sets its own width).
err_console = Console(stderr=True, soft_wrap=True, width=None if sys.stderr.isatty() else 160)
out_console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
QUIET = {"on": False}
"""`-q`: no header, no line per evaluation; only the result, warnings and errors."""
LOG_LEVELS = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}
"""`-q`, default, `-v`; `-vv` and more: DEBUG."""


def human(as_json: bool = False) -> Console:
    """Where a command's human output goes: stdout, or stderr when stdout carries --json."""
    return err_console if as_json else out_console

EXIT_OK, EXIT_NO_CORRECT, EXIT_USER_ERROR = 0, 1, 2


class Timing(str, Enum):
    """`--timing`: which latency decides (GuardSettings.timing)."""

    auto = "auto"
    device = "device"
    wall = "wall"


TIMING_HELP = ("Which latency decides: device (kernel spans, as SOL-ExecBench), wall (per call, host overhead "
               "included, as KernelBench), auto (device for SOL-ExecBench tasks, wall for KernelBench files).")


MATCHED_HELP = ("Fraction of each output's elements that must be within tolerance (SOL-ExecBench's required matched "
                "ratio; default: the task's, 1 for KernelBench).")
TIMEOUT_HELP = ("Deadline in seconds of each stage of an evaluation: compile (import, build, first call) and run "
                "(correctness and timing together); the reference's own stage gets twice this. Default 300.")


class ExecutorKind(str, Enum):
    """`--executor`: where evaluations run (ExecutorSpec)."""

    local = "local"
    ray = "ray"


EXECUTOR_HELP = ("Where candidates are judged: local (this machine's devices) or ray (one Ray task per evaluation on "
                 "a cluster's GPUs; pip install 'kernelarc[ray]', docs/cluster.md).")
RAY_ADDRESS_HELP = "With --executor ray: the cluster to join, auto (this machine's, or $RAY_ADDRESS) or HOST:PORT."


def executor_spec(kind: ExecutorKind, ray_address: str | None):
    """The ExecutorSpec of `--executor` and `--ray-address` (one line and exit 2 for an address without Ray)."""
    from kernelarc.campaign.executor import ExecutorSpec

    if ray_address is not None and kind is not ExecutorKind.ray:
        fail("--ray-address applies to --executor ray only")
    return ExecutorSpec(kind=kind.value, ray_address=ray_address or "auto")


def invalid_reference_line(task_name: str, reason: str) -> str:
    """The one line that says a task's reference cannot be judged (exit 2: the task must change)."""
    return f"INVALID_REFERENCE: the reference of {task_name} cannot be judged against: {reason}"


def _version(value: bool) -> None:
    if value:
        print(f"kernelarc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    verbose: int = typer.Option(0, "-v", "--verbose", count=True, help="Log what happens on stderr: -v campaign events (agent errors, retirements, plateaus, cuts), -vv debug."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="Print only results, warnings and errors: no header, no line per evaluation."),
) -> None:
    """kernelarc: eval, optimize, bench, memory."""
    QUIET["on"] = quiet
    logger = logging.getLogger("kernelarc")
    logger.setLevel(LOG_LEVELS[-1] if quiet else LOG_LEVELS.get(verbose, logging.DEBUG))
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("kernelarc: %(levelname)s: %(name)s: %(message)s"))
        logger.addHandler(handler)


class _StderrHandler(logging.StreamHandler):
    """Writes each record to the sys.stderr of the moment (tests swap it between invocations)."""

    stream = property(lambda self: sys.stderr, lambda self, value: None)


def fail(message: str) -> None:
    """End the command with one line on stderr and exit code 2. `message` is plain text (it may quote a
    reference's or a candidate's error, brackets and all)."""
    err_console.print(f"[bold red]kernelarc: error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_USER_ERROR)


def run_app(argv: list[str] | None = None) -> int:
    """Run the CLI; maps usage errors and UserError to one stderr line and exit 2."""
    try:
        result = app(args=argv, standalone_mode=False, prog_name="kernelarc")
    except UserError as e:
        # library messages are plain text: `kernelarc[ray]` must not be read as markup
        err_console.print(f"[bold red]kernelarc: error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    except UsageError as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `kernelarc`: the help was already printed
            return EXIT_OK
        err_console.print(f"[bold red]kernelarc: error:[/] {e.format_message()}", highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    except typer.Abort:
        err_console.print("kernelarc: aborted")
        return 130
    except typer.Exit as e:
        return e.exit_code
    return result if isinstance(result, int) else EXIT_OK


def main() -> None:
    sys.exit(run_app())
