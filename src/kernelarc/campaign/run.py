"""Start or resume a campaign in a run directory, and write what the user gets at the end.

RUN_DIR/campaign.sqlite   every candidate, verdict, finding and event (the resume point)
RUN_DIR/best/             the winner in the task's format, plus a standalone copy
RUN_DIR/summary.json      baselines, best, speedups, SOL score, counts, per-agent results, stop reason
RUN_DIR/progress.png      best speedup against candidates, per agent
"""

from __future__ import annotations

import asyncio
import inspect
import json
import shlex
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kernelarc.agents.builtin.kinds import with_graph_kind
from kernelarc.agents.protocol import AgentFactory, get_backend
from kernelarc.agents.usage import Budget, Recorders, StoreRecorder
from kernelarc.campaign.executor import LOCAL, Executor, ExecutorSpec, LocalExecutor
from kernelarc.campaign.loop import AgentSlot, Campaign
from kernelarc.campaign.options import CampaignOptions, StopReason
from kernelarc.campaign.ray_node import Sandboxing
from kernelarc.errors import UserError
from kernelarc.guard import resolve_device
from kernelarc.guard.cutoff import Cutoff
from kernelarc.guard.judge import Isolation, isolation
from kernelarc.guard.sandbox import SandboxPolicy
from kernelarc.memory import LongTermMemory, Store
from kernelarc.memory.findings import RetentionPolicy
from kernelarc.memory.llm_calls import calls
from kernelarc.memory.records import CampaignMeta, CampaignStatus
from kernelarc.paths import user_data_dir
from kernelarc.strategies import default_spread, parse_strategies
from kernelarc.task.loader import load_task
from kernelarc.task.model import Task

DB_NAME = "campaign.sqlite"


@dataclass(frozen=True)
class CampaignResult:
    run_dir: Path
    stop_reason: StopReason
    summary: dict


def executor_devices(spec: ExecutorSpec, device: str) -> list[str]:
    """The devices a run's evaluations use: this machine's (`campaign_devices`), or with Ray the kind the
    cluster judges on (`cuda` or `cpu`), after joining it.

    Raises:
        UserError: an unusable device, Ray missing, or a cluster that cannot be reached or judge.
    """
    if spec.kind == "ray":
        from kernelarc.campaign.ray_executor import connect

        return [connect(spec.ray_address, device).device]
    return campaign_devices(device)


def campaign_devices(device: str) -> list[str]:
    """The devices a campaign spreads over: every visible GPU for `auto`/`cuda`, else the one named."""
    resolved = resolve_device(device)
    if resolved == "cpu" or device.startswith("cuda:"):
        return [resolved]
    import torch

    return [f"cuda:{i}" for i in range(torch.cuda.device_count())]


@dataclass
class BackendRun:
    """What a campaign gives its backend: where LLM calls are recorded and what they cost so far."""

    store: Store | None
    run_dir: Path | None
    device: str
    budget: Budget


def agent_factory(options: CampaignOptions, run: BackendRun) -> AgentFactory:
    """The backend's agent factory, built once per campaign.

    Besides the user's `--backend-option`s, a backend that declares them gets `recorder` (every LLM
    call into the store and the cost budget), `device` (shown in prompts) and `workspace` (the cli
    backend's folders, under the run dir).

    Raises:
        UserError: unknown backend, an option it does not take, a missing key, an unreachable server.
    """
    maker = get_backend(options.backend)
    accepted = inspect.signature(maker).parameters
    kwargs = dict(options.backend_options)
    provided = {"recorder": Recorders(*([StoreRecorder(run.store)] if run.store else []), run.budget),
                "device": run.device, "workspace": run.run_dir / "workspaces" if run.run_dir else None}
    kwargs.update({k: v for k, v in provided.items() if k in accepted and k not in kwargs})
    try:
        return maker(**kwargs)
    except TypeError as e:
        raise UserError(f"backend {options.backend!r} rejected its options {sorted(options.backend_options)}: {e}") from None


def _slots(task: Task, options: CampaignOptions, store: Store, factory: AgentFactory) -> list[AgentSlot]:
    stored = [a.strategy for a in store.agents()]
    with_work = getattr(factory, "strategies_with_work", None)  # optional: backends that know their moves
    if stored:  # a resumed campaign keeps its agents, whatever the spread would be today
        strategies = parse_strategies(",".join(stored))
    elif options.strategies:
        strategies = parse_strategies(",".join(options.strategies))
    else:
        strategies = default_spread(options.agents, task.kernel_type, with_work(task) if with_work else None)
    slots = []
    for i in range(options.agents):
        strategy = strategies[i % len(strategies)]
        agent_id = f"a{i}-{strategy.name}"
        agent = factory(agent_id, strategy, task, options.seed * 1000 + i)
        # a team may mix backends ([[agents]] overrides): each agent is recorded with its own
        store.register_agent(agent_id, strategy.name, getattr(agent, "backend", "") or options.backend)
        slots.append(AgentSlot(id=agent_id, index=i, strategy=strategy, agent=agent))
    return slots


def start(task_path: Path, options: CampaignOptions, run_dir: Path, on_progress=None,
          on_start: Callable[[Task], None] | None = None, executor: ExecutorSpec = LOCAL) -> CampaignResult:
    """Run a new campaign on `task_path` in `run_dir` (which must not hold one already), its evaluations
    on `executor`.

    `on_start(task)` is called once every user error has been ruled out, just before anything runs.
    """
    task = with_graph_kind(load_task(task_path))
    if options.strategies:
        parse_strategies(",".join(options.strategies))
    devices = executor_devices(executor, options.device)
    agent_factory(options, BackendRun(None, None, devices[0], Budget()))  # a bad backend fails before anything is written
    db = run_dir / DB_NAME
    if db.exists():
        raise UserError(f"{run_dir} already holds a campaign: use --resume {run_dir} or another --out")
    if on_start is not None:
        on_start(task)
    run_dir.mkdir(parents=True, exist_ok=True)
    store = Store(db)
    store.put_meta(CampaignMeta(task_name=task.name, task_path=str(task.path), kernel_type=task.kernel_type,
                                seed=options.seed, options=options.model_dump(mode="json"),
                                retention=RetentionPolicy.parse(options.memory)))
    return _run(task, options, store, run_dir, on_progress, executor=executor)


def resume(run_dir: Path, on_progress=None, time_limit_s: float | None = None, budget: int | None = None,
           remeasure: bool = False, on_start: Callable[[Task, CampaignOptions, Store], None] | None = None,
           executor: ExecutorSpec = LOCAL) -> CampaignResult:
    """Continue the campaign stored in `run_dir` with its own options, or a new `budget` (counted from
    the campaign's start) and `time_limit_s` (for this invocation); both are stored for later resumes.

    A campaign with nothing left to do (its budget spent, every agent retired, nothing pending) is left
    as it is: no evaluation, summary.json untouched, unless `remeasure` times its winner again.
    `on_start(task, options, store)` is called before anything runs.
    """
    db = run_dir / DB_NAME
    if not db.is_file():
        raise UserError(f"no campaign to resume in {run_dir} ({DB_NAME} is missing)")
    store = Store(db)
    meta = store.get_meta()
    if meta is None:
        raise UserError(f"{db} holds no campaign metadata; it cannot be resumed")
    options = CampaignOptions.model_validate(meta.options)
    update = {k: v for k, v in (("time_limit_s", time_limit_s), ("budget", budget)) if v is not None}
    task = load_task(meta.task_path).model_copy(update={"kernel_type": meta.kernel_type})
    if update:
        options = options.model_copy(update=update)
        store.put_meta(meta.model_copy(update={"options": options.model_dump(mode="json")}))
    if on_start is not None:
        on_start(task, options, store)
    return _run(task, options, store, run_dir, on_progress, remeasure=remeasure, executor=executor)


def replay(recorded_run: Path, run_dir: Path, on_progress=None, on_start=None,
           executor: ExecutorSpec = LOCAL) -> CampaignResult:
    """Re-run a recorded LLM campaign from its stored responses, with no model access, into `run_dir`."""
    db = recorded_run / DB_NAME
    if not db.is_file():
        raise UserError(f"no campaign to replay in {recorded_run} ({DB_NAME} is missing)")
    meta = Store(db).get_meta()
    if meta is None:
        raise UserError(f"{db} holds no campaign metadata; it cannot be replayed")
    recorded = CampaignOptions.model_validate(meta.options)
    reply_format = "files" if recorded.backend == "cli" else "chat"
    options = recorded.model_copy(update={"backend": "replay", "max_cost": None,
                                          "backend_options": {"recording": str(db), "reply_format": reply_format}})
    return start(Path(meta.task_path), options, run_dir, on_progress, on_start, executor)


def campaign_sandboxing(options: CampaignOptions, run_dir: Path) -> Sandboxing:
    """The sandbox rules for a campaign's sides: required for code an LLM or a coding agent wrote
    (unless the user allowed judging it bare), best effort for the built-in agents' templates; the
    run directory and the long-term memory hidden from every side."""
    policy = SandboxPolicy(hidden=(run_dir.resolve(), user_data_dir().resolve()))
    return Sandboxing(policy, require=options.backend != "builtin", allow_unsafe=options.unsafe_no_sandbox)


def campaign_isolation(options: CampaignOptions, run_dir: Path) -> Isolation:
    """The sandbox for a campaign's sides on this machine (`campaign_sandboxing`, probed here).

    Raises:
        SandboxRequired: untrusted backend, no sandbox here, no `--unsafe-no-sandbox`.
    """
    rules = campaign_sandboxing(options, run_dir)
    return isolation(require=rules.require, allow_unsafe=rules.allow_unsafe, policy=rules.policy)


def open_executor(spec: ExecutorSpec, task: Task, options: CampaignOptions, run_dir: Path,
                  on_event: Callable[[str, dict], None] = lambda kind, payload: None) -> Executor:
    """The executor `spec` names for a campaign (or a bench's extra evaluation) in `run_dir`.

    With Ray, each node probes its own sandbox; `on_event` receives what the cluster did (lost attempts).

    Raises:
        UserError: as `executor_devices`; SandboxRequired locally as `campaign_isolation`.
    """
    if spec.kind == "ray":
        from kernelarc.campaign.ray_executor import RayExecutor, connect

        return RayExecutor(task, connect(spec.ray_address, options.device), options.guard_settings(),
                           campaign_sandboxing(options, run_dir), on_event)
    iso = campaign_isolation(options, run_dir)
    if iso.note:
        _say(f"kernelarc: {iso.note}")
    return LocalExecutor(task, campaign_devices(options.device), options.guard_settings(), iso)


def resume_command(run_dir: Path) -> str:
    """The command that continues the campaign in `run_dir`."""
    return f"kernelarc optimize --resume {shlex.quote(str(run_dir))}"


class Interrupts:
    """SIGINT during a campaign: the first lets the evaluations in flight finish and starts nothing new,
    the second cuts them (left pending); each says so in one line on stderr. After the second, Ctrl-C is
    Python's again (KeyboardInterrupt)."""

    def __init__(self, campaign: Campaign, run_dir: Path, loop: asyncio.AbstractEventLoop):
        self.campaign, self.run_dir, self.loop = campaign, run_dir, loop
        self.count = 0

    def __enter__(self) -> "Interrupts":
        try:
            self.loop.add_signal_handler(signal.SIGINT, self.handle)
            self.installed = True
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread: Ctrl-C stays Python's
            self.installed = False
        return self

    def __exit__(self, *exc) -> None:
        if self.installed:
            self.loop.remove_signal_handler(signal.SIGINT)
            self.installed = False

    def handle(self) -> None:
        self.count += 1
        waiting = self.campaign.waiting_for()
        if self.count == 1:
            self.campaign.interrupt()
            _say(f"kernelarc: interrupted: waiting for {waiting} to finish (Ctrl-C again to stop at once); "
                 f"continue later with: {resume_command(self.run_dir)}")
            return
        self.campaign.cutoff.now("interrupted (Ctrl-C twice)")
        _say(f"kernelarc: stopping now: {waiting} cut and left pending; continue later with: "
             f"{resume_command(self.run_dir)}")
        self.__exit__()


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _run(task: Task, options: CampaignOptions, store: Store, run_dir: Path, on_progress,
         remeasure: bool = False, executor: ExecutorSpec = LOCAL) -> CampaignResult:
    from kernelarc.campaign.summary import final_measurements, write_outputs

    started = time.monotonic()
    judged_before = len(store.evaluations())
    summary_path = run_dir / "summary.json"
    budget = Budget(calls(store))  # a resumed campaign counts what it already spent
    spec = executor
    executor = open_executor(spec, task, options, run_dir, lambda kind, payload: store.log_event(kind, payload=payload))
    try:
        store.log_event("executor", payload={"kind": spec.kind, "devices": executor.devices,
                                             **({"ray_address": spec.ray_address} if spec.kind == "ray" else {})})
        factory = agent_factory(options, BackendRun(store, run_dir, executor.devices[0], budget))
        longterm = LongTermMemory() if options.longterm else None
        campaign = Campaign(task, options, store, executor, _slots(task, options, store, factory), longterm,
                            on_progress, spent_usd=lambda: budget.spent_usd, cutoff=Cutoff())

        async def run_and_measure():
            with Interrupts(campaign, run_dir, asyncio.get_running_loop()):
                reason = await campaign.run()
                unchanged = campaign.round == 0 and len(store.evaluations()) == judged_before and not campaign.cut
                if unchanged and summary_path.is_file() and not remeasure:
                    return reason, None
                return reason, await final_measurements(campaign)

        reason, finals = asyncio.run(run_and_measure())
    finally:
        executor.close()
    if finals is None:  # a resumed campaign with nothing new to do: its outputs stay as they were
        _say(f"kernelarc: nothing new to do in {run_dir} ({reason.value}); summary.json left unchanged "
             "(--remeasure times the winner again; a larger --budget or --time-limit continues the search)")
        return CampaignResult(run_dir, StopReason(json.loads(summary_path.read_text())["stop_reason"]),
                              json.loads(summary_path.read_text()))
    meta = store.get_meta()
    store.put_meta(meta.model_copy(update={"status": CampaignStatus.FINISHED, "stop_reason": reason.value}))
    if longterm is not None:
        longterm.absorb(store, RetentionPolicy.parse(options.memory), leave_out=frozenset(campaign.disqualified))
    summary = write_outputs(campaign, run_dir, reason, finals, wall_s=time.monotonic() - started,
                            llm_usage=budget.summary())
    return CampaignResult(run_dir, reason, summary)


__all__ = ["BackendRun", "CampaignResult", "DB_NAME", "Interrupts", "agent_factory", "campaign_devices",
           "campaign_sandboxing", "executor_devices", "open_executor", "replay", "resume", "resume_command", "start"]
