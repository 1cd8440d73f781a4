"""`kernelarc report`: one self-contained HTML file from a campaign run directory or a bench directory.

A campaign (RUN_DIR/campaign.sqlite, summary.json) gives: the leaderboard over time (inline SVG), the
winner with its speedups and SOL figures exactly as summary.json states them, the lineage tree (each
candidate under the incumbent it was judged against, with verdict and reason), every candidate's
source and its diff to its parent, the findings with the verdict they rest on, per-agent activity
and the device-lock use. A bench (DIR/results.json) gives its table of tasks, one card per task and
links to each task's campaign report.

The file opens with no network: styles inline, no script, a Content-Security-Policy that forbids
loading anything. Candidate sources, claims, reasons and logs are hostile text: the Jinja
environment escapes everything, and the SVG escapes its own labels.

The store is read through SQLite in read-only mode (a report never migrates or writes a run, and can
be made while the campaign runs), which is why this module reads the tables itself instead of going
through `kernelarc.memory.Store`: `report` imports no other kernelarc package. Imports without torch.
Budget: 350 lines.
"""

from __future__ import annotations

import difflib
import json
import sqlite3
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from kernelarc.errors import UserError
from kernelarc.report.chart import Point, leaderboard_svg

REPORT_NAME = "report.html"
DB_NAME = "campaign.sqlite"
"""The campaign store's file in a run directory (`kernelarc.campaign.run.DB_NAME`)."""
RESULTS_NAME = "results.json"
"""A bench directory's results (`kernelarc.bench.results.RESULTS_JSON`)."""
CAMPAIGN_APPLICATION_ID = 0x4B41_4331
"""The campaign store's file-header stamp (`kernelarc.memory.migrations.CAMPAIGN`)."""


class NotARunDirError(UserError):
    """The path given to `kernelarc report` is missing, or is neither a campaign run nor a bench dir."""


@dataclass
class CandidateView:
    """One candidate as the report shows it."""

    id: int
    agent: str | None
    """The proposing agent; None for a baseline or a candidate the user gave."""
    strategy: str
    claim: str
    language: str
    source: str
    parent_id: int | None
    created: str
    evaluation: dict | None = None
    """The guard's Evaluation as stored (JSON object); None while not judged."""
    order: int | None = None
    """1-based place in the evaluation order."""
    against: int | None = None
    """The incumbent it was judged against; None for the reference."""
    chained: float | None = None
    """Speedup over the reference: its ratio times its incumbent's, along the lineage."""
    diff_base: int | None = None
    """The candidate its diff is taken against: its parent, else the incumbent it was judged against."""
    diff: list[tuple[str, str]] = field(default_factory=list)
    """(css class, line) of the unified diff."""
    children: list["CandidateView"] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return self.evaluation["verdict"] if self.evaluation else "PENDING"

    @property
    def speedup(self) -> float | None:
        return self.evaluation.get("speedup") if self.evaluation else None

    @property
    def label(self) -> str:
        return self.agent or (self.claim if self.claim.startswith("baseline") else "user")


def _connect(db: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        stamp = conn.execute("PRAGMA application_id").fetchone()[0]
    except sqlite3.Error as e:
        raise NotARunDirError(f"cannot read {db}: {e}") from None
    if stamp != CAMPAIGN_APPLICATION_ID:
        raise NotARunDirError(f"{db} is not a kernelarc campaign store (application id {stamp:#x})")
    return conn


def _rows(conn: sqlite3.Connection, sql: str) -> list[dict]:
    return [dict(r) for r in conn.execute(sql)]


def _diff_lines(old: str, new: str, old_name: str, new_name: str) -> list[tuple[str, str]]:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, lineterm="")
    kinds = {"+": "add", "-": "del", "@": "hunk"}
    return [("meta" if line.startswith(("+++", "---")) else kinds.get(line[:1], "ctx"), line) for line in lines]


def load_campaign(run_dir: Path) -> dict[str, Any]:
    """Everything the campaign page shows, read from `run_dir` without writing to it.

    Raises:
        NotARunDirError: the store cannot be read or is not a campaign store.
    """
    conn = _connect(run_dir / DB_NAME)
    try:
        meta = next(iter(_rows(conn, "SELECT * FROM campaign")), None)
        agents = _rows(conn, "SELECT * FROM agents ORDER BY rowid")
        cands = {r["id"]: CandidateView(id=r["id"], agent=r["agent_id"], strategy=r["strategy"], claim=r["claim"],
                                        language=r["language"], source=r["source"], parent_id=r["parent_id"],
                                        created=r["created"])
                 for r in _rows(conn, "SELECT * FROM candidates ORDER BY id")}
        evaluations = _rows(conn, "SELECT candidate_id, against_incumbent_id, evaluation FROM evaluations ORDER BY id")
        findings = _rows(conn, "SELECT * FROM findings ORDER BY id")
        events = _rows(conn, "SELECT * FROM events ORDER BY id")
    except sqlite3.Error as e:
        raise NotARunDirError(f"cannot read {run_dir / DB_NAME}: {e}") from None
    finally:
        conn.close()
    summary_path = run_dir / "summary.json"
    try:
        summary = json.loads(summary_path.read_text()) if summary_path.is_file() else None
    except ValueError as e:
        raise NotARunDirError(f"{summary_path} is not JSON ({e})") from None

    chain: dict[int | None, float] = {None: 1.0}
    points, best_line, best, leader_changes = [], [], 1.0, []
    for order, row in enumerate(evaluations, start=1):
        c = cands[row["candidate_id"]]
        c.evaluation, c.order, c.against = json.loads(row["evaluation"]), order, row["against_incumbent_id"]
        if c.speedup is not None:
            c.chained = chain.get(c.against, 1.0) * c.speedup
            chain[c.id] = c.chained
        if c.chained is not None and (c.verdict == "KEEP" or c.agent is None) and c.chained > best:
            best = c.chained
            leader_changes.append(c)
        tip = f"#{c.id} {c.label}: {c.verdict}" + (f", {c.chained:.3f}x over the reference" if c.chained else "")
        points.append(Point(order, c.chained, c.verdict, f"{tip}. {c.claim}", baseline=c.agent is None))
        best_line.append((order, best))

    roots: list[CandidateView] = []
    for c in cands.values():
        if c.evaluation is not None:
            (cands[c.against].children if c.against in cands else roots).append(c)
        base = c.parent_id if c.parent_id in cands else c.against if c.against in cands else None
        if base is not None and base != c.id:
            c.diff_base = base
            c.diff = _diff_lines(cands[base].source, c.source, f"#{base}", f"#{c.id}")

    best_entry = (summary or {}).get("best") or None
    winner = cands.get(best_entry.get("candidate_id")) if best_entry else None
    winner_point = None
    if winner is not None and winner.order is not None and winner.chained is not None:
        winner_point = Point(winner.order, winner.chained, winner.verdict, f"#{winner.id} {winner.label}")
    activity = []
    for a in agents:
        mine = [c for c in cands.values() if c.agent == a["id"]]
        verdicts: dict[str, int] = {}
        for c in mine:
            verdicts[c.verdict] = verdicts.get(c.verdict, 0) + 1
        errors = [e for e in events if e["agent_id"] == a["id"] and e["kind"] == "agent_error"]
        activity.append({**a, "candidates": len(mine), "verdicts": verdicts, "errors": len(errors),
                         "last_error": json.loads(errors[-1]["payload"]).get("error", "") if errors else "",
                         "duplicates": sum(1 for e in events if e["agent_id"] == a["id"] and e["kind"] == "duplicate")})
    return {"meta": meta, "summary": summary, "candidates": list(cands.values()), "roots": roots,
            "winner": winner, "best": best_entry, "leader_changes": leader_changes, "findings": findings, "agents": activity,
            "events": [{**e, "payload": json.loads(e["payload"])} for e in events],
            "chart": leaderboard_svg(points, best_line, winner_point) if points else "",
            "guard": (summary or {}).get("guard") or {}, "run_dir": str(run_dir)}


def load_bench(bench_dir: Path) -> dict[str, Any]:
    """The bench page's data: results.json as written, plus links to each task's campaign report.

    Raises:
        NotARunDirError: results.json is not JSON or not a bench's results.
    """
    path = bench_dir / RESULTS_NAME
    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise NotARunDirError(f"cannot read {path}: {e}") from None
    if not isinstance(results, dict) or "rows" not in results:
        raise NotARunDirError(f"{path} is not a kernelarc bench results file (no rows)")
    links = {}
    for row in results.get("rows", []):
        report = bench_dir / row["task"] / "campaign" / REPORT_NAME
        if report.is_file():
            links[row["task"]] = report.relative_to(bench_dir).as_posix()
    rows = results.get("rows") or []
    return {"results": results, "rows": rows, "links": links, "bench_dir": str(bench_dir),
            "complete": sum(1 for r in rows if r.get("status") == "complete"),
            "cpu_wall": any(r.get("timing") == "cpu_wall" for r in rows)}


def _x(v: float | None) -> str:
    """A speedup as the terminal prints it (three decimals)."""
    return "-" if v is None else f"{v:.3f}x"


def _num(v: float | None, fmt: str = ".4g") -> str:
    return "-" if v is None else format(v, fmt)


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("kernelarc.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(x=_x, num=_num, tojson_pretty=lambda v: json.dumps(v, indent=2, default=str))
    return env


def render_campaign(data: dict[str, Any]) -> str:
    """The campaign page (see `load_campaign`)."""
    from kernelarc import __version__

    return _environment().get_template("campaign.html.j2").render(**data, version=__version__)


def render_bench(data: dict[str, Any]) -> str:
    """The bench page (see `load_bench`)."""
    from kernelarc import __version__

    return _environment().get_template("bench.html.j2").render(**data, version=__version__)


def run_kind(path: Path) -> str:
    """`campaign` or `bench`: what `path` holds.

    Raises:
        NotARunDirError: `path` is missing, not a directory, or holds neither campaign.sqlite nor results.json.
    """
    if not path.exists():
        raise NotARunDirError(f"{path} does not exist")
    if not path.is_dir():
        raise NotARunDirError(f"{path} is not a directory: give a campaign run dir or a bench dir")
    if (path / DB_NAME).is_file():
        return "campaign"
    if (path / RESULTS_NAME).is_file():
        return "bench"
    raise NotARunDirError(f"{path} is not a kernelarc run: it holds neither {DB_NAME} (a campaign) "
                          f"nor {RESULTS_NAME} (a bench)")


def write_report(path: Path, out: Path | None = None) -> Path:
    """Write the HTML report of the campaign or bench in `path` to `out` (default PATH/report.html).

    For a bench, each task's campaign report is written first (into its own run dir) and linked.

    Returns:
        The file written.

    Raises:
        NotARunDirError: `path` is not a campaign run dir or a bench dir, or its data cannot be read.
    """
    path = Path(path)
    kind = run_kind(path)
    if kind == "bench":
        for task_dir in sorted(p for p in path.iterdir() if (p / "campaign" / DB_NAME).is_file()):
            write_report(task_dir / "campaign")
        html = render_bench(load_bench(path))
    else:
        html = render_campaign(load_campaign(path))
    target = out or path / REPORT_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(html, encoding="utf-8")
    return target


__all__ = ["NotARunDirError", "REPORT_NAME", "load_bench", "load_campaign", "render_bench", "render_campaign",
           "run_kind", "write_report"]
