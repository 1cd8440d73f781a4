"""The rows of a bench and what is computed from them: suite geomeans and ablation arm summaries.

DIR/results.json holds every row ever completed there, so a suite can be finished over several
sessions; it is rewritten atomically after each task. Several benches may share one DIR (one per GPU
of a machine, say): a bench re-reads the file under `results_lock` before adding a row, so no bench
drops another's rows. Imports without torch.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import statistics
from collections.abc import Iterable, Iterator
from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernelarc.bench.options import Arm
from kernelarc.errors import UserError
from kernelarc.guard.verdict import geomean as guard_geomean

RESULTS_JSON = "results.json"
_RESULTS_LOCK = ".results.lock"
SCHEMA_VERSION = 1
_COMPUTED = ("geomeans", "arms")
"""Keys results.json carries for readers but `Results` recomputes from the rows."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RowStatus(str, Enum):
    """Whether a row is final."""

    COMPLETE = "complete"
    """Every step ran (a baseline that failed, e.g. a compile error, is recorded in its own field)."""
    FAILED = "failed"
    """The task did not load or its campaign raised; the row is run again next time."""


SKIPPED = "skipped"
"""Status of a baseline that was not asked for (`--no-compile-baselines`)."""


class BaselineResult(Frozen):
    """One baseline of a task as the guard judged it against the reference (or against the winner)."""

    status: str
    """The guard's status (PASSED, COMPILE_ERROR, ...) or `skipped`."""
    latency_ms: float | None = None
    """Its median latency (geometric mean over workloads)."""
    compile_s: float | None = None
    """Seconds to import, build and first call it (torch.compile compiles on the first call)."""
    reason: str = ""
    """The guard's one-line reason."""


class TaskRow(Frozen):
    """One task of the suite: baselines, the kernelarc result and their ratios."""

    task: str
    path: str
    options_key: str
    """Fingerprint of the options the row was made with."""
    status: RowStatus
    error: str | None = None
    """One line on why the row failed (FAILED only)."""
    kernel_type: str | None = None
    device: str | None = None
    """Device name, e.g. `NVIDIA H200` or `cpu`."""
    timing: str | None = None
    """How times were measured: cuda_events, cupti, or cpu_wall (host clock: ranks, never a GPU claim)."""
    sol_ms: float | None = None
    """Speed-of-light time (CUDA only)."""
    eager: BaselineResult | None = None
    compile: BaselineResult | None = None
    """torch.compile, default mode."""
    max_autotune: BaselineResult | None = None
    """torch.compile, mode max-autotune-no-cudagraphs, judged against the kernelarc winner."""
    best_ms: float | None = None
    """The kernelarc winner's latency, from its final measurement against eager (the deciding `basis`)."""
    basis: str | None = None
    """Which latency decided: `device` (kernel spans) or `wall` (per call, host overhead included)."""
    best_device_ms: float | None = None
    """The winner's device time (CUDA only)."""
    best_wall_ms: float | None = None
    """The winner's wall time per call."""
    flops: float | None = None
    """Matmul-class FLOPs of the task's workload (torch's FLOP counter); None for several workloads or none counted."""
    best_label: str | None = None
    """Which agent (or baseline) won, and its strategy."""
    winner_baseline: str | None = None
    """The baseline that won (`eager`, `torch.compile`): no kernelarc kernel beat it, so the row's speedups are
    that baseline's, not kernelarc's, and the suite geomeans leave the row out. None: an agent's kernel won."""
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    speedup_vs_max_autotune: float | None = None
    speedup_vs_best_compile: float | None = None
    """Over the faster torch.compile mode: the smaller of the two speedups."""
    sol_fraction: float | None = None
    """T_SOL / T_best (CUDA only)."""
    sol_score: float | None = None
    """SOL-ExecBench's score with T_b the fastest of eager and both compile modes (CUDA only)."""
    candidates: int | None = None
    """Agent candidates that reached the guard."""
    budget: int | None = None
    stop_reason: str | None = None
    wall_s: float | None = None
    """Seconds spent on the task: the campaign plus the max-autotune measurement."""
    run_dir: str | None = None
    finished_at: str
    """ISO timestamp."""


    @property
    def tflops(self) -> float | None:
        """The winner's TFLOP/s on a GPU timing (a CPU wall clock is no GPU speed: None there)."""
        if not self.flops or not self.best_ms or self.timing in (None, "cpu_wall"):
            return None
        return self.flops / (self.best_ms * 1e-3) / 1e12


class AblationRun(Frozen):
    """One campaign of the ablation: a task, an arm, a seed."""

    task: str
    arm: Arm
    seed: int
    agents: int
    memory: str
    options_key: str
    status: RowStatus
    error: str | None = None
    device: str | None = None
    timing: str | None = None
    speedup_vs_eager: float | None = None
    """The winner's speedup over eager, from its final interleaved measurement."""
    best_ms: float | None = None
    candidates: int | None = None
    stop_reason: str | None = None
    """Why the campaign stopped: `budget`, or `time_limit` before its budget was spent."""
    wall_s: float | None = None
    run_dir: str | None = None
    finished_at: str


class Geomean(Frozen):
    """A suite aggregate and the number of rows it rests on."""

    value: float | None
    n: int
    baseline_wins: int = 0
    """Complete rows a baseline won, left out: their speedups are PyTorch's, not kernelarc's gain."""


class ArmSummary(Frozen):
    """One ablation arm over the suite: the geomean speedup over eager and its spread across seeds."""

    arm: Arm
    agents: int
    memory: str
    runs: int
    """Complete campaigns behind the figures."""
    seeds: int = 0
    """Seeds complete on every task of the ablation: only these enter the geomean and its spread."""
    candidates_mean: float | None = None
    """Mean candidates judged per campaign: below the budget, the time limit cut the campaigns."""
    geomean_speedup: float | None
    """Geomean over the complete seeds of each seed's suite geomean (speedup over eager); None when no
    seed is complete (a seed's geomean over only some tasks is not comparable with another's)."""
    seed_min: float | None
    seed_max: float | None
    seed_stdev: float | None
    """Population stdev of the per-seed suite geomeans (0 with one seed)."""
    per_task: dict[str, float]
    """Geomean over seeds of the speedup over eager, per task."""


class Results(BaseModel):
    """Everything in DIR/results.json (the computed aggregates aside)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    suite: str
    """The suite folder, absolute."""
    command: str = ""
    """The command of the latest invocation."""
    updated_at: str = ""
    versions: dict[str, str | None] = Field(default_factory=dict)
    rows: list[TaskRow] = Field(default_factory=list)
    ablation: list[AblationRun] = Field(default_factory=list)

    def row(self, task: str) -> TaskRow | None:
        return next((r for r in self.rows if r.task == task), None)

    def run(self, task: str, arm: Arm, seed: int) -> AblationRun | None:
        return next((r for r in self.ablation if (r.task, r.arm, r.seed) == (task, arm, seed)), None)

    def put_row(self, row: TaskRow) -> None:
        """Add `row`, replacing the task's earlier one."""
        self.rows = [r for r in self.rows if r.task != row.task] + [row]

    def put_run(self, run: AblationRun) -> None:
        """Add `run`, replacing the earlier one of its task, arm and seed."""
        self.ablation = [r for r in self.ablation if (r.task, r.arm, r.seed) != (run.task, run.arm, run.seed)] + [run]


def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean (the guard's), None for no values."""
    values = list(values)
    return guard_geomean(values) if values else None


GEOMEAN_METRICS = ("speedup_vs_eager", "speedup_vs_compile", "speedup_vs_max_autotune", "speedup_vs_best_compile",
                   "sol_fraction")
"""Row fields aggregated by geometric mean; the SOL score is averaged, as SOL-ExecBench does."""


def suite_geomeans(rows: Iterable[TaskRow]) -> dict[str, Geomean]:
    """Geomean of each ratio over the complete rows that a kernelarc kernel won and that have it, plus the
    mean SOL score. A row a baseline won is left out (counted in `baseline_wins`): the bench of issue 19
    counted torch.compile's 3.6x over eager as kernelarc's gain."""
    complete = [r for r in rows if r.status is RowStatus.COMPLETE]
    done = [r for r in complete if r.winner_baseline is None]
    won_by_baseline = len(complete) - len(done)
    out = {}
    for metric in GEOMEAN_METRICS:
        values = [getattr(r, metric) for r in done if getattr(r, metric) is not None]
        out[metric] = Geomean(value=geomean(values), n=len(values), baseline_wins=won_by_baseline)
    scores = [r.sol_score for r in done if r.sol_score is not None]
    out["sol_score_mean"] = Geomean(value=sum(scores) / len(scores) if scores else None, n=len(scores),
                                    baseline_wins=won_by_baseline)
    return out


def arm_summaries(runs: Iterable[AblationRun]) -> list[ArmSummary]:
    """Per arm (in `Arm` order, arms with no run left out): geomean speedup over eager and its seed spread.

    A seed enters the arm's figure only when it is complete on every task of the ablation (a
    seed still missing a task would be a geomean over fewer tasks); per-task figures use every run.
    """
    runs = [r for r in runs if r.status is RowStatus.COMPLETE and r.speedup_vs_eager is not None]
    all_tasks = {r.task for r in runs}
    out = []
    for arm in Arm:
        mine = [r for r in runs if r.arm is arm]
        if not mine:
            continue
        by_seed = {s: [r for r in mine if r.seed == s] for s in sorted({r.seed for r in mine})}
        per_seed = [geomean(r.speedup_vs_eager for r in seed_runs) for seed_runs in by_seed.values()
                    if {r.task for r in seed_runs} == all_tasks]
        used = [r.candidates for r in mine if r.candidates is not None]
        out.append(ArmSummary(
            arm=arm, agents=mine[0].agents, memory=mine[0].memory, runs=len(mine), seeds=len(per_seed),
            candidates_mean=sum(used) / len(used) if used else None, geomean_speedup=geomean(per_seed),
            seed_min=min(per_seed, default=None), seed_max=max(per_seed, default=None),
            seed_stdev=statistics.pstdev(per_seed) if per_seed else None,
            per_task={t: geomean(r.speedup_vs_eager for r in mine if r.task == t) for t in sorted({r.task for r in mine})}))
    return out


def load_results(out_dir: Path, suite: str | Path) -> Results:
    """The results stored in `out_dir`, or empty ones for `suite`.

    Raises:
        UserError: results.json is unreadable, or holds another suite's results.
    """
    path = out_dir / RESULTS_JSON
    if not path.is_file():
        return Results(suite=str(suite))
    try:
        data = json.loads(path.read_text())
        for key in _COMPUTED:
            data.pop(key, None)
        results = Results.model_validate(data)
    except (OSError, ValueError, ValidationError) as e:
        first = str(e).splitlines()[0]
        raise UserError(f"{path} is not a kernelarc bench results file ({first}): use another --out") from None
    if results.suite != str(suite):
        raise UserError(f"{out_dir} holds results of suite {results.suite}, not {suite}: use another --out")
    return results


def save_results(results: Results, out_dir: Path) -> Path:
    """Write results.json atomically, with the geomeans and arm summaries computed from the rows."""
    data = results.model_dump(mode="json")
    data["geomeans"] = {k: v.model_dump() for k, v in suite_geomeans(results.rows).items()}
    data["arms"] = [a.model_dump(mode="json") for a in arm_summaries(results.ablation)]
    path = out_dir / RESULTS_JSON
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)
    return path


@contextlib.contextmanager
def results_lock(out_dir: Path) -> Iterator[None]:
    """Hold DIR's lock: reading, changing and writing its results under it is one step for other benches."""
    fd = os.open(out_dir / _RESULTS_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


__all__ = ["AblationRun", "ArmSummary", "BaselineResult", "GEOMEAN_METRICS", "Geomean", "RESULTS_JSON", "Results",
           "RowStatus", "SKIPPED", "TaskRow", "arm_summaries", "geomean", "load_results", "save_results",
           "results_lock", "suite_geomeans"]
