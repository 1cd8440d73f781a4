"""Side processes seen from the judge: an allow-listed environment with private caches, a pool that
starts them ahead, replies a candidate cannot forge into a pass, and failures of every kind turned
into a SideFailure rather than hung on."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelarc.guard import sandbox, timing_cpus, wire
from kernelarc.guard.candidate import load_candidate
from kernelarc.guard.judge import evaluate
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.sides import ENV_ALLOWLIST, SideFailure, SidePool, SideProcess, side_env
from kernelarc.guard.types import Status, Verdict
from kernelarc.task.loader import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FAULTS = FIXTURES / "candidates" / "faults"
FAST = GuardSettings(rounds=2, cpu_iterations=3, warmup=1, compile_timeout_s=60, run_timeout_s=60)
SECRETS = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test", "GITHUB_TOKEN": "ghp_test",
           "AWS_SECRET_ACCESS_KEY": "aws-test"}


@pytest.fixture
def relu_task():
    return load_task(FIXTURES / "tasks" / "relu_tiny.py")


@pytest.fixture
def parent_secrets(monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def test_side_env_keeps_only_the_allow_list(tmp_path, monkeypatch, parent_secrets):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("SOME_RANDOM_SETTING", "1")
    monkeypatch.setenv("TEARDOWN_CUPTI", "1")
    env = side_env(tmp_path, "cpu", tmp_path / "compiled")
    assert env["PATH"] == "/usr/bin:/bin" and env["TEARDOWN_CUPTI"] == "1"  # a user's CUPTI choice reaches the side
    assert not set(SECRETS) & set(env) and "SOME_RANDOM_SETTING" not in env
    assert all(value not in env.values() for value in SECRETS.values())
    assert all(env[k].startswith(str(tmp_path)) for k in ("HOME", "TMPDIR"))
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "compiled" / "triton")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "compiled" / "inductor")  # never /tmp, shared by all
    assert env["TORCH_EXTENSIONS_DIR"] == str(sandbox.EXTENSIONS_INSIDE)
    private = {"HOME", "TMPDIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCH_EXTENSIONS_DIR"}
    assert set(env) <= set(ENV_ALLOWLIST) | private | {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "TRITON_INTERPRET"}


def test_cuda_sides_tear_cupti_down_unless_the_user_chose(tmp_path, monkeypatch):
    monkeypatch.delenv("TEARDOWN_CUPTI", raising=False)
    assert side_env(tmp_path, "cuda:0", tmp_path / "compiled")["TEARDOWN_CUPTI"] == "1"
    assert "TEARDOWN_CUPTI" not in side_env(tmp_path, "cpu", tmp_path / "compiled")
    monkeypatch.setenv("TEARDOWN_CUPTI", "0")
    assert side_env(tmp_path, "cuda:0", tmp_path / "compiled")["TEARDOWN_CUPTI"] == "0"


def test_triton_interprets_only_on_the_cpu(tmp_path):
    assert side_env(tmp_path, "cpu", tmp_path / "compiled")["TRITON_INTERPRET"] == "1"
    assert "TRITON_INTERPRET" not in side_env(tmp_path, "cuda:0", tmp_path / "compiled")


def test_secret_probe_fails_where_keys_are_visible(parent_secrets):
    """The probe is a real detector: imported here, with the keys set, it refuses to load."""
    spec = importlib.util.spec_from_file_location("_env_probe", FAULTS / "env_secrets.py")
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


@pytest.mark.slow
def test_candidate_sees_no_parent_secrets(relu_task, parent_secrets):
    ev = evaluate(relu_task, load_candidate(FAULTS / "env_secrets.py", relu_task), device="cpu", settings=FAST,
                  trusted=True)
    assert ev.status is Status.PASSED, ev.reason + ev.log_tail
    assert ev.verdict is not Verdict.REJECT


@pytest.mark.slow
def test_replies_forged_on_every_open_fd_never_pass(relu_task):
    ev = evaluate(relu_task, load_candidate(FAULTS / "forge_channel.py", relu_task), device="cpu", settings=FAST,
                  trusted=True)
    assert ev.verdict is Verdict.REJECT and ev.status is Status.REWARD_HACK, ev.reason
    assert "reply no honest side writes" in ev.reason
    assert ev.speedup is None and not ev.correct


def _isolation() -> bool:
    return sandbox.probe() is None


@pytest.mark.slow
def test_a_side_that_is_asked_nonsense_answers_with_its_own_failure():
    side = SideProcess("cpu", sandbox.SandboxPolicy(), _isolation())
    try:
        reply = side.request({"op": "no such request"}, deadline=time.monotonic() + 60)
        assert reply.header["ok"] is False and "unknown request" in reply.header["internal"]
        assert reply.seconds > 0
    finally:
        side.close()
    assert side.proc.poll() is not None and not side.scratch.exists()


@pytest.mark.slow
def test_a_side_that_does_not_answer_in_time_is_a_timeout_and_a_dead_one_is_died():
    side = SideProcess("cpu", sandbox.SandboxPolicy(), _isolation())
    try:
        with pytest.raises(SideFailure) as late:  # still importing torch: no reply within 10 ms
            side.request({"op": "ramp", "seconds": 0}, deadline=time.monotonic() + 0.01)
        assert late.value.kind == "timeout"
        side.kill()
        with pytest.raises(SideFailure) as dead:
            side.request({"op": "ramp"}, deadline=time.monotonic() + 30)
        assert dead.value.kind == "died" and "SIGKILL" in dead.value.detail
    finally:
        side.close()


@pytest.mark.slow
def test_the_pool_hands_out_started_sides_and_close_ends_the_idle_ones():
    pool = SidePool(sandbox.SandboxPolicy(), _isolation())
    first = pool.take("cpu")
    [idle] = pool._idle["cpu"]
    second = pool.take("cpu")
    assert second is idle and second.proc.poll() is None
    [replacement] = pool._idle["cpu"]
    first.close()
    second.close()
    pool.close()
    assert replacement.proc.wait(timeout=10) is not None and not replacement.scratch.exists()


def test_a_cuda_device_keeps_its_depth_of_idle_sides_and_hands_out_the_oldest():
    """Spawning is real (a `cuda:7` side without a GPU just waits for its first request like any other)."""
    pool = SidePool(sandbox.SandboxPolicy(), False)
    first = pool.take("cuda:7")
    idle = list(pool._idle["cuda:7"])
    assert len(idle) == SidePool.CUDA_DEPTH == 4
    oldest = idle[0]
    assert pool.take("cuda:7") is oldest and pool._idle["cuda:7"][:-1] == idle[1:]
    assert len(pool._idle["cuda:7"]) == SidePool.CUDA_DEPTH
    first.close(grace_s=0)
    oldest.close(grace_s=0)
    rest = list(pool._idle["cuda:7"])
    pool.close()
    assert all(side.proc.wait(timeout=10) is not None for side in rest)


TREE = """
import subprocess, sys, threading, time
def spawn():  # a grandchild forked from a thread other than the main one
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
threading.Thread(target=spawn).start()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print("ready", flush=True)
time.sleep(60)
"""


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0].decode()


def _settled(condition, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_sides_whole_tree_is_found_and_frozen(tmp_path):
    """The tree walk through /proc children lists finds what a scan of all of /proc finds, grandchildren
    forked from other threads included; freezing stops each of them and thawing lets each go."""
    import subprocess
    import sys

    from kernelarc.guard.watchdog import _descendants_by_scan, descendants

    root = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert root.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 10
        while len(_descendants_by_scan(root.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        tree = sorted(_descendants_by_scan(root.pid))
        assert len(tree) == 3 and sorted(descendants(root.pid)) == tree
        side = SideProcess.__new__(SideProcess)  # only its freeze and thaw, around a process of our own
        side.proc, side._frozen = root, set()
        side.freeze()
        assert _settled(lambda: {_state(p) for p in tree} == {"T"})  # a stop signal lands within microseconds
        side.thaw()
        assert _settled(lambda: "T" not in {_state(p) for p in tree})
    finally:
        import signal

        os.killpg(root.pid, signal.SIGKILL)
        root.wait()


def test_only_the_reference_starts_before_the_background_imports_end(relu_task):
    """A CUDA side imports the compilers in a background thread: the reference (which never compiles)
    sets up at once; a side about to load untrusted code, or to time anything, waits for the imports."""
    import threading

    from kernelarc.guard.side import Side

    release = threading.Event()
    warming = threading.Thread(target=release.wait, daemon=True)
    warming.start()
    side = Side("cpu", wire.Mailbox(os.memfd_create("test-mailbox")), warming=warming)
    setup = {"op": "setup", "task": relu_task.model_dump(mode="json"), "definition": relu_task.definition}
    side.op_setup({**setup, "role": "reference"})  # returns although the imports have not ended
    assert warming.is_alive()
    waiting = threading.Thread(target=side.op_setup, args=({**setup, "role": "candidate"},), daemon=True)
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive()  # the candidate's set-up waits
    release.set()
    waiting.join(10)
    assert not waiting.is_alive() and side._warming is None


def _nice(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[16])


def test_background_sides_and_the_seeds_generation_yield_the_cpu(monkeypatch):
    """A side building ahead (Judge.prebuild) runs beside timed calls: at the lowest CPU priority, as the
    seed's generation child; sides that are timed keep the judge's priority."""
    import subprocess

    from kernelarc.agents.builtin import inductor_code

    policy = sandbox.SandboxPolicy()
    sandboxed = sandbox.probe(policy.bwrap) is None
    background, timed = SideProcess("cpu", policy, sandboxed, background=True), SideProcess("cpu", policy, sandboxed)
    try:
        assert _nice(background.proc.pid) == sandbox.BACKGROUND_NICE
        assert _nice(timed.proc.pid) == _nice(os.getpid())
    finally:
        background.close()
        timed.close()
    seen = {}
    monkeypatch.setattr(subprocess, "run", lambda *a, **kw: seen.update(kw) or subprocess.CompletedProcess(a, 1, "", ""))
    with pytest.raises(ValueError):  # no reply from the (not started) child
        inductor_code._run_child(load_task(FIXTURES / "tasks" / "relu_tiny.py"), "cpu", "default")
    assert seen["preexec_fn"].func is sandbox.lowered_priority  # and off the timing CPUs (test_timing_cpus.py)
    assert seen["preexec_fn"].args == (timing_cpus.reserved(),)


def test_only_plain_tensors_and_scalars_travel_from_the_reference_side():
    """The timed inputs the reference side hands over (side.op_stage): anything a mailbox and JSON cannot carry
    as it is (strides, autograd state, a subclass, an object) is drawn by each timed side instead."""
    import torch

    from kernelarc.guard.side import TENSOR, staged_item

    cpu = torch.device("cpu")
    assert staged_item(torch, torch.ones(3, 4), cpu) == TENSOR
    assert staged_item(torch, torch.ones(3, 4).t(), cpu) is None
    assert staged_item(torch, torch.ones(3, requires_grad=True), cpu) is None
    assert staged_item(torch, torch.nn.Parameter(torch.ones(3)), cpu) is None
    assert staged_item(torch, 3, cpu) == {"value": 3} and staged_item(torch, None, cpu) == {"value": None}
    assert staged_item(torch, (2, 3), cpu) == {"tuple": [2, 3]} and staged_item(torch, [1.5], cpu) == {"value": [1.5]}
    assert staged_item(torch, float("nan"), cpu) is None and staged_item(torch, torch.float32, cpu) is None
    assert staged_item(torch, [torch.ones(1)], cpu) is None


@pytest.mark.slow
def test_a_private_path_under_a_folder_on_sys_path_stays_hidden(tmp_path, monkeypatch):
    """Bound after the run directory's tmpfs, a folder on sys.path (pytest's rootdir) showed the run directory
    again: outer paths are mounted first."""
    if sandbox.probe() is not None:
        pytest.skip(f"no sandbox: {sandbox.probe()}")
    outer = Path(__file__).resolve().parents[2] / ".attack-scratch" / tmp_path.name
    private = outer / "run"
    private.mkdir(parents=True)
    try:
        (private / "campaign.sqlite").write_text("private")
        monkeypatch.setattr(sys, "path", [*sys.path, str(outer)])
        command = sandbox._bwrap_prefix("bwrap", [str(private)], scratch=None, device="cpu") + ["ls", "-A", str(private)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
    finally:
        shutil.rmtree(outer, ignore_errors=True)


def test_a_process_that_ran_while_its_side_was_held_stopped_is_a_runaway():
    """The freeze walk can miss a child still being forked as it ends, and a missed process can resume the
    others: when the side is let go, the judge checks that every process of it was still stopped."""
    import signal

    side = SideProcess("cpu", sandbox.SandboxPolicy(), sandboxed=False)
    try:
        side.request({"op": "ramp", "seconds": 0}, deadline=time.monotonic() + 60)
        side.freeze()
        side.thaw(check=True)  # all stopped: no complaint
        side.freeze()
        os.kill(side.proc.pid, signal.SIGCONT)  # as a sibling the walk missed would
        time.sleep(0.2)
        with pytest.raises(SideFailure, match="held it stopped") as failure:
            side.thaw(check=True)
        assert failure.value.kind == "runaway"
    finally:
        side.close()


@pytest.mark.gpu
def test_a_cuda_sides_mailbox_is_page_locked_and_carries_tensors_exactly():
    """CUDA sides page-lock their mailbox (guard/host_pinning.py); growing it remaps, unpins the old mapping
    and pins the new one."""
    import torch

    box = wire.Mailbox(os.memfd_create("test-mailbox"), pinned=True)
    small = torch.randn(1 << 16, device="cuda")
    (placed,) = box.write([small])
    assert box.is_pinned and torch.equal(box.read(placed, "cuda"), small)
    large = torch.randn(1 << 24, device="cuda")
    (placed,) = box.write([large])
    assert box.is_pinned and torch.equal(box.read(placed, "cuda"), large)



def test_a_side_imports_before_its_first_request_every_module_its_requests_import():
    """side.REQUEST_MODULES must name every kernelarc module imported inside side.py's functions: one left out
    is imported by each fresh candidate side inside its evaluation, under the device lock."""
    import ast

    from kernelarc.guard import side

    late = set()
    for node in ast.walk(ast.parse(Path(side.__file__).read_text())):
        if isinstance(node, ast.FunctionDef):
            for imp in ast.walk(node):
                if isinstance(imp, ast.ImportFrom) and imp.module == "kernelarc.guard":  # `from kernelarc.guard import timing`
                    late |= {f"kernelarc.guard.{alias.name}" for alias in imp.names}
                elif isinstance(imp, ast.ImportFrom) and (imp.module or "").startswith("kernelarc."):
                    late.add(imp.module)
    assert late and late <= set(side.REQUEST_MODULES)


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs triton")
def test_a_pooled_side_leaves_tritons_hash_of_itself_computed_for_its_first_launch():
    """Triton's first launch in a process hashes its own installation (0.35 s on the H100); a side's
    background warm-up (`import_compilers`) must leave it computed, in a fresh process as a side is."""
    probe = ("from triton.runtime.cache import triton_key\n"
             "from kernelarc.guard.side import import_compilers\n"
             "assert triton_key.cache_info().currsize == 0\n"
             "import_compilers()\n"
             "print(triton_key.cache_info().currsize)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "1"
