"""The guard against candidates written as an adversarial agent would write them: one fixture per
attack class of docs/guard.md (tests/fixtures/candidates/attacks/), each judged with the static gate
skipped, so that the judge and the sandbox are what is tested.

Host paths the attacks aim at lie under the checkout (`.attack-scratch/`), outside /tmp, so that a
write the sandbox failed to stop would really land on the host. These tests need the sandbox
(bubblewrap); without it they skip, unless KERNELARC_REQUIRE_SANDBOX=1 (as in CI), where they fail.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from kernelarc.guard import sandbox
from kernelarc.guard.candidate import candidate_from_source
from kernelarc.guard.judge import Judge, evaluate, isolation
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.sides import SideProcess
from kernelarc.guard.types import Evaluation, Status, Verdict
from kernelarc.task.loader import load_task

REPO = Path(__file__).resolve().parents[2]
ATTACKS = REPO / "tests" / "fixtures" / "candidates" / "attacks"
FAST = GuardSettings(rounds=2, cpu_iterations=3, warmup=1, compile_timeout_s=120, run_timeout_s=120)
SECRET = "sk-kernelarc-attack-test-0123456789abcdef"

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
    return load_task(REPO / "tests" / "fixtures" / "tasks" / "relu_tiny.py")


@pytest.fixture(scope="module")
def matmul_task():
    return load_task(REPO / "tests" / "fixtures" / "tasks" / "matmul_384.py")


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


# --- tampering in-process ---------------------------------------------------------------------------------------

def test_replacing_the_check_functions_changes_nothing(relu_task):
    ev = _judge(relu_task, "patch_check_modules.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.INCORRECT_NUMERICAL), ev.reason


def test_stopped_clocks_do_not_make_slow_work_fast(relu_task):
    ev = _judge(relu_task, "patch_clocks.py")
    assert ev.correct and ev.verdict is Verdict.REVERT, ev.reason  # thousands of ops against one


def test_slowing_the_reference_in_the_candidates_process_does_not_slow_the_reference(relu_task):
    ev = _judge(relu_task, "slow_down_reference.py")
    assert ev.correct, ev.reason
    # Patched, the reference would sleep 20 ms a call: a speedup in the hundreds. Unpatched, the two
    # ops are the same size; the bound leaves the CPU's noise all the room it needs.
    assert ev.speedup < 20, ev.reason


def test_no_key_in_frames_and_forged_replies_never_pass(relu_task):
    ev = _judge(relu_task, "forge_from_frames.py")
    assert ev.verdict is Verdict.REJECT and ev.speedup is None, ev.reason


def test_no_reference_output_to_find_in_the_candidates_memory(relu_task):
    ev = _judge(relu_task, "gc_reference_outputs.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.INCORRECT_NUMERICAL), ev.reason


def test_garbage_only_in_timed_calls_is_caught(relu_task):
    ev = _judge(relu_task, "garbage_when_timed.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason
    assert "timed call" in ev.reason


# --- content-keyed caches and replay -----------------------------------------------------------------------------

def test_inputs_written_only_in_timed_calls_are_caught(relu_task):
    ev = _judge(relu_task, "mutate_inputs_when_timed.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason
    assert "audited timed call" in ev.reason, ev.reason


def test_a_cache_keyed_on_sampled_values_never_hits_in_timing(relu_task):
    ev = _judge(relu_task, "cache_sampled_values.py")
    assert ev.correct and ev.verdict is Verdict.REVERT, ev.reason  # every timed call paid its slow miss


def test_replaying_the_last_answer_after_the_checked_calls_is_caught(relu_task):
    ev = _judge(relu_task, "replay_after_n_calls.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason


def test_a_cache_keyed_on_the_input_address_is_caught_in_timing(relu_task):
    ev = _judge(relu_task, "cache_by_address_when_timed.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason


# --- secrets and exfiltration ------------------------------------------------------------------------------------

def _eval_cli(task: Path, candidate: Path, env: dict[str, str]) -> tuple[dict, str]:
    """`kernelarc eval --json` in a process of its own whose start-up environment holds `env` (what
    /proc/<pid>/environ shows); its JSON result and stderr."""
    done = subprocess.run([str(Path(sys.executable).parent / "kernelarc"), "eval", str(task), str(candidate), "--device", "cpu",
                           "--rounds", "2", "--json"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env}, cwd=REPO)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "bare"])
def test_no_secret_of_the_judge_or_its_ancestors_is_visible(relu_task, host_dir, sandboxed):
    candidate = host_dir / "read_ancestor_secrets.py"
    candidate.write_text((ATTACKS / "read_ancestor_secrets.py").read_text().replace("__SECRET__", SECRET))
    env = {"OPENAI_API_KEY": SECRET}
    if not sandboxed:  # no bwrap on PATH: the judge says so and still keeps its secrets
        env["PATH"] = str(host_dir)
    result, stderr = _eval_cli(relu_task.path, candidate, env)
    assert result["status"] == "PASSED", result["reason"] + result["log_tail"]  # it raises when it finds one
    assert SECRET not in json.dumps(result) and SECRET not in stderr
    assert ("without a sandbox" in stderr) is not sandboxed


def test_a_log_replaced_by_a_link_is_never_followed(relu_task, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    ev = _judge(relu_task, "log_symlink.py")
    assert ev.status is Status.COMPILE_ERROR or ev.status is Status.RUNTIME_ERROR, ev.reason
    assert "look at my log" in ev.log_tail and SECRET not in _text(ev)


# --- escapes -----------------------------------------------------------------------------------------------------

def _listener() -> tuple[socket.socket, list]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    accepted: list = []

    def accept():
        while not accepted and server.fileno() != -1:
            try:
                accepted.append(server.accept())
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    return server, accepted


def test_shell_commands_run_in_the_sandbox_only(relu_task, host_dir):
    server, accepted = _listener()
    marker = host_dir / "escaped"
    try:
        ev = _judge(relu_task, "escape_system.py", HOST_FILE=str(marker), PORT=str(server.getsockname()[1]))
        time.sleep(0.5)
    finally:
        server.close()
    # The gadget's `kill` reached no process but the side's own group (it may have ended its own side).
    assert ev.verdict is not None and "Read-only file system" in ev.log_tail + ev.reason, ev.reason + ev.log_tail
    assert list(host_dir.iterdir()) == [] and accepted == []


def test_the_side_holds_no_capability_to_remount_the_host(relu_task, host_dir):
    """Run by root, bwrap used to keep every capability inside the side's user namespace: a candidate remounted
    the read-only view, wrote host files as root and planted code in a module the judge imported later."""
    roofline = REPO / "src" / "kernelarc" / "roofline" / "__init__.py"
    before = roofline.read_bytes()
    ev = _judge(relu_task, "remount_host.py", HOST_FILE=str(host_dir / "escaped"))
    assert ev.status is Status.PASSED, ev.reason + ev.log_tail
    assert "CapEff:\t0000000000000000" in ev.log_tail and "remount b'/' 0 " not in ev.log_tail, ev.log_tail
    assert list(host_dir.iterdir()) == [] and roofline.read_bytes() == before


@pytest.mark.skipif(not (shutil.which("c++") and shutil.which("ninja")), reason="needs a C++ compiler and ninja")
@pytest.mark.heavy
def test_native_code_runs_in_the_sandbox_only(relu_task, host_dir):
    ev = _judge(relu_task, "escape_cpp_system.py", HOST_FILE=str(host_dir / "escaped"))
    assert ev.status is Status.PASSED, ev.reason + ev.log_tail
    assert list(host_dir.iterdir()) == []


def _marked(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_detached_children_die_with_the_evaluation(relu_task):
    marker = f"kernelarc-attack-{uuid.uuid4().hex}"
    ev = _judge(relu_task, "detached_children.py", MARKER=marker)
    assert ev.verdict is not None
    deadline = time.monotonic() + 5
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(marker) == []
    honest = _judge(relu_task, "kill_the_judge.py")  # the next evaluation is not disturbed either
    assert honest.verdict is not None


def test_killing_everything_in_sight_costs_only_the_candidate(relu_task):
    with Judge(relu_task) as judge:
        source = (ATTACKS / "kill_the_judge.py").read_text()
        first = judge.evaluate(candidate_from_source(source, relu_task), device="cpu", settings=FAST, trusted=True)
        honest = (REPO / "tests" / "fixtures" / "candidates" / "honest_torch.py").read_text()
        second = judge.evaluate(candidate_from_source(honest, relu_task), device="cpu", settings=FAST)
    assert first.verdict is not None and second.status is Status.PASSED, second.reason


def test_memory_beyond_the_cap_is_a_runtime_error(relu_task):
    ev = _judge(relu_task, "hold_memory.py", policy=sandbox.SandboxPolicy(memory_bytes=1 << 30))
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.RUNTIME_ERROR), ev.reason
    assert "memory" in ev.reason


# --- persistent state --------------------------------------------------------------------------------------------

def test_user_files_run_directory_and_memory_database_are_out_of_reach(relu_task, host_dir):
    incumbent = host_dir / "incumbent.py"
    incumbent.write_text("# the user's kernel\n")
    run_dir, memory_dir = host_dir / "run", host_dir / "memory"
    run_dir.mkdir()
    memory_dir.mkdir()
    databases = [run_dir / "campaign.sqlite", memory_dir / "longterm.sqlite"]
    for db in databases:
        sqlite3.connect(db).execute("CREATE TABLE findings (note TEXT)").connection.commit()
    before = {p: p.read_bytes() for p in (incumbent, *databases)}
    policy = sandbox.SandboxPolicy(hidden=(run_dir, memory_dir))
    ev = _judge(relu_task, "overwrite_files.py", policy=policy, TARGETS="|".join(str(p) for p in before))
    assert ev.status is Status.PASSED, ev.reason + ev.log_tail
    assert {p: p.read_bytes() for p in before} == before


def test_replies_with_fields_of_the_wrong_types_never_crash_the_judge(relu_task):
    ev = _judge(relu_task, "forge_malformed_replies.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason


def test_folders_of_any_depth_are_removed_and_never_crash_the_judge(relu_task, tmp_path):
    """A 3000-deep chain of folders in the scratch folder and in the compiler caches: the judge removes the one
    and keeps the other (a campaign's build cache), and once raised RecursionError doing so."""
    from kernelarc.guard.build_cache import BuildCache

    source = (ATTACKS / "deep_folders.py").read_text()
    with Judge(relu_task, build_cache=BuildCache(tmp_path / "cache"), warm=False) as judge:
        ev = judge.evaluate(candidate_from_source(source, relu_task, name="deep_folders"), device="cpu",
                            settings=FAST, trusted=True)
    assert ev.status is Status.PASSED, ev.reason + ev.log_tail


def test_a_side_that_forks_faster_than_it_can_be_stopped_is_rejected_in_seconds(relu_task):
    started = time.monotonic()
    ev = _judge(relu_task, "runaway_forks.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason
    assert "kept starting processes" in ev.reason and time.monotonic() - started < 60


def test_a_side_that_skips_its_bookkeeping_gains_at_most_what_the_cap_allows():
    """The CPU's measure is the judge's clock less the incumbent's bookkeeping: a side that computes into its
    mailbox and reports no time of its own once read 15,000-31,000x. Now the subtraction is capped at half a
    block's time: at most 2x from the trick (the same arithmetic as the reference), 8x with the CPU's noise."""
    task = load_task(REPO / "tests" / "fixtures" / "tasks" / "mul_add_large.py")
    for _ in range(2):
        ev = _judge(task, "skip_bookkeeping.py")
        assert ev.verdict is Verdict.REJECT or ev.speedup < 8.0, ev.reason


def test_negative_sizes_whose_product_matches_never_crash_the_judge(relu_task):
    ev = _judge(relu_task, "negative_sizes.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason


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


@pytest.mark.parametrize("target", ["stdout", "scratch", "unlinked", "memfd", "mailbox", "mapped_memfd",
                                    "mapped_unlinked", "sockets"])
def test_writing_past_the_disk_or_memory_cap_is_a_runtime_error(relu_task, target):
    """2 GiB to the host log, to files in the scratch folder, to unlinked files held open or only mapped, to
    memfds of the side's own held open or only mapped, and to its own mailbox beyond what it maps, under a
    memory cap of 1 GiB and a disk cap of 256 MiB: the judge's watch kills a side past either (its anonymous
    resident memory plus every memfd it holds or maps, its mailbox included; its scratch folder, its log and the
    unlinked files it holds or maps), and RLIMIT_FSIZE bounds each file; sockets, whose buffers are kernel
    memory, are counted (MAX_SOCKETS). The last four passed the watch until the fifth red-team pass."""
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


def test_build_folders_replaced_by_links_keep_nothing_of_the_host(relu_task, host_dir, tmp_path):
    """Sixth red-team pass: a side put a link to a root-only folder in place of its `extensions` folder; the judge
    (root) kept the "build" behind it and the candidate's next side read its secret."""
    from kernelarc.guard.build_cache import BuildCache

    marker = f"kernelarc-build-secret-{uuid.uuid4().hex}"
    private = host_dir / "private_build"
    private.mkdir()
    (private / "private_build.so").write_bytes(b"not a library")
    (private / "secret.txt").write_text(marker + "\n")
    for path, mode in ((private / "secret.txt", 0o600), (private, 0o700), (host_dir, 0o700)):
        os.chmod(path, mode)
    source = (ATTACKS / "link_build_folders.py").read_text().replace("__HOST_DIR__", str(host_dir))
    candidate = candidate_from_source(source, relu_task, name="link_build_folders")
    with Judge(relu_task, build_cache=BuildCache(tmp_path / "cache"), warm=False) as judge:
        evaluations = [judge.evaluate(candidate, device="cpu", settings=FAST, trusted=True) for _ in range(2)]
    for ev in evaluations:
        assert ev.status is Status.PASSED, ev.reason + ev.log_tail
        assert marker not in _text(ev), ev.log_tail
    assert not list((tmp_path / "cache").rglob("secret.txt"))


# --- fourth red-team pass (docs/guard.md) --------------------------------------------------------------------------

def test_a_reply_nested_too_deeply_never_crashes_the_judge(relu_task):
    """Valid JSON nested 100,000 deep in a reply's header: Python's parser raises RecursionError, not ValueError,
    and it once escaped the judge as a traceback. A header the parser cannot take is the side's protocol failure."""
    ev = _judge(relu_task, "nested_reply.py")
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason
    assert "nests too deeply" in ev.reason, ev.reason


def test_a_side_that_stops_reading_its_shrunk_command_pipe_never_holds_the_judge(relu_task):
    """The side shrank its command pipe to one page and stopped reading: the judge's blocking write of a 5 kB
    request held it forever. Its writes now wait for room only until the request's deadline."""
    started = time.monotonic()
    settings = FAST.model_copy(update={"run_timeout_s": 15})
    source = (ATTACKS / "stall_command_pipe.py").read_text()
    ev = evaluate(relu_task, candidate_from_source(source, relu_task, name="stall_command_pipe"), device="cpu",
                  settings=settings, trusted=True)
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.TIMEOUT), ev.reason
    assert time.monotonic() - started < 90


@pytest.mark.parametrize("name", ["burn_in_a_syscall_while_stopped.py", "ptrace_restart_while_stopped.py"])
def test_work_that_runs_on_while_the_side_is_held_stopped_is_caught(relu_task, name):
    """Fifth red-team pass: a thread inside one long syscall, or one restarted by its own tracer, ran on the
    timing CPU through the incumbent's blocks while its side read as stopped (KEEP about 2x with relu). The
    judge now reads the CPU time its stopped processes used between freeze and thaw."""
    ev = _judge(relu_task, name)
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason
    assert "held it stopped" in ev.reason, ev.reason


@pytest.mark.parametrize("name", ["oversized_input_description.py", "many_input_regions.py"])
def test_inputs_handed_back_must_be_the_calls_own(relu_task, name):
    """Fifth red-team pass: a call's "inputs after the call" were any regions of the mailbox: one sized past
    64 bits crashed the judge (GuardInternalError), eight of 64 MiB each were copied into the reference side's
    mailbox before anything refused them."""
    started = time.monotonic()
    ev = _judge(relu_task, name)
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.REWARD_HACK), ev.reason
    assert time.monotonic() - started < 60

