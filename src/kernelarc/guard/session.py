"""One evaluation, run by the judge: the candidate, the incumbent and the reference in separate
sandboxed side processes, every number checked on the judge's side. Imports without torch.

The flow (each step a request with its stage's deadline):
  reference    the reference side loads the task and describes each workload's outputs
  compile      the candidate side loads (imports, builds, constructs) the candidate
  first_call   one call, where Triton and torch.compile compile
  correctness  every workload, every round: the candidate side computes on fresh inputs and hands
               back its outputs and inputs; the judge checks types, shapes and dtypes; the
               reference side recomputes the reference on the same inputs and compares
  timing       incumbent (the reference side, or its own side) and candidate in blocks, ABBA; each
               block on inputs drawn fresh for it (never the correctness inputs, never repeated);
               the judge's clock around every block; audited calls fetched and checked

What the judge believes of a timed block. On the CPU, its own clock: a sample is the judge's time for
a block of calls per call, less the incumbent side's median bookkeeping per call (taking in the inputs,
copying and sending back the outputs: the same code on both sides; the inputs are drawn by the reference
side beforehand and handed over inside the clock), at most half of that time and never less than the
side's own measure; every timed call's outputs come back inside the request and the candidate's are all
checked. On CUDA the
side's samples (CUDA events, kernel spans) are finer than any clock outside the process, so they
count if they fit the judge's clock: a block's residual (judge time minus the samples, per call) is
the side's bookkeeping, the same code on both sides; a candidate whose residual exceeds the
incumbent's did work outside its measured window (a patched timer, work finished after the end
event, outputs computed while being copied), one whose residual falls short skipped the
bookkeeping. In each pass (device and wall) at least `audits` of the candidate's calls per workload,
more for small calls (`audit_count`), are checked, drawn by the judge after the block ran, from copies the
side made of every call: a side that answers profiled calls with less work than checked ones is caught
where device time decides.
"""

from __future__ import annotations

import math
import os
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import ValidationError

from kernelarc.guard import copier
from kernelarc.guard.cutoff import Cutoff, EvaluationCut
from kernelarc.guard.replies import (HOST_GAP_MS, KERNELS_REPORTED, CallReply, CallsReply, CheckReply, Described,
                                     SpecsReply, StageReply, TimeReply)
from kernelarc.guard.samples import Samples, median
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.sides import Reply, SideFailure, SideProcess
from kernelarc.guard.timing_cpus import timing_cpu
from kernelarc.guard.types import KernelShare
from kernelarc.guard.wire import WireError, aligned, tensor_nbytes
from kernelarc.task.model import Task

M = TypeVar("M")
DEVICE_BLOCKS = 2
"""Profiler sessions per side and workload for device time (ABBA over two pairs), at least."""
MAX_DEVICE_BLOCKS = 10
"""At most this many profiler sessions per side and workload: where one call's inputs fill the memory
budget, the device pass takes this many calls, one per session, instead of `device_iterations`."""
MAX_BLOCK_CALLS = 50
MIN_SAMPLE_MS = 0.001
MIN_BLOCK_CALLS = 5
"""On CUDA, the fewest calls of a timed block that the memory budget allows, however long they are: the first call
after a rest reads long (the host wakes, the card idles until its kernels come: on the H100 a GEMM's first call
after 5-100 ms of rest read 0.30-0.41 ms against 0.177 ms), so a block's median must rest on the others. Blocks
of one call after each rest read a flash-attention candidate 25-30% slower (session 37)."""
CPU_BLOCK_S = 0.005
"""Seconds of calls per timed block on the CPU (guard/session.py, `block_calls`)."""
CPU_WARMUP_CALLS = 3
"""Untimed calls on the CPU before timing; their median per-call time sizes the blocks."""
CPU_SUBTRACTED = 0.5
"""On the CPU, the incumbent's bookkeeping is subtracted from a block's per-call time up to this share of it."""
FLOOR_SHARE = 0.8
"""A candidate's median wall time may not fall below this share of its kernels' time (less the residual
floor): the profiler's records and the CUDA events disagree by more than clocks drift apart."""
OVER_REPORT = (1.05, 0.2)
"""A block's samples may add up to at most 5% + 0.2 ms more than the judge's clock saw."""
CHECK_BATCH_BYTES = 8 << 20
"""Outputs and inputs of the calls (correctness rounds, audited timed calls) one request carries at most, one
call always. Small workloads' calls share requests; large ones go one per request, since on the H200 the bytes
cost more than the requests: 256 MiB batches made a 64 MiB softmax's rounds slower (a bigger mailbox is fresh
memory in every new side) and saved nothing on a 14-workload SOL task, whose calls cost their own work
(docs/benchmarks.md, session 19)."""


AUDIT_BYTES = 32 << 20
"""Outputs and inputs of audited calls per timing pass and workload worth checking beyond the `audits` minimum:
small calls get more audits (up to MAX_AUDITS), since each costs little and a side that answers wrongly in a
share f of its timed calls escapes A audits with probability (1 - f)^A (4 audits let one in 3 through at f = 1/4)."""
MAX_AUDITS = 16


def audit_count(minimum: int, per_call_bytes: int) -> int:
    """Audited candidate calls per timing pass of one workload: `minimum`, more for small calls (AUDIT_BYTES)."""
    return max(minimum, min(MAX_AUDITS, AUDIT_BYTES // max(per_call_bytes, 1)))


def device_blocks(iterations: int, fit: int) -> tuple[int, int]:
    """(profiler sessions, calls in each) for the device pass of one side: `iterations` calls in
    DEVICE_BLOCKS sessions, unless fewer than that many calls' inputs fit the memory budget (`fit`): then
    sessions of `fit` calls, an even number of them (ABBA), at most MAX_DEVICE_BLOCKS. Staging every
    call's inputs at once ran the H200 out of memory on a 6 GiB softmax (25 input sets per session)."""
    per_block = max(1, math.ceil(iterations / DEVICE_BLOCKS))
    if fit >= per_block:
        return DEVICE_BLOCKS, per_block
    blocks = min(MAX_DEVICE_BLOCKS, math.ceil(iterations / fit))
    return blocks + blocks % 2, fit


def warmup_requests(calls: int, per_request: int) -> list[int]:
    """Calls in each warm-up request: `calls` in requests of at most `per_request` (one block on CUDA).
    A request stages all its inputs at once; ten 6 GiB input sets in one ran the H200 out of memory."""
    return [min(per_request, calls - first) for first in range(0, calls, per_request)]


class Failure(Exception):
    """The evaluation ends here with this status and reason."""

    def __init__(self, status: str, message: str, workload: str | None = None, **errors: float):
        super().__init__(message)
        self.status, self.message, self.workload, self.errors = status, message, workload, errors


@dataclass
class Seeds:
    """Every random choice of one evaluation, made on the judge's side."""

    rng: random.Random

    def draw(self) -> int:
        return self.rng.randrange(1, 2**31)

    def rounds(self, n: int) -> list[int]:
        return [self.draw() for _ in range(n)]


@dataclass
class WorkloadTimes:
    """What timing measured on one workload."""

    wall: dict[str, Samples] = field(default_factory=dict)
    device: dict[str, Samples] = field(default_factory=dict)
    residual_ms: dict[str, float] = field(default_factory=dict)
    residual_blocks_ms: dict[str, list[float]] = field(default_factory=dict)
    """Each wall-timed block's residual per call, per side: a failed residual check names them, one block's
    hiccup or every block's habit."""
    longest_kernel_ms: float | None = None
    """The candidate's median longest single kernel per call, from the device pass."""
    busy_ms: float | None = None
    """The candidate's median kernel span per call less its host's gaps (HOST_GAP_MS), from the device
    pass; None where a block of it was profiled with host tracing (its spans then hold the tracing's gaps)."""
    alone_ms: float | None = None
    """The incumbent's median call before any candidate block was timed (its warm-up)."""
    iterations: int = 0
    kernels: dict[str, tuple[KernelShare, ...]] = field(default_factory=dict)
    """Per role, its costliest kernels per call in the device pass."""
    paired: tuple[float, ...] = ()
    """Per ABBA pair of blocks of the wall pass, the incumbent's median over the candidate's: two blocks
    timed back to back see the same host, so the ratio holds where the absolute times drift (guard/verdict.py)."""


def kernel_shares(totals: dict[str, list[float]], calls: int) -> tuple[KernelShare, ...]:
    """A side's reported kernel totals over `calls` profiled calls, as per-call shares, costliest first."""
    if calls <= 0:
        return ()
    whole = sum(ms for ms, _ in totals.values()) or 1.0
    top = sorted(totals.items(), key=lambda item: -item[1][0])[:KERNELS_REPORTED]
    return tuple(KernelShare(name=name, ms_per_call=ms / calls, launches_per_call=count / calls, share=ms / whole)
                 for name, (ms, count) in top)


@dataclass
class Side:
    """A side process with its role and how its failures are worded."""

    process: SideProcess
    role: str
    """`reference`, `incumbent` or `candidate`."""


class Session:
    def __init__(self, task: Task, *, device: str, settings: GuardSettings, seeds: Seeds,
                 reference: SideProcess, candidate: SideProcess, incumbent: SideProcess | None = None,
                 cutoff: Cutoff | None = None, basis: str = "wall"):
        self.task = task
        self.basis = basis
        """Which latency decides (`device` or `wall`): it gets the full count of timed calls."""
        self.cutoff = cutoff
        """The caller's cutoff (guard/cutoff.py): every wait ends when it passes, with EvaluationCut."""
        self.device = device
        self.on_cuda = device != "cpu"
        self.settings = settings
        self.seeds = seeds
        self.ref = Side(reference, "reference")
        self.cand = Side(candidate, "candidate")
        self.inc = Side(incumbent, "incumbent") if incumbent is not None else self.ref
        self.timing_cpu = timing_cpu(device)
        """The host CPU both timed sides run their timed blocks on (side.pinned)."""
        self.stage = "reference"
        self.deadline = 0.0
        self._stage_start: float | None = None
        self.outputs: dict[str, list[dict]] = {}
        """Reference output descriptions per workload."""
        self.input_bytes: dict[str, int] = {}
        self.input_specs: dict[str, list[dict]] = {}
        """Per workload, each tensor input's dtype and shape (the reference side's `specs`)."""
        self.workload_errors: dict[str, tuple[float, float]] = {}
        self.stage_seconds: dict[str, float] = {}
        self.request_seconds: dict[str, list[float]] = {}
        """Judge-clocked [requests, seconds] per side and request kind (`candidate time/device`), and the
        judge's own work of giving a side its turn on the device (`candidate turn`): where an evaluation's
        time went, finer than its stages (issue 15's fast judging)."""
        self.compile_s: float | None = None
        self.builds_restored: tuple[str, ...] = ()
        """The candidate's extension builds that came from the build cache (guard/build_cache.py)."""
        self.compiled_restored = 0
        """Files of the candidate's compiler caches that came from the build cache."""
        self.call_s = 0.0
        """On CUDA, the current workload's seconds per call, the slower side's (from the warm-up)."""
        self.worked_s = 0.0
        """On CUDA, how long the card worked in the last timed request (of the warm-up: in all of its requests):
        its calls times `call_s`, at most the judge's seconds around it; the rest before the next timed block
        (`_rest`). Not the request's seconds alone: a profiler session's 40 ms of host work would rest the card
        after every block of microsecond calls, seconds per evaluation of a many-workload task."""
        self.init_on_device: bool | None = None
        """Where the reference side drew a KernelBench module's weights: the other sides draw them there too."""

    def use_incumbent(self, process: SideProcess) -> None:
        """Time against the incumbent in `process` instead of the reference (set before timing)."""
        self.inc = Side(process, "incumbent")

    # -- requests ----------------------------------------------------------------------------------
    def enter(self, stage: str, limit_s: float) -> None:
        if self.cutoff is not None and stage != "done":
            self.cutoff.check()
        now = time.monotonic()
        if self._stage_start is not None:
            self.stage_seconds[self.stage] = self.stage_seconds.get(self.stage, 0.0) + now - self._stage_start
        self.stage, self._stage_start, self.deadline = stage, now, now + limit_s

    def finish(self) -> None:
        self.enter("done", 0.0)

    def ask(self, side: Side, header: dict, *, workload: str | None = None) -> Reply:
        """One request; a side's failure becomes the evaluation's Failure, worded for its role.

        Raises:
            Failure: the evaluation ends with a status.
            EvaluationCut: the caller's cutoff passed (no status: nobody's failure).
        """
        started = time.monotonic()
        try:
            reply = side.process.request(header, deadline=self.deadline, cutoff=self.cutoff)
        except SideFailure as f:
            if f.kind == "cut":
                raise EvaluationCut(f.detail) from None
            raise self._side_failure(side, f, workload) from None
        finally:
            self._count(f"{side.role} {header.get('op')}" + (f"/{header['mode']}" if "mode" in header else ""),
                        time.monotonic() - started)
        h = reply.header
        if h.get("ok") is True:
            return reply
        if not isinstance(h.get("status", ""), str) or not isinstance(h.get("message", ""), str):
            raise self._malformed(side, "a failure of the wrong shape", workload)
        if "internal" in h and side.role == "reference":
            from kernelarc.guard.judge import GuardInternalError

            raise GuardInternalError(f"{h['internal']}\n{h.get('traceback', '')}")
        status, message = h.get("status"), h.get("message") or h.get("internal") or "failed"
        if side.role == "reference":
            raise Failure("INVALID_REFERENCE", f"the reference failed: {message}", workload)
        if side.role == "incumbent":
            raise Failure("INCUMBENT_FAILED", f"the incumbent failed during {self.stage}: {message}", workload)
        if status not in STATUSES:
            status = "RUNTIME_ERROR"
        raise Failure(status, str(message)[:400], workload)

    def parse(self, side: Side, reply: Reply, model: type[M], workload: str | None = None) -> M:
        """The reply's fields as `model` says they must be; anything else is the side's failure."""
        try:
            return model.model_validate(reply.header)
        except ValidationError as e:
            raise self._malformed(side, f"{model.__name__}: {e.errors()[0]['loc']} {e.errors()[0]['msg']}",
                                  workload) from None

    def _malformed(self, side: Side, what: str, workload: str | None) -> Exception:
        if side.role == "reference":
            from kernelarc.guard.judge import GuardInternalError

            return GuardInternalError(f"the reference side sent a malformed reply ({what})")
        if side.role == "incumbent":
            return Failure("INCUMBENT_FAILED", f"the incumbent's side sent a malformed reply ({what})", workload)
        return Failure("REWARD_HACK", f"the candidate's side sent a reply no honest side writes ({what})", workload)

    def _side_failure(self, side: Side, f: SideFailure, workload: str | None) -> Failure:
        failure = self._failure_of(side, f, workload)
        if side.role == "incumbent":  # worded for it, never the candidate's status
            return Failure("INCUMBENT_FAILED", failure.message, workload)
        return failure

    def _failure_of(self, side: Side, f: SideFailure, workload: str | None) -> Failure:
        if side.role == "reference":
            if f.kind == "timeout":
                limit = self.settings.reference_timeout_s if self.stage == "reference" else self.settings.run_timeout_s
                which = "reference" if self.stage == "reference" else "run"
                return Failure("INVALID_REFERENCE", f"the reference timed out during {self.stage} ({limit:g} s {which} "
                                                    "deadline; --timeout sets it)", workload)
            return Failure("INVALID_REFERENCE", f"the reference side {f.detail} during {self.stage}", workload)
        who = "the incumbent" if side.role == "incumbent" else "the candidate"
        if f.kind == "timeout":
            if self.stage == "compile":
                return Failure("COMPILE_ERROR", f"timed out while importing or building {who} "
                                                f"({self.settings.compile_timeout_s:g} s compile deadline; --timeout "
                                                "sets it)", workload)
            which = "compile" if self.stage == "first_call" else "run"
            limit = self.settings.compile_timeout_s if which == "compile" else self.settings.run_timeout_s
            return Failure("TIMEOUT", f"{who} timed out during {self.stage} ({limit:g} s {which} deadline; --timeout "
                                      "sets it)", workload)
        if f.kind == "protocol":
            return Failure("REWARD_HACK", f"{who}'s side sent a reply no honest side writes ({f.detail})", workload)
        if f.kind == "memory":
            return Failure("RUNTIME_ERROR", f"{who} {f.detail}", workload)
        if f.kind == "runaway":
            return Failure("REWARD_HACK" if side is self.cand else "RUNTIME_ERROR",
                           f"{who}'s side {f.detail}: nothing of it may run while another side is timed", workload)
        if f.detail == "exited with code 0":
            return Failure("REWARD_HACK", f"{who}'s side exited during {self.stage} without answering "
                                          "(sys.exit or os._exit in the code?)", workload)
        status = "COMPILE_ERROR" if self.stage == "compile" else "RUNTIME_ERROR"
        hint = " (out of memory?)" if "SIGKILL" in f.detail else ""
        return Failure(status, f"{who}'s side {f.detail} during {self.stage}{hint}", workload)

    # -- stages ------------------------------------------------------------------------------------
    def setup(self, side: Side, candidate: dict | None, label: str) -> float:
        """Load the task and then the code (None = the reference) into a side; the judge-clocked seconds."""
        task = {"task": self.task.model_dump(mode="json"), "definition": self.task.definition}
        built = {} if side is self.ref else {"init_on_device": self.init_on_device}  # as the reference built
        self.ask(side, {"op": "setup", "role": side.role, **task, **built})
        return self.ask(side, {"op": "load", "candidate": candidate, "label": label}).seconds

    def describe_outputs(self) -> None:
        for w in self.task.workloads:
            reply = self.ask(self.ref, {"op": "specs", "workload": w.uuid, "seed": self.seeds.draw()}, workload=w.uuid)
            specs = self.parse(self.ref, reply, SpecsReply, w.uuid)
            self.outputs[w.uuid] = [d.model_dump(exclude_none=True) for d in specs.outputs]
            self.input_bytes[w.uuid] = specs.input_bytes
            self.input_specs[w.uuid] = [d.model_dump(exclude_none=True) for d in specs.inputs]
            self.init_on_device = specs.init_on_device

    def specs(self, uuid: str) -> list[dict]:
        return [{"shape": d["shape"], "dtype": d["dtype"]} for d in self.outputs[uuid]]

    def output_bytes(self, uuid: str) -> int:
        return sum(tensor_nbytes(d) for d in self.outputs[uuid])

    def first_call(self) -> None:
        w = self.task.workloads[0]
        self.ask(self.cand, {"op": "warm", "workload": w.uuid, "seed": self.seeds.draw(), "calls": 1,
                             "specs": self.specs(w.uuid)}, workload=w.uuid)

    def correctness(self) -> None:
        rounds = self.settings.rounds or self.task.rounds
        for w in self.task.workloads:
            worst = (0.0, 0.0)
            seeds = self.seeds.rounds(rounds)
            for numbers in self._batches(w.uuid, list(range(rounds))):
                # Inputs come back in the first and the last round: a candidate that writes its inputs in
                # place is caught either way, without moving every round's inputs twice.
                reply = self.ask(self.cand, {"op": "call", "workload": w.uuid, "seeds": [seeds[r] for r in numbers],
                                             "return_inputs": [r in (0, rounds - 1) for r in numbers],
                                             "poison": True, "specs": self.specs(w.uuid)}, workload=w.uuid)
                calls = self._calls(reply, len(numbers), w.uuid)
                for errors in self.check(w.uuid, [(seeds[r], call, f"round {r + 1}") for r, call in zip(numbers, calls)]):
                    worst = (max(worst[0], errors[0]), max(worst[1], errors[1]))
            self.workload_errors[w.uuid] = worst

    def _batches(self, uuid: str, calls: list[int]) -> list[list[int]]:
        """`calls` in consecutive groups whose outputs and inputs fit CHECK_BATCH_BYTES (one call at least)."""
        size = self._batch_size(uuid)
        return [calls[first:first + size] for first in range(0, len(calls), size)]

    def _batch_size(self, uuid: str) -> int:
        return max(1, CHECK_BATCH_BYTES // max(self.call_bytes(uuid), 1))

    def call_bytes(self, uuid: str) -> int:
        """One call's outputs and tensor inputs, the bytes a checked or audited call moves."""
        return self.output_bytes(uuid) + self.input_bytes[uuid]

    def _audits(self, uuid: str) -> int:
        return audit_count(self.settings.audits, self.call_bytes(uuid))

    def mailbox_bytes(self) -> int:
        """The most a candidate's side puts in its mailbox at once: a request's calls (a correctness batch of
        rounds, an audit's fetch) with their outputs and tensor inputs, as `Mailbox.write` lays them out."""
        rounds = self.settings.rounds or self.task.rounds

        def request_bytes(uuid: str) -> int:
            calls = min(self._batch_size(uuid), max(rounds, self._audits(uuid)))
            return calls * sum(aligned(tensor_nbytes(d)) for d in self.outputs[uuid] + self.input_specs[uuid])
        return max(map(request_bytes, self.outputs), default=0)

    def _calls(self, reply: Reply, n: int, uuid: str) -> list[CallReply]:
        """The `n` calls a candidate's reply must hold, one per call asked for."""
        calls = self.parse(self.cand, reply, CallsReply, uuid).calls
        if len(calls) != n:
            raise Failure("REWARD_HACK", f"workload {uuid}: the candidate's side answered {len(calls)} calls of {n}",
                          uuid)
        return calls

    def check(self, uuid: str, calls: list[tuple[int, CallReply, str]], audit: bool = False) -> list[tuple[float, float]]:
        """Validate candidate calls' outputs (and inputs) on the judge's side, copy them from its mailbox
        into the reference side's, and have the reference side compare each with the reference on the same
        inputs (`calls`: seed, reply, where it was made), in one request; each call's (max abs, max rel) errors.
        `audit`: timed calls, whose failure after passing correctness can only be a cheat."""
        return self.compare(uuid, calls, self.relay(uuid, calls), audit)

    def relay(self, uuid: str, calls: list[tuple[int, CallReply, str]]) -> list[dict]:
        """`check`'s first half: the calls validated and copied into the reference side's mailbox; what the
        reference side's `check` request takes. From then on nothing the candidate's side writes changes them."""
        size = self.cand.process.mailbox_size()
        regions, counts = [], []
        for _, call, where in calls:
            problem = validate_outputs(call.outputs, self.outputs[uuid], size)
            if problem is None and call.inputs is not None:
                problem = validate_inputs(call.inputs, self.input_specs[uuid], size)
            if problem is not None:
                status, message = problem
                raise Failure(status, f"workload {uuid}, {where}: {message}", uuid)
            regions += [d.model_dump() for d in call.outputs + (call.inputs or [])]
            counts.append((len(call.outputs), None if call.inputs is None else len(call.inputs)))
        try:
            copies = iter(self._copy(self.cand.process.mailbox_map, self.ref.process.mailbox_map, regions))
        except WireError as e:  # its mailbox cannot shrink (wire.sealed_mailbox): nothing an honest side does
            raise Failure("REWARD_HACK", f"workload {uuid}, {calls[0][2]}: the candidate's mailbox changed under "
                                         f"the judge's copy ({e})", uuid) from None
        request_calls = []
        for (seed, _, _), (n_out, n_in) in zip(calls, counts):
            relayed = {"seed": seed, "outputs": [next(copies) for _ in range(n_out)]}
            if n_in is not None:
                relayed["inputs"] = [next(copies) for _ in range(n_in)]
            request_calls.append(relayed)
        return request_calls

    def compare(self, uuid: str, calls: list[tuple[int, CallReply, str]], request_calls: list[dict],
                audit: bool = False) -> list[tuple[float, float]]:
        """`check`'s second half: the reference side compares the relayed calls (see `check`)."""
        reply = self.ask(self.ref, {"op": "check", "workload": uuid, "calls": request_calls, "atol": self.settings.atol,
                                    "rtol": self.settings.rtol, "required_matched_ratio": self.settings.matched_ratio},
                         workload=uuid)
        verdicts = self.parse(self.ref, reply, CheckReply, uuid).calls
        errors = []
        for (_, _, where), verdict in zip(calls, verdicts):
            found = (float(verdict.max_abs_error or 0.0), float(verdict.max_rel_error or 0.0))
            if verdict.status:
                status, message = verdict.status, verdict.message or verdict.status
                if audit:
                    status, message = "REWARD_HACK", f"a timed call was wrong where the checked calls were right ({message})"
                raise Failure(status, f"workload {uuid}, {where}: {message}", uuid,
                              max_abs_error=found[0], max_rel_error=found[1])
            errors.append(found)
        if len(errors) != len(calls):
            from kernelarc.guard.judge import GuardInternalError

            raise GuardInternalError(f"the reference side compared {len(errors)} of {len(calls)} calls")
        return errors

    # -- timing ------------------------------------------------------------------------------------
    def timing(self) -> dict[str, WorkloadTimes]:
        results = {}
        if self.on_cuda:
            self.ask(self.inc, {"op": "ramp", "seconds": self.settings.clock_ramp_s})
        for w in self.task.workloads:
            results[w.uuid] = self.time_workload(w.uuid)
        return results

    def block_calls(self, uuid: str, call_s: float) -> int:
        """Calls per timed block: on CUDA as many as the memory budget holds (inputs drawn fresh for each, and
        kept with the outputs as the call left them: `timing.InputSlots`), and no more than `block_load_s` of calls
        of `call_s` seconds (none known: 0) unless that is under MIN_BLOCK_CALLS; on the CPU enough for CPU_BLOCK_S
        of calls, so that the judge's clock around the block is not mostly the request's own overhead."""
        per_call = 2 * self.input_bytes[uuid] + self.output_bytes(uuid)
        fit = max(1, min(MAX_BLOCK_CALLS, self.settings.input_pool_bytes // max(per_call, 1)))
        if self.on_cuda:
            return fit if call_s <= 0 else min(fit, max(MIN_BLOCK_CALLS, int(self.settings.block_load_s / call_s)))
        return max(1, min(fit, math.ceil(CPU_BLOCK_S / max(call_s, 1e-6))))

    def time_workload(self, uuid: str) -> WorkloadTimes:
        specs = self.specs(uuid)
        times = WorkloadTimes()
        per_call_s = {}
        # Untimed calls through the timed path, a whole block of them on CUDA: its first-use costs are
        # paid and the caching allocator holds a block's inputs and kept outputs, on both sides alike
        # (a fresh side beside a warm reference side otherwise shows more bookkeeping).
        # The CPU takes CPU_WARMUP_CALLS and their median: one slow first call sized a fast candidate's
        # blocks at two calls, and the request's own overhead then read as 3 ms per call (a CI flake).
        fit = self.block_calls(uuid, 0.0)  # on CUDA: the calls whose inputs the memory budget holds
        warmup = max(self.settings.warmup, fit) if self.on_cuda else CPU_WARMUP_CALLS
        warm_s = 0.0
        for side in (self.inc, self.cand):
            got, seconds = [], 0.0
            for calls in warmup_requests(warmup, fit if self.on_cuda else warmup):
                reply = self.ask(side, {"op": "time", "mode": "wall" if self.on_cuda else "cpu", "workload": uuid,
                                        "seeds": [self.seeds.draw() for _ in range(calls)], "specs": specs,
                                        "capture": True}, workload=uuid)
                got += self.parse(side, reply, TimeReply, uuid).samples_ms  # only sizes blocks: a lie costs the liar
                seconds += reply.seconds
            per_call_s[side.role] = median(got) / 1000.0 if got else seconds / warmup
            warm_s += seconds
            if side is self.inc and got:
                times.alone_ms = median(got)
        sync_end = {self.inc.role: False, self.cand.role: False}
        call_s = self.call_s = max(per_call_s.values())
        self.worked_s = min(warm_s, warmup * sum(per_call_s.values()))
        k = self.block_calls(uuid, call_s)
        if self.on_cuda:
            profiled, n = self.settings.pass_iterations(self.basis, call_s)
            sync_end = self._device_pass(uuid, specs, profiled, k, times)
        else:
            profiled, n = 0, self.settings.timed_iterations(False)
        # CUDA: n calls in blocks of k, a sample per call; CPU: n blocks of k calls, a sample per block.
        self._wall_pass(uuid, specs, k, math.ceil(n / k) if self.on_cuda else n, sync_end, times)
        times.iterations = profiled if self.basis == "device" and self.on_cuda else n
        return times

    @contextmanager
    def turns(self):
        """For one timing pass: `turn(side)` before each block gives `side` the device, every other side
        that runs untrusted code stopped (guard/sides.py). A side keeps its turn over consecutive blocks
        (the ABBA order puts two at every boundary), so the judge stops and walks the others' process
        trees half as often; every side runs again when the pass ends, however it ends."""
        stopped: list[Side] = []
        holder: list[Side] = []

        def release() -> None:
            for other in stopped:
                try:
                    other.process.thaw(check=True)
                except SideFailure as f:  # something of it ran while the other side was timed
                    raise self._side_failure(other, f, None) from None
            stopped.clear()

        def turn(side: Side) -> None:
            if holder and holder[0] is side:
                return
            started = time.monotonic()
            release()
            stopped[:] = [s for s in (self.inc, self.cand) if s is not side and s is not self.ref]
            for other in stopped:
                try:
                    other.process.freeze()
                except SideFailure as f:  # it forked faster than it could be stopped: its own failure
                    raise self._side_failure(other, f, None) from None
            holder[:] = [side]
            self._count(f"{side.role} turn", time.monotonic() - started)

        try:
            yield turn
            release()
        finally:
            for other in stopped:
                other.process.thaw()

    def _copy(self, src: copier.FileMap, dst: copier.FileMap, regions: list[dict]) -> list[dict]:
        """`copier.copy_regions` on the judge's copy threads, its seconds counted as `judge copy`."""
        started = time.monotonic()
        try:
            return copier.copy_regions(src, dst, regions, copier.pool())
        finally:
            self._count("judge copy", time.monotonic() - started)

    def _timed_request(self, side: Side, request: dict, uuid: str) -> tuple[Reply, float]:
        """A timed block's request, after the card's rest (`_rest`): the reply and when it was asked. How long the
        card worked in it (its calls times `call_s`, at most the judge's seconds) sets the next rest."""
        self._rest()
        asked = time.perf_counter()
        reply = self.ask(side, request, workload=uuid)
        self.worked_s = min(reply.seconds, len(request["seeds"]) * self.call_s)
        return reply, asked

    def _rest(self) -> None:
        """On CUDA, before a timed block, the card idles as long as it last worked (`worked_s` times `rest_ratio`,
        at most `cooldown_s`; GuardSettings.block_load_s says why), counted as `rest`: the judge sleeps, every
        side but the one about to be timed stopped (`turns`). A side that under-reports its calls in the warm-up
        shortens only the rests after its own blocks, the card then hotter for the other side's next block: a
        few percent on a kernel at the card's power limit, where its lie already sized the blocks."""
        seconds = min(self.settings.cooldown_s, self.settings.rest_ratio * self.worked_s)
        if self.on_cuda and seconds > 0:
            time.sleep(seconds)
            self._count("rest", seconds)

    def _count(self, kind: str, seconds: float) -> None:
        spent = self.request_seconds.setdefault(kind, [0, 0.0])
        spent[0], spent[1] = spent[0] + 1, spent[1] + seconds

    def _pairs(self, n_blocks: int):
        """Block order ABBA...: (side, block index) with the incumbent first in even pairs."""
        for b in range(n_blocks):
            yield from ((self.inc, b), (self.cand, b)) if b % 2 == 0 else ((self.cand, b), (self.inc, b))

    def _device_pass(self, uuid: str, specs: list[dict], iterations: int, fit: int,
                     times: WorkloadTimes) -> dict[str, bool]:
        """Profiled blocks of at most `fit` calls (`block_calls`), ABBA, each after a rest (`_rest`)."""
        n_blocks, per_block = device_blocks(iterations, fit)
        seeds = [[self.seeds.draw() for _ in range(per_block)] for _ in range(n_blocks)]
        samples: dict[str, list[float]] = {self.inc.role: [], self.cand.role: []}
        kernels: dict[str, list[int]] = {self.inc.role: [], self.cand.role: []}
        longest: list[float] = []
        busy: list[float] = []
        annotated = False
        side_streams = {self.inc.role: False, self.cand.role: False}
        totals: dict[str, dict[str, list[float]]] = {self.inc.role: {}, self.cand.role: {}}
        audits = self._audited(uuid, n_blocks * per_block)
        with self.turns() as turn:
            for side, b in self._pairs(n_blocks):
                turn(side)
                # The candidate keeps every call's outputs (copied outside the profiled windows, within the memory
                # budget `fit` counts): its profiled calls are audited like its wall-timed ones.
                reply, _ = self._timed_request(side, {"op": "time", "mode": "device", "workload": uuid,
                                                      "seeds": seeds[b], "specs": specs, "capture": side is self.cand,
                                                      "cpu": self.timing_cpu}, uuid)
                block = self.parse(side, reply, TimeReply, uuid)
                if side is self.cand:
                    self._audit(uuid, seeds[b], [i - b * per_block for i in audits
                                                 if b * per_block <= i < (b + 1) * per_block], "a profiled call")
                samples[side.role] += self._samples(side, block, reply.seconds, len(seeds[b]), uuid)
                kernels[side.role] += block.kernels
                for name, (ms, count) in block.kernel_ms.items():
                    total = totals[side.role].setdefault(name, [0.0, 0.0])
                    total[0], total[1] = total[0] + ms, total[1] + count
                if side is self.cand:
                    longest += block.longest_ms
                    # a reply without one busy time per call is held to its whole spans, the stricter floor
                    floors = block.busy_ms if len(block.busy_ms) == len(block.kernels) else block.samples_ms
                    busy += [b for b, k in zip(floors, block.kernels) if k > 0]
                    annotated |= block.annotated
                side_streams[side.role] |= block.side_streams
        if not any(kernels[self.cand.role]):
            raise Failure("REWARD_HACK", f"workload {uuid}: the candidate launched no GPU kernel in "
                                         f"{len(kernels[self.cand.role])} profiled calls", uuid)
        times.longest_kernel_ms = median(longest) if longest else None
        for role in samples:  # a call whose kernels the profiler lost has no span: left out
            spans = [s for s, k in zip(samples[role], kernels[role]) if k > 0] or samples[role]
            times.device[role] = Samples(tuple(spans))
            times.kernels[role] = kernel_shares(totals[role], len(samples[role]))
        times.busy_ms = None if annotated or not busy else median(busy)
        return side_streams

    def _wall_pass(self, uuid: str, specs: list[dict], k: int, n_blocks: int, sync_end: dict[str, bool],
                   times: WorkloadTimes) -> None:
        seeds = [[self.seeds.draw() for _ in range(k)] for _ in range(n_blocks)]
        audits = self._audited(uuid, n_blocks * k) if self.on_cuda else set()
        reported: dict[str, list[float]] = {self.inc.role: [], self.cand.role: []}
        block_medians: dict[str, list[float]] = {self.inc.role: [], self.cand.role: []}
        judged: dict[str, list[float]] = {self.inc.role: [], self.cand.role: []}
        residual: dict[str, list[float]] = {self.inc.role: [], self.cand.role: []}
        staging = None if self.on_cuda else copier.FileMap(os.memfd_create("kernelarc-timed-inputs"))
        scratch = None if self.on_cuda else copier.FileMap(os.memfd_create("kernelarc-incumbent-outputs"))
        staged, staged_block = None, None
        try:
            with self.turns() as turn:
                for side, b in self._pairs(n_blocks):
                    # Both sides keep a copy of every call's outputs (the same bookkeeping); on the CPU every call's
                    # outputs come back inside the timed request, and the candidate's are all checked.
                    request = {"op": "time", "mode": "wall" if self.on_cuda else "cpu", "workload": uuid,
                               "seeds": seeds[b], "specs": specs, "sync_end": sync_end[side.role], "capture": True,
                               "send_outputs": not self.on_cuda, "cpu": self.timing_cpu}
                    if staging is not None and staged_block != b:
                        staged, staged_block = self._stage_inputs(uuid, seeds[b], staging), b
                    turn(side)
                    handed_s = 0.0
                    if staged is not None:  # the judge's clock is the measure: it holds the handing over too
                        started = time.perf_counter()
                        request["inputs"] = self._hand_inputs(staged, staging, side)
                        handed_s = time.perf_counter() - started
                    reply, asked = self._timed_request(side, request, uuid)
                    block = self.parse(side, reply, TimeReply, uuid)
                    if self.on_cuda:
                        seconds = reply.seconds + handed_s
                    else:  # the clock runs until the outputs are out of the side's reach (see _take_outputs)
                        relayed = self._take_outputs(side, uuid, seeds[b], block, scratch)
                        seconds = time.perf_counter() - asked + handed_s
                    got = self._samples(side, block, seconds, k, uuid)
                    reported[side.role] += got
                    block_medians[side.role].append(median(got))
                    judged[side.role].append(1000.0 * seconds / k)
                    residual[side.role].append(1000.0 * seconds / k - sum(got) / k)
                    if side is self.cand and not self.on_cuda:
                        self.compare(uuid, self._block_calls(uuid, seeds[b], block), relayed, audit=True)
                    if side is self.cand:
                        in_block = [i - b * k for i in audits if b * k <= i < (b + 1) * k]
                        self._audit(uuid, seeds[b], in_block if self.on_cuda else [self.seeds.rng.randrange(k)],
                                    "an audited timed call")
        finally:
            for kept in (staging, scratch):
                if kept is not None:
                    kept.close()
                    os.close(kept.fd)
        for role in reported:
            times.residual_ms[role] = median(residual[role])
            times.residual_blocks_ms[role] = residual[role]
        if self.on_cuda:
            for role in reported:
                times.wall[role] = Samples(tuple(reported[role]))
            self._check_kernel_floor(uuid, times)
            self._check_residuals(uuid, times)
            self._check_interference(uuid, times)
        else:  # the judge's clock decides: each request, less the incumbent side's usual bookkeeping
            bookkeeping = max(0.0, times.residual_ms[self.inc.role])
            for role in judged:
                per_block = [sum(reported[role][b * k:(b + 1) * k]) / k for b in range(n_blocks)]
                # Never below what the side itself measured, nor below a microsecond (a ratio needs both
                # sides above zero): jitter can push a tiny call's difference under nothing. Never more than
                # CPU_SUBTRACTED of the judge's time either: a side that skips its bookkeeping would otherwise
                # have the incumbent's subtracted from its calls.
                times.wall[role] = Samples(tuple(max(t - min(bookkeeping, CPU_SUBTRACTED * t), own, MIN_SAMPLE_MS)
                                                 for t, own in zip(judged[role], per_block)))
            block_medians = {role: list(samples.times_ms) for role, samples in times.wall.items()}
        times.paired = tuple(i / c for i, c in zip(block_medians[self.inc.role], block_medians[self.cand.role])
                             if i > 0 and c > 0)

    def _audited(self, uuid: str, total: int) -> set[int]:
        """Which of a pass's `total` candidate calls are audited, drawn by the judge (the side learns which only
        after its block ran): `audit_count` of them."""
        return set(self.seeds.rng.sample(range(total), min(total, self._audits(uuid))))

    def _audit(self, uuid: str, seeds: list[int], indices: list[int], where: str) -> None:
        """The candidate's last block's calls at `indices`, fetched with their inputs after the call and checked
        (timed calls may not write their inputs either): a wrong one is REWARD_HACK."""
        for batch in self._batches(uuid, sorted(indices)):
            fetched = self.ask(self.cand, {"op": "fetch", "indices": batch, "return_inputs": True}, workload=uuid)
            self.check(uuid, [(seeds[i], call, where) for i, call in zip(batch, self._calls(fetched, len(batch), uuid))],
                       audit=True)

    def _stage_inputs(self, uuid: str, seeds: list[int], staging: copier.FileMap) -> list[list[dict]] | None:
        """CPU: the reference side draws a timed block's inputs (side.op_stage), copied into the judge's own
        `staging` memfd (the reference side's mailbox takes the checked outputs next); None where they cannot
        travel, and each side then draws its own inside its timed request."""
        reply = self.ask(self.ref, {"op": "stage", "workload": uuid, "seeds": seeds}, workload=uuid)
        calls = self.parse(self.ref, reply, StageReply, uuid).inputs
        if calls is None:
            return None
        return _with_tensors(calls, self._copy(self.ref.process.mailbox_map, staging, _tensors(calls)))

    def _hand_inputs(self, staged: list[list[dict]], staging: copier.FileMap, side: Side) -> list[list[dict]]:
        """A timed block's staged inputs, copied into `side`'s mailbox; their descriptions there."""
        return _with_tensors(staged, self._copy(staging, side.process.mailbox_map, _tensors(staged)))

    def _block_calls(self, uuid: str, seeds: list[int], block: TimeReply) -> list[tuple[int, CallReply, str]]:
        """CPU: the outputs of every timed call of the block, to be checked like a correctness round."""
        if block.calls is None or len(block.calls) != len(seeds):
            raise Failure("REWARD_HACK", f"workload {uuid}: the timed calls' outputs did not come back", uuid)
        return [(seed, call, "a timed call") for seed, call in zip(seeds, block.calls)]

    def _take_outputs(self, side: Side, uuid: str, seeds: list[int], block: TimeReply, scratch: copier.FileMap) -> list[dict]:
        """CPU: a timed block's outputs copied out of `side`'s mailbox inside the judge's clock, the candidate's into
        the reference side's (relayed for its check), the incumbent's into `scratch` (the same copy on both sides).
        A side that replied first and wrote its outputs after (while the judge parsed the reply) was KEEP 1.2-2x on
        a tiny call in 3 of 6 tries (fifth red-team pass): now such writes are clocked, or missed and wrong."""
        calls = self._block_calls(uuid, seeds, block)
        if side is self.cand:
            return self.relay(uuid, calls)
        regions = [d.model_dump() for _, call, _ in calls for d in call.outputs]
        if validate_regions([d for _, call, _ in calls for d in call.outputs], side.process.mailbox_size(),
                            "output") is None:
            try:
                self._copy(side.process.mailbox_map, scratch, regions)
            except WireError:
                pass  # the incumbent passed as a candidate before: its timing is all this copy is for
        return []

    def _samples(self, side: Side, block: TimeReply, seconds: float, n: int, uuid: str) -> list[float]:
        """The block's samples, if they are one per call and fit the judge's clock."""
        got = block.samples_ms
        judge_ms = 1000.0 * seconds
        if len(got) == n and sum(got) <= judge_ms * OVER_REPORT[0] + OVER_REPORT[1]:
            return got
        what = (f"reported {sum(got):.4g} ms of calls in a block the judge's clock saw take {judge_ms:.4g} ms"
                if len(got) == n else f"reported {len(got)} samples for {n} timed calls")
        raise self._timing_failure(side, uuid, what)

    def _timing_failure(self, side: Side, uuid: str, what: str) -> Failure:
        if side is self.cand:
            return Failure("REWARD_HACK", f"workload {uuid}: the candidate's side {what}", uuid)
        return Failure("INCUMBENT_FAILED" if side.role == "incumbent" else "RUNTIME_ERROR",
                       f"workload {uuid}: the {side.role}'s side {what}; no verdict possible", uuid)

    def _check_residuals(self, uuid: str, times: WorkloadTimes) -> None:
        """The candidate's bookkeeping per call must cost what the incumbent's does (module docstring)."""
        r_cand, r_inc = times.residual_ms[self.cand.role], times.residual_ms[self.inc.role]
        s = self.settings
        # A longer call leaves the card hotter for the bookkeeping after it: the share is of the longer side.
        longer = max(t.median for t in times.wall.values())
        slack = s.residual_floor_ms + s.residual_ratio * r_inc + s.residual_share * longer
        if r_cand - r_inc > slack:
            raise Failure("REWARD_HACK", f"workload {uuid}: {r_cand - r_inc:.4g} ms per timed call went outside the "
                                         f"candidate's measured window (its side took {r_cand:.4g} ms per call beyond "
                                         f"its samples, the incumbent's {r_inc:.4g} ms; at most {slack:.3g} ms more is "
                                         f"noise{self._residual_blocks(times)}): work finished after the clock stopped, or a patched clock", uuid)
        if r_inc - r_cand > slack:
            raise Failure("REWARD_HACK", f"workload {uuid}: the candidate's side skipped its own bookkeeping "
                                         f"({r_cand:.4g} ms per call beyond its samples, the incumbent's {r_inc:.4g} ms"
                                         f"{self._residual_blocks(times)})", uuid)

    def _residual_blocks(self, times: WorkloadTimes) -> str:
        """Each side's residual per block, for a failed residual check's reason."""
        return "; per block: " + ", ".join(f"{role} {' '.join(f'{ms:.3g}' for ms in times.residual_blocks_ms.get(role, []))}"
                                           for role in (self.cand.role, self.inc.role))

    def _check_kernel_floor(self, uuid: str, times: WorkloadTimes) -> None:
        """A call cannot take less wall time than its own kernels: event samples below the longest kernel,
        or below the time its kernels kept the card busy, were not measured (a patched event clock, work
        after the end event). The two come from different mechanisms (CUDA events, the profiler's kernel
        records). The busy floor catches what the longest kernel cannot, a clock scaled down on a call of
        many kernels; it leaves out the host's gaps between launches, which the profiler stretches (a
        host-bound call's profiled span is longer than its unprofiled wall time), and it holds only for
        blocks profiled without host tracing (`WorkloadTimes.busy_ms`). A clock scaled down on a host-bound
        call hides in those gaps from this check, not from the bookkeeping check (`_check_residuals`)."""
        wall = times.wall[self.cand.role].median
        slack = self.settings.residual_floor_ms
        for floor, what in ((times.longest_kernel_ms, "its longest kernel alone ran"),
                            (times.busy_ms, "its kernels kept the card busy (gaps over "
                                            f"{HOST_GAP_MS * 1000:.0f} us left out) for")):
            if floor is not None and wall < FLOOR_SHARE * floor - slack:
                raise Failure("REWARD_HACK", f"workload {uuid}: the candidate's calls were timed at {wall:.4g} ms "
                                             f"but {what} {floor:.4g} ms", uuid)

    def _check_interference(self, uuid: str, times: WorkloadTimes) -> None:
        """The incumbent must not run much slower beside the candidate than it ran before it: a candidate
        that leaves GPU work queued when its turn ends (stopping its processes stops new launches, not
        queued kernels) would slow the incumbent's blocks and look faster."""
        alone, beside = times.alone_ms, times.wall[self.inc.role].median
        limit = (alone or 0.0) * (1.0 + self.settings.interference) + self.settings.residual_floor_ms
        if alone is not None and beside > limit:
            raise Failure("REWARD_HACK", f"workload {uuid}: the incumbent took {beside:.4g} ms per call between the "
                                         f"candidate's blocks and {alone:.4g} ms before them: work of the candidate's "
                                         "overlapped the incumbent's timing", uuid)

def _tensors(calls: list[list[dict]]) -> list[dict]:
    """The tensor descriptions of staged inputs (side.op_stage), in order."""
    return [item["tensor"] for call in calls for item in call if "tensor" in item]


def _with_tensors(calls: list[list[dict]], tensors: list[dict]) -> list[list[dict]]:
    """Staged inputs with their tensor descriptions replaced, in order, by `tensors`."""
    moved = iter(tensors)
    return [[{"tensor": next(moved)} if "tensor" in item else item for item in call] for call in calls]


STATUSES = {"STATIC_REJECT", "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "INCORRECT_SHAPE", "INCORRECT_DTYPE",
            "INCORRECT_NUMERICAL", "REWARD_HACK"}
"""Statuses a candidate side may report for itself (never PASSED or INVALID_REFERENCE)."""


def validate_outputs(outputs: list[Described], expected: list[dict], mailbox_size: int) -> tuple[str, str] | None:
    """(status, message) when a call's outputs are not exactly the reference's kinds, shapes and dtypes,
    or do not lie in the side's mailbox as described."""
    if len(outputs) != len(expected):
        return "INCORRECT_SHAPE", f"returned {len(outputs)} outputs, expected {len(expected)}"
    for i, (got, want) in enumerate(zip(outputs, expected)):
        if got.kind == "subclass":
            return "REWARD_HACK", f"output {i} is a tensor subclass {got.type}, not torch.Tensor"
        if got.kind != "tensor":
            return "INCORRECT_SHAPE", f"output {i} is {got.type}, expected torch.Tensor"
        if got.shape != list(want["shape"]):
            return "INCORRECT_SHAPE", f"output {i} has shape {tuple(got.shape or ())}, expected {tuple(want['shape'])}"
        if got.dtype != want["dtype"]:
            return "INCORRECT_DTYPE", f"output {i} has dtype torch.{got.dtype}, expected torch.{want['dtype']}"
    return validate_regions(outputs, mailbox_size, "output")


def validate_inputs(inputs: list[Described], expected: list[dict], mailbox_size: int) -> tuple[str, str] | None:
    """(REWARD_HACK, message) unless a call's inputs after the call are exactly its tensor inputs' kinds, shapes
    and dtypes, in the side's mailbox: extra or resized regions made the reference side read a size past 64
    bits (a judge crash) or copy gigabytes of one region (fifth red-team pass)."""
    if len(inputs) != len(expected) or any(
            got.kind != "tensor" or got.shape != list(want["shape"]) or got.dtype != want["dtype"]
            for got, want in zip(inputs, expected)):
        return "REWARD_HACK", "its inputs after the call were not handed back as they were given"
    return validate_regions(inputs, mailbox_size, "input")


def validate_regions(described: list[Described], mailbox_size: int, what: str) -> tuple[str, str] | None:
    """(status, message) unless every description is a tensor whose bytes lie inside the mailbox."""
    for i, d in enumerate(described):
        try:
            ok = (d.kind == "tensor" and d.nbytes is not None and d.offset is not None
                  and d.nbytes == tensor_nbytes(d.model_dump()) and d.offset + d.nbytes <= mailbox_size)
        except (TypeError, ValueError, AttributeError):  # a dtype torch does not know
            ok = False
        if not ok:
            return "REWARD_HACK", f"{what} {i} is not where the side's reply says it is"
    return None


__all__ = ["Session", "Seeds", "Failure", "WorkloadTimes", "validate_outputs", "validate_inputs", "validate_regions",
           "STATUSES"]
