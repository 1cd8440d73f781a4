"""Kernels that passed once and then fail (campaign/disqualify.py): whose failure it was, and the failing kernel
out of the race. The sixth red-team pass's candidate raised when loaded again: every later candidate of its agent
was REJECTed in its place, and it stayed the winner.

The failing kernels' first verdicts are recorded evaluations (a KEEP a real guard would give such code only once);
everything judged afterwards is judged for real, on the CPU. No timing is asserted.
"""

from __future__ import annotations

import asyncio
import hashlib

from kernelarc.campaign import AgentSlot, Campaign
from kernelarc.campaign.disqualify import culprit
from kernelarc.campaign.executor import LocalExecutor
from kernelarc.campaign.summary import final_measurements
from kernelarc.guard import GuardSettings, Status, Verdict
from kernelarc.memory import LongTermMemory
from kernelarc.strategies import get_strategy
from kernelarc.task.loader import load_task

from campaign.runs import SLOW_SUM, options, proposal, scripted_agents, source
from memory.factories import accept, keep, open_campaign

A0 = "a0-reduction"
RAISES = ("import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
          "        raise RuntimeError('fails every time after its first evaluation')\n")


def _add(store, text: str, agent_id: str | None, claim: str) -> int:
    cid, _ = store.add_candidate(hash=hashlib.sha256(text.encode()).hexdigest(), source=text, agent_id=agent_id,
                                 strategy="reduction" if agent_id else "baseline", claim=claim, language="pytorch",
                                 kind="module")
    return cid


def _campaign(tmp_path, *steps, executor=None):
    """A campaign on slow_sum whose agent a0 holds a kernel that now raises, KEPT at 14x; a0 proposes `steps`."""
    store = open_campaign(tmp_path / "campaign.db", agents=())
    store.register_agent(A0, "reduction", "scripted")
    broken = _add(store, RAISES, A0, "passed once")
    store.record_verdict(broken, keep(14.0), against_incumbent_id=None, agent_state=store.agent(A0).state.model_copy(
        update={"incumbent_id": broken, "incumbent_speedup": 14.0}))
    (agent,) = scripted_agents(list(steps))
    slot = AgentSlot(id=A0, index=0, strategy=get_strategy("reduction"), agent=agent)
    task = load_task(SLOW_SUM)
    executor = executor or LocalExecutor(task, ["cpu"], GuardSettings(rounds=2, cpu_iterations=3, warmup=1))
    campaign = Campaign(task, options(agents=1, strategies=("reduction",), budget=3), store, executor, [slot], None)
    return campaign, store, broken


def _with_eager(campaign, store) -> int:
    """An eager baseline for the campaign: any correct code stands for it."""
    eager = _add(store, source("slow_stack"), None, "baseline: eager")
    store.record_verdict(eager, accept(1.0), against_incumbent_id=None)
    campaign.baselines = {"eager": eager}
    return eager


def _incumbent_failed():
    return keep(1.0).model_copy(update={"correct": False, "status": Status.INCUMBENT_FAILED, "verdict": Verdict.REJECT,
                                        "speedup": None, "reason": "the incumbent failed during timing: once"})


def _culprit(campaign, incumbent_id: int) -> int | None:
    """Whose failure it was when candidate #99 saw `incumbent_id` fail beside it (judged for real)."""
    try:
        return asyncio.run(culprit(campaign, 99, incumbent_id, _incumbent_failed(), slot=0, cutoff=None))
    finally:
        campaign.executor.close()


def test_an_incumbent_that_fails_alone_is_disqualified_and_the_candidate_judged_against_the_reference(tmp_path):
    campaign, store, broken = _campaign(tmp_path, proposal("fast"))
    try:
        asyncio.run(campaign.run())
    finally:
        campaign.executor.close()
    fast = next(c.id for c in store.candidates() if c.source == source("fast"))
    record = store.evaluation(fast)
    assert record.against_incumbent_id is None and record.evaluation.correct, record.evaluation.reason
    (event,) = store.events("disqualified")
    assert event.payload["candidate_id"] == broken and event.payload["beside"] == fast
    assert "the incumbent failed" in event.payload["why"]
    assert broken in campaign.disqualified and broken not in [e.candidate_id for e in campaign.leaderboard()]
    assert store.agent(A0).state.incumbent_id != broken
    # its "win" was contradicted: no agent is shown it, and no later campaign learns it
    assert broken in [f.candidate_id for f in store.findings()]
    assert broken not in [f.candidate_id for f in campaign._recall("reduction")]
    longterm = LongTermMemory(tmp_path / "longterm.db")
    longterm.absorb(store, leave_out=frozenset(campaign.disqualified))
    assert broken not in [f.candidate_id for f in longterm.findings()] and longterm.findings()


def test_a_leader_that_fails_its_final_head_to_head_is_disqualified_and_the_next_one_wins(tmp_path):
    campaign, store, broken = _campaign(tmp_path)
    eager = _with_eager(campaign, store)
    try:
        assert campaign.leader().candidate_id == broken
        finals = asyncio.run(final_measurements(campaign))
    finally:
        campaign.executor.close()
    assert finals.winner.candidate_id == eager
    assert broken in campaign.disqualified and "final head-to-head against eager" in campaign.disqualified[broken]


def test_an_incumbent_that_runs_alone_leaves_the_failure_with_the_candidate_beside_it(tmp_path):
    """A candidate can make its incumbent fail (holding the card's memory, say): an honest incumbent that runs
    correctly when judged again alone is never disqualified for it."""
    campaign, store, _ = _campaign(tmp_path)
    honest = _add(store, source("fast"), A0, "honest")
    failed = _culprit(campaign, honest)
    assert failed == 99 and honest not in campaign.disqualified
    (recheck,) = store.events("incumbent_rechecked")
    assert {k: recheck.payload[k] for k in ("incumbent_id", "beside", "against", "failed", "status")} == {
        "incumbent_id": honest, "beside": 99, "against": None, "failed": False, "status": "PASSED"}


def test_the_suspect_is_judged_again_as_the_incumbent_of_the_eager_baseline(tmp_path):
    """A side can tell an incumbent's requests from a candidate's: code failing only as an incumbent would pass
    a check as a candidate. With an eager baseline, the suspect keeps its role."""
    campaign, store, broken = _campaign(tmp_path)
    eager = _with_eager(campaign, store)
    assert _culprit(campaign, broken) == broken
    (recheck,) = store.events("incumbent_rechecked")
    assert (recheck.payload["against"], recheck.payload["failed"], recheck.payload["status"]) == (
        eager, True, "INCUMBENT_FAILED")


class _Answers:
    """An executor answering evaluations in order from a list, recording who was judged beside whom: an
    incumbent that fails once, then passes, cannot be made on demand (a side that failed keeps nothing in the
    build cache, so no state tells its next side to behave), so the rule's order of evaluations is tested here."""

    devices = ["cpu"]

    def __init__(self, *answers):
        self.answers, self.asked = list(answers), []

    async def evaluate(self, candidate, incumbent, *, slot, seed, trusted=False, cutoff=None):
        self.asked.append((candidate.source, incumbent.source if incumbent else None))
        return self.answers.pop(0)

    def close(self):
        pass


def test_an_incumbent_that_fails_once_gets_its_challenger_judged_again_not_blamed(tmp_path):
    """Sixth red-team pass: an incumbent that failed once on purpose, then passed its recheck, had a faster honest
    challenger REJECTed with a trap in its name. The challenger is judged beside it once more instead."""
    answers = _Answers(accept(1.0), _incumbent_failed(), accept(1.0), keep(2.0))  # eager; fast; recheck; fast again
    campaign, store, broken = _campaign(tmp_path, proposal("fast"), executor=answers)
    asyncio.run(campaign.run())
    fast = next(c.id for c in store.candidates() if c.source == source("fast"))
    record = store.evaluation(fast)
    assert record.evaluation.verdict is Verdict.KEEP and record.against_incumbent_id == broken
    assert [a[1] == RAISES for a in answers.asked[1:]] == [True, True, True]  # beside it, its recheck, beside it
    assert not store.events("disqualified") and store.events("incumbent_rechecked")[0].payload["failed"] is False


def test_a_candidate_beside_which_its_incumbent_fails_twice_is_blamed(tmp_path):
    answers = _Answers(accept(1.0), _incumbent_failed(), accept(1.0), _incumbent_failed())
    campaign, store, broken = _campaign(tmp_path, proposal("fast"), executor=answers)
    asyncio.run(campaign.run())
    fast = next(c.id for c in store.candidates() if c.source == source("fast"))
    ev = store.evaluation(fast).evaluation
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.RUNTIME_ERROR) and "twice" in ev.reason
    assert not store.events("disqualified") and broken not in campaign.disqualified
