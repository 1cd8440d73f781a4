"""Building blocks for campaign tests: the slow_sum task, scripted candidates, test backends, shared runs.

Every evaluation on the CPU costs a few seconds of worker start-up, so tests use slow_sum (a Python
loop that a vectorized candidate beats about 20x as the judge's clock measures it on the CPU, where
each timed request's own bookkeeping bounds the ratio; the calls alone differ about 300x), one
correctness round pair, no torch.compile baseline, and candidates whose verdicts do not depend on
timing noise. Campaigns several tests read
are built once per session (`shared_run`), under a file lock so that pytest-xdist workers share them.
"""

from __future__ import annotations

import itertools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import pytest
from filelock import FileLock

from kernelarc.agents import Proposal, ScriptedAgent, Step, register_backend
from kernelarc.campaign import CampaignOptions, start
from kernelarc.campaign.run import DB_NAME
from kernelarc.guard import Evaluation, GuardSettings, Verdict
from kernelarc.memory import Store

REPO = Path(__file__).resolve().parents[2]
SLOW_SUM = REPO / "examples" / "kernelbench" / "slow_sum.py"
RMSNORM = REPO / "examples" / "sol" / "rmsnorm_small"
CANDIDATES = REPO / "tests" / "fixtures" / "campaign"
ROBUST_SCRIPT = CANDIDATES / "robust.json"
"""Agents a0-reduction (KEEP, then REVERT) and a1-memory (two REJECTs): `--strategies reduction,memory`."""
ROBUST_VERDICTS = {"a0-reduction": ["KEEP", "REVERT"], "a1-memory": ["REJECT", "REJECT"]}
ROBUST_SEED = 7
ROBUST_ARGS = ["--agents", "2", "--strategies", "reduction,memory", "--backend", "scripted",
               "--backend-option", f"script={ROBUST_SCRIPT}", "--budget", "4", "--seed", str(ROBUST_SEED),
               "--no-compile-baseline", "--rounds", "2", "--device", "cpu", "--fresh-memory"]
"""`kernelarc optimize SLOW_SUM ...` options of the robust campaign (the same as `robust_options`)."""

_backend_ids = itertools.count()


def source(name: str) -> str:
    """The text of candidate `name` (a file stem under tests/fixtures/campaign)."""
    return (CANDIDATES / f"{name}.py").read_text()


def proposal(name: str, claim: str | None = None) -> Proposal:
    """A proposal of fixture candidate `name`, claiming its name unless told otherwise."""
    return Proposal(source=source(name), claim=claim or name)


def options(**overrides) -> CampaignOptions:
    """Cheap campaign options for the CPU: no compile baseline, 2 correctness rounds, no long-term memory."""
    fields = dict(compile_baseline=False, rounds=2, longterm=False, device="cpu", budget=20)
    return CampaignOptions(**{**fields, **overrides})


def robust_options() -> CampaignOptions:
    """The robust campaign: robust.json played by the scripted backend, budget 4 (exactly its candidates)."""
    return options(agents=2, strategies=("reduction", "memory"), backend="scripted",
                   backend_options={"script": str(ROBUST_SCRIPT)}, budget=4, seed=ROBUST_SEED)


def build_robust(run_dir: Path, home: Path) -> None:
    start(SLOW_SUM, robust_options(), run_dir)


def scripted_backend(agents: Sequence[ScriptedAgent]) -> str:
    """Register a backend whose i-th agent (in the campaign's agent order) is `agents[i]`; return its name."""
    name = f"test-scripted-{os.getpid()}-{next(_backend_ids)}"

    def maker():
        queue = iter(agents)
        return lambda agent_id, strategy, task, seed: next(queue)

    register_backend(name, maker)
    return name


def scripted_agents(*scripts: Sequence[Step]) -> list[ScriptedAgent]:
    """One scripted agent per script."""
    return [ScriptedAgent(steps, name=f"script{i}") for i, steps in enumerate(scripts)]


def open_store(run_dir: Path) -> Store:
    return Store(run_dir / DB_NAME)


def verdict_sequences(store: Store) -> dict[str, list[str]]:
    """Each agent's verdicts in the order they were recorded."""
    out: dict[str, list[str]] = {}
    for record in store.evaluations():
        if record.agent_id is not None:
            out.setdefault(record.agent_id, []).append(record.evaluation.verdict.value)
    return out


def decisions(store: Store) -> dict[str, dict]:
    """What a seeded campaign must repeat, per agent: each candidate it proposed (by content hash), the
    incumbent it was judged against, the verdict, status and finding kind; and the agent's final state."""
    hashes = {c.id: c.hash for c in store.candidates()}
    findings = {f.candidate_id: f.kind.value for f in store.findings()}
    out = {a.id: {"judged": [], "state": (hashes.get(a.state.incumbent_id), a.state.steps, a.state.plateau,
                                          a.state.drafts, a.state.retired)} for a in store.agents()}
    for r in store.evaluations():
        if r.agent_id is not None:
            out[r.agent_id]["judged"].append((hashes[r.candidate_id], hashes.get(r.against_incumbent_id),
                                              r.evaluation.verdict.value, r.evaluation.status.value,
                                              findings.get(r.candidate_id)))
    return out


def rule_verdict(evaluation: Evaluation, settings: GuardSettings = GuardSettings()) -> Verdict:
    """The verdict the decision rule gives a benchmarked evaluation from its own speedup and noise."""
    keep_bar = 1 + max(settings.margin, evaluation.noise or 0.0)
    accept_bar = 1 / (1 + max(settings.near_best_window, evaluation.noise or 0.0))
    if evaluation.speedup > keep_bar:
        return Verdict.KEEP
    return Verdict.ACCEPT if evaluation.speedup >= accept_bar else Verdict.REVERT


@dataclass(frozen=True)
class SharedRun:
    """A finished campaign on disk that several tests read (never write)."""

    run_dir: Path
    """The campaign's RUN_DIR."""
    home: Path
    """The KERNELARC_HOME it ran with (its long-term memory)."""


def shared_run(tmp_path_factory, name: str, build: Callable[[Path, Path], None]) -> SharedRun:
    """Build campaign `name` once per test session, whichever xdist worker asks first.

    `build(run_dir, home)` runs the campaign; later callers (any worker) wait on the lock and reuse it.
    """
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    run = SharedRun(run_dir=root / f"shared-{name}" / "run", home=root / f"shared-{name}" / "home")
    with FileLock(str(root / f"shared-{name}.lock")):
        done = run.run_dir.parent / "done"
        if not done.exists():
            shutil.rmtree(run.run_dir.parent, ignore_errors=True)  # a build that failed in another worker
            run.home.mkdir(parents=True)
            # Session fixtures are set up before the autouse KERNELARC_HOME of the test that asks first:
            # without this, the build used the user's real cache (and queued on its device lock).
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("KERNELARC_HOME", str(run.home))
                build(run.run_dir, run.home)
            done.touch()
    return run
