"""The campaign store: one SQLite file per campaign, the single source of truth for resuming it.

It holds the campaign's task and options, its agents and their state, every distinct candidate
(deduplicated by normalized-source hash), one evaluation per candidate, the findings the verdicts
taught, an event log and every LLM call. `record_verdict` writes an evaluation, the agent's new
state and the finding in one transaction; findings are made nowhere else. After a crash,
`pending_candidates` lists what was proposed but never judged. Must not import the guard's worker,
agents or campaign. Budget: 350 lines.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

from kernelarc.guard.types import Evaluation, Verdict
from kernelarc.memory import finding_rows
from kernelarc.memory.db import Database
from kernelarc.memory.findings import Finding, FindingKind, Recall, RetentionPolicy, finding_from_verdict, recall
from kernelarc.memory.migrations import CAMPAIGN
from kernelarc.memory.records import (
    AgentRecord, AgentState, CampaignMeta, CandidateRecord, Counts, EvaluationRecord, EventRecord,
    LlmCallRecord, VerdictOutcome, stamp, utc_now,
)

_log = logging.getLogger(__name__)
"""Every campaign event is logged as it is stored (INFO): `kernelarc -v optimize` shows them on stderr."""
_EVALUATION_SELECT = (
    "SELECT e.id, e.candidate_id, c.agent_id, e.against_incumbent_id, e.evaluation, e.created"
    " FROM evaluations e JOIN candidates c ON c.id = e.candidate_id"
)


def _evaluation(row: sqlite3.Row) -> EvaluationRecord:
    return EvaluationRecord(id=row["id"], candidate_id=row["candidate_id"], agent_id=row["agent_id"],
                            against_incumbent_id=row["against_incumbent_id"],
                            evaluation=Evaluation.model_validate_json(row["evaluation"]), created=row["created"])


def _agent(row: sqlite3.Row) -> AgentRecord:
    state = AgentState(incumbent_id=row["incumbent_id"], plateau=row["plateau"], drafts=row["drafts"],
                       must_draft=bool(row["must_draft"]), retired=bool(row["retired"]), steps=row["steps"],
                       incumbent_speedup=row["incumbent_speedup"], idle=row["idle"])
    return AgentRecord(id=row["id"], strategy=row["strategy"], backend=row["backend"], state=state,
                       created=row["created"])


class Store(Database):
    """A campaign's database. Safe to share between the threads and asyncio tasks of one process."""

    def __init__(self, path: str | Path) -> None:
        """Open the store at `path`, creating and migrating it if needed.

        Raises:
            StoreError: the file cannot be opened, is not SQLite, or was written by a newer kernelarc.
        """
        super().__init__(path, CAMPAIGN)

    # -- the campaign ---------------------------------------------------------------------------

    def put_meta(self, meta: CampaignMeta) -> None:
        """Create or replace the campaign's task, options and state."""
        row = meta.model_dump(mode="json")
        row["options"] = json.dumps(meta.options, sort_keys=True)
        row["retention"] = meta.retention.spec
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO campaign (id, task_name, task_path, kernel_type, seed, options, retention,"
                " status, stop_reason, started) VALUES (1, :task_name, :task_path, :kernel_type, :seed, :options,"
                " :retention, :status, :stop_reason, :started)", row)

    def get_meta(self) -> CampaignMeta | None:
        """The campaign's task, options and state; None before `put_meta`."""
        with self._read() as conn:
            row = conn.execute("SELECT * FROM campaign").fetchone()
        return None if row is None else self._meta(row)

    @staticmethod
    def _meta(row: sqlite3.Row) -> CampaignMeta:
        fields = {k: row[k] for k in row.keys() if k != "id"}
        fields["options"] = json.loads(row["options"])
        fields["retention"] = RetentionPolicy.parse(row["retention"])
        return CampaignMeta.model_validate(fields)

    # -- agents ---------------------------------------------------------------------------------

    def register_agent(self, agent_id: str, strategy: str, backend: str) -> AgentRecord:
        """Add an agent, or return the stored one (with its state) when resuming.

        Raises:
            ValueError: an agent with this id exists with another strategy or backend.
        """
        new = AgentRecord(id=agent_id, strategy=strategy, backend=backend)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO agents (id, strategy, backend, incumbent_id, plateau, drafts, must_draft, retired, steps,"
                " incumbent_speedup, created) VALUES (?, ?, ?, NULL, 0, 0, 0, 0, 0, 1.0, ?) ON CONFLICT (id) DO NOTHING",
                (new.id, new.strategy, new.backend, stamp(new.created)))
            stored = _agent(conn.execute("SELECT * FROM agents WHERE id = ?", (agent_id,)).fetchone())
        if (stored.strategy, stored.backend) != (strategy, backend):
            raise ValueError(f"agent {agent_id!r} exists with strategy {stored.strategy!r} and backend "
                             f"{stored.backend!r}, not {strategy!r} and {backend!r}")
        return stored

    def update_agent(self, agent_id: str, state: AgentState) -> None:
        """Replace an agent's state (outside a verdict: a duplicate proposal, a draft, retirement)."""
        with self._write() as conn:
            self._update_agent(conn, agent_id, state)

    @staticmethod
    def _update_agent(conn: sqlite3.Connection, agent_id: str, state: AgentState) -> None:
        cur = conn.execute(
            "UPDATE agents SET incumbent_id = ?, plateau = ?, drafts = ?, must_draft = ?, retired = ?, steps = ?,"
            " incumbent_speedup = ?, idle = ? WHERE id = ?",
            (state.incumbent_id, state.plateau, state.drafts, int(state.must_draft), int(state.retired), state.steps,
             state.incumbent_speedup, state.idle, agent_id))
        if cur.rowcount == 0:
            raise LookupError(f"no agent {agent_id!r} in the store")

    def agent(self, agent_id: str) -> AgentRecord:
        """The agent with this id; raises LookupError if there is none."""
        with self._read() as conn:
            row = conn.execute("SELECT * FROM agents WHERE id = ?", (agent_id,)).fetchone()
        if row is None:
            raise LookupError(f"no agent {agent_id!r} in the store")
        return _agent(row)

    def agents(self) -> list[AgentRecord]:
        """Every agent, in registration order."""
        with self._read() as conn:
            return [_agent(row) for row in conn.execute("SELECT * FROM agents ORDER BY rowid")]

    # -- candidates -----------------------------------------------------------------------------

    def add_candidate(self, *, hash: str, source: str, agent_id: str | None, strategy: str, claim: str,
                      language: str, kind: str, parent_id: int | None = None,
                      agent_state: AgentState | None = None) -> tuple[int, bool]:
        """Record a proposed candidate unless one with the same hash exists.

        `agent_state`, if given, is written to `agent_id` in the same transaction (the campaign
        counts the agent's step there, so a kill between the two cannot lose or repeat a step).

        Returns:
            (id, is_new): the candidate's id, and False when the hash was already stored (the existing
            id is returned and nothing is written: identical candidates are evaluated once).

        Raises:
            ValueError: strategy or claim over 160 characters, or an empty hash or source.
        """
        new = CandidateRecord(hash=hash, source=source, parent_id=parent_id, agent_id=agent_id, strategy=strategy,
                              claim=claim, language=language, kind=kind)
        row = new.model_dump(mode="json", exclude={"id"})
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO candidates (hash, source, parent_id, agent_id, strategy, claim, language, kind, created)"
                " VALUES (:hash, :source, :parent_id, :agent_id, :strategy, :claim, :language, :kind, :created)"
                " ON CONFLICT (hash) DO NOTHING", row)
            if agent_state is not None and agent_id is not None:
                self._update_agent(conn, agent_id, agent_state)
            if cur.rowcount:
                return cur.lastrowid, True
            return conn.execute("SELECT id FROM candidates WHERE hash = ?", (hash,)).fetchone()[0], False

    def candidate(self, candidate_id: int) -> CandidateRecord:
        """The candidate with this id; raises LookupError if there is none."""
        with self._read() as conn:
            row = conn.execute("SELECT * FROM candidates WHERE id = ?", (candidate_id,)).fetchone()
        if row is None:
            raise LookupError(f"no candidate #{candidate_id} in the store")
        return CandidateRecord.model_validate(dict(row))

    def candidate_by_hash(self, hash: str) -> CandidateRecord | None:
        """The candidate with this normalized-source hash, or None."""
        with self._read() as conn:
            row = conn.execute("SELECT * FROM candidates WHERE hash = ?", (hash,)).fetchone()
        return None if row is None else CandidateRecord.model_validate(dict(row))

    def candidates(self, agent_id: str | None = None) -> list[CandidateRecord]:
        """Every candidate (of one agent if given), oldest first."""
        with self._read() as conn:
            rows = conn.execute("SELECT * FROM candidates WHERE ?1 IS NULL OR agent_id = ?1 ORDER BY id", (agent_id,))
            return [CandidateRecord.model_validate(dict(row)) for row in rows]

    def pending_candidates(self) -> list[CandidateRecord]:
        """Candidates proposed but not evaluated, oldest first: what to resubmit after a crash."""
        with self._read() as conn:
            rows = conn.execute("SELECT c.* FROM candidates c LEFT JOIN evaluations e ON e.candidate_id = c.id"
                                " WHERE e.id IS NULL ORDER BY c.id")
            return [CandidateRecord.model_validate(dict(row)) for row in rows]

    # -- verdicts -------------------------------------------------------------------------------

    def record_verdict(self, candidate_id: int, evaluation: Evaluation, *, against_incumbent_id: int | None,
                       agent_state: AgentState | None = None, reflection: str = "") -> VerdictOutcome:
        """Store the guard's evaluation, the proposing agent's new state and the finding, all or nothing.

        The finding comes from `finding_from_verdict` (kernel type and task from the campaign meta,
        strategy from the candidate); then the campaign's retention policy evicts what it must.

        Args:
            candidate_id: the judged candidate; it must have no evaluation yet.
            evaluation: the guard's evaluation.
            against_incumbent_id: the incumbent it was judged against, None for the reference.
            agent_state: the candidate's agent's state after this verdict; None leaves it unchanged.
            reflection: the agent's reflection (clipped to 1,200 characters); empty: the guard's reason.

        Raises:
            LookupError: no such candidate, or it has no agent while `agent_state` is given.
            ValueError: the candidate already has an evaluation.
            RuntimeError: `put_meta` was never called.
        """
        with self._write() as conn:
            cand = conn.execute("SELECT * FROM candidates WHERE id = ?", (candidate_id,)).fetchone()
            if cand is None:
                raise LookupError(f"no candidate #{candidate_id} in the store")
            meta_row = conn.execute("SELECT * FROM campaign").fetchone()
            if meta_row is None:
                raise RuntimeError("record_verdict needs the campaign meta: call put_meta first")
            if conn.execute("SELECT 1 FROM evaluations WHERE candidate_id = ?", (candidate_id,)).fetchone():
                raise ValueError(f"candidate #{candidate_id} already has an evaluation")
            created = utc_now()
            cur = conn.execute(
                "INSERT INTO evaluations (candidate_id, against_incumbent_id, verdict, status, latency_ms, speedup,"
                " evaluation, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (candidate_id, against_incumbent_id, evaluation.verdict.value, evaluation.status.value,
                 evaluation.latency_ms, evaluation.speedup, evaluation.model_dump_json(), stamp(created)))
            stored = EvaluationRecord(id=cur.lastrowid, candidate_id=candidate_id, agent_id=cand["agent_id"],
                                      against_incumbent_id=against_incumbent_id, evaluation=evaluation,
                                      created=created)
            if agent_state is not None:
                if cand["agent_id"] is None:
                    raise LookupError(f"candidate #{candidate_id} has no agent to give the new state to")
                self._update_agent(conn, cand["agent_id"], agent_state)
            meta = self._meta(meta_row)
            # only agents' candidates teach: a baseline or a user's candidate has no strategy to learn from
            finding = None if cand["agent_id"] is None else finding_from_verdict(evaluation, kernel_type=meta.kernel_type, task=meta.task_name,
                                           strategy=cand["strategy"], reflection=reflection,
                                           candidate_id=candidate_id, candidate_hash=cand["hash"])
            evicted: tuple[int, ...] = ()
            if finding is not None:
                finding = finding_rows.insert(conn, finding)
                evicted = finding_rows.enforce(conn, meta.retention, {meta.kernel_type})
        return VerdictOutcome(evaluation=stored, finding=finding, evicted=evicted)

    def evaluation(self, candidate_id: int) -> EvaluationRecord | None:
        """The candidate's evaluation, or None if it has none yet."""
        with self._read() as conn:
            row = conn.execute(f"{_EVALUATION_SELECT} WHERE e.candidate_id = ?", (candidate_id,)).fetchone()
        return None if row is None else _evaluation(row)

    def evaluations(self, agent_id: str | None = None) -> list[EvaluationRecord]:
        """Every evaluation (of one agent's candidates if given), in the order they were recorded."""
        with self._read() as conn:
            rows = conn.execute(f"{_EVALUATION_SELECT} WHERE ?1 IS NULL OR c.agent_id = ?1 ORDER BY e.id",
                                (agent_id,))
            return [_evaluation(row) for row in rows]

    def leaderboard(self) -> list[EvaluationRecord]:
        """Each agent's fastest KEEP, fastest first (ties: the earlier)."""
        with self._read() as conn:
            rows = conn.execute(f"{_EVALUATION_SELECT} WHERE e.verdict = ? AND c.agent_id IS NOT NULL"
                                " ORDER BY e.latency_ms, e.id", (Verdict.KEEP.value,)).fetchall()
        best: dict[str, EvaluationRecord] = {}
        for row in rows:
            best.setdefault(row["agent_id"], _evaluation(row))
        return list(best.values())

    def leader(self) -> EvaluationRecord | None:
        """The campaign's fastest KEEP (ties: the earlier), or None before the first."""
        with self._read() as conn:
            row = conn.execute(f"{_EVALUATION_SELECT} WHERE e.verdict = ? ORDER BY e.latency_ms, e.id LIMIT 1",
                               (Verdict.KEEP.value,)).fetchone()
        return None if row is None else _evaluation(row)

    def counts(self) -> Counts:
        """How many candidates were proposed, evaluated and pending, and each agent's verdicts."""
        with self._read() as conn:
            candidates = conn.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]
            evaluated = conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
            rows = conn.execute("SELECT c.agent_id, e.verdict, COUNT(*) FROM evaluations e JOIN candidates c"
                                " ON c.id = e.candidate_id WHERE c.agent_id IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2")
            verdicts: dict[str, dict[Verdict, int]] = {}
            for agent_id, verdict, n in rows:
                verdicts.setdefault(agent_id, {})[Verdict(verdict)] = n
        return Counts(candidates=candidates, evaluated=evaluated, pending=candidates - evaluated, verdicts=verdicts)

    # -- findings -------------------------------------------------------------------------------

    def findings(self, kernel_type: str | None = None, kind: FindingKind | None = None) -> list[Finding]:
        """The campaign's findings (of one kernel type and kind if given), oldest first."""
        with self._read() as conn:
            return finding_rows.select(conn, kernel_type, kind)

    def recall(self, kernel_type: str, strategy: str, limit: int) -> Recall:
        """This campaign's findings for an agent following `strategy`, ranked (see `findings.recall`)."""
        return recall(self.findings(kernel_type), kernel_type=kernel_type, strategy=strategy, limit=limit)

    # -- logs -----------------------------------------------------------------------------------

    def log_event(self, kind: str, agent_id: str | None = None, payload: dict[str, Any] | None = None) -> int:
        """Append an event (payload must be JSON-serializable); return its id."""
        _log.info("%s%s: %s", kind, f" {agent_id}" if agent_id else "", json.dumps(payload or {}, sort_keys=True))
        with self._write() as conn:
            return conn.execute("INSERT INTO events (kind, agent_id, payload, created) VALUES (?, ?, ?, ?)",
                                (kind, agent_id, json.dumps(payload or {}, sort_keys=True),
                                 stamp(utc_now()))).lastrowid

    def events(self, kind: str | None = None, agent_id: str | None = None, after_id: int = 0) -> list[EventRecord]:
        """Events in order, optionally of one kind, of one agent, or after a given id (to follow the log)."""
        with self._read() as conn:
            rows = conn.execute("SELECT * FROM events WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR agent_id = ?2)"
                                " AND id > ?3 ORDER BY id", (kind, agent_id, after_id))
            return [EventRecord(id=r["id"], kind=r["kind"], agent_id=r["agent_id"], payload=json.loads(r["payload"]),
                                created=r["created"]) for r in rows]

    def log_llm_call(self, call: LlmCallRecord) -> int:
        """Store one LLM call (prompt and response text, tokens, cost, error); return its id."""
        row = call.model_dump(mode="json", exclude={"id"})
        with self._write() as conn:
            return conn.execute(
                "INSERT INTO llm_calls (agent_id, step, model, prompt, response, tokens_in, tokens_out, cost_usd,"
                " error, created) VALUES (:agent_id, :step, :model, :prompt, :response, :tokens_in, :tokens_out,"
                " :cost_usd, :error, :created)", row).lastrowid

    def llm_calls(self, agent_id: str | None = None) -> list[LlmCallRecord]:
        """Every LLM call (of one agent if given), in order."""
        with self._read() as conn:
            rows = conn.execute("SELECT * FROM llm_calls WHERE ?1 IS NULL OR agent_id = ?1 ORDER BY id", (agent_id,))
            return [LlmCallRecord.model_validate(dict(row)) for row in rows]


__all__ = ["Store"]
