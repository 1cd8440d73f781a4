"""The campaign loop: N strategy agents propose in parallel; one guard judges; the store remembers.

One round, read top to bottom in `Campaign.run`:
  1. every active agent proposes at once (LLM calls overlap; built-in search runs in threads);
  2. proposals are registered in agent order, in one transaction: duplicates are not evaluated again,
     a required draft that only re-tunes the incumbent is refused, and the budget cuts the round;
  3. the registered candidates are evaluated concurrently, serialized per device by its lock;
  4. agents reflect on their verdicts at once;
  5. verdicts are recorded in agent order (evaluation, agent state and finding in one transaction),
     the plateau rule applied, and the leader updated.
Because registration and recording happen in agent order and input seeds derive from the campaign
seed and the candidate, the same seed and the same proposals give the same decisions. The store is
the only state that outlives a round, so a campaign killed at any point resumes from it: candidates
registered but never judged are evaluated first, and nothing is counted twice.

Stopping: the time limit is a cutoff (guard/cutoff.py) passed down to every evaluation, so one in
flight when it passes is cut (its sides killed) and left pending, never counted as the candidate's
failure. A new round starts only while the time left exceeds what the final head-to-head timings
are expected to take, and its evaluations are cut where that reserve begins. `interrupt()` (a first
Ctrl-C) lets the evaluations in flight finish and starts nothing new; `cutoff.now()` (a second) cuts them.
A campaign whose baselines all fail stops before any agent is asked: nothing could be judged against
that reference.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

from kernelarc.agents.protocol import (
    Agent,
    AgentContext,
    AgentExhausted,
    IncumbentProfile,
    LeaderboardEntry,
    Proposal,
    VerdictNote,
    clip_reflection,
)
from kernelarc.campaign import disqualify
from kernelarc.campaign.baselines import COMPILE, EAGER, baseline_candidates
from kernelarc.campaign.compiler_seed import compiler_seed
from kernelarc.campaign.drafting import DRAFT_INSTRUCTION, is_parameter_change
from kernelarc.campaign.executor import Executor, evaluation_seed
from kernelarc.campaign.options import CampaignOptions, StopReason
from kernelarc.campaign.plateau import PlateauAction, after_verdict
from kernelarc.errors import UserError
from kernelarc.guard import Candidate, Evaluation, Status, Verdict, candidate_from_source
from kernelarc.guard.candidate import stored_candidate
from kernelarc.guard.cutoff import Cutoff, EvaluationCut
from kernelarc.guard.scrub import scrub
from kernelarc.memory import LongTermMemory, Store
from kernelarc.memory.records import AgentState, CandidateRecord, EvaluationRecord
from kernelarc.strategies.model import Strategy
from kernelarc.task.model import Task

BASELINE_STRATEGY = "baseline"
FINALS_MARGIN = 1.5
"""The final timings' reserve is their expected seconds times this: evaluations of one move family on one
problem took 2.7-3.1 s on one problem and 6.2-9.6 s on another at real sizes on the H200 (session 13). At 1.25,
the finals were cut in four of eight 120-s campaigns on the H100 (session 36): they began 0.03-1.3 s short of the
reserve (the round's cut evaluations ending) and were cut after 0.90-1.02 times it; the ones that finished took
0.27-1.08 times it. The search loses the difference, 1-4 s of a 120-s campaign; a cut final loses the speedups
over eager and torch.compile that the report is for."""
FINALS_CUT_S = 2.0
"""Seconds added to the final timings' reserve for the evaluations it cuts to end (their sides stopped) before
the finals start: they took up to 1.3 s in session 36 and 1.5 s in session 37 (H100), where gemm_bf16_4096's
finals, 0.89 times their reserve, were cut all the same."""
MAX_IDLE_STEPS = 5
"""Consecutive steps with nothing to evaluate (errors, duplicates, refused drafts) before an agent is retired."""


@dataclass
class AgentSlot:
    """A live agent: its protocol object plus what the campaign tracks between its steps in memory."""

    id: str
    index: int
    strategy: Strategy
    agent: Agent
    notes: list[VerdictNote] = field(default_factory=list)


@dataclass
class Submission:
    """A registered candidate waiting for (or back from) the guard."""

    slot: AgentSlot
    candidate_id: int
    candidate: Candidate
    proposal: Proposal
    context: AgentContext
    incumbent_id: int | None
    evaluation: Evaluation | None = None
    reflection: str = ""


@dataclass(frozen=True)
class IdleStep:
    """A step that gave nothing to evaluate (the backend failed): counted when the round registers."""

    why: str


@dataclass(frozen=True)
class Progress:
    """What a progress display shows after each round."""

    round: int
    budget_left: int
    leader: LeaderboardEntry | None
    agents: list[dict]
    judged: tuple[dict, ...] = ()
    """The evaluations recorded since the last report, in order (`judged_item`): a line each off a terminal."""


def judged_item(agent: str, candidate_id: int, incumbent_id: int | None, ev: Evaluation) -> dict:
    """One recorded evaluation as a progress display shows it."""
    return {"agent": agent, "candidate_id": candidate_id, "incumbent_id": incumbent_id, "verdict": ev.verdict.value,
            "status": ev.status.value, "speedup": ev.speedup, "reason": ev.reason}


class Campaign:
    """One task, N agents, one store, one executor."""

    def __init__(self, task: Task, options: CampaignOptions, store: Store, executor: Executor,
                 slots: list[AgentSlot], longterm: LongTermMemory | None, on_progress=None,
                 spent_usd: Callable[[], float] = lambda: 0.0, cutoff: Cutoff | None = None):
        self.task = task
        self.cutoff = cutoff or Cutoff()
        """Every evaluation's cutoff: the time limit, or now after a second Ctrl-C."""
        self.interrupted = False
        """A first Ctrl-C: finish what is in flight, start nothing new."""
        self.cut: list[int] = []
        """Candidates whose evaluation was cut (left pending for a resume)."""
        self.cut_why: str | None = None
        """What cut the last of them: the time limit, or the final timings' reserve."""
        self.unjudged_baselines: list[str] = []
        """Baselines whose evaluation was cut, or never started because the run stopped first."""
        self.stop_detail: str | None = None
        """One line on why the campaign stopped, when the reason alone does not say it."""
        self.in_flight: dict[str, None] = {}
        """What the campaign waits for now, in words (evaluations, proposals, final timings)."""
        self._limit_at: float | None = None
        self._proposing_s = 0.0
        """How long the last round's proposals took (seconds before its first evaluation could start)."""
        self.options = options
        self.store = store
        self.executor = executor
        self.slots = slots
        self.longterm = longterm
        self.on_progress = on_progress or (lambda progress: None)
        self.spent_usd = spent_usd
        """Dollars LLM backends have spent so far (0 for offline agents)."""
        self._duplicates: dict[int, list[tuple[AgentSlot, str]]] = {}
        """Candidate id -> agents that proposed it again, waiting for its verdict."""
        self.baselines: dict[str, int] = {}
        """Baseline name -> candidate id (their evaluations are against the reference)."""
        self.disqualified: dict[int, str] = disqualify.recorded(store)
        """Kernels that passed once and then kept failing (campaign/disqualify.py), with why: off the board."""
        self.round = 0
        self.compiler_seed = compiler_seed(task, executor.devices[0], options.backend)
        """torch.compile's code as a standalone file, for code-writing agents on a card (rendered in the background)."""
        for slot in slots:  # resumed: agents are shown the verdicts they had before the run stopped
            slot.notes = [VerdictNote.from_evaluation(r.candidate_id, store.candidate(r.candidate_id).claim,
                                                      r.evaluation) for r in store.evaluations(slot.id)]

    # -- the loop ------------------------------------------------------------------------------
    async def run(self) -> StopReason:
        started = time.monotonic()
        if self.options.time_limit_s is not None:
            self._limit_at = started + self.options.time_limit_s
            if not self.halted():
                self.cutoff.at, self.cutoff.why = self._limit_at, f"the time limit ({self.options.time_limit_s:g} s) passed"
        baselines = await self._evaluate_baselines()
        if baselines:
            self.on_progress(self.progress(baselines))
        reason = self._baselines_failed()
        if reason is None:
            await self._finish_pending()
        while reason is None and (reason := self._stop_reason()) is None:
            self.round += 1
            proposing_since = time.monotonic()
            with self.busy(f"the agents' proposals of round {self.round}"):
                proposals = await asyncio.gather(*(self._propose(s) for s in self._round_slots()))
            self._proposing_s = time.monotonic() - proposing_since
            submissions = self._register([p for p in proposals if p is not None])
            if self.halted():  # registered and left pending: a resumed run judges them first
                self.cut += [sub.candidate_id for sub in submissions]
                continue
            cutoff = self._round_cutoff()
            await asyncio.gather(*(self._evaluate(sub, cutoff) for sub in submissions))
            judged = [sub for sub in submissions if sub.evaluation is not None]
            await asyncio.gather(*(self._reflect(sub) for sub in judged))
            for sub in judged:
                self._record(sub)
            self.on_progress(self.progress(tuple(judged_item(sub.slot.id, sub.candidate_id, sub.incumbent_id,
                                                             sub.evaluation) for sub in judged)))
        if self.stop_detail is None and (self.cut or self.unjudged_baselines):
            self.stop_detail = self._cut_detail()
        self.store.log_event("stop", payload={"reason": reason.value, "round": self.round, "detail": self.stop_detail,
                                              "cut": self.cut, "unjudged_baselines": self.unjudged_baselines})
        return reason

    # -- stopping ------------------------------------------------------------------------------
    def interrupt(self) -> None:
        """A first Ctrl-C: let the evaluations in flight finish, start nothing new, skip the final timings."""
        self.interrupted = True

    def halted(self) -> bool:
        """Interrupted or cut: nothing new is started."""
        return self.interrupted or self.cutoff.passed()

    @contextmanager
    def busy(self, what: str):
        """Mark `what` as in flight (for the message of a Ctrl-C)."""
        self.in_flight[what] = None
        try:
            yield
        finally:
            self.in_flight.pop(what, None)

    def waiting_for(self) -> str:
        return ", ".join(self.in_flight) or "nothing (stopping)"

    def _cut_detail(self) -> str:
        parts = []
        if self.unjudged_baselines:
            parts.append(f"baseline(s) {', '.join(self.unjudged_baselines)} not judged")
        if self.cut:
            parts.append(f"candidate(s) {', '.join(f'#{c}' for c in self.cut)} left pending (judged first on --resume)")
        why = self.cut_why or (self.cutoff.why if self.cutoff.passed() else "interrupted (Ctrl-C)")
        return f"{why}: {'; '.join(parts)}"

    def _baselines_failed(self) -> StopReason | None:
        """INVALID_REFERENCE or BASELINES_FAILED when every baseline was judged and none passed."""
        records = {name: self.store.evaluation(cid) for name, cid in self.baselines.items()}
        invalid = next((r for r in records.values() if r is not None
                        and r.evaluation.status is Status.INVALID_REFERENCE), None)
        if invalid is not None:
            self.stop_detail = invalid.evaluation.reason
            return StopReason.INVALID_REFERENCE
        if not records or any(r is None or r.evaluation.correct for r in records.values()):
            return None
        self.stop_detail = "; ".join(f"{name}: {r.evaluation.status.value} ({r.evaluation.reason})"
                                     for name, r in records.items())
        return StopReason.BASELINES_FAILED

    def time_left_s(self) -> float | None:
        """Seconds until the time limit; None without one."""
        return self._limit_at - time.monotonic() if self._limit_at is not None else None

    def median_evaluation_s(self) -> float:
        """The median wall time of the evaluations so far; 0 before anything was measured."""
        walls = sorted(r.evaluation.wall_s for r in self.store.evaluations() if r.evaluation.wall_s)
        return walls[len(walls) // 2] if walls else 0.0

    def evaluation_cost_s(self, candidate_id: int, median_s: float) -> float:
        """Seconds this candidate's own evaluation took, less the reference side's set-up (paid once per
        campaign, 12 s on the H200); `median_s` (the median evaluation) when it has none."""
        record = self.store.evaluation(candidate_id)
        if record is None or not record.evaluation.wall_s:
            return median_s
        return max(0.0, record.evaluation.wall_s - record.evaluation.stage_seconds.get("reference", 0.0))

    def finals_reserve_s(self, median_s: float | None = None) -> float:
        """Seconds the final head-to-head timings are expected to take, FINALS_MARGIN included: each pits
        the leader (as the candidate) against a correct baseline (as the incumbent), so each costs about
        both of their own evaluations; the leader's counts at least the median, as this round's candidates
        may displace it. 0 before anything was measured. (One median evaluation per baseline, the rule
        before, left 6 s for a leader of 8 s against a torch.compile side of 5 s: the finals were cut on
        the H200, docs/benchmarks.md session 13.) Every correct baseline counts as an opponent, the leading one
        too: a candidate of the round about to run may take the lead and then faces them all (with a leading
        torch.compile left out, two of six 75 s campaigns on the H100 had their finals cut, session 35:
        cross_entropy_vocab's round was cut 17 s before the limit, and its new leader's finals needed 35 s).
        `median_s`: the median evaluation, when the caller has it. FINALS_CUT_S on top, for the cut evaluations'
        ending, where there is anything to reserve."""
        median_s = self.median_evaluation_s() if median_s is None else median_s
        leader = self.leader()
        lead_s = max(median_s, self.evaluation_cost_s(leader.candidate_id, median_s) if leader is not None else 0.0)
        opponents = [cid for cid in self.baselines.values()
                     if (r := self.store.evaluation(cid)) is not None and r.evaluation.correct]
        expected_s = sum(lead_s + self.evaluation_cost_s(cid, median_s) for cid in opponents)
        return FINALS_MARGIN * expected_s + FINALS_CUT_S if expected_s else 0.0

    def _round_slots(self) -> list[AgentSlot]:
        """The agents that propose this round. Under a time limit, only as many as can be judged before the
        final timings' reserve (one median evaluation each, spread over the devices), taking turns: on the
        H200 a 4-agent round of 30-40 s evaluations started 20 s before the reserve ran past the limit,
        and the winner's final timings against the baselines were cut (docs/benchmarks.md, session 12)."""
        active = self._active()
        per = self.median_evaluation_s()
        if self._limit_at is None or not per or not active:
            return active
        left = self._limit_at - time.monotonic() - self.finals_reserve_s(per) - self._proposing_s
        fit = max(1, int(left / per)) * max(1, len(self.executor.devices))
        start = (self.round - 1) % len(active)
        return (active[start:] + active[:start])[:fit]

    # -- 1. propose ----------------------------------------------------------------------------
    async def _propose(self, slot: AgentSlot) -> tuple[AgentSlot, AgentContext, Proposal | IdleStep] | None:
        ctx = self.context(slot)
        try:
            proposal = await slot.agent.propose(ctx)
        except AgentExhausted as e:
            self._retire(slot, f"nothing more to try: {e}")
            return None
        except UserError:  # a missing key, a replay that diverged: the user must act, the run stops
            raise
        except Exception as e:  # noqa: BLE001 - a backend's failure costs the step, never the campaign
            error = scrub(f"{type(e).__name__}: {e}")[:2000]  # it may quote a model's reply, and is printed
            self.store.log_event("agent_error", slot.id, {"step": ctx.step, "error": error})
            return slot, ctx, IdleStep(f"agent error: {type(e).__name__}")
        if proposal is None:
            self._retire(slot, "nothing more to try")
            return None
        return slot, ctx, proposal

    def context(self, slot: AgentSlot) -> AgentContext:
        """What the agent sees this step: built fresh from the store."""
        state = self.store.agent(slot.id).state
        incumbent = self.store.candidate(state.incumbent_id) if state.incumbent_id is not None else None
        inc_eval = self.store.evaluation(state.incumbent_id) if state.incumbent_id is not None else None
        return AgentContext(
            task=self.task, agent_id=slot.id, strategy=slot.strategy,
            incumbent_id=state.incumbent_id, incumbent_source=incumbent.source if incumbent else None,
            incumbent_speedup=state.incumbent_speedup,
            incumbent_latency_ms=inc_eval.evaluation.latency_ms if inc_eval else None,
            incumbent_profile=self._profile(inc_eval),
            last_verdicts=tuple(slot.notes[-self.options.history:]) if self.options.history else (),
            findings=self._recall(slot.strategy.name),
            leaderboard=tuple(e for e in self.leaderboard() if e.agent_id != slot.id),
            must_draft=state.must_draft, draft_instruction=DRAFT_INSTRUCTION if state.must_draft else "",
            peer_strategies=tuple(sorted({s.strategy.name for s in self._active() if s.id != slot.id})),
            step=state.steps, rng_seed=self.options.seed * 1000 + slot.index,
            compiler_seed=self.compiler_seed.source if self.compiler_seed is not None else None,
        )

    def _profile(self, incumbent: EvaluationRecord | None) -> IncumbentProfile | None:
        """The incumbent's profile from the evaluation that judged it, or for the reference from the
        latest evaluation timed against it."""
        if incumbent is not None:
            return IncumbentProfile.of(incumbent.evaluation, as_incumbent=False)
        against_reference = [r for r in self.store.evaluations() if r.against_incumbent_id is None]
        for record in reversed(against_reference):
            profile = IncumbentProfile.of(record.evaluation, as_incumbent=True)
            if profile is not None:
                return profile
        return None

    def _recall(self, strategy: str):
        if self.options.recall_limit == 0:
            return ()
        kt, limit = self.task.kernel_type, self.options.recall_limit
        found = (self.longterm.recall(kt, strategy, limit, campaign=self.store) if self.longterm is not None
                 else self.store.recall(kt, strategy, limit))
        return tuple(f for f in found.all if f.candidate_id not in self.disqualified)  # its verdict was contradicted

    # -- 2. register ---------------------------------------------------------------------------
    def _register(self, proposals: list[tuple[AgentSlot, AgentContext, Proposal | IdleStep]]) -> list[Submission]:
        """Count every agent's step of the round or none: resumed, the round is proposed again as a whole.

        One by one, a kill between two agents kept the first's step and lost the second's proposal,
        so the resumed round asked the first agent for its next step too, out of turn. A failed
        step is counted here too, not when the backend failed, for the same reason.
        """
        with self.store.transaction():
            return self._register_in_order(proposals)

    def _register_in_order(self, proposals: list[tuple[AgentSlot, AgentContext, Proposal | IdleStep]]
                           ) -> list[Submission]:
        submissions = []
        left = self.budget_left()
        for slot, ctx, proposal in proposals:  # agent order: gather keeps it
            if isinstance(proposal, IdleStep):
                self._idle(slot, ctx, proposal.why)
                continue
            state = self.store.agent(slot.id).state
            if state.must_draft and is_parameter_change(proposal.source, ctx.incumbent_source):
                self.store.log_event("draft_refused", slot.id, {"step": ctx.step, "claim": proposal.claim})
                self._idle(slot, ctx, "draft refused: only a parameter change of the incumbent")
                continue
            if left <= 0:
                break
            candidate = candidate_from_source(proposal.source, self.task, name=f"{slot.id}-s{ctx.step}")
            seen = self.store.candidate_by_hash(candidate.hash) is not None
            stepped = state.model_copy(update={"steps": state.steps + 1, "idle": state.idle + 1 if seen else 0})
            cid, _ = self.store.add_candidate(
                hash=candidate.hash, source=candidate.source, agent_id=slot.id, strategy=slot.strategy.name,
                claim=proposal.claim, language=proposal.language, kind=candidate.kind.value,
                parent_id=proposal.parent_id if proposal.parent_id is not None else state.incumbent_id,
                agent_state=stepped)
            if seen:
                self.store.log_event("duplicate", slot.id, {"step": ctx.step, "candidate_id": cid})
                self._note_duplicate(slot, cid, proposal.claim)
                if stepped.idle >= MAX_IDLE_STEPS:
                    self._retire(slot, f"{MAX_IDLE_STEPS} steps in a row with nothing new to evaluate")
                continue
            left -= 1
            submissions.append(Submission(slot, cid, candidate, proposal, ctx, state.incumbent_id))
        return submissions

    def _note_duplicate(self, slot: AgentSlot, candidate_id: int, claim: str) -> None:
        """Tell the agent its proposal was already judged (now, or once the round records it)."""
        self._duplicates.setdefault(candidate_id, []).append((slot, claim))
        if self.store.evaluation(candidate_id) is not None:
            self._deliver_duplicate_notes(candidate_id)

    def _deliver_duplicate_notes(self, candidate_id: int) -> None:
        ev = self.store.evaluation(candidate_id).evaluation
        for slot, claim in self._duplicates.pop(candidate_id, []):
            note = VerdictNote.from_evaluation(candidate_id, claim, ev)
            slot.notes.append(note.model_copy(update={"reason": f"duplicate of candidate #{candidate_id}, "
                                                                f"already judged: {ev.reason}"[:400]}))

    def _idle(self, slot: AgentSlot, ctx: AgentContext, why: str) -> None:
        """A step that produced nothing to evaluate still counts as the agent's step."""
        state = self.store.agent(slot.id).state
        idle = state.idle + 1
        self.store.update_agent(slot.id, state.model_copy(update={"steps": state.steps + 1, "idle": idle}))
        if idle >= MAX_IDLE_STEPS:
            self._retire(slot, f"{MAX_IDLE_STEPS} steps in a row with nothing to evaluate ({why})")

    def _retire(self, slot: AgentSlot, why: str) -> None:
        state = self.store.agent(slot.id).state
        self.store.update_agent(slot.id, state.model_copy(update={"retired": True}))
        self.store.log_event("retired", slot.id, {"why": why})

    # -- 3. evaluate ---------------------------------------------------------------------------
    def _round_cutoff(self) -> Cutoff:
        """A round's evaluations end where the final timings' reserve begins. A round is sized on the median
        evaluation, and one slow candidate (torch.compile's max-autotune: 25-30 s of first call where the
        median was 7 s) ran a round past the limit on the H200, so the leader's final timings were cut
        (docs/benchmarks.md, session 15); a candidate cut here stays pending, as one cut by the limit."""
        reserve = self.finals_reserve_s() if self._limit_at is not None else 0.0
        if not reserve:
            return self.cutoff
        return self.cutoff.before(self._limit_at - reserve,
                                  f"the final timings' reserve ({reserve:.0f} s before the time limit) began")

    async def _evaluate(self, sub: Submission, cutoff: Cutoff | None = None) -> None:
        """The submission's evaluation under `cutoff` (the campaign's by default); None when it was cut (the
        candidate stays pending). Where the incumbent failed beside it: failing again without it, the incumbent
        is disqualified and the candidate judged against its agent's incumbent after that; passing without it,
        the candidate is judged beside it once more, and blamed only if it fails there again (an incumbent that
        fails once on purpose must not get an honest challenger REJECTed, campaign/disqualify.py)."""
        cutoff = cutoff or self.cutoff
        try:
            with self.busy(f"candidate #{sub.candidate_id} ({sub.slot.id})"):
                sub.evaluation = await self._judge(sub, cutoff)
                retried = False
                while sub.evaluation.status is Status.INCUMBENT_FAILED and sub.incumbent_id is not None:
                    if retried:
                        sub.evaluation = disqualify.blamed_on_candidate(sub.evaluation)
                        break
                    failed = await disqualify.culprit(self, sub.candidate_id, sub.incumbent_id, sub.evaluation,
                                                      slot=sub.slot.index, cutoff=cutoff)
                    if failed == sub.incumbent_id:
                        disqualify.disqualify(self, sub.incumbent_id, sub.evaluation.reason, beside=sub.candidate_id)
                        sub.incumbent_id = self.store.agent(sub.slot.id).state.incumbent_id
                    else:
                        retried = True
                    sub.evaluation = await self._judge(sub, cutoff)
        except EvaluationCut as e:
            self.cut.append(sub.candidate_id)
            self.cut_why = str(e)
            self.store.log_event("cut", sub.slot.id, {"candidate_id": sub.candidate_id, "why": str(e)})

    async def _judge(self, sub: Submission, cutoff: Cutoff) -> Evaluation:
        incumbent = self.candidate(sub.incumbent_id) if sub.incumbent_id is not None else None
        return await self.executor.evaluate(sub.candidate, incumbent, slot=sub.slot.index, cutoff=cutoff,
                                            seed=evaluation_seed(self.options.seed, sub.candidate, incumbent))

    def candidate(self, candidate_id: int) -> Candidate:
        """A stored candidate, ready for the guard."""
        record = self.store.candidate(candidate_id)
        return stored_candidate(record.kind, record.source, self.task, name=f"c{candidate_id}")

    # -- 4. reflect ----------------------------------------------------------------------------
    async def _reflect(self, sub: Submission) -> None:
        try:
            text = await sub.slot.agent.reflect(sub.context, sub.proposal, sub.evaluation)
            sub.reflection = clip_reflection(scrub(text or ""))  # a secret never reaches the store or a prompt
        except UserError:
            raise
        except Exception as e:  # noqa: BLE001 - the finding falls back to the guard's reason
            error = scrub(f"{type(e).__name__}: {e}")[:2000]
            self.store.log_event("agent_error", sub.slot.id, {"phase": "reflect", "error": error})

    # -- 5. record -----------------------------------------------------------------------------
    def _record(self, sub: Submission) -> None:
        ev = sub.evaluation
        state = self.store.agent(sub.slot.id).state
        new, action = after_verdict(state, ev.verdict, self.options.plateau)
        if state.must_draft:  # the draft reached the guard: the obligation is met (unless a new plateau set it)
            new = new.model_copy(update={"must_draft": action is PlateauAction.DRAFT})
        if ev.verdict is Verdict.KEEP:
            new = new.model_copy(update={"incumbent_id": sub.candidate_id,
                                         "incumbent_speedup": state.incumbent_speedup * ev.speedup})
        if action is PlateauAction.RESTART:
            new = self._restart_from_other(sub.slot, new)
        self.store.record_verdict(sub.candidate_id, ev, against_incumbent_id=sub.incumbent_id, agent_state=new,
                                  reflection=sub.reflection)
        sub.slot.notes.append(VerdictNote.from_evaluation(sub.candidate_id, sub.proposal.claim, ev))
        self._deliver_duplicate_notes(sub.candidate_id)
        if action is not PlateauAction.NONE:
            self.store.log_event(f"plateau_{action.value}", sub.slot.id,
                                 {"candidate_id": sub.candidate_id, "incumbent_id": new.incumbent_id})

    def _restart_from_other(self, slot: AgentSlot, state: AgentState) -> AgentState:
        """Second plateau: continue from the best kernel another agent (or a baseline) holds."""
        others = [e for e in self.leaderboard() if e.agent_id != slot.id]
        if not others:
            return state.model_copy(update={"incumbent_id": None, "incumbent_speedup": 1.0})
        best = others[0]
        return state.model_copy(update={"incumbent_id": best.candidate_id, "incumbent_speedup": best.speedup})

    # -- baselines and resume ------------------------------------------------------------------
    async def _evaluate_baselines(self) -> tuple[dict, ...]:
        """Eager and torch.compile, judged against the reference like any candidate (once per campaign);
        what was judged now (`judged_item`)."""
        judged = []
        for name, cand in baseline_candidates(self.task, self.options.compile_baseline).items():
            cid, _ = self.store.add_candidate(hash=cand.hash, source=cand.source, agent_id=None,
                                              strategy=BASELINE_STRATEGY, claim=f"baseline: {name}",
                                              language="pytorch", kind=cand.kind.value)
            self.baselines[name] = cid
            if self.store.evaluation(cid) is not None:
                continue
            if self._baselines_failed() is StopReason.INVALID_REFERENCE:  # the same reference: no use judging it again
                continue
            if self.halted() or self.unjudged_baselines:
                self.unjudged_baselines.append(name)
                continue
            try:
                with self.busy(f"the {name} baseline"):
                    ev = await self.executor.evaluate(cand, None, slot=0, trusted=True, cutoff=self.cutoff,
                                                      seed=evaluation_seed(self.options.seed, cand, None))
            except EvaluationCut as e:
                self.unjudged_baselines.append(name)
                self.store.log_event("cut", payload={"baseline": name, "why": str(e)})
                continue
            self.store.record_verdict(cid, ev, against_incumbent_id=None)
            judged.append(judged_item(f"baseline:{name}", cid, None, ev))
        return tuple(judged)

    async def _finish_pending(self) -> None:
        """Resume: judge candidates that were registered but never judged (the run was killed)."""
        by_id = {s.id: s for s in self.slots}
        pending: list[Submission] = []
        for record in self.store.pending_candidates():
            slot = by_id.get(record.agent_id)
            if slot is None:
                continue
            ctx = self.context(slot)
            proposal = Proposal(source=record.source, language=record.language, claim=record.claim,
                                parent_id=record.parent_id)
            pending.append(Submission(slot, record.id, self.candidate(record.id), proposal, ctx,
                                      self.store.agent(slot.id).state.incumbent_id))
        if pending:
            self.store.log_event("resume", payload={"pending": [p.candidate_id for p in pending]})
        if self.halted():
            self.cut += [sub.candidate_id for sub in pending]
            return
        cutoff = self._round_cutoff()
        await asyncio.gather(*(self._evaluate(sub, cutoff) for sub in pending))
        judged = [sub for sub in pending if sub.evaluation is not None]
        await asyncio.gather(*(self._reflect(sub) for sub in judged))
        for sub in judged:
            self._record(sub)
        if judged:
            self.on_progress(self.progress(tuple(judged_item(sub.slot.id, sub.candidate_id, sub.incumbent_id,
                                                             sub.evaluation) for sub in judged)))

    # -- state queries -------------------------------------------------------------------------
    def _active(self) -> list[AgentSlot]:
        return [s for s in self.slots if not self.store.agent(s.id).state.retired]

    def agent_candidates_used(self) -> int:
        """Candidates of agents that reached the guard (judged or in flight): what the budget counts."""
        return sum(1 for c in self.store.candidates() if c.agent_id is not None)

    def budget_left(self) -> int:
        return max(0, self.options.budget - self.agent_candidates_used())

    def leaderboard(self) -> list[LeaderboardEntry]:
        """Every agent's best kernel and each correct baseline, once each, by speedup over the reference,
        fastest first, credited to whoever wrote it.

        An agent's best is the faster of its incumbent and every candidate it got KEPT: a restart moves
        the incumbent to another kernel, and on the H200 (2026-11-30) a lone agent restarted from the
        eager baseline dropped its 1.07x cuBLASLt epilogue from the board, so eager won the campaign.
        A kernel held by an agent that did not write it (a restart's) is its author's entry: run 6's
        bench credited eager, the incumbent of a restarted agent, to that agent.
        """
        evaluations = {e.candidate_id: e for e in self.store.evaluations()}
        chained: dict[int, float] = {}
        best: dict[int, float] = {}
        for record in self.store.agents():
            held = {} if record.state.incumbent_id is None else {record.state.incumbent_id: record.state.incumbent_speedup}
            held.update(self._kept(record.id, evaluations, chained, held))
            held = {c: s for c, s in held.items() if c not in self.disqualified}
            if held:
                cid = max(held, key=lambda c: (held[c], -c))
                best[cid] = max(best.get(cid, 0.0), held[cid])
        for cid in self.baselines.values():
            ev = self.store.evaluation(cid)
            if ev is not None and ev.evaluation.speedup is not None and cid not in self.disqualified:
                best[cid] = ev.evaluation.speedup
        entries = [self._entry(cid, speedup) for cid, speedup in best.items()]
        return sorted(entries, key=lambda e: (-e.speedup, e.candidate_id))

    @staticmethod
    def _kept(agent_id: str, evaluations: dict[int, EvaluationRecord], chained: dict[int, float],
              skip: dict[int, float]) -> dict[int, float]:
        """Every kernel the agent got KEPT but those in `skip`, with its chained speedup over the reference."""
        return {e.candidate_id: _chained_speedup(e.candidate_id, evaluations, chained) for e in evaluations.values()
                if e.evaluation.verdict is Verdict.KEEP and e.agent_id == agent_id and e.candidate_id not in skip}

    def best_kept(self, agent_id: str) -> tuple[int | None, float]:
        """The agent's fastest kernel it got KEPT and not disqualified, with its chained speedup; (None, 1.0), the
        reference, when there is none."""
        evaluations = {e.candidate_id: e for e in self.store.evaluations()}
        kept = self._kept(agent_id, evaluations, {}, self.disqualified)
        if not kept:
            return None, 1.0
        cid = max(kept, key=lambda c: (kept[c], -c))
        return cid, kept[cid]

    def _entry(self, cid: int, speedup: float) -> LeaderboardEntry:
        record: CandidateRecord = self.store.candidate(cid)
        if record.agent_id is None:  # only baselines are added without an agent
            name = next(n for n, c in self.baselines.items() if c == cid)
            agent_id, strategy = f"baseline:{name}", BASELINE_STRATEGY
        else:
            agent_id, strategy = record.agent_id, self.store.agent(record.agent_id).strategy
        ev = self.store.evaluation(cid)
        latency = ev.evaluation.latency_ms if ev and ev.evaluation.latency_ms else float("nan")
        return LeaderboardEntry(agent_id=agent_id, strategy=strategy, candidate_id=cid, speedup=speedup,
                                latency_ms=latency if latency == latency and latency > 0 else 1e-9,
                                source=record.source)

    def leader(self) -> LeaderboardEntry | None:
        board = self.leaderboard()
        return board[0] if board else None

    def _stop_reason(self) -> StopReason | None:
        if self.interrupted:
            return StopReason.INTERRUPTED
        if self.cutoff.passed():
            return StopReason.TIME_LIMIT
        if self.budget_left() <= 0:
            return StopReason.BUDGET
        if self._limit_at is not None:
            median_s = self.median_evaluation_s()
            if time.monotonic() + self._proposing_s + median_s + self.finals_reserve_s(median_s) >= self._limit_at:
                return StopReason.TIME_LIMIT  # no proposal would be judged before the final timings' reserve
        if not self._active():
            return StopReason.ALL_RETIRED
        if self.options.max_cost is not None and self.spent_usd() >= self.options.max_cost:
            return StopReason.MAX_COST
        if self.options.target_sol is not None:
            score = self.leader_sol_score()
            if score is not None and score >= self.options.target_sol:
                return StopReason.TARGET_SOL
        return None

    def leader_sol_score(self) -> float | None:
        """The leader's SOL score estimated from its speedup and the baselines' measurements (CUDA only)."""
        from kernelarc.roofline import sol_score

        leader, eager = self.leader(), self.store.evaluation(self.baselines.get(EAGER, -1))
        if leader is None or eager is None or eager.evaluation.sol_ms is None:
            return None
        reference_ms = eager.evaluation.incumbent_ms
        baseline_ms = reference_ms
        compiled = self.store.evaluation(self.baselines.get(COMPILE, -1))
        if compiled is not None and compiled.evaluation.latency_ms is not None:
            baseline_ms = min(baseline_ms, compiled.evaluation.latency_ms)
        return sol_score(reference_ms / leader.speedup, baseline_ms, eager.evaluation.sol_ms)

    def progress(self, judged: tuple[dict, ...] = ()) -> Progress:
        counts = self.store.counts()
        rows = []
        for slot in self.slots:
            record = self.store.agent(slot.id)
            verdicts = counts.verdicts.get(slot.id, {})
            rows.append({"agent": slot.id, "strategy": slot.strategy.name, "steps": record.state.steps,
                         "verdicts": {v.value: n for v, n in verdicts.items()},
                         "speedup": record.state.incumbent_speedup, "plateaus": record.state.drafts,
                         "must_draft": record.state.must_draft, "retired": record.state.retired})
        return Progress(round=self.round, budget_left=self.budget_left(), leader=self.leader(), agents=rows,
                        judged=judged)


def _chained_speedup(cid: int, evaluations: dict[int, EvaluationRecord], memo: dict[int, float]) -> float:
    """A kernel's speedup over the reference: its ratio times its incumbent's, down to the reference."""
    if cid not in memo:
        e = evaluations.get(cid)
        if e is None:  # not judged (yet): counts as the reference
            return 1.0
        below = 1.0 if e.against_incumbent_id is None else _chained_speedup(e.against_incumbent_id, evaluations, memo)
        memo[cid] = (e.evaluation.speedup or 1.0) * below
    return memo[cid]


__all__ = ["AgentSlot", "Campaign", "Progress", "Submission", "BASELINE_STRATEGY", "judged_item"]
