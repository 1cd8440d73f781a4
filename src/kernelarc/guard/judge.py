"""The guard's entry points: `evaluate(task, candidate, incumbent=None)` for one evaluation, and
`Judge`, which keeps side processes warm across the evaluations of one task (a campaign's).

Order: static gate (no process), on a GPU the fresh sides made ready (`ReadySides`), then under the
device's lock (held across processes) a session of sandboxed side processes (guard/session.py), then the
decision (verdict.py). The judge never
imports candidate code: reference outputs, comparisons, clocks and verdicts live here and in the
reference side, never in a process that ran the candidate. Every way a candidate can fail becomes
exactly one status; only our own bugs raise. Imports torch lazily (device resolution, SOL ceilings).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import random
import secrets
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from kernelarc.errors import DeviceError, UserError
from kernelarc.guard import sandbox
from kernelarc.guard.build_cache import BuildCache
from kernelarc.guard.candidate import Candidate, needs_build
from kernelarc.guard.cutoff import Cutoff, EvaluationCut
from kernelarc.guard.devlock import device_lock
from kernelarc.guard.gate import check_candidate
from kernelarc.guard.samples import Samples
from kernelarc.guard.scrub import blank_own_environment_block, scrub
from kernelarc.guard.session import Failure, Seeds, Session, WorkloadTimes
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.sides import SideFailure, SidePool, SideProcess
from kernelarc.guard.types import Evaluation, Status, TimingMethod, Verdict, WorkloadResult
from kernelarc.guard.verdict import MIN_PAIRS, decide, geomean
from kernelarc.task.model import Task, TaskFormat


@dataclass
class ReadySides:
    """Sides an evaluation on a GPU takes from the pool before it waits for the device lock, each past its
    start-up (torch's import, the CUDA context, the compilers' imports: 5-10 s on the H200). Taken under
    the lock, a side that was still starting held the GPU idle: in a 130 s mlp_relu_small campaign
    (2026-12-04) 20 s of the 84 s of lock time went to `setup` requests waiting on such sides. Only sides
    no code has reached: a parked incumbent stays frozen until the lock is held, since its code must not
    run beside another evaluation's timing."""

    candidate: SideProcess
    spare: SideProcess | None
    """A fresh side for the incumbent, whose own side was not parked; handed back to the pool if unused."""
    seconds: float


class GuardInternalError(RuntimeError):
    """The guard's own code failed in the reference side: a kernelarc bug, not the candidate's fault."""


class SandboxRequired(UserError):
    """Untrusted code would run without a sandbox, and the user did not allow that."""


@dataclass(frozen=True)
class Isolation:
    """How side processes are isolated: the sandbox policy and whether the sandbox is used."""

    policy: sandbox.SandboxPolicy
    sandboxed: bool
    note: str = ""
    """Why there is no sandbox, when there is none (one line for the user)."""


def isolation(*, require: bool = False, allow_unsafe: bool = False,
              policy: sandbox.SandboxPolicy | None = None) -> Isolation:
    """The isolation this machine allows.

    Args:
        require: untrusted code (LLM or coding-agent backends) will be judged: refuse to go on
            without a sandbox unless `allow_unsafe`.
        allow_unsafe: the user passed `--unsafe-no-sandbox`.

    Raises:
        SandboxRequired: no sandbox, `require` and not `allow_unsafe`.
    """
    policy = policy or sandbox.SandboxPolicy()
    why = sandbox.probe(policy.bwrap)
    if why is None:
        return Isolation(policy, sandboxed=True)
    if require and not allow_unsafe:
        raise SandboxRequired(f"no sandbox for untrusted candidates: {why}; or pass {sandbox.UNSAFE_FLAG} to judge "
                              "them with process separation alone")
    _hide_own_environment()
    return Isolation(policy, sandboxed=False, note=f"judging without a sandbox: {why}")


def _hide_own_environment() -> None:
    """Without a sandbox, keep this process's secrets from the sides through /proc: the values are
    blanked in the environment block other processes can read, and, as an ordinary user, the process
    is made non-dumpable (its /proc files then belong to root)."""
    blank_own_environment_block()
    if os.geteuid() != 0 and sys.platform == "linux":
        try:
            ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
        except (OSError, AttributeError):
            pass


def resolve_device(device: str) -> str:
    """`auto` -> `cuda` when a CUDA device is present, else `cpu`; checks an explicit `cuda`.

    Raises:
        DeviceError: unknown device name, or `cuda` asked for on a machine without one.
    """
    import torch

    if device == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return "cpu"
    suffix = device.removeprefix("cuda:") if device.startswith("cuda:") else "0" if device == "cuda" else None
    if suffix is not None and suffix.isdigit():
        if not torch.cuda.is_available():
            raise DeviceError(f"device {device!r} asked for, but no CUDA device is available (use --device cpu)")
        index = int(suffix)
        if index >= torch.cuda.device_count():
            raise DeviceError(f"device {device!r} does not exist: {torch.cuda.device_count()} CUDA device(s) present")
        return f"cuda:{index}"
    raise DeviceError(f"unknown device {device!r}: use auto, cpu, cuda or cuda:N")


def timing_basis(task: Task, device: str, settings: GuardSettings) -> str:
    """`device` or `wall`: which latency decides (settings.timing, or the task format's convention)."""
    if device == "cpu":
        return "wall"
    if settings.timing != "auto":
        return settings.timing
    return "device" if task.format is TaskFormat.SOL else "wall"


KEPT_INCUMBENTS = 2
"""Incumbent sides a judge keeps parked between evaluations (the least recently used beyond go)."""
PARK_TIMEOUT_S = 30.0
AHEAD_CALLS_S = 20.0
"""Seconds a Triton candidate's calls on CPU inputs may take in `Judge.prebuild`: they save the 1-3.5 s of its
first call under the lock (H100, session 30), and a candidate whose torch code is slow on the CPU (an
attention's fallback at real sizes) would hold its own evaluation back longer than that saves."""


class Judge:
    """Evaluations of one task: a pool of started sides, one reference side per device kept warm
    (it runs only the task's code), the last incumbents' sides parked, and the extension builds kept per
    candidate.

    An incumbent's side serves the same code in evaluation after evaluation, so it is kept between them
    instead of being started, set up and loaded again: a CUDA side takes about 10 s to start on the H200,
    and evaluations that each took two fresh sides waited 7-11 s of their 10 s for them (docs/benchmarks.md,
    session 19). A parked side is stopped (SIGSTOP on its whole tree) until its next evaluation, so nothing
    of it runs beside another evaluation; it must have stayed stopped (`SideProcess.thaw(check=True)`), and it
    gives back its last block's buffers and its cached device memory first (`park`). A candidate's side is
    never kept: it serves one evaluation and is ended.
    """

    def __init__(self, task: Task, *, isolation_: Isolation | None = None, build_cache: BuildCache | None = None,
                 lock_dir=None, warm: bool = True):
        """`warm=False` for a single evaluation: no idle sides are started ahead."""
        self.task = task
        self.isolation = isolation_ or isolation()
        self.pool = SidePool(self.isolation.policy, self.isolation.sandboxed, warm=warm)
        self.build_cache = build_cache
        self.lock_dir = lock_dir
        self._references: dict[str, SideProcess] = {}
        self._incumbents: OrderedDict[tuple[str, str], SideProcess] = OrderedDict()
        """Parked incumbent sides by (device, code), least recently used first."""
        self._lock = threading.Lock()
        self._output_specs: dict[str, list[dict]] = {}
        """Each workload's output shapes and dtypes as the reference side reported them (Judge.prebuild)."""
        self._judged: set[str] = set()
        """Hashes of the code whose side this judge ran to the end and whose builds and compiler caches it kept:
        building that code ahead again has nothing left to build. The finals' winner was built ahead once per
        head-to-head, each in a GPU-less side of its own, while the time limit ran (H100, session 36). (On GPUs of
        different kinds in one campaign, the build a skipped prebuild would have made happens in the evaluation.)"""
        self._mailbox_bytes = 0
        """The most a candidate's side puts in its mailbox at once (`Session.mailbox_bytes`), known from this
        judge's first evaluation on: later ones reserve it in their candidate's fresh side before the lock
        (`_settled`)."""
        self._ahead_spare: SideProcess | None = None
        """A GPU-less side started for the next `prebuild` while one ran (`_ahead_side`)."""
        self._closed = False
        self.lock_waited_s = 0.0
        """Seconds spent waiting for device locks (other processes' evaluations)."""

    def close(self) -> None:
        with self._lock:
            refs, self._references = list(self._references.values()), {}
            parked, self._incumbents = list(self._incumbents.values()), OrderedDict()
            spare, self._ahead_spare, self._closed = self._ahead_spare, None, True
        for side in parked:
            side.thaw()
        for side in refs + parked + ([spare] if spare is not None else []):
            side.close(grace_s=0.2)
        self.pool.close()

    def __enter__(self) -> "Judge":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def evaluate(self, candidate: Candidate, incumbent: Candidate | None = None, *, device: str = "auto",
                 settings: GuardSettings | None = None, trusted: bool = False,
                 cutoff: Cutoff | None = None, ready: ReadySides | None = None) -> Evaluation:
        """Judge `candidate` against `incumbent` (the reference when None) on every workload.

        Args:
            trusted: skip the static gate; only for kernelarc's own baselines (they reuse the reference).
            cutoff: the caller's deadline (a campaign's time limit, a second Ctrl-C): once it passes,
                the wait for the device lock or a side ends, the evaluation's sides are killed.
            ready: the sides `ready_sides` made ready for this evaluation (a caller that queues evaluations
                makes them ready before its own queue); made here when None.

        Raises:
            EvaluationCut: `cutoff` passed before the verdict (nothing is known of the candidate).
        """
        settings = settings or GuardSettings()
        started = time.monotonic()
        device = resolve_device(device)
        entered = False
        try:
            finding = None if trusted else check_candidate(candidate)
            if finding is not None:
                return Evaluation(
                    verdict=Verdict.REJECT, status=Status.STATIC_REJECT, correct=False, device=_device_name(device),
                    reason=f"static gate, rule {finding.rule} at line {finding.line}: {finding.message}",
                    static_rule=finding.rule, static_line=finding.line, wall_s=time.monotonic() - started,
                )
            rng = random.Random(settings.seed) if settings.seed is not None else secrets.SystemRandom()
            if cutoff is not None:
                cutoff.check()
            ready = ready or self.ready_sides(device, incumbent, settings, cutoff)
            with device_lock(device, self.lock_dir, cutoff) as waited:
                entered = True
                self.lock_waited_s += waited
                return self._run(candidate, incumbent, device, settings, Seeds(rng), started, cutoff, ready)
        finally:
            if not entered:  # rejected by the gate, or the wait for the lock was cut: no code reached them
                self.give_back(ready)

    def ready_sides(self, device: str, incumbent: Candidate | None, settings: GuardSettings | None = None,
                    cutoff: Cutoff | None = None) -> ReadySides | None:
        """The fresh sides of an evaluation on `device` (resolved), past their start-up (`ReadySides`); None on
        the CPU, where a side's imports would compete with another evaluation's timed calls for the same cores.
        Pass them to `evaluate`, or hand them back (`give_back`) if it is not called."""
        if device == "cpu":
            return None
        settings = settings or GuardSettings()
        started = time.monotonic()
        candidate = self.pool.take(device)
        spare = None
        if incumbent is not None:
            with self._lock:
                parked = (device, _code_key(incumbent)) in self._incumbents
            spare = None if parked else self.pool.take(device)
        deadline = started + settings.compile_timeout_s
        try:
            candidate = self._settled(candidate, deadline, cutoff, reserve=self._mailbox_bytes)
            if spare is not None:
                spare = self._settled(spare, deadline, cutoff)
        except EvaluationCut:
            self.pool.give_back(candidate, spare)  # the one cut mid-request is already closed
            raise
        return ReadySides(candidate, spare, time.monotonic() - started)

    def give_back(self, ready: ReadySides | None) -> None:
        """Sides made ready for an evaluation that did not run: back to the pool (no code reached them)."""
        if ready is not None:
            self.pool.give_back(ready.candidate, ready.spare)

    def _settled(self, side: SideProcess, deadline: float, cutoff: Cutoff | None, reserve: int = 0) -> SideProcess:
        """`side` once it answers (its start-up done, and its mailbox made `reserve` bytes large: a candidate's
        side, which puts its outputs and inputs there; an incumbent's on the GPU only times, and a mailbox page-
        locked for nothing would stay so while it is parked), or, where it died starting, another from the pool
        (whose failure, if it fails too, the evaluation reports where it uses it).

        Raises:
            EvaluationCut: `cutoff` passed first; `side`, its reply still to come, is ended.
        """
        try:
            side.request({"op": "settle", "reserve": reserve}, deadline=deadline, cutoff=cutoff)
            return side
        except SideFailure as f:
            side.close(grace_s=0.0)
            if f.kind == "cut":
                raise EvaluationCut(f.detail) from None
            return self.pool.take(side.device)

    def prebuild(self, candidate: Candidate, settings: GuardSettings | None = None,
                 cutoff: Cutoff | None = None, build_for: str | None = None) -> bool:
        """Build a C++ or CUDA candidate's extensions, and compile a Triton candidate's kernels, in a GPU-less
        side outside any device lock, and keep them in the build cache: its evaluation then loads them instead
        of compiling on the GPU's time, and several candidates compile at once while one is timed (issue 15).
        `build_for`: the compute capability of the GPU that will evaluate it (sides.gpu_capability), which the
        side then pretends to have (side.pretend_gpu) and compiles Triton for (guard/triton_ahead.py), so that
        the build is the one that evaluation loads. True when it ran.

        Triton kernels are compiled by calling the candidate once per workload on CPU inputs, whose outputs
        need the shapes the reference side reported: not before this judge's first evaluation.
        Failures are left for the evaluation to report: this only saves time.
        """
        ahead = build_for is not None and candidate.language == "triton" and bool(self._output_specs)
        if (self.build_cache is None or not (needs_build(candidate) or ahead) or candidate.hash in self._judged
                or check_candidate(candidate) is not None):
            return False
        settings = settings or GuardSettings()
        side = self._ahead_side()
        try:
            restored = self.build_cache.restore(side.extensions, candidate)
            deadline = time.monotonic() + settings.compile_timeout_s
            task = {"task": self.task.model_dump(mode="json"), "definition": self.task.definition}
            side.request({"op": "setup", "role": "candidate", **task}, deadline=deadline, cutoff=cutoff)
            side.request({"op": "load", "candidate": candidate.model_dump(mode="json"), "label": "candidate",
                          "build_for": build_for, "triton_ahead": ahead}, deadline=deadline, cutoff=cutoff)
            calls_deadline = min(deadline, time.monotonic() + AHEAD_CALLS_S)
            for uuid, specs in self._output_specs.items() if ahead else ():
                side.request({"op": "warm", "workload": uuid, "seed": secrets.randbits(62), "specs": specs},
                             deadline=calls_deadline, cutoff=cutoff)
        except SideFailure:  # killed mid-compile, its caches may be half written; a build keeps only a library
            ahead = False
        finally:
            self.build_cache.keep(side.extensions, candidate, restored)
            if ahead:
                self.build_cache.keep_compiled(side.compiled, candidate)
            side.close()
        return True

    def _ahead_side(self) -> SideProcess:
        """A GPU-less side to build ahead in: the one started while the last prebuild ran, if it lives, and
        another started for the next (its torch import, seconds, is then off the candidate's way to the GPU,
        which with one agent would otherwise wait idle through it). Only where sides are kept warm."""
        def start() -> SideProcess:
            return SideProcess("cpu", self.isolation.policy, self.isolation.sandboxed, background=True, ahead=True)

        with self._lock:
            side, self._ahead_spare = self._ahead_spare, None
        if side is not None and side.proc.poll() is not None:
            side.close()
            side = None
        side = side or start()
        if self.pool.warm:
            spare = start()
            with self._lock:
                if not self._closed:
                    spare, self._ahead_spare = self._ahead_spare, spare
            if spare is not None:  # another prebuild left one meanwhile, or the judge closed
                spare.close(grace_s=0.2)
        return side

    def _reference(self, device: str) -> tuple[SideProcess, bool]:
        """The device's warm reference side, or a fresh one; True when it still needs its set-up."""
        with self._lock:
            side = self._references.pop(device, None)
        if side is not None and side.proc.poll() is None:
            return side, False
        if side is not None:
            side.close()
        return self.pool.take(device), True

    def _incumbent(self, device: str, incumbent: Candidate, spare: SideProcess | None) -> tuple[SideProcess, bool]:
        """The incumbent's parked side, let go again, or a fresh one (`spare`, made ready before the lock,
        where there is one); True when it still needs its set-up. An unused `spare` goes back to the pool."""
        with self._lock:
            side = self._incumbents.pop((device, _code_key(incumbent)), None)
        if side is not None:
            try:
                side.thaw(check=True)
                if side.proc.poll() is None and side.breach is None:
                    self.pool.give_back(spare)
                    return side, False
            except SideFailure:  # something of it ran while it was parked: never used again
                pass
            side.close()
        side = spare if spare is not None else self.pool.take(device)
        self._restore_builds(side, incumbent)  # the evaluation reports its candidate's restores, not these
        return side, True

    def _park(self, device: str, incumbent: Candidate, side: SideProcess, settings: GuardSettings) -> None:
        """Keep an incumbent's side for its next evaluation: its buffers given back, then stopped."""
        try:
            side.request({"op": "park"}, deadline=time.monotonic() + min(settings.run_timeout_s, PARK_TIMEOUT_S))
            side.freeze()
        except SideFailure:
            side.close()
            return
        with self._lock:
            self._incumbents[(device, _code_key(incumbent))] = side
            evicted = []
            while len(self._incumbents) > KEPT_INCUMBENTS:
                evicted.append(self._incumbents.popitem(last=False)[1])
        for old in evicted:
            old.thaw()
            old.close(grace_s=0.2)

    def _run(self, candidate: Candidate, incumbent: Candidate | None, device: str, settings: GuardSettings,
             seeds: Seeds, started: float, cutoff: Cutoff | None, ready: ReadySides | None) -> Evaluation:
        ref, fresh_ref = self._reference(device)
        cand = ready.candidate if ready is not None else self.pool.take(device)
        spare = ready.spare if ready is not None else None
        inc: SideProcess | None = None
        restored, compiled = self._restore_builds(cand, candidate)
        session = Session(self.task, device=device, settings=settings, seeds=seeds, reference=ref, candidate=cand,
                          cutoff=cutoff, basis=timing_basis(self.task, device, settings))
        session.builds_restored, session.compiled_restored = tuple(sorted(restored)), compiled
        if ready is not None:  # outside the lock: where an evaluation's time went, not the GPU's
            session.request_seconds["sides ready"] = [1 + (spare is not None), ready.seconds]
        ref_ok = inc_ok = False
        failed: SideProcess | None = None  # the side whose code failed: it keeps nothing in the build cache
        try:
            session.enter("reference", settings.reference_timeout_s)
            if fresh_ref:
                session.setup(session.ref, None, "reference")
            session.describe_outputs()
            self._output_specs = {w.uuid: session.specs(w.uuid) for w in self.task.workloads}
            self._mailbox_bytes = session.mailbox_bytes()
            ref_ok = True
            session.enter("compile", settings.compile_timeout_s)
            session.compile_s = session.setup(session.cand, candidate.model_dump(mode="json"), "candidate")
            session.enter("first_call", settings.compile_timeout_s)
            session.first_call()
            session.enter("correctness", settings.run_timeout_s)
            session.correctness()
            if incumbent is not None:  # taken only now: a candidate that fails before timing needs none
                session.enter("compile", settings.compile_timeout_s)
                inc, fresh_inc = self._incumbent(device, incumbent, spare)
                spare = None
                session.use_incumbent(inc)
                if fresh_inc:
                    session.setup(session.inc, incumbent.model_dump(mode="json"), "incumbent")
            session.enter("timing", settings.run_timeout_s)
            times = session.timing()
            session.finish()
            inc_ok = True
            return self._passed(session, times, device, settings, incumbent is None, started)
        except Failure as f:
            session.finish()
            ref_ok = ref_ok and f.status != "INVALID_REFERENCE"
            failed = {"INVALID_REFERENCE": ref, "INCUMBENT_FAILED": inc}.get(f.status, cand)
            return self._failed(session, f, device, started)
        except EvaluationCut:  # every side may be mid-request: none is asked anything again
            ref_ok = False
            for side in (cand, inc, ref):
                if side is not None:
                    side.kill()
            raise
        finally:
            self.pool.give_back(spare)  # the candidate failed before it needed an incumbent
            if self.build_cache is not None:  # nothing of a side that failed: its next side must not find a mark
                if failed is not cand:
                    self.build_cache.keep(cand.extensions, candidate, restored)
                for side, code in ((cand, candidate), (inc, incumbent)):
                    # a killed side's caches may be half written
                    if side is not None and side is not failed and code is not None and side.proc.poll() is None:
                        self.build_cache.keep_compiled(side.compiled, code)
                        self._judged.add(code.hash)
            cand.close()
            if inc is not None and inc_ok and inc.proc.poll() is None:
                self._park(device, incumbent, inc, settings)
            elif inc is not None:
                inc.close()
            if ref_ok and ref.proc.poll() is None:
                with self._lock:
                    self._references[device] = ref
            else:
                ref.close()

    def _restore_builds(self, side: SideProcess, code: Candidate) -> tuple[set[str], int]:
        """The kept builds and compiler caches of `code` into the side that will run it; the builds restored
        and the cache files copied."""
        if self.build_cache is None:
            return set(), 0
        return self.build_cache.restore(side.extensions, code), self.build_cache.restore_compiled(side.compiled, code)

    def _common(self, session: Session, device: str, started: float, log_of=None) -> dict:
        log = (log_of or session.cand).process.log_tail()
        return {"device": _device_name(device), "wall_s": time.monotonic() - started, "log_tail": log,
                "stage_seconds": {k: round(v, 4) for k, v in session.stage_seconds.items()},
                "request_seconds": {k: (int(n), round(s, 4)) for k, (n, s) in session.request_seconds.items()},
                "compile_s": session.compile_s, "builds_restored": session.builds_restored,
                "compiled_restored": session.compiled_restored}

    def _failed(self, session: Session, f: Failure, device: str, started: float) -> Evaluation:
        reason = scrub(f.message) or f.status
        workloads = ()
        if f.workload is not None:
            workloads = (WorkloadResult(uuid=f.workload, status=Status(f.status), message=reason,
                                        max_abs_error=f.errors.get("max_abs_error"),
                                        max_rel_error=f.errors.get("max_rel_error")),)
        blamed = session.ref if f.status == "INVALID_REFERENCE" else session.cand
        return Evaluation(verdict=Verdict.REJECT, status=Status(f.status), correct=False, reason=reason,
                          workloads=workloads, **self._common(session, device, started, blamed))

    def _passed(self, session: Session, times: dict[str, WorkloadTimes], device: str, settings: GuardSettings,
                vs_reference: bool, started: float) -> Evaluation:
        basis = session.basis
        sol = _sol_times(self.task, device)
        inc, cand = session.inc.role, session.cand.role
        workloads = []
        for w in self.task.workloads:
            t = times[w.uuid]
            decided = t.device if basis == "device" else t.wall
            abs_err, rel_err = session.workload_errors.get(w.uuid, (0.0, 0.0))
            paired = Samples(t.paired) if basis == "wall" and len(t.paired) >= MIN_PAIRS else None
            workloads.append(WorkloadResult(
                uuid=w.uuid, status=Status.PASSED, latency_ms=decided[cand].median, incumbent_ms=decided[inc].median,
                spread=decided[cand].spread, incumbent_spread=decided[inc].spread,
                paired_speedup=paired.median if paired else None, paired_spread=paired.spread if paired else None,
                paired_low=paired.quantile(0.2) if paired else None,
                pairs=len(t.paired) if paired else None,
                wall_ms=t.wall[cand].median, incumbent_wall_ms=t.wall[inc].median,
                device_ms=t.device[cand].median if t.device else None,
                incumbent_device_ms=t.device[inc].median if t.device else None,
                iterations=t.iterations, sol_ms=sol.get(w.uuid), max_abs_error=abs_err, max_rel_error=rel_err,
                kernels=t.kernels.get(cand, ()), incumbent_kernels=t.kernels.get(inc, ())))
        decision = decide(workloads, settings, "reference" if vs_reference else "incumbent")
        sol_ms, score = _sol_summary(workloads, vs_reference)
        method = TimingMethod.CPU_WALL if device == "cpu" else (
            TimingMethod.CUPTI if basis == "device" else TimingMethod.CUDA_EVENTS)
        return Evaluation(
            verdict=decision.verdict, status=Status.PASSED, correct=True, reason=decision.reason,
            latency_ms=decision.latency_ms, incumbent_ms=decision.incumbent_ms, speedup=decision.speedup,
            noise=decision.noise, sol_ms=sol_ms, sol_score=score, timing=method, basis=basis,
            wall_ms=_geo(w.wall_ms for w in workloads), incumbent_wall_ms=_geo(w.incumbent_wall_ms for w in workloads),
            device_ms=_geo(w.device_ms for w in workloads),
            incumbent_device_ms=_geo(w.incumbent_device_ms for w in workloads),
            workloads=tuple(workloads), **self._common(session, device, started),
        )


def evaluate(task: Task, candidate: Candidate, incumbent: Candidate | None = None, *, device: str = "auto",
             settings: GuardSettings | None = None, trusted: bool = False,
             isolation_: Isolation | None = None) -> Evaluation:
    """Judge one candidate in a judge of its own (side processes started now, ended after)."""
    with Judge(task, isolation_=isolation_, warm=False) as judge:
        return judge.evaluate(candidate, incumbent, device=device, settings=settings, trusted=trusted)


def _code_key(candidate: Candidate) -> str:
    """What makes two candidates the same code to run (everything but the name shown in reports)."""
    return hashlib.sha256(candidate.model_copy(update={"name": ""}).model_dump_json().encode()).hexdigest()


def _geo(values) -> float | None:
    values = list(values)
    return geomean(values) if values and all(v is not None for v in values) else None


def _device_name(device: str) -> str:
    if device == "cpu":
        return "cpu"
    import torch

    return torch.cuda.get_device_name(torch.device(device))


def _sol_times(task: Task, device: str) -> dict[str, float]:
    """SOL time per workload on a CUDA device (ceilings measured once and cached); empty on the CPU."""
    if device == "cpu":
        return {}
    from kernelarc.roofline import ceilings_for, sol_ms

    ceilings = ceilings_for(sandbox.device_index(device))
    return {w.uuid: t for w in task.workloads if (t := sol_ms(w, ceilings)) is not None}


def _sol_summary(workloads: list[WorkloadResult], vs_reference: bool) -> tuple[float | None, float | None]:
    """Geometric-mean SOL time and mean SOL score (baseline = the reference; only when timed against it)."""
    from kernelarc.roofline import sol_score

    if not workloads or any(w.sol_ms is None or w.device_ms is None for w in workloads):
        return None, None
    sol = geomean([w.sol_ms for w in workloads])
    if not vs_reference:
        return sol, None
    # Device time, as SOL-ExecBench scores, whichever latency decided the verdict.
    scores = [sol_score(w.device_ms, w.incumbent_device_ms, w.sol_ms) for w in workloads]
    return sol, sum(scores) / len(scores)


__all__ = ["evaluate", "Judge", "Isolation", "isolation", "resolve_device", "timing_basis", "GuardInternalError",
           "SandboxRequired"]
