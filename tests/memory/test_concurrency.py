"""Several writers in one process, a reader in another, and a process killed in the middle of a verdict."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import kernelarc
from kernelarc.guard.types import Verdict
from kernelarc.memory import AgentState, Store

from .factories import keep, open_campaign, propose, reject

SRC = Path(kernelarc.__file__).resolve().parents[1]


def _python(script: str, *args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env, text=True, **popen)


def test_two_threads_share_one_store(tmp_path):
    store = open_campaign(tmp_path / "c.sqlite", agents=("a0", "a1"))
    errors = []

    def work(agent_id, first):
        try:
            for n in range(first, first + 40):
                cid = propose(store, n, agent_id=agent_id)
                store.log_event("submitted", agent_id, {"candidate": cid})
                store.record_verdict(cid, keep() if n % 3 == 0 else reject(), against_incumbent_id=None,
                                     agent_state=AgentState(plateau=n % 5))
        except Exception as e:  # collected so the main thread can fail with it
            errors.append(e)

    threads = [threading.Thread(target=work, args=("a0", 0)), threading.Thread(target=work, args=("a1", 1000))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    counts = store.counts()
    assert (counts.candidates, counts.evaluated, counts.pending) == (80, 80, 0)
    assert len(store.events(kind="submitted")) == 80
    store.close()


def test_two_connections_in_two_threads_wait_for_each_other(tmp_path):
    path = tmp_path / "c.sqlite"
    open_campaign(path).close()
    stores = [Store(path), Store(path)]
    threads = [threading.Thread(target=lambda s=s, k=k: [s.log_event("tick", payload={"n": n, "k": k}) for n in range(100)])
               for k, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stores[0].events(kind="tick")) == 200
    for s in stores:
        s.close()


WRITER = """
import sqlite3, sys
from kernelarc.memory import Store
path, n = sys.argv[1], int(sys.argv[2])
store = Store(path)
for i in range(n):
    store.add_candidate(hash=f"h{i}", source=f"s{i}", agent_id=None, strategy="", claim="", language="pytorch",
                        kind="module")
store.close()
held = sqlite3.connect(path, isolation_level=None)  # a writer caught in the middle of a transaction
held.execute("BEGIN IMMEDIATE")
held.execute("INSERT INTO events (kind, agent_id, payload, created) VALUES ('late', NULL, '{}', '2026-01-01T00:00:00Z')")
print("holding", flush=True)
sys.stdin.readline()
held.execute("COMMIT")
"""


def test_another_process_reads_while_this_one_writes(tmp_path):
    path, n = tmp_path / "c.sqlite", 200
    Store(path).close()
    writer = _python(WRITER, str(path), str(n), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    reader = Store(path)
    seen = [reader.counts().candidates]
    while seen[-1] < n:
        seen.append(reader.counts().candidates)
        assert writer.poll() is None, "writer exited before writing everything"
    assert seen == sorted(seen)
    assert writer.stdout.readline().strip() == "holding"
    assert reader.events() == []  # the open transaction neither blocks this read nor shows through
    writer.stdin.write("go\n")
    writer.stdin.flush()
    assert writer.wait(timeout=30) == 0
    assert [e.kind for e in reader.events()] == ["late"]
    reader.close()


KILLED = """
import os, signal, sys
from kernelarc.guard.types import Evaluation
from kernelarc.memory import AgentState, Store
store = Store(sys.argv[1])
store._conn.create_function("die", 0, lambda: os.kill(os.getpid(), signal.SIGKILL))
store._conn.execute("CREATE TEMP TRIGGER crash AFTER INSERT ON main.findings BEGIN SELECT die(); END")
evaluation = Evaluation.model_validate_json(sys.argv[3])
store.record_verdict(int(sys.argv[2]), evaluation, against_incumbent_id=None, agent_state=AgentState(plateau=5))
"""


def test_a_process_killed_mid_verdict_leaves_the_candidate_pending(tmp_path):
    path = tmp_path / "c.sqlite"
    with open_campaign(path) as store:
        judged, killed = propose(store, 1), propose(store, 2)
        store.record_verdict(judged, reject(), against_incumbent_id=None, agent_state=AgentState(plateau=1))
    child = _python(KILLED, str(path), str(killed), keep().model_dump_json())
    assert child.wait(timeout=60) == -9
    with Store(path) as store:
        assert [c.id for c in store.pending_candidates()] == [killed]
        assert store.evaluation(killed) is None
        assert store.agent("a0").state == AgentState(plateau=1)
        assert [f.verdict for f in store.findings()] == [Verdict.REJECT]
        store.record_verdict(killed, keep(), against_incumbent_id=None)  # resume: judge it again
        assert store.pending_candidates() == []


KILLED_IN_TRANSACTION = """
import os, signal, sys
from kernelarc.memory import Store
store = Store(sys.argv[1])
with store.transaction():
    store.log_event("first")
    assert [e.kind for e in store.events()] == ["first"]  # a read inside sees the writes so far
    store.log_event("second")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_process_killed_inside_a_transaction_keeps_none_of_its_writes(tmp_path):
    path = tmp_path / "c.sqlite"
    open_campaign(path).close()
    child = _python(KILLED_IN_TRANSACTION, str(path))
    assert child.wait(timeout=60) == -9
    with Store(path) as store:
        assert store.events() == []
