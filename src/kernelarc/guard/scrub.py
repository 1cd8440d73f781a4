"""Removing secrets and terminal controls from text before it reaches a verdict, the database, a log tail or
a prompt.

Sides never hold a secret (their environment is an allow-list and the sandbox hides every other
process), but text still flows from them to places people and models read: compiler logs, error
messages, reflections. Two nets: the values of this process's secret-named environment variables,
and the shapes of common credentials. And the text is shown as written, never obeyed: control characters
(escape sequences that retitle or clear a terminal, or move the cursor to overwrite a printed verdict) and
bidirectional overrides are written out as escapes (sixth red-team pass, 2026-12-06: a candidate's error
message cleared the terminal of `kernelarc eval`). Imports without torch.
"""

from __future__ import annotations

import os
import re

REDACTED = "[redacted]"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
MIN_SECRET_CHARS = 8
"""Shorter values are not treated as secrets: replacing them would garble ordinary text."""
CREDENTIAL_SHAPES = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{8,}"          # Anthropic
    r"|sk-(?:proj-)?[A-Za-z0-9_\-]{16,}"  # OpenAI-style
    r"|gh[pousr]_[A-Za-z0-9]{20,}"        # GitHub
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"     # Slack
    r"|AKIA[0-9A-Z]{16}"                  # AWS access key id
    r"|AIza[0-9A-Za-z_\-]{30,}"           # Google
    r"|hf_[A-Za-z0-9]{20,}"               # Hugging Face
    r"|Bearer\s+[A-Za-z0-9._\-]{16,}"
)


CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Every C0 and C1 control but newline and tab, DEL, and the marks that reorder text on screen."""


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of secret-named variables in `environ` (this process's by default), longest first."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_CHARS}
    return sorted(values, key=len, reverse=True)


def scrub(text: str, environ: dict[str, str] | None = None) -> str:
    """`text` with every known secret value and credential-shaped string replaced by `REDACTED`, and every
    control character (`CONTROLS`) written as its escape (`\\x1b`, `\\u202e`)."""
    if not text:
        return text
    for value in secret_values(environ):
        text = text.replace(value, REDACTED)
    text = CREDENTIAL_SHAPES.sub(REDACTED, text)
    return CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def blank_own_environment_block() -> int:
    """Overwrite the values of secret-named variables in this process's original environment block,
    the memory /proc/<pid>/environ shows to other processes; the number of values blanked.

    Python's os.environ is a copy made at start-up, so the SDKs that read keys from it still find
    them; C code calling getenv() on those names, and children started without an explicit
    environment, see `x`s instead. Used when sides run without a sandbox (guard/judge.py), where a
    side running as the same user could otherwise read this process's /proc files.
    """
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # env_start, env_end (fields 50, 51 of proc(5))
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = mem.read(end - start)
            blanked = 0
            offset = 0
            for entry in block.split(b"\0"):
                name, eq, value = entry.partition(b"=")
                if eq and value and SECRET_NAME.search(name.decode(errors="replace")):
                    mem.seek(start + offset + len(name) + 1)
                    mem.write(b"x" * len(value))
                    blanked += 1
                offset += len(entry) + 1
            return blanked
    except (OSError, ValueError, IndexError):
        return 0


__all__ = ["scrub", "secret_values", "blank_own_environment_block", "REDACTED"]
