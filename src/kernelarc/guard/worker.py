"""The worker process that runs one candidate: `python -m kernelarc.guard.worker FD DEVICE`.

Started by `runner.py` with a scrubbed environment in a private temp dir. It reads its job (and the
channel's signing key) from stdin before importing torch or the candidate, then works in stages,
announcing each on the private channel so the parent can apply that stage's timeout:

  reference    every workload and round (and the audit inputs) through the reference, before the
               candidate is imported, results kept on the host
  compile      import / build the candidate, construct it
  first_call   one warm-up call (Triton JIT-compiles here); a crash or hang is the candidate's run
               failing, a compiler exception is still a COMPILE_ERROR
  correctness  every workload, every round, fresh seeded inputs, poisoned outputs, inputs checked
  timing       incumbent and candidate interleaved; stream probe; one audit call checked

The last message is `result`. A failure of the candidate ends the job with its status; a failure of
the worker's own code is reported as `internal` and raised by the parent.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import time
import traceback
from pathlib import Path

from kernelarc.guard.channel import ChannelWriter


# Exceptions raised by these packages during the first call are build failures (JIT compilation).
COMPILER_MODULES = ("triton.compiler", "torch._dynamo", "torch._inductor")
CLOCK_RAMP_S = 0.2
"""Seconds of busy work on the card before timing starts, so the first timed calls do not run at
idle clocks (no clocks are locked: the machine's settings are not ours to change)."""
NO_KERNEL_PROBES = 3
"""Profiled calls that must all show no kernel before a candidate is rejected for launching none: on the
H200 one profiled call of a correct CUDA candidate once came back without its kernel (session 6)."""
# How the CPU allocator words an allocation it cannot serve (a plain RuntimeError, not OutOfMemoryError).
CPU_OOM_MARKERS = ("DefaultCPUAllocator", "can't allocate memory")


class CandidateFailure(Exception):
    """The candidate (or the reference) failed; carries the status and a one-line message."""

    def __init__(self, status: str, message: str, **errors: float):
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors  # max_abs_error / max_rel_error of the failing comparison, when numbers were compared


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0][:400] if text else type(exc).__name__


class Job:
    """Everything the worker does for one evaluation."""

    def __init__(self, spec: dict, channel: ChannelWriter):
        import torch

        from kernelarc.guard.candidate import Candidate
        from kernelarc.guard.settings import GuardSettings
        from kernelarc.task.model import Task
        from kernelarc.task.runtime import TaskRuntime

        self.torch = torch
        self.channel = channel
        self.settings = GuardSettings.model_validate(spec["settings"])
        self.device = torch.device(spec["device"])
        self.on_cuda = self.device.type == "cuda"
        self.task = Task.model_validate({**spec["task"], "definition": spec["task_definition"]})
        self.runtime = TaskRuntime(self.task, self.device)
        self.seeds: dict[str, list[int]] = spec["seeds"]
        self.audit_seeds: dict[str, int] = spec["audit_seeds"]
        self.candidate = Candidate.model_validate(spec["candidate"])
        self.incumbent = Candidate.model_validate(spec["incumbent"]) if spec.get("incumbent") else None
        self.workdir = Path(spec["workdir"])
        self.rng = random.Random(spec["audit_rng"])
        self.expected: dict[tuple[str, int], list] = {}
        self.results: list[dict] = []

    # -- helpers -------------------------------------------------------------------------------
    def sync(self) -> None:
        if self.on_cuda:
            self.torch.cuda.synchronize(self.device)

    def tolerances(self, workload, outputs: list) -> list:
        from kernelarc.task.model import Tolerance

        tols = []
        for i, out in enumerate(outputs):
            tol = workload.tolerance_for(i, str(out.dtype).removeprefix("torch."), self.task.format)
            if self.settings.atol is not None or self.settings.rtol is not None:
                tol = Tolerance(**{**tol.model_dump(), "atol": self.settings.atol if self.settings.atol is not None else tol.atol,
                                   "rtol": self.settings.rtol if self.settings.rtol is not None else tol.rtol})
            tols.append(tol)
        return tols

    def output_specs(self, uuid: str) -> list:
        return [(tuple(t.shape), t.dtype) for t in self.expected[(uuid, 0)]]

    def guarded(self, status: str, fn, *args):
        """Run candidate code; any exception becomes a CandidateFailure with `status`."""
        torch = self.torch
        try:
            with torch.no_grad():
                value = fn(*args)
            self.sync()
            return value
        except CandidateFailure:
            raise
        except torch.OutOfMemoryError as e:
            raise CandidateFailure("RUNTIME_ERROR", f"out of memory: {_one_line(e)}") from None
        except MemoryError as e:
            raise CandidateFailure("RUNTIME_ERROR", f"out of host memory: {_one_line(e)}") from None
        except BaseException as e:  # noqa: BLE001 - a candidate may raise anything, SystemExit included
            traceback.print_exc()
            if isinstance(e, RuntimeError) and any(m in str(e) for m in CPU_OOM_MARKERS):
                raise CandidateFailure("RUNTIME_ERROR", f"out of host memory: {_one_line(e)}") from None
            if any(c.__module__.startswith(COMPILER_MODULES) for c in type(e).__mro__):
                status = "COMPILE_ERROR"
            raise CandidateFailure(status, _one_line(e)) from None

    @staticmethod
    @contextlib.contextmanager
    def recording(entry: dict):
        """A candidate failure leaving the block is written on `entry`, that workload's result."""
        try:
            yield
        except CandidateFailure as f:
            entry.update(status=f.status, message=f.message, **f.errors)
            raise

    # -- stages --------------------------------------------------------------------------------
    def compute_reference(self) -> None:
        from kernelarc.guard.loading import reference_callee

        torch = self.torch
        self.channel.send("stage", stage="reference")
        ref = reference_callee(self.runtime, self.device)
        for w in self.task.workloads:
            seeds = list(self.seeds[w.uuid]) + [self.audit_seeds[w.uuid]]
            for r, seed in enumerate(seeds):
                inputs = self.runtime.make_inputs(w, seed)
                try:
                    with torch.no_grad():
                        outs = ref.bind(inputs, [])()
                    self.sync()
                except Exception as e:  # noqa: BLE001
                    traceback.print_exc()
                    raise CandidateFailure("INVALID_REFERENCE", f"reference failed on {w.uuid}: {_one_line(e)}") from None
                for i, o in enumerate(outs):
                    if type(o) is not torch.Tensor:
                        raise CandidateFailure("INVALID_REFERENCE", f"reference output {i} is {type(o).__name__}, not a tensor")
                    tol = self.tolerances(w, outs)[i]
                    bad = ~torch.isfinite(o) if o.is_floating_point() else torch.zeros((), dtype=torch.bool)
                    if tol.allow_negative_inf and o.is_floating_point():
                        bad = bad & (o != float("-inf"))
                    if bool(bad.any()):
                        raise CandidateFailure("INVALID_REFERENCE", f"reference output {i} has NaN/Inf on {w.uuid}")
                self.expected[(w.uuid, r)] = [o.detach().to("cpu", copy=True) for o in outs]
                del inputs, outs
        if self.on_cuda:
            torch.cuda.empty_cache()

    def load(self, candidate, label: str):
        from kernelarc.guard.loading import load_callee

        return self.guarded("COMPILE_ERROR", load_callee, candidate, self.runtime, self.workdir, label)

    def compile_candidate(self):
        self.channel.send("stage", stage="compile")
        t0 = time.perf_counter()
        callee = self.load(self.candidate, "candidate")
        self.channel.send("stage", stage="first_call")
        w = self.task.workloads[0]
        inputs = self.runtime.make_inputs(w, self.seeds[w.uuid][0])
        self.guarded("RUNTIME_ERROR", lambda: callee.bind(inputs, self.output_specs(w.uuid))())
        return callee, time.perf_counter() - t0

    def check_correctness(self, callee) -> None:
        from kernelarc.guard.correctness import check_outputs, inputs_unchanged, poison_allocator, snapshot

        self.channel.send("stage", stage="correctness")
        for w in self.task.workloads:
            entry = {"uuid": w.uuid, "status": "PASSED"}
            self.results.append(entry)
            worst_abs = worst_rel = 0.0
            inputs = None
            with self.recording(entry):
                for r, seed in enumerate(self.seeds[w.uuid]):
                    expected = self.expected[(w.uuid, r)]
                    inputs = _refill(inputs, self.runtime.make_inputs(w, seed))
                    before = snapshot(inputs)
                    poison_allocator(expected, self.device)
                    call = callee.bind(inputs, self.output_specs(w.uuid))
                    actual = self.guarded("RUNTIME_ERROR", call)
                    check = check_outputs(actual, expected, self.tolerances(w, expected))
                    if not check.ok:
                        raise CandidateFailure(check.status.value, f"workload {w.uuid}, round {r + 1}: {check.message}",
                                               **_errors(check))
                    changed = inputs_unchanged(before, inputs)
                    if changed:
                        raise CandidateFailure("REWARD_HACK", f"workload {w.uuid}, round {r + 1}: {changed}")
                    worst_abs, worst_rel = max(worst_abs, check.max_abs_error), max(worst_rel, check.max_rel_error)
            entry.update(max_abs_error=worst_abs, max_rel_error=worst_rel)

    def time_workloads(self, callee) -> str:
        from kernelarc.guard.loading import reference_callee
        from kernelarc.guard.timing import L2Flusher
        from kernelarc.guard.types import TimingMethod

        self.channel.send("stage", stage="timing")
        incumbent = (reference_callee(self.runtime, self.device) if self.incumbent is None
                     else self.load(self.incumbent, "incumbent"))
        flush = L2Flusher(self.device) if self.on_cuda else None
        if flush is not None:
            self._raise_clocks(flush)
        methods = []
        for res in self.results:
            methods.append(self._time_workload(res, incumbent, callee, flush))
        return TimingMethod.CUPTI.value if TimingMethod.CUPTI.value in methods else methods[0]

    def _probe(self, call, flush, calls: int):
        """The stream probe of `call`, profiled again (`calls` times at most) while it shows no kernel."""
        from kernelarc.guard.timing import probe_streams

        for _ in range(calls):
            probe = self.guarded("RUNTIME_ERROR", probe_streams, call, flush)
            if probe.n_kernels:
                break
        return probe

    def _raise_clocks(self, flush) -> None:
        """Keep the card busy for CLOCK_RAMP_S so that timing never starts from idle clocks."""
        end = time.perf_counter() + CLOCK_RAMP_S
        while time.perf_counter() < end:
            for _ in range(8):
                flush()
            self.sync()

    def _time_workload(self, res: dict, incumbent, callee, flush) -> str:
        """Time incumbent and candidate interleaved on one workload; returns the timing method used."""
        from kernelarc.guard.correctness import check_outputs
        from kernelarc.guard.timing import SideTimer, calls_per_sample, interleaved
        from kernelarc.guard.types import TimingMethod

        torch = self.torch
        with self.recording(res):
            w = self.task.workload(res["uuid"])
            specs = self.output_specs(w.uuid)
            base = self.runtime.make_inputs(w, self.seeds[w.uuid][0])
            copies = self._input_copies(base, self.settings.max_iterations if self.on_cuda else self.settings.cpu_iterations)
            audit_inputs = self.runtime.make_inputs(w, self.audit_seeds[w.uuid])
            audit_out: list = []
            timers, call_s, synced_s, side_method = {}, {}, {}, {}
            for name, side in (("incumbent", incumbent), ("candidate", callee)):
                side_method[name] = TimingMethod.CPU_WALL
                if self.on_cuda:
                    probe = self._probe(side.bind(copies[0], specs), flush,
                                        calls=NO_KERNEL_PROBES if name == "candidate" else 1)
                    if name == "candidate" and probe.n_kernels == 0:
                        raise CandidateFailure("REWARD_HACK", f"workload {w.uuid}: the candidate launched no GPU kernel")
                    side_method[name] = TimingMethod.CUPTI if probe.side_streams else TimingMethod.CUDA_EVENTS
                warm = side.bind(copies[0], specs)
                n_warm = self.settings.warmup if self.on_cuda else 1
                t0 = time.perf_counter()
                for _ in range(n_warm):
                    self.guarded("RUNTIME_ERROR", warm)
                call_s[name] = (time.perf_counter() - t0) / n_warm
                if self.on_cuda:
                    synced_s[name] = self._synchronized_call_s(warm)
            batch = calls_per_sample(set(side_method.values()), synced_s, self.settings)
            for name, method in side_method.items():
                timers[name] = SideTimer(TimingMethod.CUDA_EVENTS_BATCH if batch > 1 else method, flush, batch)
            methods = {t.method for t in timers.values()}
            # A CUPTI-timed call costs a profiler session of its own: those keep the base count.
            slowest_call_s = 0.0 if TimingMethod.CUPTI in methods else max(call_s.values()) * batch
            iterations = self.settings.timed_iterations(self.on_cuda, call_s=slowest_call_s)
            audit_at = self.rng.randrange(iterations * batch)

            def make(side, name):
                def for_call(i: int):
                    if name == "candidate" and i == audit_at:
                        call = side.bind(audit_inputs, specs)
                        # Copied at once: a candidate may return buffers that its next call reuses.
                        return lambda: audit_out.extend(t.clone() if isinstance(t, torch.Tensor) else t
                                                        for t in call())
                    return side.bind(copies[i % len(copies)], specs)
                return for_call

            samples = self.guarded("RUNTIME_ERROR", interleaved,
                                   {"incumbent": (timers["incumbent"], make(incumbent, "incumbent")),
                                    "candidate": (timers["candidate"], make(callee, "candidate"))}, iterations)
            expected = self.expected[(w.uuid, len(self.seeds[w.uuid]))]
            audit = check_outputs(audit_out, expected, self.tolerances(w, expected))
            if not audit.ok:
                raise CandidateFailure("REWARD_HACK",
                                       f"workload {w.uuid}: the audit call during timing was wrong ({audit.message})",
                                       **_errors(audit))
            cand, inc = samples["candidate"], samples["incumbent"]
            res.update(latency_ms=cand.median, spread=cand.spread, incumbent_ms=inc.median,
                       incumbent_spread=inc.spread, method=cand.method.value, iterations=iterations,
                       calls_per_sample=batch)
            del copies
            if self.on_cuda:
                torch.cuda.empty_cache()
            return TimingMethod.CUPTI.value if TimingMethod.CUPTI in methods else next(iter(methods)).value

    def _synchronized_call_s(self, call) -> float:
        """The fastest of three calls timed from an idle card to their end: host overhead and GPU work."""
        best = float("inf")
        for _ in range(3):
            self.sync()
            t0 = time.perf_counter()
            self.guarded("RUNTIME_ERROR", call)
            self.sync()
            best = min(best, time.perf_counter() - t0)
        return best

    def _input_copies(self, base: list, iterations: int) -> list[list]:
        """Distinct copies of the inputs (fresh addresses), as many as the pool budget allows."""
        torch = self.torch
        nbytes = sum(t.numel() * t.element_size() for t in base if isinstance(t, torch.Tensor)) or 1
        n = max(2, min(iterations, self.settings.input_pool_bytes // nbytes))
        return [[t.clone() if isinstance(t, torch.Tensor) else t for t in base] for _ in range(n)]

    def run(self) -> dict:
        torch = self.torch
        device_name = torch.cuda.get_device_name(self.device) if self.on_cuda else "cpu"
        self.compute_reference()
        callee, compile_s = self.compile_candidate()
        self.check_correctness(callee)
        method = self.time_workloads(callee)
        return {"status": "PASSED", "workloads": self.results, "compile_s": compile_s,
                "timing": method, "device": device_name}


def _errors(check) -> dict[str, float]:
    """A failed comparison's errors, when it got as far as comparing numbers."""
    if check.status.value != "INCORRECT_NUMERICAL":
        return {}
    return {"max_abs_error": check.max_abs_error, "max_rel_error": check.max_rel_error}


def _refill(previous: list | None, fresh: list) -> list:
    """The fresh round's values written into the previous round's tensors (same addresses).

    A candidate that caches outputs by data pointer then sees new values at an old address and
    returns a stale answer, whatever the allocator would have done with fresh allocations.
    """
    import torch

    if previous is None:
        return fresh
    with torch.no_grad():
        return [old.copy_(new) if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor)
                and old.shape == new.shape and old.dtype == new.dtype and old.device == new.device else new
                for old, new in zip(previous, fresh)]


def prewarm(device: str) -> None:
    """Pay the one-time costs of a CUDA worker before its job arrives.

    Creating the CUDA context and starting the CUDA profiler (CUPTI, which the stream probe uses)
    each cost seconds once per process; a pooled worker does both while it waits, so they leave
    the critical path. Nothing here may fail the worker: a missing GPU is reported by the job.
    """
    import torch

    if not device.startswith("cuda") or not torch.cuda.is_available():
        return
    try:
        from torch.profiler import ProfilerActivity, profile

        dev = torch.device(device)
        torch.cuda.set_device(dev)
        x = torch.ones(1024, device=dev)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            x.add_(1)
            torch.cuda.synchronize(dev)
        del x
    except Exception:  # noqa: BLE001 - the job's own first CUDA call reports any real problem
        traceback.print_exc()


def main(argv: list[str]) -> int:
    fd = int(argv[1])
    import torch  # noqa: F401  - before the job arrives: a pooled worker waits here already warm

    try:
        import triton  # noqa: F401
    except ImportError:
        pass
    prewarm(argv[2] if len(argv) > 2 else "cpu")
    line = sys.stdin.readline()
    if not line:  # an idle pooled worker that was never given a job
        return 0
    spec = json.loads(line)
    key = bytes.fromhex(spec.pop("key"))
    sys.stdin.close()
    os.dup2(2, 1)  # stray prints (the candidate's included) go to the log, never to the channel
    channel = ChannelWriter(fd, key)
    job: Job | None = None
    try:
        job = Job(spec, channel)
        channel.send("result", **job.run())
    except CandidateFailure as f:
        channel.send("result", status=f.status, message=f.message, workloads=job.results if job else [])
    except BaseException as e:  # noqa: BLE001 - reported, then raised by the parent as our bug
        traceback.print_exc()
        channel.send("internal", message=_one_line(e), traceback=traceback.format_exc()[-4000:])
        return 3
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no interpreter teardown (about 1 s with torch loaded), no exit handler a candidate left
