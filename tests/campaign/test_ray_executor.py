"""`--executor ray` on a real local Ray cluster (ray.cluster_utils), loopback only, with the CPU
resource `kernelarc_cpu` standing in for GPUs: the built-in agents on a tiny task, small budgets.

The cluster: a head node without `kernelarc_cpu` (where the driver connects; it must never judge)
and two judging nodes. Marked `ray` (`-m ray` selects these, `-m "not ray"` skips them) and `slow`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelarc.campaign import StopReason, resume, start
from kernelarc.campaign.executor import ExecutorSpec
from kernelarc.campaign.ray_executor import CPU_RESOURCE
from kernelarc.campaign.run import DB_NAME
from kernelarc.cli.main import run_app

from campaign.runs import REPO, open_store, options
from campaign.test_resume import judged_and_pending

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.heavy]

RELU = REPO / "examples" / "kernelbench" / "relu_small.py"
LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Set to 0, Ray keeps 127.0.0.1 as an address instead of swapping in the machine's public one (read by
the nodes and by a driver subprocess as they import ray; this process's copy is patched)."""
JUDGE = {"num_cpus": 1, "resources": {CPU_RESOURCE: 1}, "object_store_memory": 80 * 2**20,
         "node_ip_address": "127.0.0.1"}
"""A judging node: one evaluation at a time, a small object store."""
DEADLINE_S = 300.0
"""Longest wait for a campaign to reach a point of a test (worker start-up is slow on a loaded CPU)."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Head (no judging resource) plus two judging nodes, on loopback; the tests' campaigns join it."""
    from ray.cluster_utils import Cluster

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(LOOPBACK, "0")
        mp.setattr(ray._private.ray_constants, "ENABLE_RAY_CLUSTER", False)  # ray was imported before the variable
        # the nodes start before any test's KERNELARC_HOME: give them one that is not the user's
        mp.setenv("KERNELARC_HOME", str(tmp_path_factory.mktemp("ray_nodes_home")))
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "include_dashboard": False, "object_store_memory": 80 * 2**20,
            "node_ip_address": "127.0.0.1"})
        for _ in range(2):
            cluster.add_node(**JUDGE)
        cluster.wait_for_nodes()
        try:
            yield cluster
        finally:
            ray.shutdown()
            cluster.shutdown()


def _spec(cluster) -> ExecutorSpec:
    return ExecutorSpec(kind="ray", ray_address=cluster.address)


def _judging_nodes(cluster) -> set[str]:
    return {node.node_id for node in cluster.list_all_nodes() if node is not cluster.head_node}


def _nodes_of(store) -> list[str]:
    return [r.evaluation.node.split("/")[0] for r in store.evaluations()]


def test_a_campaign_spreads_its_evaluations_over_both_judging_nodes(cluster, tmp_path):
    result = start(RELU, options(agents=2, budget=2), tmp_path / "run", executor=_spec(cluster))

    store = open_store(tmp_path / "run")
    assert result.stop_reason is StopReason.BUDGET and store.pending_candidates() == []
    assert len(store.evaluations()) == 3  # the eager baseline, then one round of two agents at once
    assert all(r.evaluation.node.endswith("/cpu") for r in store.evaluations())
    # the round's two evaluations ran at once, one per judging node; the head (no kernelarc_cpu) never judged
    assert set(_nodes_of(store)[1:]) == _judging_nodes(cluster) and cluster.head_node.node_id not in _nodes_of(store)
    (event,) = store.events("executor")
    assert event.payload == {"kind": "ray", "devices": ["cpu"], "ray_address": cluster.address}
    held = result.summary["guard"]["lock_held_s_by_device"]
    assert {k.split("/")[0] for k in held} == _judging_nodes(cluster) and all(s > 0 for s in held.values())


def _side_pid_under(ancestor: int) -> int | None:
    """A guard side process descending from process `ancestor` (a node's raylet), from /proc."""
    parents, sides = {}, []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if b"kernelarc.guard.side" in (entry / "cmdline").read_bytes():
                sides.append(int(entry.name))
        except (OSError, ValueError, IndexError):  # the process ended meanwhile
            continue
    for pid in sides:
        up = pid
        while up in parents and up != ancestor:
            up = parents[up]
        if up == ancestor:
            return pid
    return None


def _wait_for(what: str, condition, proc: subprocess.Popen):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and proc.poll() is None:
        if found := condition():
            return found
        time.sleep(0.05)
    raise AssertionError(f"never saw {what}; rc={proc.poll()}, stderr={proc.stderr.read()[-3000:]!r}")


def test_a_node_lost_mid_evaluation_then_a_killed_driver_lose_nothing(cluster, tmp_path):
    run_dir, db = tmp_path / "run", tmp_path / "run" / DB_NAME
    cmd = [sys.executable, "-c", "from kernelarc.cli.main import main; main()", "optimize", str(RELU),
           "--agents", "2", "--budget", "4", "--no-compile-baseline", "--rounds", "2", "--device", "cpu",
           "--fresh-memory", "--executor", "ray", "--ray-address", cluster.address, "--out", str(run_dir)]
    proc = subprocess.Popen(cmd, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    raylets = {node: node.all_processes["raylet"][0].process.pid
               for node in cluster.list_all_nodes() if node is not cluster.head_node}
    try:
        # 1. a judging node dies while one of its evaluations runs (a guard side is up under its raylet)
        victim = _wait_for("a side process on a judging node", lambda: next(
            (node for node, pid in raylets.items() if _side_pid_under(pid)), None), proc)
        cluster.remove_node(victim, allow_graceful=False)
        # 2. the driver is killed -9 once the lost evaluation was judged again elsewhere and a round waits
        _wait_for("the loss recorded, a candidate judged after it and one pending", lambda: (
            db.exists() and open_store(run_dir).events("evaluation_lost")
            and judged_and_pending(db)[0] >= 1 and judged_and_pending(db)[1] >= 1), proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stderr.close()
        cluster.add_node(**JUDGE)  # back to two judging nodes for the other tests

    killed = open_store(run_dir)
    before = {r.candidate_id: r.evaluation for r in killed.evaluations()}
    pending = [c.id for c in killed.pending_candidates()]
    (lost, *_) = killed.events("evaluation_lost")
    assert lost.payload["attempt"] == 1 and lost.payload["max_attempts"] == 3 and pending
    assert victim.node_id not in _nodes_of(killed)  # its evaluation was lost and judged again elsewhere

    result = resume(run_dir, executor=_spec(cluster))

    store = open_store(run_dir)
    assert result.stop_reason is StopReason.BUDGET and store.pending_candidates() == []
    after = {r.candidate_id: r.evaluation for r in store.evaluations()}
    assert {cid: after[cid] for cid in before} == before  # nothing recorded before the kills changed or went
    assert set(pending) <= set(after) and len(store.candidates()) == len(after) == 5  # baseline + budget, once each
    assert store.events("resume")[0].payload["pending"] == pending
    assert json.loads((run_dir / "summary.json").read_text())["candidates"] == 4


def test_the_time_limit_cuts_an_evaluation_running_on_a_node(cluster, tmp_path):
    result = start(RELU, options(agents=1, budget=1, time_limit_s=2), tmp_path / "run", executor=_spec(cluster))

    store = open_store(tmp_path / "run")
    assert result.stop_reason is StopReason.TIME_LIMIT and store.evaluations() == []  # cut, not judged
    (cut,) = store.events("cut")
    assert cut.payload["baseline"] == "eager" and "time limit" in cut.payload["why"]


def test_cuda_on_a_cluster_without_gpus_is_one_line_and_exit_2(cluster, tmp_path, capsys):
    code = run_app(["optimize", str(RELU), "--executor", "ray", "--ray-address", cluster.address, "--device", "cuda",
                    "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and "has no GPU" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_bench_runs_one_campaign_per_judging_node_at_a_time(cluster, tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("relu_a", "relu_b"):
        shutil.copy(RELU, suite / f"{name}.py")
    out = tmp_path / "bench"
    code = run_app(["bench", str(suite), "--budget", "1", "--agents", "1", "--device", "cpu", "--rounds", "1",
                    "--no-compile-baselines", "--executor", "ray", "--ray-address", cluster.address,
                    "--out", str(out)])

    rows = {row["task"]: row for row in json.loads((out / "results.json").read_text())["rows"]}
    assert set(rows) == {"relu_a", "relu_b"} and all(row["status"] == "complete" for row in rows.values())
    spans = {}
    for name, row in rows.items():
        store = open_store(Path(row["run_dir"]))
        records = store.evaluations()
        assert all(r.evaluation.node.split("/")[0] in _judging_nodes(cluster) for r in records)
        started = store.events(kind="executor")[0].created  # logged as the campaign starts, before any judging
        spans[name] = (started, records[-1].created)
    # the two campaigns ran at the same time: each started before the other recorded its last verdict
    # (not "each recorded a verdict before...": a node's cold judge start can take longer than a whole
    # campaign on the other node on a loaded 2-core machine)
    assert spans["relu_a"][0] < spans["relu_b"][1] and spans["relu_b"][0] < spans["relu_a"][1]
    assert code in (0, 1)  # 1: no agent candidate beat eager on this CPU, which this test does not judge
