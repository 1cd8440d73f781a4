"""The OS sandbox every side process of the guard runs in (bubblewrap), and what it may see.

Why bubblewrap: it is one small, audited binary from the distribution (`apt install bubblewrap`),
runs without a daemon or setuid as root and as an ordinary user (through an unprivileged user
namespace), and gives in one command everything the guard needs: a PID namespace whose death takes
every descendant along (setsid children included), a fresh /proc that shows no other process, no
network, a read-only view of the file system with private writable scratch, and a cleared
environment. `unshare` alone would need our own mount set-up code, the place such sandboxes go
wrong. When the judge runs as root, the side runs as `nobody` (a real other uid, `side_identity`), so
root-only files stay unreadable even through the read-only view.

The policy: the whole file system read-only; home directories, /tmp, /run and the caller's private
paths (run directory, memory database) replaced by empty tmpfs; the Python installation and the
kernelarc sources bound back read-only; the scratch directory, the extension build directory and
the compiler caches' directory writable; /dev minimal plus, on CUDA, only the control nodes and the assigned GPU. Memory and CPU
time are capped (RLIMIT_AS on the CPU, where no driver reserves address space; the judge watches
resident memory on CUDA, where it must not). Imports without torch.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

NOBODY = 65534
EXTENSIONS_INSIDE = Path("/tmp/kernelarc-extensions")
"""Where a side builds torch extensions, inside every sandbox: one fixed path, so a build copied
from one evaluation into another is found up to date (torch's build files hold absolute paths)."""
COMPILED_INSIDE = Path("/tmp/kernelarc-compiled")
"""Where a side's Triton and Inductor caches live, inside every sandbox: one fixed path, so a cache kept
from one evaluation of a candidate is found again by the next (guard/build_cache.py)."""
SHM_BYTES = 64 << 20
"""Size of the side's /dev/shm, its only writable tmpfs (POSIX semaphores and shared memory live there):
what it holds is memory outside every cap, so it stays small."""
HIDDEN_BY_DEFAULT = ("/home", "/root", "/tmp", "/var/tmp", "/run", "/mnt", "/media", "/srv")
NVIDIA_CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
UNSAFE_FLAG = "--unsafe-no-sandbox"
SIDE_UID_VARIABLE = "KERNELARC_SIDE_UID"
"""Set inside the sandbox when the side must become this uid itself (`side_identity` `drop`)."""


class SandboxUnavailable(RuntimeError):
    """No working sandbox on this machine; the message says why and what to install."""


@dataclass(frozen=True)
class SandboxPolicy:
    """What a side process may see and use, beyond the fixed rules above."""

    hidden: tuple[Path, ...] = ()
    """Paths replaced by an empty tmpfs: the run directory, the long-term memory, anything private."""
    memory_bytes: int | None = None
    """Cap on the side's memory; None = 80% of the machine's."""
    cpu_seconds: int = 3600
    """Cap on the CPU time of each process in the sandbox (RLIMIT_CPU)."""
    disk_bytes: int = 8 << 30
    """Cap on what the side writes to disk: its folders (scratch, builds, compiler caches), its log and the
    unlinked files it holds open (guard/watchdog.py)."""
    required: bool = True
    """Refuse to start a side without a sandbox (raise SandboxUnavailable) instead of running it bare."""
    bwrap: str | None = field(default=None, compare=False)
    """Path of the bwrap binary; None looks it up on PATH."""

    def memory_cap(self) -> int:
        return self.memory_bytes if self.memory_bytes is not None else int(0.8 * _physical_memory())


def _physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@functools.lru_cache(maxsize=8)
def probe(bwrap: str | None = None) -> str | None:
    """None when a sandbox can be started here; else one line saying why not (cached per process)."""
    binary = bwrap or shutil.which("bwrap")
    if binary is None:
        return "bubblewrap (bwrap) is not installed: `apt install bubblewrap` (docs/guard.md)"
    command = ["true"]
    if side_identity() == "drop":  # the side's first act there: it must be able to
        command = [sys.executable, "-S", "-c", f"import os; os.setgroups([]); os.setgid({NOBODY}); os.setuid({NOBODY})"]
    try:
        done = subprocess.run(_bwrap_prefix(binary, [], scratch=None, device="cpu") + command,
                              capture_output=True, timeout=30, preexec_fn=_drop_privileges)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap could not start: {e}"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bubblewrap cannot create a sandbox here ({why[-1] if why else f'exit {done.returncode}'})"
    return None


def _drop_privileges() -> None:
    """As root, become `nobody` before the side (or bwrap) starts: it is then another uid for the kernel too."""
    if side_identity() == "nobody":
        become(NOBODY)


def become(uid: int) -> None:
    """Take `uid` (and its number as the gid) for good, with no supplementary groups."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


@functools.lru_cache(maxsize=1)
def side_identity() -> str:
    """Which uid a side runs as, and how it gets it.

    `user`: the judge is an ordinary user; the side keeps that uid (in bwrap's user namespace).
    `nobody`: the judge is root and `nobody` can reach this Python on the host: bwrap itself is started
    as `nobody`, a real other uid.
    `drop`: the judge is root and this Python lives where `nobody` cannot go (under /root): bwrap runs as
    root without a user namespace, keeps only CAP_SETUID and CAP_SETGID, and the side becomes `nobody`
    before it imports anything else (side.main). In a user namespace of root's instead, the side is uid 0
    to the kernel, owner of every root file: a red-team side read /etc/shadow so (2026-12-03).
    """
    if os.geteuid() != 0:
        return "user"
    if all(_reachable_by_others(Path(p).resolve() / "x") for p in _python_paths()):
        return "nobody"
    return "drop"


def needs_owner_change() -> bool:
    """True when sides run as `nobody`: their writable folders must then be theirs."""
    return side_identity() != "user"


def _reachable_by_others(path: Path) -> bool:
    """Every folder above `path` can be entered by any user (a Python under /root cannot)."""
    return all(os.stat(parent).st_mode & 0o001 for parent in path.parents)


def device_index(device: str) -> int:
    """The CUDA index a device string names (`cuda` alone is 0)."""
    return int(device.split(":")[1]) if ":" in device else 0


def gpu_nodes(index: int) -> list[str]:
    """The device nodes CUDA needs for GPU `index`: the control nodes and that GPU's own node (every
    GPU's node when the driver's PCI listing cannot say which one is `index`)."""
    nodes = [n for n in (*NVIDIA_CONTROL_NODES, "/dev/nvidia-caps") if os.path.exists(n)]
    minor = _gpu_minor(index)
    if minor is not None:
        return [*nodes, f"/dev/nvidia{minor}"]
    return nodes + sorted(str(p) for p in Path("/dev").glob("nvidia[0-9]*"))


def _gpu_minor(index: int) -> int | None:
    """The /dev/nvidiaN minor number of CUDA device `index`, matched by PCI address; None if unknown."""
    minors = {}
    listing = Path("/proc/driver/nvidia/gpus")
    for gpu in listing.iterdir() if listing.is_dir() else ():
        info = gpu / "information"
        for line in info.read_text().splitlines() if info.is_file() else ():
            if line.startswith("Device Minor:"):
                minors[gpu.name.lower()] = int(line.split(":", 1)[1])
    if len(minors) == 1:
        return next(iter(minors.values()))
    try:
        import torch

        props = torch.cuda.get_device_properties(index)
        address = f"{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
    except Exception:  # noqa: BLE001 - an older torch without PCI fields: every GPU node
        return None
    return next((m for bus, m in minors.items() if bus.endswith(address)), None)


def _python_paths() -> list[str]:
    """What the side's Python needs to read: the interpreter's installation, the environment, sys.path,
    and the kernelarc sources (uninstalled checkouts included)."""
    src_root = str(Path(__file__).resolve().parents[2])
    paths = {sys.base_prefix, sys.prefix, src_root, str(Path(sys.executable).resolve().parent)}
    # sys.path[0] is the launching script's folder (or the cwd): the judge's, nothing a side needs.
    paths.update(p for p in sys.path[1:] if p and os.path.isdir(p))
    return sorted(p for p in paths if p not in HIDDEN_BY_DEFAULT and p != "/")


def _bwrap_prefix(binary: str, policy_hidden: list[str], *, scratch: Path | None, device: str,
                  extensions: Path | None = None, compiled: Path | None = None) -> list[str]:
    # --cap-drop ALL: run by root, bwrap keeps every capability inside the side's user namespace unless told
    # otherwise, and the side could remount the read-only view read-write and write host files as root, the
    # kernelarc sources the judge imports included (a red-team candidate did, 2026-12-03; docs/guard.md).
    if side_identity() == "drop":  # no user namespace: root's would make the side uid 0 to the kernel
        namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                      "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        namespaces = ["--unshare-all", "--cap-drop", "ALL"]
    args = [binary, "--die-with-parent", "--new-session", *namespaces,
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm"]
    hidden_dirs = [h for h in (*HIDDEN_BY_DEFAULT, *policy_hidden) if os.path.isdir(h)]
    # Outer paths first, so that neither hides the other: a venv in a home directory is bound back over the
    # home's tmpfs, and a run directory under a folder on sys.path is hidden after that folder is bound (bound
    # first, pytest's rootdir on sys.path had shown the run directory again, 2026-12-03).
    mounts = sorted([(h, "hidden") for h in hidden_dirs] + [(p, "python") for p in _python_paths()],
                    key=lambda mount: len(Path(mount[0]).parts))
    made: set[str] = set()

    def make_way(path: str) -> None:
        """Folders bwrap makes on the way to a bind are 0700: `nobody` could not pass them to a Python under
        /root, nor to its scratch folder below the judge's folder of the side (guard/sides.py)."""
        for folder in _folders_inside(path, hidden_dirs):
            if folder not in made:
                made.add(folder)
                args.extend(["--perms", "0755", "--dir", folder])

    for path, kind in mounts:
        if kind == "hidden":
            args += ["--tmpfs", path]
            continue
        make_way(path)
        args += ["--ro-bind", path, path]
    if device.startswith("cuda"):
        for node in gpu_nodes(device_index(device)):
            if os.path.exists(node):
                args += ["--dev-bind", node, node]
    if scratch is not None:
        make_way(str(scratch))
        args += ["--bind", str(scratch), str(scratch), "--chdir", str(scratch)]
    if extensions is not None:
        args += ["--bind", str(extensions), str(EXTENSIONS_INSIDE)]
    if compiled is not None:
        args += ["--bind", str(compiled), str(COMPILED_INSIDE)]
    # Last, once every mount point inside them exists: the tmpfs over hidden paths and /dev read-only (tmpfs
    # pages are neither address space nor resident memory, so no memory cap sees them: a red-team side wrote
    # 2 GiB to them under a 1 GiB cap, 2026-12-03). The mounts bound inside them stay as they are.
    for path in (*hidden_dirs, "/dev"):
        args += ["--remount-ro", path]
    return args


def _folders_inside(path: str, hidden: list[str]) -> list[str]:
    """The folders between a hidden tmpfs and `path` below it, outermost first (none if it is not below one)."""
    target = Path(path)
    for root in map(Path, hidden):
        if root in target.parents:
            return [str(p) for p in reversed(target.parents) if root in p.parents]
    return []


def sandbox_command(argv: list[str], *, policy: SandboxPolicy, scratch: Path, device: str,
                    extensions: Path | None, env: dict[str, str], compiled: Path | None = None) -> list[str]:
    """The command line that runs `argv` in the sandbox, with exactly `env` as its environment."""
    binary = policy.bwrap or shutil.which("bwrap") or "bwrap"
    args = _bwrap_prefix(binary, [str(p) for p in policy.hidden], scratch=scratch, device=device,
                         extensions=extensions, compiled=compiled)
    args.append("--clearenv")
    if side_identity() == "drop":
        env = {**env, SIDE_UID_VARIABLE: str(NOBODY)}
    for key, value in sorted(env.items()):
        args += ["--setenv", key, value]
    return [*args, "--", *argv]


def remove_tree(path: Path) -> None:
    """Remove a folder a side wrote, however its code shaped it: `rm -rf` walks any depth without following
    links, where shutil.rmtree recurses once per level (a candidate's 3000-deep chain of folders raised
    RecursionError in the judge, and its scratch folder stayed behind)."""
    try:
        subprocess.run([shutil.which("rm") or "/bin/rm", "-rf", "--one-file-system", "--", str(path)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    except OSError:  # no rm to run (a PATH without it): as deep as Python's own recursion allows
        try:
            shutil.rmtree(path, ignore_errors=True)
        except RecursionError:
            pass


BACKGROUND_NICE = 19
"""Niceness of work that runs beside timed calls without being timed: it yields the CPU to them."""


def lowered_priority(off_cpus: frozenset[int] = frozenset()) -> None:
    """A preexec function for background work (building extensions ahead, generating the seed): the
    process and everything it starts yield the CPU to the sides being timed, and stay off `off_cpus`
    (timing_cpus.reserved). Inductor's generation uses every core for 16-24 s; in the run where it ran beside
    the baselines (session 13 on the H200) the torch.compile baseline of a host-bound call read 1.100 ms
    against 0.966 ms in a run without it."""
    os.nice(BACKGROUND_NICE)
    move_off(off_cpus)


def move_off(cpus: frozenset[int]) -> None:
    """This process on its CPUs less `cpus` (a preexec function's child, before it starts anything: what it
    starts inherits the mask); unchanged where that would leave none. The caller computes `cpus`: a child
    between fork and exec must not import anything."""
    rest = os.sched_getaffinity(0) - cpus
    if cpus and rest:
        os.sched_setaffinity(0, rest)


SIDE_OPEN_FILES = 1024
"""Descriptors a process of a side may open (RLIMIT_NOFILE)."""


def limits(policy: SandboxPolicy, device: str, background: bool = False, off_cpus: frozenset[int] = frozenset()):
    """A preexec function: resource caps (and `nobody` as root) for the process about to start, off the
    host's timing CPUs `off_cpus` (a side's timed blocks pin their thread back there, side.pinned), at the
    lowest CPU priority for `background` work."""
    def apply() -> None:
        if background:
            lowered_priority()
        move_off(off_cpus)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CPU, (policy.cpu_seconds, policy.cpu_seconds + 5))
        # The usual default: with the judge's 20,000 a side opened 4,000 socket pairs, whose buffers (kernel
        # memory) took the host out of memory before the watchdog's socket count could look (fifth red-team pass).
        resource.setrlimit(resource.RLIMIT_NOFILE, (SIDE_OPEN_FILES, SIDE_OPEN_FILES))
        # No single file past either cap, even where the watchdog looks late (its mailbox is memory).
        largest = max(policy.memory_cap(), policy.disk_bytes)
        resource.setrlimit(resource.RLIMIT_FSIZE, (largest, largest))
        if device == "cpu":  # CUDA reserves terabytes of address space: there the judge watches RSS
            cap = policy.memory_cap()
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        _drop_privileges()
    return apply


__all__ = ["SandboxPolicy", "SandboxUnavailable", "probe", "sandbox_command", "limits", "lowered_priority", "move_off", "gpu_nodes",
           "remove_tree",
           "needs_owner_change", "side_identity", "become", "SIDE_UID_VARIABLE", "COMPILED_INSIDE", "EXTENSIONS_INSIDE", "UNSAFE_FLAG", "NOBODY"]
