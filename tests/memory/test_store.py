import sqlite3

import pytest

from kernelarc.guard.types import Verdict
from kernelarc.memory import (
    AgentState, CampaignMeta, CampaignStatus, FindingKind, LlmCallRecord, RetentionPolicy, Store,
)

from .factories import KERNEL_TYPE, accept, digest, keep, open_campaign, propose, reject, revert, source


@pytest.fixture
def store(tmp_path):
    with open_campaign(tmp_path / "campaign.sqlite", agents=("a0", "a1")) as s:
        yield s


# -- campaign meta and agents --------------------------------------------------------------------


def test_meta_round_trips_and_survives_reopening(tmp_path):
    path = tmp_path / "c.sqlite"
    meta = CampaignMeta(task_name="matmul", task_path="/tasks/mm.py", kernel_type="gemm", seed=7,
                        options={"agents": 4, "budget": 100}, retention=RetentionPolicy.parse("16/8"))
    with Store(path) as store:
        assert store.get_meta() is None
        store.put_meta(meta)
        store.put_meta(meta.model_copy(update={"status": CampaignStatus.FINISHED, "stop_reason": "budget"}))
    with Store(path) as store:
        got = store.get_meta()
    assert got == meta.model_copy(update={"status": CampaignStatus.FINISHED, "stop_reason": "budget"})


def test_register_agent_is_idempotent_and_keeps_state_for_resume(store):
    store.update_agent("a0", AgentState(plateau=3, drafts=1))
    again = store.register_agent("a0", "tiling", "builtin")
    assert again.state == AgentState(plateau=3, drafts=1)
    assert [a.id for a in store.agents()] == ["a0", "a1"]


def test_register_agent_refuses_a_changed_strategy(store):
    with pytest.raises(ValueError, match="agent 'a0' exists with strategy 'tiling'"):
        store.register_agent("a0", "fusion", "builtin")


def test_unknown_agent_is_a_lookup_error(store):
    with pytest.raises(LookupError, match="no agent 'zz'"):
        store.agent("zz")
    with pytest.raises(LookupError, match="no agent 'zz'"):
        store.update_agent("zz", AgentState())


# -- candidates --------------------------------------------------------------------------------


def test_identical_candidates_are_stored_once(store):
    text = source(1)
    first = store.add_candidate(hash=digest(text), source=text, agent_id="a0", strategy="tiling", claim="c",
                                language="pytorch", kind="module")
    second = store.add_candidate(hash=digest(text), source=text + "# comment", agent_id="a1", strategy="fusion",
                                 claim="other", language="pytorch", kind="module")
    assert first == (first[0], True)
    assert second == (first[0], False)
    stored = store.candidate(first[0])
    assert (stored.agent_id, stored.strategy, stored.source) == ("a0", "tiling", text)
    assert store.candidate_by_hash(digest(text)) == stored
    assert store.counts().candidates == 1


def test_candidate_caps_are_refused_quoting_the_length(store):
    with pytest.raises(ValueError, match="claim has 161 characters"):
        store.add_candidate(hash="h", source="s", agent_id="a0", strategy="tiling", claim="c" * 161,
                            language="pytorch", kind="module")
    with pytest.raises(ValueError, match="strategy has 200 characters"):
        store.add_candidate(hash="h", source="s", agent_id="a0", strategy="s" * 200, claim="c",
                            language="pytorch", kind="module")
    assert store.candidates() == []


def test_lineage_is_kept(store):
    parent = propose(store, 1)
    text = source(2)
    child, _ = store.add_candidate(hash=digest(text), source=text, agent_id="a0", strategy="tiling", claim="c",
                                   language="triton", kind="module", parent_id=parent)
    assert store.candidate(child).parent_id == parent
    assert [c.id for c in store.candidates("a0")] == [parent, child]


def test_pending_candidates_are_those_without_an_evaluation(store):
    judged, waiting = propose(store, 1), propose(store, 2)
    store.record_verdict(judged, reject(), against_incumbent_id=None)
    assert [c.id for c in store.pending_candidates()] == [waiting]


# -- record_verdict ----------------------------------------------------------------------------


def test_keep_writes_evaluation_agent_state_and_win_together(store):
    cid = propose(store, 1)
    outcome = store.record_verdict(cid, keep(speedup=1.7, latency_ms=0.5), against_incumbent_id=None,
                                   agent_state=AgentState(incumbent_id=cid), reflection="BLOCK_M 128 on 4096^2")
    assert outcome.evaluation.verdict is Verdict.KEEP and outcome.evaluation.agent_id == "a0"
    assert store.evaluation(cid) == outcome.evaluation
    assert store.agent("a0").state.incumbent_id == cid
    assert outcome.finding.kind is FindingKind.WIN and outcome.finding.speedup == 1.7
    assert (outcome.finding.kernel_type, outcome.finding.task, outcome.finding.strategy) == (KERNEL_TYPE, "matmul", "tiling")
    assert store.findings() == [outcome.finding]


def test_accept_is_stored_but_teaches_nothing(store):
    cid = propose(store, 1)
    outcome = store.record_verdict(cid, accept(), against_incumbent_id=None, agent_state=AgentState(plateau=1))
    assert outcome.finding is None and store.findings() == []
    assert store.agent("a0").state.plateau == 1


def test_reject_and_revert_teach_traps(store):
    store.record_verdict(propose(store, 1), reject(), against_incumbent_id=None)
    store.record_verdict(propose(store, 2), revert(), against_incumbent_id=None)
    assert [(f.kind, f.verdict) for f in store.findings()] == [(FindingKind.TRAP, Verdict.REJECT),
                                                                (FindingKind.TRAP, Verdict.REVERT)]


def test_a_failure_mid_verdict_writes_nothing(store, tmp_path):
    """The finding insert fails after the evaluation and agent state were written: all three roll back."""
    cid = propose(store, 1)
    saboteur = sqlite3.connect(tmp_path / "campaign.sqlite")
    saboteur.execute("CREATE TRIGGER full_disk BEFORE INSERT ON findings BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    saboteur.commit()
    with pytest.raises(sqlite3.IntegrityError, match="disk full"):
        store.record_verdict(cid, keep(), against_incumbent_id=None, agent_state=AgentState(incumbent_id=cid, plateau=0))
    assert store.evaluation(cid) is None
    assert store.agent("a0").state == AgentState()
    assert store.findings() == []
    assert [c.id for c in store.pending_candidates()] == [cid]
    saboteur.execute("DROP TRIGGER full_disk")
    saboteur.commit()
    assert store.record_verdict(cid, keep(), against_incumbent_id=None).finding is not None


def test_a_bad_agent_state_rolls_back_the_evaluation(store):
    cid = propose(store, 1)
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
        store.record_verdict(cid, keep(), against_incumbent_id=None, agent_state=AgentState(incumbent_id=999))
    assert store.evaluation(cid) is None and store.findings() == []


def test_a_candidate_is_evaluated_once(store):
    cid = propose(store, 1)
    store.record_verdict(cid, reject(), against_incumbent_id=None)
    with pytest.raises(ValueError, match=f"candidate #{cid} already has an evaluation"):
        store.record_verdict(cid, keep(), against_incumbent_id=None)


def test_record_verdict_needs_a_known_candidate_and_the_meta(store, tmp_path):
    with pytest.raises(LookupError, match="no candidate #42"):
        store.record_verdict(42, keep(), against_incumbent_id=None)
    with Store(tmp_path / "bare.sqlite") as bare:
        cid, _ = bare.add_candidate(hash="h", source="s", agent_id=None, strategy="", claim="", language="pytorch",
                                    kind="module")
        with pytest.raises(RuntimeError, match="call put_meta first"):
            bare.record_verdict(cid, keep(), against_incumbent_id=None)


def test_state_for_a_user_candidate_is_refused(store):
    cid = propose(store, 1, agent_id=None)
    with pytest.raises(LookupError, match="has no agent"):
        store.record_verdict(cid, keep(), against_incumbent_id=None, agent_state=AgentState())
    assert store.evaluation(cid) is None


def test_retention_two_two_is_applied_on_every_verdict(tmp_path):
    with open_campaign(tmp_path / "c.sqlite", retention=RetentionPolicy.parse("2/2")) as store:
        wins = [store.record_verdict(propose(store, n), keep(speedup=speedup), against_incumbent_id=None)
                for n, speedup in enumerate([1.3, 2.5, 1.1, 1.9])]
        assert [w.evicted for w in wins] == [(), (), (wins[2].finding.id,), (wins[0].finding.id,)]
        for n in range(10, 14):
            store.record_verdict(propose(store, n), reject(reason=f"wrong #{n}"), against_incumbent_id=None)
        assert sorted(f.speedup for f in store.findings(kind=FindingKind.WIN)) == [1.9, 2.5]
        assert [f.reason for f in store.findings(kind=FindingKind.TRAP)] == ["wrong #12", "wrong #13"]


def test_a_win_below_every_kept_one_is_evicted_at_once(tmp_path):
    with open_campaign(tmp_path / "c.sqlite", retention=RetentionPolicy.parse("1")) as store:
        store.record_verdict(propose(store, 1), keep(speedup=2.0), against_incumbent_id=None)
        outcome = store.record_verdict(propose(store, 2), keep(speedup=1.2), against_incumbent_id=None)
    assert outcome.evicted == (outcome.finding.id,)


def test_unbounded_keeps_every_finding(tmp_path):
    with open_campaign(tmp_path / "c.sqlite", retention=RetentionPolicy.parse("unbounded")) as store:
        for n in range(20):
            store.record_verdict(propose(store, n), keep(speedup=1.0 + n / 10) if n % 2 else reject(),
                                 against_incumbent_id=None)
        assert len(store.findings()) == 20


# -- leaderboard and counters ------------------------------------------------------------------


def test_leaderboard_has_each_agents_fastest_keep_and_the_leader(store):
    assert store.leader() is None and store.leaderboard() == []
    a0_slow = propose(store, 1, agent_id="a0")
    a0_fast = propose(store, 2, agent_id="a0")
    a1_best = propose(store, 3, agent_id="a1", strategy="fusion")
    a1_accept = propose(store, 4, agent_id="a1", strategy="fusion")
    store.record_verdict(a0_slow, keep(latency_ms=0.9), against_incumbent_id=None)
    store.record_verdict(a0_fast, keep(latency_ms=0.6), against_incumbent_id=a0_slow)
    store.record_verdict(a1_best, keep(latency_ms=0.4), against_incumbent_id=None)
    store.record_verdict(a1_accept, accept(latency_ms=0.1), against_incumbent_id=a1_best)
    assert [(e.agent_id, e.candidate_id) for e in store.leaderboard()] == [("a1", a1_best), ("a0", a0_fast)]
    assert store.leader().candidate_id == a1_best
    assert store.evaluation(a0_fast).against_incumbent_id == a0_slow


def test_counts_per_agent_and_verdict(store):
    store.record_verdict(propose(store, 1, agent_id="a0"), keep(), against_incumbent_id=None)
    store.record_verdict(propose(store, 2, agent_id="a0"), reject(), against_incumbent_id=None)
    store.record_verdict(propose(store, 3, agent_id="a1"), reject(), against_incumbent_id=None)
    propose(store, 4, agent_id="a1")
    counts = store.counts()
    assert (counts.candidates, counts.evaluated, counts.pending) == (4, 3, 1)
    assert counts.verdicts == {"a0": {Verdict.KEEP: 1, Verdict.REJECT: 1}, "a1": {Verdict.REJECT: 1}}
    assert [e.verdict for e in store.evaluations("a0")] == [Verdict.KEEP, Verdict.REJECT]


# -- logs --------------------------------------------------------------------------------------


def test_events_are_ordered_and_filterable(store):
    first = store.log_event("submitted", "a0", {"candidate": 1})
    store.log_event("plateau", "a1", {"count": 3})
    store.log_event("stop", payload={"reason": "budget"})
    assert [e.kind for e in store.events()] == ["submitted", "plateau", "stop"]
    assert [e.payload for e in store.events(agent_id="a1")] == [{"count": 3}]
    assert [e.kind for e in store.events(after_id=first)] == ["plateau", "stop"]
    assert store.events(kind="stop")[0].agent_id is None


def test_llm_calls_are_kept_for_audit(store):
    ok = LlmCallRecord(agent_id="a0", step=1, model="m", prompt="make it fast", response="```python ...```",
                       tokens_in=120, tokens_out=300, cost_usd=0.01)
    failed = LlmCallRecord(agent_id="a1", step=1, model="m", prompt="p", error="rate limited")
    ok_id = store.log_llm_call(ok)
    store.log_llm_call(failed)
    assert store.llm_calls("a0") == [ok.model_copy(update={"id": ok_id})]
    assert [c.error for c in store.llm_calls()] == [None, "rate limited"]
