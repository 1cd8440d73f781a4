"""Plateau -> draft -> restart -> retire, with `--plateau 1` so that each REVERT is a plateau.

    a0: fast (KEEP), gated (REJECT: moves no counter), loop_rows (REVERT: 1st plateau, must draft),
        fast_retuned (only literals of fast changed: refused, not evaluated), loop_twice (a real
        draft, REVERT: 2nd plateau, restart from a1's best), slow_stack (REVERT against a1's kernel:
        3rd plateau, retired), fast (never asked for)
    a1: fast_alt (KEEP), then nothing more (retired): every agent retired stops the campaign.
"""

from __future__ import annotations

import json

import pytest

from kernelarc.campaign import AgentSlot, Campaign, StopReason, start
from kernelarc.campaign.executor import LocalExecutor
from kernelarc.campaign.drafting import DRAFT_INSTRUCTION
from kernelarc.guard import GuardSettings
from kernelarc.strategies import get_strategy
from kernelarc.task.loader import load_task

from campaign.runs import (
    SLOW_SUM, open_store, options, proposal, robust_options, scripted_agents, scripted_backend, source,
)
from memory.factories import accept, keep, open_campaign, propose

A0, A1 = "a0-reduction", "a1-memory"


@pytest.mark.heavy
def test_plateaus_make_an_agent_draft_then_restart_then_retire(tmp_path):
    a0, a1 = scripted_agents(
        [proposal(n) for n in ("fast", "gated", "loop_rows", "fast_retuned", "loop_twice", "slow_stack", "fast")],
        [proposal("fast_alt")],
    )
    result = start(SLOW_SUM, options(agents=2, strategies=("reduction", "memory"), plateau=1,
                                     backend=scripted_backend([a0, a1])), tmp_path)
    store = open_store(tmp_path)
    ids = {c.source: c.id for c in store.candidates()}
    fast, fast_alt = ids[source("fast")], ids[source("fast_alt")]
    seen = a0.contexts
    # The flow below rests on both ~10x kernels holding KEEP by the CPU's clock: say so first when one did not
    # (a CI run asked a0 twice more, most likely after fast_alt read within noise and a0 restarted onto eager).
    for held in (fast, fast_alt):
        judged = store.evaluation(held)
        assert judged.verdict.value == "KEEP", f"a ~10x kernel was not kept (load on the CPU?): {judged.reason}"

    assert [c.step for c in seen] == [0, 1, 2, 3, 4, 5]  # asked six times, then retired
    assert [c.must_draft for c in seen] == [False, False, False, True, True, False]
    assert seen[3].draft_instruction == DRAFT_INSTRUCTION
    # the refused draft: logged, never a candidate, the obligation stands
    (refused,) = store.events("draft_refused")
    assert (refused.agent_id, refused.payload["step"]) == (A0, 3)
    assert source("fast_retuned") not in ids
    assert seen[4].incumbent_id == fast
    # the real draft was judged against a0's own best; the restart moved a0 onto a1's
    assert store.evaluation(ids[source("loop_twice")]).against_incumbent_id == fast
    assert seen[5].incumbent_id == fast_alt and seen[5].incumbent_source == source("fast_alt")
    assert seen[5].incumbent_speedup == store.agent(A1).state.incumbent_speedup
    assert store.evaluation(ids[source("slow_stack")]).against_incumbent_id == fast_alt

    verdicts = [r.evaluation.verdict.value for r in store.evaluations(A0)]
    # whether a slower kernel lands REVERT or, within the CPU clock's noise, ACCEPT is timing, never asserted:
    # both are plateaus (a fresh-clone CI run judged slow_stack ACCEPT against fast_alt)
    assert verdicts[:2] == ["KEEP", "REJECT"] and set(verdicts[2:]) <= {"REVERT", "ACCEPT"} and len(verdicts) == 5
    plateaus = [(e.kind, e.payload["candidate_id"]) for e in store.events(agent_id=A0) if e.kind.startswith("plateau")]
    assert plateaus == [("plateau_draft", ids[source("loop_rows")]), ("plateau_restart", ids[source("loop_twice")]),
                        ("plateau_retire", ids[source("slow_stack")])]
    state = store.agent(A0).state
    assert state.retired and state.drafts == 3 and not state.must_draft

    assert result.stop_reason is StopReason.ALL_RETIRED
    assert store.get_meta().stop_reason == "all_agents_retired"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["stop_reason"] == "all_agents_retired"
    assert summary["candidates"] == 6  # the refused draft did not count
    assert [a["retired"] for a in summary["agents"]] == [True, True]


@pytest.mark.heavy
def test_a_restart_never_takes_an_agents_best_off_the_board(tmp_path):
    """A lone agent restarts from the eager baseline (no other agent holds a kernel): its KEEP stays the
    campaign's winner. On the H200 it did not, and eager won a campaign whose agent had a 1.07x."""
    (a0,) = scripted_agents([proposal(n) for n in ("fast", "loop_rows", "loop_twice", "slow_stack")])
    start(SLOW_SUM, options(agents=1, strategies=("reduction",), plateau=1, backend=scripted_backend([a0])), tmp_path)
    store = open_store(tmp_path)
    fast = next(c.id for c in store.candidates() if c.source == source("fast"))
    restart = store.events("plateau_restart")
    assert restart and restart[0].payload["incumbent_id"] != fast  # the restart moved the incumbent away
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["best"]["candidate_id"] == fast and summary["best"]["agent"] == A0


def test_a_kernel_held_after_a_restart_is_credited_to_its_author(tmp_path):
    """An agent restarted onto the eager baseline holds it; the board lists eager once, as the baseline.
    Run 6 on the H200 shipped eager as "a0-scheduling (scheduling)" on row_mean_fp32.

    Built on recorded evaluations: a CI run of the robust campaign on a loaded 2-core machine judged its
    14x kernel within noise, so the board the rule is about never formed."""
    store = open_campaign(tmp_path / "campaign.db", agents=())
    store.register_agent(A0, "reduction", "scripted")
    store.register_agent(A1, "memory", "scripted")
    eager = propose(store, 0, agent_id=None, strategy="baseline", claim="baseline: eager")
    store.record_verdict(eager, accept(1.0), against_incumbent_id=None)
    fast = propose(store, 1, agent_id=A0, strategy="reduction", claim="fast")
    store.record_verdict(fast, keep(14.0), against_incumbent_id=None,
                         agent_state=store.agent(A0).state.model_copy(update={"incumbent_id": fast,
                                                                               "incumbent_speedup": 14.0}))
    # as a plateau restart from the best other kernel leaves a1
    store.update_agent(A1, store.agent(A1).state.model_copy(update={"incumbent_id": eager, "incumbent_speedup": 1.0}))
    agents = scripted_agents([], [])
    slots = [AgentSlot(id=a.id, index=i, strategy=get_strategy(a.strategy), agent=agents[i])
             for i, a in enumerate(store.agents())]
    task = load_task(SLOW_SUM)
    campaign = Campaign(task, robust_options(), store, LocalExecutor(task, ["cpu"], GuardSettings()), slots, None)
    campaign.baselines = {"eager": eager}
    board = [(e.agent_id, e.strategy, e.candidate_id) for e in campaign.leaderboard()]
    assert board == [(A0, "reduction", fast), ("baseline:eager", "baseline", eager)]
