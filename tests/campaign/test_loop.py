"""The campaign loop on the mixed campaign: parallel agents, every verdict, the rule, dedup, budget, findings."""

from __future__ import annotations

import json

from kernelarc.campaign import StopReason
from kernelarc.guard import Status, Verdict
from kernelarc.memory import FindingKind
from kernelarc.memory.records import CampaignStatus
from kernelarc.memory.text import REFLECTION_CAP

from campaign.mixed import AGENTS, BUDGET, LONG_REFLECTION, contexts_path
from campaign.runs import open_store, rule_verdict, source

A0, A1, A2 = "a0-reduction", "a1-memory", "a2-fusion"


def ids_by_name(store) -> dict[str, int]:
    """Fixture candidate name -> store id, for the candidates of the mixed campaign."""
    names = ("fast", "fast_alt", "wrong", "loop_rows", "gated", "loop_twice", "slow_stack")
    by_source = {c.source: c.id for c in store.candidates()}
    return {n: by_source[source(n)] for n in names if source(n) in by_source}


def test_agents_propose_at_once_and_each_earns_its_verdict(mixed):
    store = open_store(mixed.run_dir)
    assert store.events("agent_error") == []  # the rendezvous held: all three were proposing together
    ids = ids_by_name(store)
    got = {name: store.evaluation(cid).evaluation for name, cid in ids.items()}
    assert got["fast"].verdict is Verdict.KEEP  # by how much is CPU timing: never asserted
    assert (got["wrong"].verdict, got["wrong"].status) == (Verdict.REJECT, Status.INCORRECT_NUMERICAL)
    assert (got["gated"].verdict, got["gated"].status) == (Verdict.REJECT, Status.STATIC_REJECT)
    assert got["loop_rows"].verdict is Verdict.REVERT and got["loop_rows"].speedup < 1
    # fast_alt is the same computation written differently: judged against a0's incumbent, fast
    assert store.evaluation(ids["fast_alt"]).against_incumbent_id == ids["fast"]
    assert got["fast_alt"].verdict is not Verdict.REJECT


def test_every_benchmarked_verdict_follows_the_rule(mixed):
    store = open_store(mixed.run_dir)
    for record in store.evaluations():
        ev = record.evaluation
        if ev.verdict is not Verdict.REJECT:
            assert ev.verdict is rule_verdict(ev), (record.candidate_id, ev.reason)


def test_incumbents_follow_keeps_and_the_leaderboard_is_shared(mixed):
    store = open_store(mixed.run_dir)
    ids = ids_by_name(store)
    alt_kept = store.evaluation(ids["fast_alt"]).evaluation.verdict is Verdict.KEEP
    assert store.agent(A0).state.incumbent_id == ids["fast_alt" if alt_kept else "fast"]
    assert store.agent(A1).state.incumbent_id is None and store.agent(A2).state.incumbent_id is None
    summary = json.loads((mixed.run_dir / "summary.json").read_text())
    assert summary["best"]["agent"] == A0


def test_a_duplicate_is_evaluated_once_and_not_counted(mixed):
    store = open_store(mixed.run_dir)
    fast = ids_by_name(store)["fast"]
    assert [c.id for c in store.candidates() if c.source == source("fast")] == [fast]
    assert [e.candidate_id for e in store.evaluations()].count(fast) == 1
    (dup,) = store.events("duplicate")
    assert (dup.agent_id, dup.payload["candidate_id"], dup.payload["step"]) == (A1, fast, 1)
    assert store.agent(A1).state.steps == 2  # the duplicate still used a step
    # stored, not only in memory: a resumed campaign retires an agent after as many idle steps as an unbroken one
    assert store.agent(A1).state.idle == 1 and store.agent(A0).state.idle == 0


def test_budget_counts_candidates_that_reached_the_guard(mixed):
    store = open_store(mixed.run_dir)
    agent_candidates = [c for c in store.candidates() if c.agent_id is not None]
    assert len(agent_candidates) == BUDGET  # 6 proposals, one a duplicate
    assert store.counts().pending == 0
    assert store.get_meta().stop_reason == StopReason.BUDGET.value
    assert store.get_meta().status is CampaignStatus.FINISHED
    summary = json.loads((mixed.run_dir / "summary.json").read_text())
    assert (summary["stop_reason"], summary["candidates"], summary["budget"]) == ("budget", BUDGET, BUDGET)
    assert sum(summary["verdicts"].values()) == BUDGET
    assert [a["steps"] for a in summary["agents"]] == [2] * AGENTS  # the third steps were never asked for


def test_findings_come_only_from_verdicts_within_caps(mixed):
    store = open_store(mixed.run_dir)
    findings = store.findings()
    verdict_of = {r.candidate_id: r.evaluation.verdict for r in store.evaluations()}
    expected_kind = {Verdict.KEEP: FindingKind.WIN, Verdict.REJECT: FindingKind.TRAP, Verdict.REVERT: FindingKind.TRAP}
    for f in findings:
        assert expected_kind.get(verdict_of[f.candidate_id]) is f.kind, f
        assert len(f.reflection) <= REFLECTION_CAP
    wins = {f.candidate_id for f in findings if f.kind is FindingKind.WIN}
    # Only agents' candidates make findings; a baseline that CPU noise judged KEEP makes none.
    by_agents = {c.id for c in store.candidates() if c.agent_id is not None}
    assert wins == {cid for cid, v in verdict_of.items() if v is Verdict.KEEP and cid in by_agents}  # retention keeps 8
    (trap,) = [f for f in findings if f.kind is FindingKind.TRAP]  # retention keeps 1 trap: the newest
    assert trap.candidate_id == ids_by_name(store)["gated"]
    assert trap.reflection.startswith(LONG_REFLECTION[:100]) and len(trap.reflection) < len(LONG_REFLECTION)


def test_agents_see_their_verdicts_verified_findings_and_others_bests(mixed):
    """Round 2's contexts rest only on round 1's verdicts: what the guard judged, nothing else."""
    store = open_store(mixed.run_dir)
    ids = ids_by_name(store)
    contexts = json.loads(contexts_path(mixed.run_dir).read_text())
    assert [[c["step"] for c in per_agent] for per_agent in contexts] == [[0, 1]] * AGENTS
    first = contexts[1][0]
    assert first["leaderboard"] == [["baseline:eager", 1]] and first["findings"] == [] and first["last_verdicts"] == []
    second = {agent: contexts[i][1] for i, agent in enumerate((A0, A1, A2))}
    assert second[A0]["incumbent_id"] == ids["fast"]
    assert second[A1]["last_verdicts"] == [[ids["wrong"], "REJECT"]]
    assert second[A2]["last_verdicts"] == [[ids["loop_rows"], "REVERT"]]
    for agent in (A1, A2):  # a0's best is on the others' leaderboard, first; nobody sees itself there
        assert second[agent]["leaderboard"][0] == [A0, ids["fast"]]
    assert all(e[0] != A0 for e in second[A0]["leaderboard"])
    judged_in_round_one = {1, ids["fast"], ids["wrong"], ids["loop_rows"]}
    for per_agent in second.values():
        kinds = {tuple(f) for f in per_agent["findings"]}
        assert ("win", ids["fast"]) in kinds
        assert {cid for _, cid in kinds} <= judged_in_round_one
