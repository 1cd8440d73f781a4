"""What every model-backed agent shares: the prompt, reading the reply, one retry, reflection, records.

`LLMAgent` implements the `Agent` protocol over a `ChatModel` (the openai, anthropic and cli
backends, or replay). Each step builds a fresh prompt from the `AgentContext` (nothing is carried
between steps, so a run can be replayed), asks the model, and reads a full file in a ```python
block, or strict SEARCH/REPLACE edits of the incumbent, and its claim (a `CLAIM:` line, else the
first line of prose). An unusable reply is answered once with what to fix; a second one, or a failed
call, raises `AgentStepFailed` (quoting the start of the reply): the campaign logs it and counts a
wasted step. Every call, failed ones included, goes to the recorder.
Must not import the SDKs, campaign or the store. Budget: 300 lines.
"""

from __future__ import annotations

import importlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Protocol, TypeVar

from kernelarc.agents.config import BackendConfig, BackendKind, BackendSettings, ConfigError, Price, load_config
from kernelarc.agents.prompts import render
from kernelarc.agents.protocol import AgentContext, AgentFactory, Proposal, clip_reflection
from kernelarc.agents.usage import CallRecorder, MemoryRecorder, cost_usd
from kernelarc.guard.scrub import scrub
from kernelarc.guard.types import Evaluation
from kernelarc.memory.llm_calls import CallKind, LLMCall
from kernelarc.memory.text import CLAIM_CAP, REFLECTION_CAP, clip_text
from kernelarc.strategies.model import Strategy
from kernelarc.task.model import Task, TaskFormat, TensorSpec, Workload

PROPOSE_ATTEMPTS = 2
"""Replies asked for per step: the first, and one retry told what was wrong with it."""
SHOWN_SOURCE_CHARS = 12_000
"""Longest leaderboard source or reflected candidate shown in a prompt (longer ones are clipped)."""
SHOWN_REASON_CHARS = 600
"""Longest verdict reason or log tail shown in a prompt: compiler errors and mismatches, trimmed."""
SHOWN_LEADERS = 3
"""Leaderboard entries shown with their source."""
REPLY_EXCERPT_CHARS = 160
"""Characters of an unusable reply quoted in the step's error."""

Message = dict[str, str]
"""One chat message: `{"role": "system" | "user" | "assistant", "content": text}`."""
ReplyFormat = Literal["chat", "files"]
"""How a model answers: in its reply text (chat), or by writing files in a workspace (cli)."""
T = TypeVar("T")

_FENCE = re.compile(r"^```(python|py|python3)?[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE | re.IGNORECASE)
_ANY_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.DOTALL | re.MULTILINE)
_EDIT = re.compile(r"^<{7} SEARCH[ \t]*\n(.*?)^={7}[ \t]*\n(.*?)^>{7} REPLACE[ \t]*$", re.DOTALL | re.MULTILINE)
_EDIT_START = re.compile(r"^<{7} SEARCH", re.MULTILINE)
_CLAIM = re.compile(r"^[ \t*_#>-]*CLAIM[*_]*[ \t]*:[*_]*[ \t]*(.+?)[ \t*_]*$", re.MULTILINE | re.IGNORECASE)
_ENTRY = re.compile(r"^(class ModelNew\b|def run\b)", re.MULTILINE)
NO_CLAIM = "no claim given"


class AgentStepFailed(Exception):
    """The agent has no candidate (or no reflection) this step: its model failed or never replied usably.

    Not a UserError: the campaign logs it as an event, counts a wasted step and goes on.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        """One line: what failed (the call's error, or what was wrong with the last reply)."""


class ModelCallError(Exception):
    """A backend's call failed after the SDK's own retries (connection, timeout, HTTP error, crashed command)."""


class ReplyError(ValueError):
    """A reply cannot be used; the message says what to fix, for the model to read."""

    def __init__(self, problem: str, reply: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        """What is wrong with the reply, addressed to the model."""
        self.reply = reply
        """The reply itself, once known."""


@dataclass(frozen=True)
class Completion:
    """What one call returned."""

    text: str
    """The reply text."""
    tokens_in: int | None = None
    """Prompt tokens the provider reported; None if it reported none."""
    tokens_out: int | None = None
    """Completion tokens the provider reported (reasoning included); None if it reported none."""


class ChatModel(Protocol):
    """One backend's way to ask a model; raises ModelCallError when the call fails."""

    model: str
    """The model name, as recorded and priced."""
    reply_format: ReplyFormat
    """Whether the prompt asks for the answer in the reply or in workspace files."""

    async def complete(self, messages: list[Message], *, kind: CallKind, ctx: AgentContext) -> Completion:
        """Send `messages`; return the reply and its usage."""
        ...


@dataclass(frozen=True)
class ParsedReply:
    """A usable reply: the full candidate source and its claim."""

    source: str
    """The complete file (edits already applied)."""
    claim: str
    """The CLAIM line's text, clipped to one line of at most 160 characters."""


def apply_edits(base: str, edits: list[tuple[str, str]]) -> str:
    """`base` with each (search, replace) applied in order; each search must occur exactly once.

    Raises:
        ReplyError: a search text is empty, absent or ambiguous.
    """
    text = base if base.endswith("\n") else base + "\n"
    for i, (search, replace) in enumerate(edits, 1):
        found = text.count(search) if search.strip() else 0
        if found != 1:
            first = search.strip().splitlines()[0] if search.strip() else "(empty)"
            where = "is empty" if not search.strip() else ("is not in the incumbent" if found == 0 else
                                                           f"occurs {found} times in the incumbent")
            raise ReplyError(f"SEARCH block {i} (starting {first!r}) {where}; it must match exactly once")
        text = text.replace(search, replace, 1)
    return text


def parse_reply(text: str, incumbent: str | None) -> ParsedReply:
    """The candidate and claim in a reply, as a reasonable model writes them: SEARCH/REPLACE edits of
    `incumbent`, else the last fenced block that is Python (tagged so, or untagged holding the entry
    point). The claim is a `CLAIM:` line in any case or markdown; without one, the first line of prose.

    Raises:
        ReplyError: no code, or malformed or non-matching edits.
    """
    edits = [(m.group(1), m.group(2)) for m in _EDIT.finditer(text)]
    if len(edits) != len(_EDIT_START.findall(text)):
        raise ReplyError("a SEARCH/REPLACE block is malformed (each needs <<<<<<< SEARCH, =======, "
                         ">>>>>>> REPLACE on lines of their own)")
    if edits:
        if incumbent is None:
            raise ReplyError("SEARCH/REPLACE edits need an incumbent and you have none yet; send the full file")
        source = apply_edits(incumbent, edits)
    else:
        # A block tagged Python, or an untagged one that holds the entry point.
        blocks = [b for tag, b in _FENCE.findall(text) if b.strip() and (tag or _ENTRY.search(b))]
        if not blocks:
            raise ReplyError("it holds no candidate code (no ```python block, no untagged block with the entry "
                             "point, and no SEARCH/REPLACE edits)")
        source = blocks[-1]
    prose = _ANY_FENCE.sub("", _EDIT.sub("", text))
    claims = _CLAIM.findall(prose)
    claim = claims[-1] if claims else next((line.strip(" \t#*_>-") for line in prose.splitlines()
                                            if line.strip(" \t#*_>-")), NO_CLAIM)
    return ParsedReply(source=source, claim=clip_text(claim, CLAIM_CAP, one_line=True))


def reply_excerpt(text: str) -> str:
    """The start of a reply on one line, quoted, for the error a user reads (terminal, summary.json)."""
    flat = " ".join(text.split())
    return repr(flat[:REPLY_EXCERPT_CHARS] + ("..." if len(flat) > REPLY_EXCERPT_CHARS else "")) if flat else "(empty)"


def _clipped(text: str, cap: int, one_line: bool = False) -> str:
    return clip_text(text, cap, one_line=one_line) if text else text


def _format_ratio(value: float | None) -> str | None:
    return None if value is None else f"{value:.3g}"


def _task_variables(task: Task) -> dict[str, Any]:
    entry = ("`ModelNew`, an nn.Module with the reference Model's constructor and forward signature"
             if task.format is TaskFormat.KERNELBENCH else "a function `run` with the reference's signature")
    return dict(name=task.name, format=task.format.value, kernel_type=task.kernel_type, entry=entry,
                description=task.description, reference_source=task.reference_source.strip(),
                workloads=[_workload_line(w) for w in task.workloads])


def _tensors(specs: tuple[TensorSpec, ...]) -> str:
    return ", ".join(f"{s.name} {'scalar' if s.is_scalar else list(s.shape)} {s.dtype}" for s in specs)


def _workload_line(w: Workload) -> str:
    """One workload as the prompt lists it: shapes, dtypes, tolerance, FLOPs and minimal bytes."""
    parts = [f"`{w.uuid}`" + (f" axes {w.axes}" if w.axes else "") + ": inputs "
             + (_tensors(w.inputs) or "as get_inputs() makes them"),
             f"outputs {_tensors(w.outputs) or 'as the reference returns them'}",
             "tolerance " + ("; ".join(f"atol {t.atol:g} rtol {t.rtol:g}" for t in w.tolerance) or "per output dtype")]
    if w.flops:
        parts.append(f"{w.flops:.3g} FLOP")
    if w.min_bytes:
        parts.append(f"at least {w.min_bytes} bytes to move")
    return "; ".join(parts)


def prompt_variables(ctx: AgentContext, device: str, reply_format: ReplyFormat) -> dict[str, Any]:
    """Everything the propose template shows, from the step's context."""
    return dict(
        strategy=ctx.strategy, task=_task_variables(ctx.task), device=device, reply_format=reply_format,
        incumbent=dict(id=ctx.incumbent_id, source=ctx.incumbent_source and ctx.incumbent_source.strip(),
                       speedup=_format_ratio(ctx.incumbent_speedup),
                       latency_ms=_format_ratio(ctx.incumbent_latency_ms),
                       profile=[scrub(line) for line in ctx.incumbent_profile.lines()] if ctx.incumbent_profile else []),
        verdicts=[dict(candidate_id=v.candidate_id, verdict=v.verdict.value, status=v.status.value, claim=v.claim,
                       speedup=_format_ratio(v.speedup), reason=_clipped(scrub(v.reason), SHOWN_REASON_CHARS, one_line=True))  # a list item
                  for v in ctx.last_verdicts],
        findings=bool(ctx.findings),
        findings_json=json.dumps([dict(kind=f.kind.value, strategy=scrub(f.strategy), verdict=f.verdict.value,
                                       speedup=_format_ratio(f.speedup), note=scrub(f.reflection))
                                  for f in ctx.findings], indent=1),
        leaderboard=[dict(agent_id=e.agent_id, strategy=e.strategy, candidate_id=e.candidate_id,
                          speedup=_format_ratio(e.speedup), latency_ms=_format_ratio(e.latency_ms),
                          source=_clipped(e.source.strip(), SHOWN_SOURCE_CHARS))
                     for e in ctx.leaderboard[:SHOWN_LEADERS]],
        must_draft=ctx.must_draft, draft_instruction=ctx.draft_instruction,
        compiler_seed=_clipped(ctx.compiler_seed.strip(), SHOWN_SOURCE_CHARS)
        if ctx.compiler_seed and ctx.incumbent_source is None else None,
    )


def reflect_variables(ctx: AgentContext, proposal: Proposal, evaluation: Evaluation,
                      reply_format: ReplyFormat) -> dict[str, Any]:
    """Everything the reflect template shows: the candidate, its claim and the guard's numbers."""
    shown = dict(verdict=evaluation.verdict.value, status=evaluation.status.value, reason=evaluation.reason,
                 speedup=_format_ratio(evaluation.speedup), latency_ms=_format_ratio(evaluation.latency_ms),
                 timing=evaluation.timing.value if evaluation.timing else None, device=evaluation.device,
                 log_tail=_clipped(evaluation.log_tail.strip(), SHOWN_REASON_CHARS))
    return dict(task=ctx.task, strategy=ctx.strategy, claim=proposal.claim, evaluation=shown,
                source=_clipped(proposal.source.strip(), SHOWN_SOURCE_CHARS), cap=REFLECTION_CAP,
                reply_format=reply_format)


def _message(role: str, content: str) -> Message:
    return {"role": role, "content": content}


class LLMAgent:
    """An `Agent` whose proposals and reflections come from a ChatModel."""

    def __init__(self, agent_id: str, chat: ChatModel, recorder: CallRecorder, *, price: Price | None = None,
                 device: str = "cuda", backend: str = "") -> None:
        """
        Args:
            agent_id: the campaign's id for this agent (records are keyed by it).
            chat: the backend.
            recorder: receives every call (the campaign's store and budget).
            price: the model's price, for the cost of each call; None: not priced.
            device: the device the guard times on, as shown in the prompt.
            backend: the backend's name, as the campaign records it for this agent (a team may mix them).
        """
        self.backend = backend
        self.name = agent_id
        self.chat = chat
        self.recorder = recorder
        self.price = price
        self.device = device

    async def propose(self, ctx: AgentContext) -> Proposal:
        """A candidate from the model, asking once more if the first reply is unusable.

        Raises:
            AgentStepFailed: the call failed, or no reply was usable.
        """
        variables = prompt_variables(ctx, self.device, self.chat.reply_format)
        messages = [_message("system", render("system")), _message("user", render("propose", **variables))]
        problem = reply = ""
        for _ in range(PROPOSE_ATTEMPTS):
            try:
                parsed = await self._ask(ctx, messages, CallKind.PROPOSE,
                                         lambda text: parse_reply(text, ctx.incumbent_source))
            except ReplyError as e:
                problem, reply = e.problem, e.reply
                messages = messages + [_message("assistant", e.reply), _message(
                    "user", render("retry", problem=problem, reply_format=self.chat.reply_format))]
                continue
            return Proposal(source=parsed.source, claim=parsed.claim, is_draft=ctx.must_draft,
                            parent_id=None if ctx.must_draft else ctx.incumbent_id)
        raise AgentStepFailed(f"no usable reply in {PROPOSE_ATTEMPTS} tries; the last: {problem}; "
                              f"it began: {reply_excerpt(reply)}")

    async def reflect(self, ctx: AgentContext, proposal: Proposal, evaluation: Evaluation) -> str:
        """The model's lesson from the verdict, clipped to 1,200 characters.

        Raises:
            AgentStepFailed: the call failed or the reply was empty.
        """
        variables = reflect_variables(ctx, proposal, evaluation, self.chat.reply_format)
        messages = [_message("system", render("system")), _message("user", render("reflect", **variables))]
        try:
            return await self._ask(ctx, messages, CallKind.REFLECT, _reflection)
        except ReplyError as e:
            raise AgentStepFailed(f"unusable reflection: {e}") from None

    async def _ask(self, ctx: AgentContext, messages: list[Message], kind: CallKind, use: Callable[[str], T]) -> T:
        """Call the model, read the reply with `use`, record the call either way.

        Raises:
            AgentStepFailed: the call failed.
            ReplyError: `use` refused the reply (carrying the reply's text).
        """
        started = time.monotonic()
        try:
            completion = await self.chat.complete(messages, kind=kind, ctx=ctx)
        except ModelCallError as e:
            self._record(ctx, kind, messages, None, time.monotonic() - started, error=str(e))
            raise AgentStepFailed(f"{kind.value} call to {self.chat.model} failed: {e}") from None
        latency = time.monotonic() - started
        try:
            result = use(completion.text)
        except ReplyError as e:
            self._record(ctx, kind, messages, completion, latency, error=f"unusable reply: {e}")
            raise ReplyError(e.problem, completion.text) from None
        self._record(ctx, kind, messages, completion, latency, error=None)
        return result

    def _record(self, ctx: AgentContext, kind: CallKind, messages: list[Message], completion: Completion | None,
                latency_s: float, error: str | None) -> None:
        tokens_in = completion.tokens_in if completion else None
        tokens_out = completion.tokens_out if completion else None
        self.recorder.record(LLMCall(
            agent_id=self.name, step=ctx.step, kind=kind, model=self.chat.model, prompt=json.dumps(messages),
            response=completion.text if completion else None, tokens_in=tokens_in, tokens_out=tokens_out,
            cost_usd=cost_usd(self.price, tokens_in, tokens_out) if completion else None, error=error,
            latency_s=latency_s))


ChatMaker = Callable[[BackendSettings], ChatModel]
"""Builds a backend's ChatModel for one agent's settings; raises ConfigError when they cannot work."""


def _backend_module(kind: BackendKind) -> Any:
    return importlib.import_module(f"kernelarc.agents.{kind.value}")


def llm_factory(backend: BackendKind, *, config: BackendConfig | str | Path | None, recorder: CallRecorder | None,
                model: str | None, device: str, check: bool, workspace: Path | None = None) -> AgentFactory:
    """The AgentFactory of a model backend: one LLMAgent per agent, on that agent's backend, with its
    settings and price. An `[[agents]]` override with `backend` moves the agents it matches to another
    model backend (a mixed OpenAI/Anthropic team); each backend module's `chat_maker` builds their chats.

    Args:
        backend: the team's backend; which section and overrides of `config` apply.
        config: the configuration, or the path of its file (`--backend-option config=FILE`); None: defaults
            and the environment only.
        recorder: where every call goes (the campaign passes `Recorders(StoreRecorder(store), budget)`);
            None keeps them in a `MemoryRecorder`.
        model: the `--model` option, replacing the section's model.
        device: the device the guard times on, shown in prompts.
        check: check keys and servers now (`check_backend`), so that a campaign fails at start, and the
            settings each agent gets when it is made.
        workspace: where cli agents (the team's, or agents moved to cli) make their folders.

    Raises:
        ConfigError: with `check`, a key is missing, a server unreachable or a model unknown.
    """
    config = (config if isinstance(config, BackendConfig) else load_config(config)).with_model(backend, model)
    recorder = recorder if recorder is not None else MemoryRecorder()
    checked: set[tuple] = set()
    if check:
        check_backend(config, backend, checked)

    def make(agent_id: str, strategy: Strategy, task: Task, seed: int) -> LLMAgent:
        kind = config.backend_for(agent_id, strategy.name, backend)
        settings = config.settings_for(kind, agent_id, strategy.name)
        try:
            if check:
                _preflight(kind, settings, checked)
            chat = _backend_module(kind).chat_maker(workspace)(settings)
        except ConfigError as e:
            raise ConfigError(f"agent {agent_id} ({kind.value}; settings from "
                              f"{config.sources(kind, agent_id, strategy.name)}): {e}") from None
        return LLMAgent(agent_id, chat, recorder, price=config.price(chat.model), device=device, backend=kind.value)

    return make


def check_backend(config: BackendConfig, backend: BackendKind, checked: set[tuple] | None = None) -> None:
    """Fail fast when a key is missing, a server unreachable or a model unknown, for every setting the
    team on `backend` can use (its own and those of the backends overrides move agents to).

    Each distinct (backend, server, key variable, model, command) is checked once by the backend
    module's `preflight`; `checked` collects them.

    Raises:
        ConfigError: one line naming the config section, and the variable, URL or model at fault.
    """
    checked = set() if checked is None else checked
    for kind in config.backends_in_use(backend):
        for where, settings in config.variants(kind, backend):
            try:
                _preflight(kind, settings, checked)
            except ConfigError as e:  # a section's own errors name it; an override's are prefixed with its
                raise (e if where == f"[{kind.value}]" else ConfigError(f"with {where} of the config: {e}")) from None


def _preflight(kind: BackendKind, settings: BackendSettings, checked: set[tuple]) -> None:
    key = (kind, settings.base_url, settings.api_key_env, settings.model, settings.command)
    if key not in checked:
        _backend_module(kind).preflight(settings)
        checked.add(key)


def _reflection(text: str) -> str:
    if not text.strip():
        raise ReplyError("the reflection is empty")
    return clip_reflection(text)


__all__ = [
    "AgentStepFailed", "ChatMaker", "ChatModel", "Completion", "LLMAgent", "Message", "ModelCallError",
    "PROPOSE_ATTEMPTS", "ParsedReply", "ReplyError", "ReplyFormat", "apply_edits", "check_backend", "llm_factory",
    "parse_reply", "prompt_variables", "reflect_variables", "reply_excerpt",
]
