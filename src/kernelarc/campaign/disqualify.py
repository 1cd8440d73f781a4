"""Kernels that passed once and then failed: whose failure it was, and taking the failing one out of the race.

A candidate is judged once; after that it runs again as an incumbent, in the final head-to-heads and as the
exported winner. Code that is correct only sometimes (or on purpose only the first time) passed, became an
incumbent, and then failed beside honest candidates: the sixth red-team pass's candidate raised when loaded
again, every later candidate of its agent got its REJECT and a "trap" finding in its own name, and the
failing kernel stayed the campaign's winner and was exported (its finals failed, and a failed head-to-head was
ignored). A failure beside a candidate is not evidence against the incumbent either: a candidate can make its
incumbent fail (holding the card's memory, say) to get an honest kernel dropped. So the incumbent is judged
again without that candidate, in the same role: as the incumbent of the eager baseline (the reference's own
code; a side can tell an incumbent's requests from a candidate's, so code could fail only as an incumbent), or,
where there is no eager baseline, as a candidate against the reference. A kernel that fails again is disqualified
(off the board, never an incumbent or the winner again, its agents moved to their best other kernel). One that
passes is judged beside the candidate once more (Campaign._evaluate), and the candidate is blamed only if the
incumbent fails there again: the sixth pass's incumbent failed once, on purpose, and had a faster honest
challenger REJECTed. A side that failed leaves nothing in the build cache (guard/judge.py), so a failure cannot
mark the kernel's caches to change how its next side behaves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelarc.campaign.baselines import EAGER
from kernelarc.campaign.executor import evaluation_seed
from kernelarc.guard import Evaluation, Status, Verdict
from kernelarc.guard.cutoff import Cutoff

if TYPE_CHECKING:
    from kernelarc.campaign.loop import Campaign

EVENT = "disqualified"


def recorded(store) -> dict[int, str]:
    """Candidate id -> why, for every kernel a campaign disqualified (from its events: a resumed run keeps them)."""
    return {e.payload["candidate_id"]: e.payload["why"] for e in store.events(EVENT)}


async def culprit(campaign: Campaign, candidate_id: int, incumbent_id: int | None, ev: Evaluation, *, slot: int,
                  cutoff: Cutoff | None) -> int | None:
    """Whose failure the evaluation of `candidate_id` against `incumbent_id` is: None when it did not fail; the
    incumbent only when it failed beside the candidate and fails again without it (module docstring)."""
    if ev.correct:
        return None
    if ev.status is not Status.INCUMBENT_FAILED or incumbent_id is None:
        return candidate_id
    if incumbent_id in campaign.disqualified:
        return incumbent_id
    suspect, eager = campaign.candidate(incumbent_id), campaign.baselines.get(EAGER)
    if eager is not None and eager != incumbent_id:
        challenger = campaign.candidate(eager)
        again = await campaign.executor.evaluate(challenger, suspect, slot=slot, cutoff=cutoff, trusted=True,
                                                 seed=evaluation_seed(campaign.options.seed, challenger, suspect))
        failed = again.status is Status.INCUMBENT_FAILED
    else:
        again = await campaign.executor.evaluate(suspect, None, slot=slot, cutoff=cutoff,
                                                 seed=evaluation_seed(campaign.options.seed, suspect, None),
                                                 trusted=incumbent_id in campaign.baselines.values())
        failed = not again.correct
    campaign.store.log_event("incumbent_rechecked", payload={
        "incumbent_id": incumbent_id, "beside": candidate_id, "against": eager if eager != incumbent_id else None,
        "failed": failed, "status": again.status.value, "reason": again.reason})
    return incumbent_id if failed else candidate_id


def blamed_on_candidate(ev: Evaluation) -> Evaluation:
    """The evaluation of a candidate beside which its incumbent failed twice, passing without it in between."""
    return ev.model_copy(update={"verdict": Verdict.REJECT, "status": Status.RUNTIME_ERROR,
                                 "reason": f"the incumbent failed beside this candidate twice and ran correctly judged "
                                           f"without it: {ev.reason}"})


def disqualify(campaign: Campaign, candidate_id: int, why: str, beside: int | None) -> None:
    """Take `candidate_id` out of the race; every agent holding it goes back to its best other kernel it kept."""
    if candidate_id in campaign.disqualified:
        return
    campaign.disqualified[candidate_id] = why
    campaign.store.log_event(EVENT, payload={"candidate_id": candidate_id, "beside": beside, "why": why})
    for record in campaign.store.agents():
        if record.state.incumbent_id == candidate_id:
            incumbent_id, speedup = campaign.best_kept(record.id)
            campaign.store.update_agent(record.id, record.state.model_copy(
                update={"incumbent_id": incumbent_id, "incumbent_speedup": speedup}))


__all__ = ["EVENT", "blamed_on_candidate", "culprit", "disqualify", "recorded"]
