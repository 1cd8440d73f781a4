"""A side process of the guard: `python -m kernelarc.guard.side DEVICE CMD_FD REPLY_FD MAILBOX_FD`.

The judge starts one per role, each in its own sandbox: the reference side (the task's own code:
it computes reference outputs and compares what the judge hands it), and one side per piece of
untrusted code (the candidate, the incumbent). A side answers requests (`setup`, `load`, `call`,
`check`, `warm`, `time`, `fetch`, ...; see `Side`) one at a time on its pipes and decides nothing:
a candidate side hands back outputs and raw samples, and the judge checks both, so nothing a
candidate does inside its own process (patching timers, torch or this module, walking frames,
forging replies) can change a verdict. The judge times every request with its own clock.

Replies are `{"ok": true, ...}` or `{"ok": false, "status": ..., "message": ...}` for a failure of
the code being run; `{"ok": false, "internal": ...}` for a bug of this module. Prints go to the log
file the judge opened (fd 1 and 2), never to the reply pipe.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import math
import os
import sys
import threading
import time
import traceback
from pathlib import Path

from kernelarc.guard import sandbox, wire
from kernelarc.guard.triton_ahead import compile_ahead

FORWARD_SEED_SALT = 0x9E3779B97F4A7C15


def forward_seed(seed: int) -> int:
    """The seed of the global RNGs under which every side calls its code on the inputs of `seed`.

    A reference that draws random numbers as it runs (dropout in training mode) then draws the same ones
    on the reference side as a candidate that calls the same random ops in the same order, as
    KernelBench's harness seeds each model call alike; before, the reference's own code judged against
    itself failed (level2 66_Matmul_Dropout_Softmax). Derived from the inputs' seed, not equal to it, so
    a call's draws are not its inputs' values again. Seeding is host-side work, done before each timed
    call's window opens. A candidate can read the seed back (`torch.initial_seed()`): it learns nothing
    that its inputs, which it holds, do not tell it.
    """
    return (seed ^ FORWARD_SEED_SALT) % (1 << 63)


def pretend_gpu(torch, capability: str) -> None:
    """In a GPU-less side building a candidate ahead for a GPU of `capability` ("9.0"; Judge.prebuild):
    torch says that GPU is there. Candidates build their CUDA extension only `if torch.cuda.is_available()`
    (and check the capability first): told the truth, the side built the CPU fallback under another
    name, and on the H200 every CUDA candidate of a campaign was built again under the device lock, 20-29 s
    each (2026-12-04). The extension builder itself needs no GPU (TORCH_CUDA_ARCH_LIST is set, sides.py);
    whatever the candidate does with the pretended GPU after its build fails here, and only the build is kept."""
    major, minor = (int(part) for part in capability.split("."))
    torch.cuda.is_available = lambda: True
    torch.cuda.get_device_capability = lambda device=None: (major, minor)


@contextlib.contextmanager
def pinned(cpu: int | None):
    """This thread on host CPU `cpu` for the block, its affinity as it was after. The judge names the same CPU
    for both timed sides (timing_cpus.timing_cpu): on the H200 two processes timing the same 60 us call ABBA on
    two different cores differed by 16% (medians 70.4 vs 60.5 us; identical code KEEP in 16 of 37 windows),
    on one core by 1% (docs/benchmarks.md, session 24). A measure against honest noise, not a defence: code
    in the side can set its own affinity."""
    if cpu is None:
        yield
        return
    was = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:  # not a CPU this side may use: timed where it runs
        yield
        return
    try:
        yield
    finally:
        os.sched_setaffinity(0, was)


COMPILER_MODULES = ("triton.compiler", "torch._dynamo", "torch._inductor")
"""Exceptions raised by these packages during a first call are build failures (JIT compilation)."""
CPU_OOM_MARKERS = ("DefaultCPUAllocator", "can't allocate memory")
"""How the CPU allocator words an allocation it cannot serve (a plain RuntimeError, not OutOfMemoryError)."""


class CandidateFailure(Exception):
    """The code this side runs failed; carries the status and a one-line message."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0][:400] if text else type(exc).__name__


class Side:
    """The state of one side process: the task made callable, the loaded code, staged inputs, captures."""

    def __init__(self, device: str, mailbox: wire.Mailbox, warming: threading.Thread | None = None):
        import torch

        self.torch = torch
        self._warming = warming
        """The compilers' imports still running in the background (`import_compilers`), or None."""
        self.mailbox = mailbox
        self.device = torch.device(device)
        self.on_cuda = self.device.type == "cuda"
        self.runtime = None
        self.task_status = "RUNTIME_ERROR"
        """The status of a failure of the task's own code here (INVALID_REFERENCE on the reference side)."""
        self.callee = None
        self.workdir = Path.cwd()
        self.captured: list[list] = []
        """Outputs of the last timed block, one entry per call, for the judge to fetch any of them."""
        self.captured_inputs: list[list] = []
        """The inputs of the last timed block's calls, as they were after the calls (`fetch`)."""
        self._flush = None
        self._first_inputs: list = []
        """The first call's inputs, held for the side's life: no later input lands at their address, so
        a graph captured on them and replayed later reads memory no checked call uses."""
        self._round_inputs: dict[str, list] = {}
        """Each workload's inputs of the last correctness call: the next round's values are written
        into them, so a cache keyed on addresses sees new values at old addresses and answers stale."""

    # -- plumbing -------------------------------------------------------------------------------
    def sync(self) -> None:
        if self.on_cuda:
            self.torch.cuda.synchronize(self.device)

    def guarded(self, status: str, fn, *args):
        """Run the loaded code; any exception becomes a CandidateFailure with `status`."""
        torch = self.torch
        try:
            with torch.no_grad():
                value = fn(*args)
            self.sync()
            return value
        except CandidateFailure:
            raise
        except torch.OutOfMemoryError as e:
            raise CandidateFailure("RUNTIME_ERROR", f"out of memory: {one_line(e)}") from None
        except MemoryError as e:
            raise CandidateFailure("RUNTIME_ERROR", f"out of host memory: {one_line(e)}") from None
        except BaseException as e:  # noqa: BLE001 - loaded code may raise anything, SystemExit included
            traceback.print_exc()
            if isinstance(e, RuntimeError) and any(m in str(e) for m in CPU_OOM_MARKERS):
                raise CandidateFailure("RUNTIME_ERROR", f"out of host memory: {one_line(e)}") from None
            if any(c.__module__.startswith(COMPILER_MODULES) for c in type(e).__mro__):
                status = "COMPILE_ERROR"
            raise CandidateFailure(status, one_line(e)) from None

    def inputs(self, uuid: str, seed: int) -> list:
        """The task's inputs of `seed`: task code, so its failure (out of memory, an error) is the
        reference's on the reference side, never a bug of ours."""
        return self.guarded(self.task_status, self.runtime.make_inputs, self.runtime.task.workload(uuid), seed)

    def specs(self, header: dict) -> list:
        return [(tuple(s["shape"]), getattr(self.torch, s["dtype"])) for s in header.get("specs", [])]

    def seed_forward(self, seed: int) -> None:
        """Seed the global RNGs for the call on the inputs of `seed` (see `forward_seed`): the CPU's and this
        side's device's, the only ones its code can draw from. Not `torch.manual_seed`, which also visits
        every other backend and cost 130-200 us a call on the CPU, inside the judge's clock there: on the
        CPU it made up two thirds of a 16x512 row sum's timed request and capped what a fast candidate
        could show against the slow_sum reference at about 7x (measured 2026-12-04)."""
        torch, value = self.torch, forward_seed(seed)
        torch.default_generator.manual_seed(value)
        if self.on_cuda:
            index = self.device.index if self.device.index is not None else torch.cuda.current_device()
            torch.cuda.default_generators[index].manual_seed(value)

    def flush(self):
        if self._flush is None and self.on_cuda:
            from kernelarc.guard.timing import L2Flusher

            self._flush = L2Flusher(self.device)
        return self._flush

    def settle(self) -> None:
        """Wait for the background imports: before untrusted code loads (two threads importing one package
        can meet in a cycle, and Python then hands one of them a half-initialized module) and before
        anything is timed (an import holds the interpreter's lock)."""
        if self._warming is not None:
            self._warming.join()
            self._warming = None

    # -- requests --------------------------------------------------------------------------------
    def op_settle(self, h: dict) -> dict:
        """Answered once the side's start-up is done: the judge waits for it before the device lock. With
        `reserve`, the mailbox is first made that large (and page-locked on CUDA), which its first write
        otherwise did inside the evaluation: 0.16-0.19 s for the 512 MiB of a 256 MiB RMSNorm's first
        correctness call on the H100 (docs/benchmarks.md session 36)."""
        self.settle()
        if h.get("reserve"):
            self.mailbox.reserve(int(h["reserve"]))
        return {}

    def op_setup(self, h: dict) -> dict:
        from kernelarc.task.model import Task
        from kernelarc.task.runtime import TaskRuntime

        if h.get("role") != "reference":  # the reference runs only the task's code: it need not wait
            self.settle()
        task = Task.model_validate({**h["task"], "definition": h["definition"]})
        self.task_status = "INVALID_REFERENCE" if h.get("role") == "reference" else "RUNTIME_ERROR"
        self.runtime = self.guarded(self.task_status, TaskRuntime, task, self.device, h.get("init_on_device"))
        return {}

    def op_load(self, h: dict) -> dict:
        from kernelarc.guard.candidate import Candidate
        from kernelarc.guard.loading import load_callee, reference_callee

        t0 = time.perf_counter()
        if h.get("build_for") and not self.on_cuda:
            pretend_gpu(self.torch, h["build_for"])
            if h.get("triton_ahead"):  # launches compile for that GPU (the side does not interpret: sides.side_env)
                compile_ahead(h["build_for"])
        if h.get("candidate") is None:
            self.callee = self.guarded("INVALID_REFERENCE", reference_callee, self.runtime, self.device)
        else:
            candidate = Candidate.model_validate(h["candidate"])
            self.callee = self.guarded("COMPILE_ERROR", load_callee, candidate, self.runtime, self.workdir,
                                       h.get("label", "candidate"))
        return {"seconds": time.perf_counter() - t0}

    def op_specs(self, h: dict) -> dict:
        """Reference side: the outputs' descriptions on one input set, checked to be finite tensors."""
        inputs = self.inputs(h["workload"], h["seed"])
        self.seed_forward(h["seed"])
        outputs = self.guarded("INVALID_REFERENCE", self.callee.bind(inputs, []))
        descriptions = []
        for i, out in enumerate(outputs):
            if type(out) is not self.torch.Tensor:
                raise CandidateFailure("INVALID_REFERENCE", f"reference output {i} is {type(out).__name__}, not a tensor")
            descriptions.append({"kind": "tensor", "dtype": str(out.dtype).removeprefix("torch."), "shape": list(out.shape)})
        bad = _non_finite(self.torch, outputs, self.tolerances(h, outputs))
        if bad is not None:
            raise CandidateFailure("INVALID_REFERENCE", f"reference output {bad} has NaN/Inf on {h['workload']}")
        tensors = [t for t in inputs if isinstance(t, self.torch.Tensor)]
        in_bytes = sum(t.numel() * t.element_size() for t in tensors)
        return {"outputs": descriptions, "input_bytes": in_bytes, "init_on_device": self.runtime.init_on_device,
                "inputs": [{"kind": "tensor", "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
                           for t in tensors]}

    def op_call(self, h: dict) -> dict:
        """Correctness calls, one on the inputs of each of `seeds` in turn: each call's outputs (and, where
        `return_inputs` says, its inputs after the call) go to the mailbox before the next call's inputs are
        written into the same tensors. One request for a batch of rounds: on the H200 a 14-workload SOL task
        spent 4 s of its 12 s evaluation on a request and a check per round (docs/benchmarks.md)."""
        from kernelarc.guard.correctness import poison_allocator

        specs, calls, at = self.specs(h), [], 0
        for seed, with_inputs in zip(h["seeds"], h["return_inputs"], strict=True):
            inputs = _refill(self._round_inputs.get(h["workload"]), self.inputs(h["workload"], seed))
            self._round_inputs[h["workload"]] = inputs
            if h.get("poison"):
                poison_allocator(specs, self.device)
            call = self.callee.bind(inputs, specs)
            self.seed_forward(seed)
            outputs = self.guarded("RUNTIME_ERROR", call)
            header = self._encode_calls([(outputs, inputs if with_inputs else None)], start=at)[0]
            at = wire.end_offset([*header["outputs"], *header.get("inputs", [])], at)
            calls.append(header)
        return {"calls": calls}

    def _encode_calls(self, calls: list[tuple[list, list | None]], start: int = 0) -> list[dict]:
        """Calls' outputs (and tensor inputs) into the mailbox from `start`; a header per call saying where."""
        values, cuts = [], []
        for outputs, inputs in calls:
            tensors = [t for t in inputs if isinstance(t, self.torch.Tensor)] if inputs is not None else None
            cuts.append((len(outputs), None if tensors is None else len(tensors)))
            values += list(outputs) + (tensors or [])
        described, at, headers = self.mailbox.write(values, start), 0, []
        for n_out, n_in in cuts:
            header = {"outputs": described[at:at + n_out]}
            at += n_out
            if n_in is not None:
                header["inputs"] = described[at:at + n_in]
                at += n_in
            headers.append(header)
        return headers

    def op_check(self, h: dict) -> dict:
        """Reference side: compare each call's outputs (and inputs) the judge relays with the reference's
        own on the same seed, in order, up to the first that fails."""
        verdicts = []
        for call in h["calls"]:
            verdicts.append(self._check_call(h, call))
            if verdicts[-1]["status"]:
                break
        return {"calls": verdicts}

    def _check_call(self, h: dict, call: dict) -> dict:
        from kernelarc.guard.correctness import check_outputs, inputs_unchanged

        inputs = self.inputs(h["workload"], call["seed"])
        pristine = [t.clone() if isinstance(t, self.torch.Tensor) else t for t in inputs]
        self.seed_forward(call["seed"])
        expected = self.guarded("INVALID_REFERENCE", self.callee.bind(inputs, []))
        bad = _non_finite(self.torch, expected, self.tolerances(h, expected))
        if bad is not None:
            raise CandidateFailure("INVALID_REFERENCE", f"reference output {bad} has NaN/Inf on {h['workload']}")
        actual = [self.mailbox.read(d, self.device) for d in call["outputs"]]
        check = check_outputs(actual, expected, self.tolerances(h, expected))
        reply = {"status": None if check.ok else check.status.value, "message": check.message,
                 "max_abs_error": check.max_abs_error, "max_rel_error": check.max_rel_error}
        if check.ok and "inputs" in call:
            tensors = [t for t in pristine if isinstance(t, self.torch.Tensor)]
            if len(call["inputs"]) != len(tensors):  # the judge checked them against this side's specs already
                raise CandidateFailure("REWARD_HACK", "inputs were not handed back")
            after = [self.mailbox.read(d, self.device) for d in call["inputs"]]
            changed = inputs_unchanged(tensors, after)
            if changed:
                reply.update(status="REWARD_HACK", message=changed)
        return reply

    def tolerances(self, h: dict, outputs: list) -> list:
        from kernelarc.task.model import Tolerance

        w = self.runtime.task.workload(h["workload"])
        tols = []
        for i, out in enumerate(outputs):
            tol = w.tolerance_for(i, str(out.dtype).removeprefix("torch."), self.runtime.task.format)
            override = {k: h[k] for k in ("atol", "rtol", "required_matched_ratio") if h.get(k) is not None}
            tols.append(Tolerance(**{**tol.model_dump(), **override}) if override else tol)
        return tols

    def op_warm(self, h: dict) -> dict:
        """Untimed calls on one input set (JIT compilation and autotuning happen in the first)."""
        inputs = self.inputs(h["workload"], h["seed"])
        self._first_inputs = self._first_inputs or inputs
        call = self.callee.bind(inputs, self.specs(h))
        for _ in range(h.get("calls", 1)):
            self.guarded(h.get("status", "RUNTIME_ERROR"), call)
        return {}

    def op_ramp(self, h: dict) -> dict:
        """Keep the card busy for a moment, so that timing never starts from idle clocks."""
        self.settle()
        if self.on_cuda:
            flush, end = self.flush(), time.perf_counter() + h.get("seconds", 0.2)
            while time.perf_counter() < end:
                for _ in range(8):
                    flush()
                self.sync()
        return {}

    def op_stage(self, h: dict) -> dict:
        """Reference side, on the CPU: draw the inputs of the next timed block and put them in the mailbox, for
        the judge to hand to each timed side inside its clock (`inputs` of `time`). Drawn by the side being
        timed, before its request, they let a candidate compute its answers while drawing them, off the clock
        (KEEP 2.7x, docs/guard.md); drawn inside the request, 20 ms of drawing sat beside a 2 ms call. Inputs
        that cannot travel as bytes and JSON (`staged_item`) come back as None: each side draws them itself,
        inside the timed request."""
        calls = [self.inputs(h["workload"], seed) for seed in h["seeds"]]
        items = [[staged_item(self.torch, value, self.device) for value in inputs] for inputs in calls]
        if any(item is None for call in items for item in call):
            return {"inputs": None}
        tensors = [value for inputs in calls for value in inputs if isinstance(value, self.torch.Tensor)]
        described = iter(self.mailbox.write(tensors))
        return {"inputs": [[{"tensor": next(described)} if item == TENSOR else item for item in call]
                           for call in items]}

    def received(self, call: list[dict]) -> list:
        """One call's inputs from what the judge put in the mailbox (`op_stage`'s items), copied out."""
        return [self.mailbox.read(item["tensor"], self.device) if "tensor" in item
                else tuple(item["tuple"]) if "tuple" in item else item["value"] for item in call]

    def op_time(self, h: dict) -> dict:
        """Time one call on each of `seeds` (fresh inputs each: drawn now, or the reference side's from `inputs`),
        keeping every call's outputs for `fetch`; on host CPU `cpu` when the judge names one (`pinned`)."""
        with pinned(h.get("cpu")):
            return self._time(h)

    def _time(self, h: dict) -> dict:
        from kernelarc.guard import timing

        self.settle()
        specs = self.specs(h)
        self.captured, self.captured_inputs = [], []  # the last block's go before this block's arrive: one in memory
        if h.get("inputs") is not None:
            staged = [self.received(call) for call in h["inputs"]]
        else:
            staged = [self.inputs(h["workload"], s) for s in h["seeds"]]
        capture, seeds = h.get("capture", True), h["seeds"]
        slots = timing.InputSlots(staged)
        calls = [self.callee.bind(slots.inputs(i), specs) for i in range(len(staged))]
        if capture:
            calls = [slots.returning_inputs(call) for call in calls]

        def before(i: int) -> None:
            self.seed_forward(seeds[i])
            slots.load(i)

        mode = h["mode"]
        keep = self.captured.append if capture else None
        with timing.collector_paused():
            if mode == "device":
                result = self.guarded("RUNTIME_ERROR", timing.device_samples, calls, self.flush(), keep, before)
                header = {"samples_ms": result.spans_ms, "kernels": result.kernels, "longest_ms": result.longest_ms,
                          "busy_ms": result.busy_ms,
                          "side_streams": result.side_streams, "annotated": result.annotated,
                          "kernel_ms": timing.costliest(result.kernel_ms)}
            else:
                clock = timing.cpu_sample if mode == "cpu" else timing.wall_sample
                samples = []
                for i, call in enumerate(calls):
                    before(i)  # before the clock starts
                    samples.append(self.guarded("RUNTIME_ERROR", clock, call, self.flush(), keep,
                                                h.get("sync_end", False)))
                header = {"samples_ms": samples}
        if capture:
            split = [slots.split(i, kept) for i, kept in enumerate(self.captured)]
            self.captured, self.captured_inputs = [outs for outs, _ in split], [ins for _, ins in split]
        if h.get("send_outputs"):
            header["calls"] = self._encode_calls([(outs, self.captured_inputs[i] if h.get("return_inputs") else None)
                                                  for i, outs in enumerate(self.captured)])
        return header

    def op_park(self, h: dict) -> dict:
        """Between evaluations (a kept incumbent's side, guard/judge.py): the last block's inputs and outputs
        and the rounds' inputs let go, cached device memory given back to the card for the next evaluation."""
        self.captured, self.captured_inputs, self._round_inputs = [], [], {}
        gc.collect()
        if self.on_cuda:
            self.torch.cuda.empty_cache()
        return {}

    def op_fetch(self, h: dict) -> dict:
        """The outputs kept from the last timed block's calls at `indices` (and their inputs after the calls)."""
        inputs = h.get("return_inputs")
        return {"calls": self._encode_calls([(self.captured[i], self.captured_inputs[i] if inputs else None)
                                             for i in h["indices"]])}

    def serve(self, cmd_fd: int, reply_fd: int) -> None:
        while True:
            try:
                request = wire.receive(cmd_fd)
            except wire.WireError:  # the judge closed the pipe: nothing more to do
                return
            op = request.get("op")
            handler = getattr(self, f"op_{op}", None)
            answered = {"nonce": request.get("nonce")}  # the judge matches every reply to its request
            if op == "exit":
                wire.send(reply_fd, {"ok": True, **answered})
                return
            try:
                if handler is None:
                    raise ValueError(f"unknown request {op!r}")
                wire.send(reply_fd, {"ok": True, **handler(request), **answered})
            except CandidateFailure as f:
                wire.send(reply_fd, {"ok": False, "status": f.status, "message": f.message, **answered})
            except Exception as e:  # noqa: BLE001 - a bug of ours: reported, the judge decides
                traceback.print_exc()
                wire.send(reply_fd, {"ok": False, "internal": one_line(e), "traceback": traceback.format_exc()[-4000:],
                                     **answered})


TENSOR = {"tensor": None}
"""`staged_item` of a tensor: its description in the mailbox takes the place."""
SCALARS = (bool, int, float, str, type(None))


def staged_item(torch, value, device) -> dict | None:
    """How one input travels from the reference side to a timed side: a plain contiguous tensor through the
    mailbox (TENSOR), a scalar or a tuple or list of scalars as JSON; None for anything else (a subclass,
    strides, autograd state, a module), which the timed side then draws itself."""
    if type(value) is torch.Tensor:
        plain = value.is_contiguous() and not value.requires_grad and value.device == device
        return TENSOR if plain else None
    if _json_scalar(value):
        return {"value": value}
    if type(value) in (tuple, list) and all(_json_scalar(v) for v in value):
        return {"tuple": list(value)} if type(value) is tuple else {"value": list(value)}
    return None


def _json_scalar(value) -> bool:
    return type(value) in SCALARS and not (type(value) is float and not math.isfinite(value))


def _refill(previous: list | None, fresh: list) -> list:
    """The fresh values written into the previous call's tensors where shapes and dtypes allow."""
    import torch

    if previous is None:
        return fresh
    with torch.no_grad():
        return [old.copy_(new) if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor)
                and old.shape == new.shape and old.dtype == new.dtype and old.device == new.device else new
                for old, new in zip(previous, fresh)]


def _non_finite(torch, outputs: list, tolerances: list) -> int | None:
    """The index of the first reference output with NaN/Inf (matching -inf allowed where the task says)."""
    for i, (o, tol) in enumerate(zip(outputs, tolerances)):
        if type(o) is not torch.Tensor or not o.is_floating_point():
            continue
        bad = ~torch.isfinite(o)
        if tol.allow_negative_inf:
            bad = bad & (o != float("-inf"))
        if bool(bad.any()):
            return i
    return None


REQUEST_MODULES = ("kernelarc.task.model", "kernelarc.task.runtime", "kernelarc.guard.candidate", "kernelarc.guard.loading",
                   "kernelarc.guard.correctness", "kernelarc.guard.timing")
"""kernelarc's own modules that a side's requests import (setup, load, call, time): imported before the first
request, while a pooled side waits, since every candidate's side is fresh and imported them inside its
evaluation, under the device lock (0.14-0.15 s on the 2-core development machine, 2026-12-07). Trusted code,
imported after the side dropped its identity like everything else it imports."""

PREWARM_MODULES = ("torch._dynamo", "torch._inductor.runtime.triton_heuristics", "torch._inductor.select_algorithm")
"""What torch.compile candidates and Inductor's generated code (the `inductor_seed` family) import: 1-2 s
each, paid by a CUDA side while it waits in the pool instead of in the candidate's compile stage, under
the device lock (4-5 s there on the H200, docs/benchmarks.md)."""


def prewarm(device: str) -> threading.Thread | None:
    """Pay a CUDA side's one-time costs while it waits for its first request: the context and CUPTI's
    start now, the compilers' imports and Triton's hash of itself (`hash_triton`) in a background thread
    (returned), so that a side taken at once as the reference, which never compiles, starts its work without
    waiting for them (`Side.settle`).

    Nothing here may fail the side: a missing GPU is reported by the first request that needs it.
    """
    import torch

    if not device.startswith("cuda") or not torch.cuda.is_available():
        return None
    try:
        from torch.profiler import ProfilerActivity, profile

        dev = torch.device(device)
        torch.cuda.set_device(dev)
        x = torch.ones(1024, device=dev)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            x.add_(1)
            torch.cuda.synchronize(dev)
        del x
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    warming = threading.Thread(target=import_compilers, name="kernelarc-prewarm", daemon=True)
    warming.start()
    return warming


def import_compilers() -> None:
    for name in PREWARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the candidate that needs it reports the failure
            traceback.print_exc()
    hash_triton()


def hash_triton() -> None:
    """Compute Triton's hash of its own installation, which its first launch in a process needs for every
    cache key (`triton.runtime.cache.triton_key`, kept for the process): it reads and hashes Triton's
    sources and its libtriton (hundreds of MB). On the H100 it was 0.35 s of the 0.49 s first call of a
    Triton candidate whose kernels were already in its cache, under the device lock (bench/gpu/side_profile.py,
    docs/benchmarks.md session 36); Inductor's cache keys call it too."""
    try:
        from triton.runtime.cache import triton_key

        triton_key()
    except ImportError:  # no Triton, or one that keeps the hash elsewhere: its first launch pays as before
        pass
    except Exception:  # noqa: BLE001 - a launch that needs it reports the failure
        traceback.print_exc()


def main(argv: list[str]) -> int:
    device, cmd_fd, reply_fd, mailbox_fd = argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    if uid := os.environ.pop(sandbox.SIDE_UID_VARIABLE, None):  # sandbox.side_identity `drop`: before anything runs
        sandbox.become(int(uid))
    import torch  # noqa: F401 - before the first request: a pooled side waits here already warm

    try:
        import triton  # noqa: F401
    except ImportError:
        pass
    for name in REQUEST_MODULES:
        importlib.import_module(name)
    Side(device, wire.Mailbox(mailbox_fd, pinned=device.startswith("cuda")), warming=prewarm(device)).serve(cmd_fd, reply_fd)
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no interpreter teardown (about 1 s with torch loaded)
