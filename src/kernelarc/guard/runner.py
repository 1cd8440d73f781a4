"""The parent side of the worker: start it isolated, watch its stages, kill it when late.

Isolation: its own process group, a private temp dir as cwd/HOME/TMPDIR with its own Triton and
torch-extension caches, an allow-listed environment (API keys and every other variable not on the
list are dropped), the job on stdin, results on a pipe fd signed with a per-run key. Each stage has
its own deadline; past it the group gets SIGTERM, then SIGKILL. Whatever happens to the worker
(crash, `os._exit`, hang, out of memory) becomes a `WorkerOutcome`, never an exception here.
Imports without torch.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from collections.abc import Callable
from pathlib import Path

from kernelarc.guard.build_cache import BuildSession
from kernelarc.guard.channel import ForgedMessage, new_key, parse_line

# Variables a worker may inherit; everything else (API keys, tokens, cloud credentials) is dropped.
ENV_ALLOWLIST = (
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "PYTHONPATH", "VIRTUAL_ENV",
    "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CC", "CXX", "TORCH_CUDA_ARCH_LIST",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
    "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH",
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    # Kineto finalizes CUPTI after each profiler session when 1 (the workers' default, see worker_env).
    "TEARDOWN_CUPTI",
)
KILL_GRACE_S = 3.0
EXIT_GRACE_S = 2 * KILL_GRACE_S
"""Seconds a worker may take to leave after sending its result (stage `exit`); past it the group is killed."""
LOG_TAIL_CHARS = 4000


@dataclass
class WorkerOutcome:
    """What came back from one worker run."""

    result: dict | None = None
    """The signed `result` message, if one arrived."""
    internal_error: str | None = None
    """The worker's own code failed (our bug): message and traceback."""
    timed_out_stage: str | None = None
    """The stage whose deadline passed, if any."""
    last_stage: str | None = None
    returncode: int | None = None
    forged_lines: int = 0
    """Lines on the channel that failed the signature: a candidate tried to fake a result."""
    log_tail: str = ""
    stage_seconds: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def signal_name(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None


def worker_env(workdir: Path, device: str, extensions: Path | None = None) -> dict[str, str]:
    """The allow-listed environment of a worker, with private caches inside `workdir`.

    Args:
        extensions: where it builds torch extensions, when a build cache manages that (build_cache.py);
            else inside `workdir`.
    """
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWLIST}
    src_root = str(Path(__file__).resolve().parents[2])  # so `-m kernelarc.guard.worker` resolves uninstalled
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, env.get("PYTHONPATH", "")) if p)
    env.update(HOME=str(workdir), TMPDIR=str(workdir / "tmp"), PYTHONDONTWRITEBYTECODE="1",
               TRITON_CACHE_DIR=str(workdir / "triton"), TORCH_EXTENSIONS_DIR=str(extensions or workdir / "torch_extensions"),
               PYTHONUNBUFFERED="1")
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    else:
        # After a profiler session (the stream probe) CUPTI stays attached and every later launch of
        # the process pays for it: 7-8 µs more host time per call of the H200 suite's launch-bound
        # tasks. Finalizing CUPTI after each session removed that (56.1 -> 57.8 µs, within noise),
        # and a session after the first took 0.02 s (docs/benchmarks.md, 2026-11-30). It also made
        # the probe script hang at interpreter exit, which a worker never reaches: it leaves by os._exit.
        env.setdefault("TEARDOWN_CUPTI", "1")
    return env


@dataclass
class _Worker:
    """A started worker process, not yet given its job."""

    proc: subprocess.Popen
    read_fd: int
    workdir: Path

    @property
    def log_path(self) -> Path:
        return self.workdir / "worker.log"

    def discard(self) -> None:
        """End an unused worker: closing stdin makes it exit; its group is killed to be sure."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        _kill_leftovers(self.proc)
        try:
            self.proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        os.close(self.read_fd)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _spawn(device: str, extensions: Path | None = None) -> _Worker:
    """Start a worker: private workdir, allow-listed environment, its own process group and pipe."""
    workdir = Path(tempfile.mkdtemp(prefix="kernelarc-worker-"))
    (workdir / "tmp").mkdir()
    read_fd, write_fd = os.pipe()
    with open(workdir / "worker.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kernelarc.guard.worker", str(write_fd), device],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
            cwd=workdir, env=worker_env(workdir, device, extensions), start_new_session=True,
        )
    os.close(write_fd)
    return _Worker(proc, read_fd, workdir)


class WarmPool:
    """Started, idle workers per device, importing torch while earlier evaluations run.

    Every worker still serves exactly one candidate; the pool only moves its start-up (several
    seconds of importing torch, creating a CUDA context and starting CUPTI) off the critical path.
    On the H200 an evaluation took 2-9 s while a start-up took about 5 s, so one idle worker was
    often still starting when taken; a CUDA device keeps CUDA_DEPTH idle workers. The CPU keeps
    one: there the start-ups compete with the evaluation for a few cores. Start-ups may overlap
    another worker's timing: a host lock that kept them apart (2026-11-30) left the timing noise of
    launch-bound calls unchanged on the H200 and made timing wait a median 3.9 s for start-ups, a
    third of the guard's wall time (docs/benchmarks.md). A campaign holds one pool and closes it.
    """

    CUDA_DEPTH = 2
    CPU_DEPTH = 1

    def __init__(self, extensions: Callable[[str], Path] | None = None) -> None:
        """`extensions(device)`: where that device's workers build torch extensions (a BuildCache's
        `worker_extensions`); None keeps them private."""
        self._lock = threading.Lock()
        self._idle: dict[str, list[_Worker]] = {}
        self._extensions = extensions

    def _spawn(self, device: str) -> _Worker:
        return _spawn(device, self._extensions(device) if self._extensions else None)

    def depth(self, device: str) -> int:
        return self.CPU_DEPTH if device == "cpu" else self.CUDA_DEPTH

    def take(self, device: str) -> _Worker:
        """The oldest idle worker for `device` (or a new one); the idle ones are topped up behind it."""
        with self._lock:
            idle = self._idle.setdefault(device, [])
            worker = None
            while idle and worker is None:
                worker = idle.pop(0)
                if worker.proc.poll() is not None:
                    worker.discard()
                    worker = None
            if worker is None:
                worker = self._spawn(device)
            while len(idle) < self.depth(device):
                idle.append(self._spawn(device))
            return worker

    def close(self) -> None:
        """End the idle workers."""
        with self._lock:
            idle, self._idle = [w for ws in self._idle.values() for w in ws], {}
        for worker in idle:
            worker.discard()


def run_worker(job: dict, *, deadlines: dict[str, float], device: str, keep_workdir: bool = False,
               pool: WarmPool | None = None, builds: BuildSession | None = None) -> WorkerOutcome:
    """Run one evaluation job in a fresh worker process.

    Args:
        job: JSON-able job spec (see worker.py), without channel key or workdir.
        deadlines: seconds allowed per stage name (reference, compile, correctness, timing); a
            stage not named gets the largest one.
        device: `cpu` or `cuda[:i]`.
        pool: take an already started worker from this pool instead of starting one now.
        builds: extension builds to put in the worker before its job and to keep after it.
    """
    if builds is not None:
        builds.before(device)  # before a new worker starts: it must find its extensions folder in place
    worker = pool.take(device) if pool is not None else _spawn(device, builds.extensions if builds else None)
    key = new_key()
    outcome = WorkerOutcome()
    t_start = time.monotonic()
    try:
        worker.proc.stdin.write((json.dumps({**job, "workdir": str(worker.workdir), "key": key.hex()}) + "\n").encode())
        worker.proc.stdin.close()
    except BrokenPipeError:
        pass
    _watch(worker.proc, worker.read_fd, key, deadlines, outcome)
    _kill_leftovers(worker.proc)
    os.close(worker.read_fd)
    outcome.wall_s = time.monotonic() - t_start
    outcome.log_tail = _tail(worker.log_path)
    if builds is not None:
        builds.after()
    if not keep_workdir:
        shutil.rmtree(worker.workdir, ignore_errors=True)
    return outcome


def _watch(proc: subprocess.Popen, fd: int, key: bytes, deadlines: dict[str, float], outcome: WorkerOutcome) -> None:
    default = max(deadlines.values())
    stage, stage_start = "start", time.monotonic()
    deadline = stage_start + deadlines.get("reference", default)
    buf = b""

    def enter(name: str, limit: float) -> None:
        nonlocal stage, stage_start, deadline
        now = time.monotonic()
        outcome.stage_seconds[stage] = now - stage_start
        stage, stage_start, deadline = name, now, now + limit

    while True:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            outcome.timed_out_stage = stage
            _kill(proc)
            break
        ready, _, _ = select.select([fd], [], [], min(timeout, 1.0))
        if not ready:
            if proc.poll() is not None and not _has_data(fd):
                break
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                msg = parse_line(key, line)
            except (ForgedMessage, ValueError):
                outcome.forged_lines += 1
                continue
            if msg["kind"] == "stage":
                enter(msg["stage"], deadlines.get(msg["stage"], default))
                outcome.last_stage = stage
            elif msg["kind"] == "result" and outcome.result is None:
                outcome.result = msg
                enter("exit", EXIT_GRACE_S)  # the teardown is not the last stage's time
            elif msg["kind"] == "internal":
                outcome.internal_error = f"{msg.get('message')}\n{msg.get('traceback', '')}"
    outcome.stage_seconds[stage] = time.monotonic() - stage_start
    try:
        outcome.returncode = proc.wait(timeout=KILL_GRACE_S * 2)
    except subprocess.TimeoutExpired:
        _kill(proc)
        outcome.returncode = proc.wait()


def _has_data(fd: int) -> bool:
    ready, _, _ = select.select([fd], [], [], 0)
    return bool(ready)


def _kill(proc: subprocess.Popen) -> None:
    """SIGTERM the worker's whole process group, then SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _kill_leftovers(proc: subprocess.Popen) -> None:
    """SIGKILL whatever the candidate forked that outlived the worker (still in its process group).

    The group's id stays reserved while any member lives, so this cannot reach an unrelated process.
    """
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(path: Path) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return text[-LOG_TAIL_CHARS:]


__all__ = ["WarmPool", "WorkerOutcome", "run_worker", "worker_env", "ENV_ALLOWLIST"]
