"""The guard against the attacks of the third red-team pass (docs/guard.md, "Open findings"): one fixture per
finding (tests/fixtures/candidates/attacks/), each judged with the static gate skipped, so that the judge and
the sandbox are what is tested. Each test states what the guard must answer once the finding is fixed.

As in test_attacks.py, host paths the attacks aim at lie under the checkout (`.attack-scratch/`), outside
/tmp, and these tests need the sandbox (bubblewrap): without it they skip, unless KERNELARC_REQUIRE_SANDBOX=1
(as in CI), where they fail.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import stat
import time
import uuid
from pathlib import Path

import pytest

from kernelarc.guard import sandbox
from kernelarc.guard.candidate import candidate_from_source
from kernelarc.guard.judge import evaluate, isolation
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.sides import SideProcess
from kernelarc.guard.types import Evaluation, Status, Verdict
from kernelarc.task.loader import load_task

REPO = Path(__file__).resolve().parents[2]
ATTACKS = REPO / "tests" / "fixtures" / "candidates" / "attacks"
TASKS = REPO / "tests" / "fixtures" / "tasks"
FAST = GuardSettings(rounds=2, cpu_iterations=3, warmup=1, compile_timeout_s=120, run_timeout_s=120)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def _needs_sandbox():
    why = sandbox.probe()
    if why is not None:
        if os.environ.get("KERNELARC_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"the sandbox is required here and cannot start: {why}")
        pytest.skip(f"no sandbox: {why}")


@pytest.fixture(scope="module")
def relu_task():
    return load_task(TASKS / "relu_tiny.py")


@pytest.fixture(scope="module")
def matmul_task():
    return load_task(TASKS / "matmul_384.py")


@pytest.fixture
def host_dir():
    """A folder on the host outside /tmp (the sandbox shows it read-only), removed after the test."""
    path = REPO / ".attack-scratch" / uuid.uuid4().hex
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _judge(task, name: str, policy: sandbox.SandboxPolicy | None = None, **fill: str) -> Evaluation:
    source = (ATTACKS / name).read_text()
    for key, value in fill.items():
        source = source.replace(f"__{key}__", value)
    iso = isolation(policy=policy) if policy is not None else None
    return evaluate(task, candidate_from_source(source, task, name=Path(name).stem), device="cpu", settings=FAST,
                    trusted=True, isolation_=iso)


def _text(ev: Evaluation) -> str:
    return json.dumps(ev.to_json_dict())


# --- third red-team pass (docs/guard.md) ---------------------------------------------------------------------------

def test_a_reply_written_before_its_request_is_a_reward_hack(relu_task):
    """The side ran each timed block while it handled the untimed `stage` request and wrote the `time` reply
    before that request was sent (KEEP 30-70x here, 54-63x on a 384^2 matmul): every request carries a nonce the
    reply must echo, and bytes waiting on the reply pipe before a request is sent are a protocol failure."""
    ev = _judge(relu_task, "pre_answered_reply.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason


def test_work_moved_into_input_drawing_is_never_timed_as_free(matmul_task):
    """The side's own input drawing (`TaskRuntime.make_inputs`, run by the untimed `stage`) computed each call's
    answer off the judge's clock (KEEP 2.3x on this matmul): the inputs of timed calls are drawn by the trusted
    reference side and handed over inside the judge's clock, so the candidate's lookups miss and return zeros,
    and every CPU timed call is checked."""
    ev = _judge(matmul_task, "precompute_in_input_drawing.py")
    assert ev.verdict is Verdict.REJECT, ev.reason
    assert ev.status in (Status.REWARD_HACK, Status.INCORRECT_NUMERICAL), ev.reason


def test_a_side_shrinking_its_mailbox_never_crashes_the_judge(relu_task):
    """A thread of the side shrank its own mailbox between the judge's check of a reply's regions and its copy
    of them: an uncaught WireError in the judge, about 3 runs in 30 (2 in 20 here). The mailbox is sealed
    against shrinking (and further seals), and a failed copy is the candidate's REWARD_HACK."""
    for _ in range(5):
        ev = _judge(relu_task, "shrink_own_mailbox.py")  # an exception out of the judge fails the test
        assert ev.verdict is not None
        lines = ev.log_tail.splitlines()
        assert "shrunk" not in lines and any(line.startswith("shrink refused") for line in lines), ev.log_tail
        assert "sealed" not in lines and any(line.startswith("seal refused") for line in lines), ev.log_tail


def test_mailbox_memfds_are_sealed_against_shrinking():
    side = SideProcess("cpu", sandbox.SandboxPolicy(), sandboxed=True)
    try:
        seals = fcntl.fcntl(side.mailbox, fcntl.F_GET_SEALS)
        assert seals & fcntl.F_SEAL_SHRINK, f"seals {seals:#x}: the side can shrink its mailbox under the judge"
        assert seals & fcntl.F_SEAL_SEAL, f"seals {seals:#x}: the side can add seals of its own"
    finally:
        side.close()


TMPFS_PLACES = ("/dev/shm", "/tmp", "/root", "/home", "/run", "/var/tmp", "/dev")
TMPFS_MOST = 64 << 20


def test_tmpfs_mounts_hold_no_more_than_their_small_size(relu_task):
    """2 GiB written to the side's /dev/shm under a 1 GiB memory cap: tmpfs pages are neither address space nor
    resident memory. The hidden tmpfs mounts and /dev are read-only, /dev/shm a tmpfs of at most 64 MiB."""
    ev = _judge(relu_task, "fill_tmpfs.py", policy=sandbox.SandboxPolicy(memory_bytes=1 << 30))
    assert ev.verdict is not None
    wrote = {m[1]: int(m[2]) for m in re.finditer(r"^wrote (\S+) (\d+)", ev.log_tail, re.MULTILINE)}
    assert set(wrote) == set(TMPFS_PLACES), ev.reason + ev.log_tail
    over = {place: n for place, n in wrote.items() if n > TMPFS_MOST}
    assert not over, f"tmpfs places took more than {TMPFS_MOST >> 20} MiB: {over}"


@pytest.mark.parametrize("target", ["stdout", "scratch", "unlinked", "memfd"])
def test_writing_past_the_disk_or_memory_cap_is_a_runtime_error(relu_task, target):
    """2 GiB to the host log, to files in the scratch folder, to unlinked files held open and to memfds of the
    side's own, under a memory cap of 1 GiB and a disk cap of 256 MiB: the judge's watch kills a side past
    either (its resident memory plus the memfds and tmpfs files it holds open; its scratch folder, its log and
    the unlinked files it holds open), and RLIMIT_FSIZE bounds each file."""
    started = time.monotonic()
    policy = sandbox.SandboxPolicy(memory_bytes=1 << 30, disk_bytes=256 << 20)
    ev = _judge(relu_task, "fill_disk.py", policy=policy, TARGET=target)
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.RUNTIME_ERROR), ev.reason
    assert "disk" in ev.reason or "memory" in ev.reason, ev.reason
    assert time.monotonic() - started < 60


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="the judge runs as root only here")
def test_root_only_files_stay_unreadable(relu_task, host_dir):
    """Where the judge is root and its Python lives where `nobody` cannot reach it (/root/.pyenv), the side kept
    uid 0 in its user namespace and read /etc/shadow: a side never runs as uid 0."""
    marker = f"kernelarc-root-only-{uuid.uuid4().hex}"
    secret = host_dir / "root-only"
    secret.write_text(marker + "\n")
    os.chmod(secret, 0o600)
    ev = _judge(relu_task, "read_root_files.py", HOST_FILE=str(secret))
    assert ev.status is Status.PASSED, ev.reason + ev.log_tail
    assert marker not in _text(ev), ev.log_tail
    if not any(REPO.is_relative_to(hidden) for hidden in sandbox.HIDDEN_BY_DEFAULT):  # the sandbox shows the file
        assert f"refused {secret}: PermissionError" in ev.log_tail, ev.log_tail
    shadow = Path("/etc/shadow")
    if shadow.exists() and not shadow.stat().st_mode & stat.S_IROTH:
        assert "read /etc/shadow" not in ev.log_tail and "refused /etc/shadow" in ev.log_tail, ev.log_tail
