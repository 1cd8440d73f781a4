"""The `cli` backend: an external coding-agent command, run once per call in a fresh workspace folder.

Contract (docs/backends.md): kernelarc writes `prompt.md`, `incumbent.py` and `reference.py` into a
new folder and runs the configured command there (split like a shell would, no shell, a timeout,
the guard's environment allow-list plus `pass_env`). For a proposal the command writes
`candidate.py` and `claim.txt`; for a reflection, `reflection.txt`. A non-zero exit or a timeout is
a failed call. The files become a reply in the chat format, so parsing, the retry and replay are
the LLM agent's. Registers on import. Budget: 170 lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import tempfile
from functools import partial
from pathlib import Path
from typing import Callable

from kernelarc.agents.config import BackendConfig, BackendKind, BackendSettings, ConfigError
from kernelarc.agents.llm import Completion, Message, ModelCallError, llm_factory
from kernelarc.agents.protocol import AgentContext, AgentFactory, register_backend
from kernelarc.agents.usage import CallRecorder
from kernelarc.guard.sides import ENV_ALLOWLIST
from kernelarc.memory.llm_calls import CallKind

PROMPT_FILE = "prompt.md"
"""The prompt, every message of the call in order."""
INCUMBENT_FILE = "incumbent.py"
"""The agent's incumbent (the reference while it has none)."""
REFERENCE_FILE = "reference.py"
"""The task's reference source."""
CANDIDATE_FILE = "candidate.py"
"""Written by the command: the complete candidate."""
CLAIM_FILE = "claim.txt"
"""Written by the command: one line, what the change does and why it should be faster."""
REFLECTION_FILE = "reflection.txt"
"""Written by the command when asked to reflect: the lesson of the verdict."""
OUTPUT_TAIL_CHARS = 2000
"""How much of the command's output is kept when it fails or writes no candidate."""
MESSAGE_SEPARATOR = "\n\n---\n\n"
"""Between messages in prompt.md (a retry shows the first prompt, the reply and what to fix)."""


def _need_command(settings: BackendSettings) -> list[str]:
    if not settings.command:
        raise ConfigError("the cli backend needs a command: set command in [cli] of the config, "
                          "for example \"mytool --prompt-file {prompt_file} --workdir {workdir}\"")
    return shlex.split(settings.command)


def _tail(output: bytes) -> str:
    return output.decode(errors="replace")[-OUTPUT_TAIL_CHARS:].strip()


def _read(path: Path) -> str | None:
    return path.read_text(errors="replace") if path.is_file() else None


class CLIChat:
    """A ChatModel that runs a coding-agent command in a workspace and reads the files it writes."""

    reply_format = "files"

    def __init__(self, settings: BackendSettings, workspace: Path) -> None:
        """Raises ConfigError when no command is configured."""
        self.args = _need_command(settings)
        self.model = settings.model or Path(self.args[0]).name
        self.settings = settings
        self.workspace = workspace
        self._runs = 0

    def environment(self) -> dict[str, str]:
        """The command's environment: the guard's allow-list plus the variables the config passes."""
        names = set(ENV_ALLOWLIST) | set(self.settings.pass_env)
        return {k: v for k, v in os.environ.items() if k in names}

    def _prepare(self, messages: list[Message], kind: CallKind, ctx: AgentContext) -> tuple[Path, list[str]]:
        self.workspace.mkdir(parents=True, exist_ok=True)
        self._runs += 1
        prefix = f"{ctx.agent_id}-step{ctx.step:04d}-{kind.value}-{self._runs:04d}-"  # sorts in the order run
        workdir = Path(tempfile.mkdtemp(prefix=prefix, dir=self.workspace))
        (workdir / PROMPT_FILE).write_text(MESSAGE_SEPARATOR.join(m["content"] for m in messages))
        (workdir / INCUMBENT_FILE).write_text(ctx.incumbent_source or ctx.task.reference_source)
        (workdir / REFERENCE_FILE).write_text(ctx.task.reference_source)
        values = dict(prompt_file=str(workdir / PROMPT_FILE), workdir=str(workdir),
                      incumbent_file=str(workdir / INCUMBENT_FILE), candidate_file=str(workdir / CANDIDATE_FILE))
        args = [arg.format_map(values) if "{" in arg else arg for arg in self.args]
        return workdir, args

    async def complete(self, messages: list[Message], *, kind: CallKind, ctx: AgentContext) -> Completion:
        """Run the command once; its files become the reply (fenced candidate and CLAIM line, or the reflection)."""
        workdir, args = self._prepare(messages, kind, ctx)
        try:
            proc = await asyncio.create_subprocess_exec(
                *args, cwd=workdir, env=self.environment(), stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            raise ModelCallError(f"cannot run {args[0]!r}: {e.strerror or e}") from None
        try:
            output, _ = await asyncio.wait_for(proc.communicate(), self.settings.timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            raise ModelCallError(f"{args[0]!r} ran past {self.settings.timeout_s:g} s in {workdir}") from None
        if proc.returncode != 0:
            raise ModelCallError(f"{args[0]!r} exited with code {proc.returncode} in {workdir}: {_tail(output)}")
        if kind is CallKind.REFLECT:
            return Completion(text=_read(workdir / REFLECTION_FILE) or "")
        candidate = _read(workdir / CANDIDATE_FILE)
        if candidate is None:
            return Completion(text=f"(the command wrote no {CANDIDATE_FILE}; its output ended:)\n{_tail(output)}")
        claim = (_read(workdir / CLAIM_FILE) or "").strip()
        return Completion(text=f"```python\n{candidate.rstrip()}\n```\n" + (f"CLAIM: {claim}\n" if claim else ""))


def preflight(settings: BackendSettings) -> None:
    """Check that a command is configured and its program can be found.

    Raises:
        ConfigError: no command, or its program is not on PATH.
    """
    program = _need_command(settings)[0]
    if shutil.which(program) is None:
        raise ConfigError(f"the cli backend's program {program!r} is not on PATH (command in [cli] of the config)")


def default_workspace() -> Path:
    """Where workspaces go when the campaign names no folder: a kernelarc folder in the temp dir."""
    return Path(tempfile.gettempdir()) / "kernelarc-cli"


def cli_factory(config: BackendConfig | str | Path | None = None, recorder: CallRecorder | None = None, *,
                workspace: Path | None = None, model: str | None = None, device: str = "cuda",
                check: bool = True) -> AgentFactory:
    """The `cli` backend's AgentFactory (see `llm_factory`); `workspace` holds one folder per call."""
    return llm_factory(BackendKind.CLI, config=config, recorder=recorder, model=model, device=device, check=check,
                       workspace=workspace)


def chat_maker(workspace: Path | None = None) -> Callable[[BackendSettings], CLIChat]:
    """What builds a CLIChat from an agent's settings, its folders under `workspace` (default: the temp dir's)."""
    return partial(CLIChat, workspace=workspace or default_workspace())


register_backend("cli", cli_factory)

__all__ = [
    "CANDIDATE_FILE", "CLAIM_FILE", "CLIChat", "INCUMBENT_FILE", "PROMPT_FILE", "REFERENCE_FILE", "REFLECTION_FILE",
    "chat_maker", "cli_factory", "default_workspace", "preflight",
]
