"""`kernelarc config check`: validate the backend configuration and say what is missing, one line each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from kernelarc.cli.app import EXIT_OK, EXIT_USER_ERROR, app, err_console

config_app = typer.Typer(name="config", help="Check the agent backends' configuration.", no_args_is_help=True,
                         context_settings={"help_option_names": ["-h", "--help"]})
app.add_typer(config_app, name="config")

WARNING = "warning:"
"""Problems starting with this are reported but do not fail the check."""


@config_app.command("check")
def check_command(
    config: Annotated[Path | None, typer.Option("--config", help="Configuration file (.toml, .yaml); default: none, "
                                                                 "environment variables only.")] = None,
    backend: Annotated[str | None, typer.Option(
        "--backend", help="Backend the campaign would use (openai, anthropic, cli); default: the file's `backend`.",
    )] = None,
    online: Annotated[bool, typer.Option("--online", help="Also reach every server and model in use "
                                                          "(a model list or a one-token message).")] = False,
) -> int:
    """Validate the configuration: one line per problem, exit 0 when none would stop a campaign, 2 otherwise."""
    from kernelarc.agents.config import BackendKind, ConfigError, load_config, problems
    from kernelarc.agents.llm import check_backend

    try:
        chosen = BackendKind(backend) if backend is not None else None
    except ValueError:
        raise typer.BadParameter(f"unknown backend {backend!r}; known: "
                                 f"{', '.join(k.value for k in BackendKind)}", param_hint="--backend") from None
    try:
        loaded = load_config(config)
    except ConfigError as e:
        return _report(str(e).splitlines())
    backends = loaded.backends_in_use(chosen)
    if not backends:
        return _report(["no backend chosen: pass --backend or set `backend` in the config"])
    lines = problems(loaded, backends)
    if online and not any(not line.startswith(WARNING) for line in lines):
        try:
            check_backend(loaded, backends[0])
        except ConfigError as e:
            lines.append(str(e))
    code = _report(lines)
    if code == EXIT_OK:
        where = config if config is not None else "environment only"
        err_console.print(escape(f"config ok ({where}): backends {', '.join(k.value for k in backends)}"
                                 + (", servers reached" if online else "")), highlight=False)
    return code


def _report(lines: list[str]) -> int:
    """Print each problem on its own line; the exit code they call for."""
    for line in lines:
        style = "yellow" if line.startswith(WARNING) else "red"
        err_console.print(f"[{style}]{escape(line)}[/]", highlight=False, soft_wrap=True)
    return EXIT_USER_ERROR if any(not line.startswith(WARNING) for line in lines) else EXIT_OK


__all__ = ["check_command", "config_app"]
