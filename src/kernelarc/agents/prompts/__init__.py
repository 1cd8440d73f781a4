"""The LLM agents' prompt templates (`llm.yaml` beside this file) and the one function that renders them.

Templates are data: Jinja2 with StrictUndefined, so a variable the code forgot to pass fails loudly
instead of leaving a hole in what the model reads. Budget: 60 lines.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Any, TypedDict

import jinja2
import yaml

TEMPLATE_FILE = "llm.yaml"


class PromptTemplates(TypedDict):
    """The templates of `llm.yaml`, by name."""

    system: str
    """The system message of every call: the team, the guard, what it refuses."""
    propose: str
    """Asks for a candidate: strategy, task, incumbent, verdicts, findings, leaderboard, the step."""
    retry: str
    """Follows an unusable reply: what was wrong and what to send."""
    reflect: str
    """Asks what a verdict teaches, for the shared findings."""


def fenced(text: str, lang: str = "") -> str:
    """`text` as a Markdown code block whose fence is longer than any run of backticks in it (CommonMark's
    rule): code and notes quoted into a prompt cannot close their block early and go on as the prompt's own
    words (sixth red-team pass: a kernel's docstring did, in another agent's prompt, with "operator" orders)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                          keep_trailing_newline=False, autoescape=False)
_ENV.filters["fenced"] = fenced


@lru_cache(maxsize=1)
def templates() -> PromptTemplates:
    """The packaged templates, read once; refuses a file whose names differ from `PromptTemplates`."""
    data = yaml.safe_load(resources.files(__package__).joinpath(TEMPLATE_FILE).read_text())
    if set(data) != set(PromptTemplates.__annotations__):
        raise RuntimeError(f"{TEMPLATE_FILE} has templates {sorted(data)}, "
                           f"expected {sorted(PromptTemplates.__annotations__)}")
    return data


def render(name: str, **variables: Any) -> str:
    """Template `name` filled with `variables`; raises jinja2.UndefinedError naming a missing one."""
    return _ENV.from_string(templates()[name]).render(**variables).strip() + "\n"


__all__ = ["PromptTemplates", "TEMPLATE_FILE", "fenced", "render", "templates"]
