"""The judge's handles on its side processes: start one sandboxed, ask it things with a deadline, end it.

A side is `python -m kernelarc.guard.side` inside the sandbox (guard/sandbox.py), with a private
scratch folder (its cwd, HOME and TMPDIR) and folders for its extension builds and compiler caches beside it
in one folder of the judge's, an allow-listed
environment (no API key or token ever reaches it), two pipes (requests in, replies out) and a log
file that the judge opened and reads through its own descriptor (never by a path the side could
replace). Every request is timed on the judge's clock. Whatever a side does (crash, hang, flood,
malformed replies, a memory balloon) surfaces as a `SideFailure` here, never as our exception.

`SidePool` keeps started, idle sides per device (each has imported torch and, on CUDA, created its
context while waiting), so that start-up leaves the critical path. A side serves one piece of code
and is ended after it. Imports without torch.
"""

from __future__ import annotations

import functools
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kernelarc.guard import copier, sandbox, timing_cpus, wire
from kernelarc.guard.cutoff import Cutoff
from kernelarc.guard.scrub import scrub
from kernelarc.guard.watchdog import MAX_FILES, MAX_SOCKETS, WATCH_INTERVAL_S, WATCHDOG, descendants, usage

ENV_ALLOWLIST = (
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "PYTHONPATH", "VIRTUAL_ENV",
    "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "LD_LIBRARY_PATH",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CC", "CXX", "TORCH_CUDA_ARCH_LIST",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
    "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH",
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    # Kineto finalizes CUPTI after each profiler session when 1 (the sides' default, see side_env).
    "TEARDOWN_CUPTI",
)
"""Variables a side may inherit; everything else (API keys, tokens, cloud credentials) is dropped."""
KILL_GRACE_S = 3.0
LOG_TAIL_CHARS = 4000


STOP_SETTLE_S = 0.2
"""How long a stopped process may take to reach its stop before the judge counts it as running."""
STOPPED_CPU_NS = 2_000_000
"""CPU time a side's stopped processes may use between the end of the judge's freeze and its thaw (an honest
side, idle between requests, used none in 48 freezes on the CPU): beyond it something of the side ran while held
stopped, on a turn of the other side that lasts tens of milliseconds. A stop
takes effect when a thread returns to user space, so a thread inside one long syscall (a 2 GiB pwritev)
ran on through the incumbent's blocks, and a thread restarted by its own tracer (PTRACE_CONT) ran there
at will; each read as stopped by its state letter and made identical honest code KEEP about 2x (fifth
red-team pass, 2026-12-06)."""
STOPPED_CPU_TICKS = 1
"""The same, in the clock ticks of a process's own account (which keeps its exited threads' time too)."""
FREEZE_LIMIT_S = 1.0
"""How long the judge keeps walking a side's process tree to stop it (an honest side's walk takes milliseconds)."""


@dataclass
class SideFailure(Exception):
    """A side did not answer a request properly; `kind` says how."""

    kind: str
    """`timeout`, `died`, `protocol` (a malformed or oversized reply), `memory` or `disk` (over its cap), `runaway`
    (it kept starting processes while the judge stopped them) or `cut` (the caller's cutoff passed: no
    fault of the side's)."""
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass
class Reply:
    header: dict
    seconds: float
    """Wall seconds on the judge's clock, from sending the request to the reply's last byte."""


def side_env(scratch: Path, device: str, compiled: Path, ahead: bool = False) -> dict[str, str]:
    """The allow-listed environment of a side, with private caches inside `scratch`, Triton's and
    Inductor's in `compiled` (the path the side sees). A CPU side runs Triton in its interpreter, except one
    compiling ahead for a GPU (`ahead`, guard/triton_ahead.py): Triton reads the setting as it is imported."""
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWLIST}
    src_root = str(Path(__file__).resolve().parents[2])  # so `-m kernelarc.guard.side` resolves uninstalled
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, env.get("PYTHONPATH", "")) if p)
    env.update(HOME=str(scratch), TMPDIR=str(scratch / "tmp"), PYTHONDONTWRITEBYTECODE="1",
               TRITON_CACHE_DIR=str(compiled / "triton"), TORCHINDUCTOR_CACHE_DIR=str(compiled / "inductor"),
               TORCH_EXTENSIONS_DIR=str(sandbox.EXTENSIONS_INSIDE),
               PYTHONUNBUFFERED="1")
    if "TORCH_CUDA_ARCH_LIST" not in env and (archs := cuda_arch_list()):
        # The same build flags in every side, a GPU-less one included: a build made ahead (Judge.prebuild)
        # is then up to date where the GPU side loads it.
        env["TORCH_CUDA_ARCH_LIST"] = archs
    if device == "cpu":
        if not ahead:
            env["TRITON_INTERPRET"] = "1"
    else:
        # After a profiler session CUPTI otherwise stays attached and every later launch of the
        # process pays for it (7-8 µs more host time per call on the H200, docs/benchmarks.md).
        env.setdefault("TEARDOWN_CUPTI", "1")
    return env


@functools.lru_cache(maxsize=1)
def cuda_arch_list() -> str:
    """The compute capabilities of this machine's GPUs as TORCH_CUDA_ARCH_LIST spells them ('' without any)."""
    try:
        import torch

        if not torch.cuda.is_available():
            return ""
        return ";".join(sorted({gpu_capability(f"cuda:{i}") for i in range(torch.cuda.device_count())}))
    except Exception:  # noqa: BLE001 - no CUDA here: nothing to pin
        return ""


@functools.lru_cache(maxsize=None)
def gpu_capability(device: str) -> str | None:
    """The compute capability of CUDA `device` as TORCH_CUDA_ARCH_LIST spells it ("9.0"); None for the CPU."""
    if not device.startswith("cuda"):
        return None
    import torch

    return "{}.{}".format(*torch.cuda.get_device_capability(sandbox.device_index(device)))


class SideProcess:
    """One started side process and the judge's end of its pipes."""

    def __init__(self, device: str, policy: sandbox.SandboxPolicy, sandboxed: bool, background: bool = False,
                 ahead: bool = False):
        """`background`: work beside timed calls that is not timed itself (a build ahead), at the lowest
        CPU priority (sandbox.lowered_priority). `ahead`: a GPU-less side building ahead for a GPU, whose
        Triton compiles for it instead of interpreting (side_env)."""
        self.device = device
        self.sandboxed = sandboxed
        self.policy = policy
        self.home = Path(tempfile.mkdtemp(prefix="kernelarc-side-"))
        """The judge's folder holding the three the side writes to, side by side. Only the judge may change
        its entries: with the build folders inside the side's scratch, a side renamed its `extensions` and
        put a link to a root-only folder in its place, and the judge (root) copied that folder into the build
        cache through the link (sixth red-team pass, 2026-12-06). Inside the sandbox each is a mount point."""
        self.scratch = self.home / "scratch"
        """The side's cwd, HOME and TMPDIR, at the same path inside the sandbox."""
        self.extensions = self.home / "extensions"
        """Host folder seen inside as sandbox.EXTENSIONS_INSIDE: the judge copies kept builds in."""
        self.compiled = self.home / "compiled"
        """Host folder of the side's Triton and Inductor caches, seen inside as sandbox.COMPILED_INSIDE: the
        judge copies in what the same code compiled in an earlier evaluation (guard/build_cache.py)."""
        for path in (self.scratch, self.scratch / "tmp", self.extensions, self.compiled):
            path.mkdir()
        if sandbox.needs_owner_change():
            for path in (self.scratch, self.scratch / "tmp", self.extensions, self.compiled):
                os.chown(path, sandbox.NOBODY, sandbox.NOBODY)
            # bwrap enters them before the side drops to nobody (`drop`), as root without CAP_DAC_OVERRIDE,
            # or as nobody: through the judge's folder, which stays root's.
            os.chmod(self.home, 0o711)
            os.chmod(self.scratch, 0o711)
        self._log_fd = os.open(self._log_path(), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        cmd_r, self._cmd_w = os.pipe()
        self._reply_r, reply_w = os.pipe()
        for fd in (self._cmd_w, reply_w):
            wire.widen(fd)
        os.set_blocking(self._cmd_w, False)  # the judge's writes wait with a deadline (wire.send)
        self.mailbox = wire.sealed_mailbox()
        """The side's shared-memory mailbox (wire.Mailbox): its outputs and inputs, for the judge to copy."""
        self.mailbox_map = copier.FileMap(self.mailbox)
        """The judge's own mapping of the mailbox, kept for the side's life (guard/copier.py)."""
        argv = [sys.executable, "-m", "kernelarc.guard.side", device, str(cmd_r), str(reply_w), str(self.mailbox)]
        env = side_env(self.scratch, device, sandbox.COMPILED_INSIDE if sandboxed else self.compiled, ahead)
        if sandboxed:
            argv = sandbox.sandbox_command(argv, policy=policy, scratch=self.scratch, device=device,
                                           extensions=self.extensions, compiled=self.compiled, env=env)
        else:
            env["TORCH_EXTENSIONS_DIR"] = str(self.extensions)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log_fd, stderr=self._log_fd,
                                     pass_fds=(cmd_r, reply_w, self.mailbox), cwd=self.scratch, env=env,
                                     start_new_session=True,
                                     preexec_fn=sandbox.limits(policy, device, background, timing_cpus.reserved()))
        os.close(cmd_r)
        os.close(reply_w)
        self._frozen: set[int] = set()
        self._cpu_at_freeze: dict[int, tuple[int, int]] = {}
        self._closed = False
        self.breach: SideFailure | None = None
        """Set by the watchdog when the side went past a cap (it is then killed): its next request fails so."""
        WATCHDOG.watch(self)

    def _log_path(self) -> Path:
        """The log lives beside the judge's folder, never inside the side's: the side cannot replace it by a link."""
        return self.home.with_name(self.home.name + ".log")

    def mailbox_size(self) -> int:
        return os.fstat(self.mailbox).st_size

    def request(self, header: dict, *, deadline: float, cutoff: Cutoff | None = None) -> Reply:
        """Send one request and wait for its reply until `deadline` (time.monotonic()), or until the
        caller's `cutoff` passes (checked every WATCH_INTERVAL_S: it may move while the side works).

        Every request carries a nonce, drawn now, that its reply must echo, and a reply waiting before its
        request is sent is a protocol failure: a side once did a timed block during the untimed request
        before it and wrote the timed request's reply ahead, so that the judge's clock saw only the read
        (KEEP 54-63x on the CPU, docs/guard.md).

        Raises:
            SideFailure: the side timed out, died, broke the protocol or outgrew its memory cap; kind
                `cut` when the cutoff passed first (the side is then in no state to be asked again).
        """
        if self.breach is not None:
            raise self._died()
        if select.select([self._reply_r], [], [], 0)[0] and self.proc.poll() is None:
            raise SideFailure("protocol", f"a reply was waiting before the {header.get('op')!r} request was sent")
        nonce = secrets.token_hex(8)
        bound = deadline if cutoff is None else cutoff.bound(deadline)

        def watch() -> None:
            if cutoff is not None and cutoff.passed():
                raise SideFailure("cut", cutoff.why)
            self._watch()

        t0 = time.perf_counter()
        try:
            wire.send(self._cmd_w, {**header, "nonce": nonce}, deadline=bound, on_wait=watch, wait_s=WATCH_INTERVAL_S)
        except wire.WireTimeout:
            if cutoff is not None and cutoff.passed():
                raise SideFailure("cut", cutoff.why) from None
            raise SideFailure("timeout", f"the {header.get('op')!r} request not taken in time (the side stopped "
                                         "reading its commands)") from None
        except OSError:  # BrokenPipeError among them: the side is gone
            raise self._died() from None
        try:
            header_back = wire.receive(self._reply_r, deadline=bound, on_wait=watch, wait_s=WATCH_INTERVAL_S)
        except wire.WireTimeout:
            if cutoff is not None and cutoff.passed():
                raise SideFailure("cut", cutoff.why) from None
            raise SideFailure("timeout", f"no reply to {header.get('op')!r} in time") from None
        except wire.WireError as e:
            if self.proc.poll() is not None or str(e) == "closed":
                raise self._died() from None
            raise SideFailure("protocol", str(e)) from None
        seconds = time.perf_counter() - t0
        if header_back.get("nonce") != nonce:
            raise SideFailure("protocol", f"a reply that does not answer the {header.get('op')!r} request (its nonce)")
        return Reply(header_back, seconds)

    def _watch(self) -> None:
        """While waiting for a reply: a side that died (or was killed by the watchdog) ends the wait."""
        if self.breach is not None or self.proc.poll() is not None:
            raise self._died()

    def inspect(self) -> None:
        """The watchdog's look (guard/watchdog.py): a side past its memory or disk cap is killed, and
        `breach` says why."""
        if self.breach is not None or self.proc.poll() is not None:
            return
        used = usage(self.proc.pid, self.home, self._log_fd, self.mailbox)
        memory, disk = self.policy.memory_cap(), self.policy.disk_bytes
        gib = 2**30
        if used.memory > memory:
            breach = SideFailure("memory", f"used {used.memory / gib:.1f} GiB of host memory, over its cap of "
                                           f"{memory / gib:.1f} GiB")
        elif used.disk > disk or used.files > MAX_FILES:
            breach = SideFailure("disk", f"wrote {used.disk / gib:.2f} GiB in {used.files} files to disk, over its "
                                         f"cap of {disk / gib:.2f} GiB and {MAX_FILES} files")
        elif used.hidden is not None:
            breach = SideFailure("memory", f"hid the files its process {used.hidden} holds open from the judge")
        elif used.sockets > MAX_SOCKETS:
            breach = SideFailure("memory", f"held {used.sockets} sockets open, over its cap of {MAX_SOCKETS} (their "
                                           "buffers are kernel memory)")
        else:
            return
        self.breach = breach
        self.kill()

    def _died(self) -> SideFailure:
        if self.breach is not None:
            self.kill()
            return self.breach
        try:
            code = self.proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        if self.sandboxed and code is not None and code > 128:  # bwrap exits 128 + N when its child died of signal N
            code = 128 - code
        how = f"killed by {_signal_name(-code)}" if code is not None and code < 0 else f"exited with code {code}"
        return SideFailure("died", how)

    def log_tail(self) -> str:
        """The end of the side's log, read through the judge's own descriptor, secrets scrubbed."""
        try:
            size = os.fstat(self._log_fd).st_size
            start = max(0, size - 4 * LOG_TAIL_CHARS)
            text = os.pread(self._log_fd, size - start, start).decode(errors="replace")
        except OSError:
            return ""
        return scrub(text)[-LOG_TAIL_CHARS:]

    def close(self, grace_s: float = 1.0) -> None:
        """Ask the side to leave, then make sure that it and everything it started are gone. Once: its
        descriptors' numbers may belong to other files after that."""
        if self._closed:
            return
        self._closed = True
        WATCHDOG.forget(self)
        if self.proc.poll() is None:
            try:
                wire.send(self._cmd_w, {"op": "exit"}, deadline=time.monotonic() + grace_s)
                self.proc.wait(timeout=grace_s)
            except (OSError, wire.WireTimeout, subprocess.TimeoutExpired):
                pass
        self.kill()
        self.mailbox_map.close()
        for fd in (self._cmd_w, self._reply_r, self._log_fd, self.mailbox):
            try:
                os.close(fd)
            except OSError:
                pass
        sandbox.remove_tree(self.home)
        try:
            self._log_path().unlink()
        except OSError:
            pass

    def freeze(self) -> None:
        """Stop every process of the side (SIGSTOP) while another side is timed: no thread of it can
        launch work that would slow the other down. Walked until no new process appears, for at most
        FREEZE_LIMIT_S: a candidate whose processes fork successors faster than the walk stops them held a
        freeze for 60-70 s, outside every deadline (until its pids wrapped), and the time was charged to the
        other side's request.

        The walk ends once every thread it stopped has reached its stop (or STOP_SETTLE_S passed): a thread
        still on its way may be finishing a fork, whose child nothing stopped. On the H200 an honest
        torch.compile side had a process running through another side's block so (2026-12-03).

        Raises:
            SideFailure: `runaway`, the side kept starting processes for the whole limit (it is killed).
        """
        stopped: set[int] = set()
        limit = time.monotonic() + FREEZE_LIMIT_S
        settle_until = None
        while True:
            pending = [p for p in descendants(self.proc.pid) if p not in stopped]
            if not pending:
                settle_until = settle_until or time.monotonic() + STOP_SETTLE_S
                if time.monotonic() > settle_until or all(_at_rest(p) for p in stopped):
                    break
                time.sleep(0.001)
                continue
            if time.monotonic() > limit:
                self._frozen = stopped
                self.kill()
                raise SideFailure("runaway", f"kept starting processes for {FREEZE_LIMIT_S:g} s while the judge "
                                             f"stopped them ({len(stopped)} stopped)")
            for p in pending:
                try:
                    os.kill(p, signal.SIGSTOP)
                except (ProcessLookupError, PermissionError):
                    pass
                stopped.add(p)
        self._frozen = stopped
        self._cpu_at_freeze = {p: used for p in stopped if (used := _cpu_used(p)) is not None}

    def thaw(self, check: bool = False) -> None:
        """Let the stopped processes run again.

        Raises:
            SideFailure: `runaway`, with `check`, when a process the judge stopped was running just before:
                something of the side resumed it.
        """
        ran = self._running() if check else None
        for p in self._frozen:
            try:
                os.kill(p, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass
        self._frozen = set()
        if ran is not None:
            raise SideFailure("runaway", f"ran while the judge held it stopped ({ran})")

    def _running(self) -> str | None:
        """How a process of the side ran while the judge held it stopped (None when none did): it is running
        now (one may still be on its way to the stop on a loaded machine: it gets STOP_SETTLE_S to arrive
        there; one that was resumed never does), it used CPU time since the freeze (STOPPED_CPU_NS), or a
        process appeared that the freeze did not stop."""
        settle_until = time.monotonic() + STOP_SETTLE_S
        for p in self._frozen:
            while _state(p) in (b"R", b"S"):
                if time.monotonic() > settle_until:
                    return f"process {p} running"
                time.sleep(0.005)
        for p, (ticks, ns) in self._cpu_at_freeze.items():
            now = _cpu_used(p)
            if now is not None and (now[0] - ticks > STOPPED_CPU_TICKS or now[1] - ns > STOPPED_CPU_NS):
                return f"process {p} used {max((now[1] - ns) / 1e6, (now[0] - ticks) * 1000 / _TICKS):.0f} ms of CPU"
        if self._frozen and (new := [p for p in descendants(self.proc.pid) if p not in self._frozen]):
            return f"process {new[0]} started"
        return None

    def kill(self) -> None:
        """SIGKILL the side's process group (in the sandbox, the PID namespace dies with its first process)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass


def _at_rest(pid: int) -> bool:
    """Every thread of `pid` is stopped, or the process is gone."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    return all(_state(pid, thread) not in (b"R", b"S", b"D") for thread in threads)


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_used(pid: int) -> tuple[int, int] | None:
    """(utime + stime of the whole process in clock ticks, exited threads included; nanoseconds on the CPU
    of its live threads, from their schedstat) or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])
        ns = 0
        for thread in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{thread}/schedstat", "rb") as f:
                    ns += int(f.read().split()[0])
            except (OSError, IndexError, ValueError):  # the thread is gone
                pass
        return ticks, ns
    except (OSError, IndexError, ValueError):
        return None


def _state(pid: int, thread: str | None = None) -> bytes | None:
    """A process's state letter from /proc (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class SidePool:
    """Started, idle sides per device, importing torch while earlier evaluations run.

    A CUDA device keeps CUDA_DEPTH idle sides: an evaluation takes one for its candidate (the judge keeps
    the reference's and the last incumbents' sides), and on the H200 a CUDA side takes about 10 s to be
    ready while a small task's evaluation takes 2-3 s, so two idle sides ran dry (docs/benchmarks.md,
    session 19); each idle side holds a CUDA context (a few hundred MiB of device memory). The finals take
    two fresh sides per head-to-head, four for the usual two baselines: with three idle, the second final
    waited 7.7-12.2 s for a side started during the first, and three of ten campaigns' finals were cut by the
    time limit in that wait (H100, docs/benchmarks.md session 28). The CPU keeps CPU_DEPTH, since there
    start-ups compete with the evaluation for a few cores. A campaign holds one pool and closes it.
    """

    CUDA_DEPTH = 4
    CPU_DEPTH = 1

    def __init__(self, policy: sandbox.SandboxPolicy, sandboxed: bool, warm: bool = True):
        """`warm=False`: start sides only when taken (one evaluation: idle ones would be started for nothing)."""
        self.policy = policy
        self.sandboxed = sandboxed
        self.warm = warm
        self._lock = threading.Lock()
        self._idle: dict[str, list[SideProcess]] = {}

    def depth(self, device: str) -> int:
        if not self.warm:
            return 0
        return self.CPU_DEPTH if device == "cpu" else self.CUDA_DEPTH

    def take(self, device: str) -> SideProcess:
        """The oldest live idle side for `device` (or a new one); the idle ones are topped up behind it."""
        with self._lock:
            idle = self._idle.setdefault(device, [])
            side = None
            while idle and side is None:
                side = idle.pop(0)
                if side.proc.poll() is not None:
                    side.close()
                    side = None
            if side is None:
                side = SideProcess(device, self.policy, self.sandboxed)
            while len(idle) < self.depth(device):
                idle.append(SideProcess(device, self.policy, self.sandboxed))
            return side

    def give_back(self, *sides: SideProcess | None) -> None:
        """Sides taken but never given code (made ready for an evaluation that did not use them) back to the
        front of their device's idle list, as the warmest; past the pool's depth the newest idle ones end."""
        for side in sides:
            if side is None:
                continue
            surplus = [side]
            with self._lock:
                idle = self._idle.setdefault(side.device, [])
                if side.proc.poll() is None:
                    idle.insert(0, side)
                    surplus = idle[self.depth(side.device):]
                    del idle[self.depth(side.device):]
            for extra in surplus:
                extra.close(grace_s=0.2)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = [s for ss in self._idle.values() for s in ss], {}
        for side in idle:
            side.close(grace_s=0.2)


__all__ = ["SideProcess", "SidePool", "SideFailure", "Reply", "side_env", "gpu_capability", "ENV_ALLOWLIST"]
