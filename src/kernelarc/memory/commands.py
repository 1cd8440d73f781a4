"""What `kernelarc memory list|show|export|clear` do, as plain functions over the long-term memory.

They return data or text; the CLI formats and prints (no typer or rich here). Budget: 100 lines.
"""

from __future__ import annotations

import json

from kernelarc.memory.findings import Finding, FindingKind
from kernelarc.memory.longterm import LongTermMemory
from kernelarc.memory.records import stamp, utc_now

EXPORT_FORMAT = "kernelarc-memory"
EXPORT_VERSION = 1

LIST_COLUMNS = ("id", "kind", "kernel type", "strategy", "effect", "task", "created")
"""Column names of `finding_row`, in order."""


def effect(finding: Finding) -> str:
    """The measured effect in a few words: `1.42x faster`, `0.81x (slower)`, or `rejected`."""
    if finding.speedup is None:
        return "rejected"
    return f"{finding.speedup:.2f}x faster" if finding.kind is FindingKind.WIN else f"{finding.speedup:.2f}x (slower)"


def finding_row(finding: Finding) -> dict[str, str]:
    """One line of `memory list`, keyed by `LIST_COLUMNS`."""
    values = (f"#{finding.id}", finding.kind.value, finding.kernel_type, finding.strategy, effect(finding),
              finding.task, finding.created.strftime("%Y-%m-%d %H:%M"))
    return dict(zip(LIST_COLUMNS, values))


def list_findings(kernel_type: str | None = None, kind: FindingKind | None = None) -> list[Finding]:
    """`memory list`: long-term findings, oldest first, optionally of one kernel type and kind."""
    with LongTermMemory() as memory:
        return memory.findings(kernel_type, kind)


def show_finding(finding_id: int) -> str:
    """`memory show ID`: one finding in full, as text.

    Raises:
        UnknownFindingError: no finding has this id.
    """
    with LongTermMemory() as memory:
        f = memory.finding(finding_id)
    lines = [
        f"#{f.id} {f.kind.value} for {f.kernel_type}, learned on task {f.task}",
        f"strategy:   {f.strategy}",
        f"verdict:    {f.verdict.value}, {effect(f)}",
        f"reason:     {f.reason or '-'}",
        f"candidate:  #{f.candidate_id} in its campaign, hash {f.candidate_hash[:12]}",
        f"recorded:   {stamp(f.created)}",
        "reflection:",
        *(f"  {line}" for line in f.reflection.splitlines()),
    ]
    return "\n".join(lines)


def export_findings(kernel_type: str | None = None) -> str:
    """`memory export`: every long-term finding (of one kernel type if given) as a JSON document."""
    findings = list_findings(kernel_type)
    document = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported": stamp(utc_now()),
        "findings": [f.model_dump(mode="json") for f in findings],
    }
    return json.dumps(document, indent=2)


def clear_findings(kernel_type: str | None = None) -> int:
    """`memory clear`: delete every long-term finding (of one kernel type if given); return how many."""
    with LongTermMemory() as memory:
        return memory.clear(kernel_type)


__all__ = [
    "LIST_COLUMNS", "EXPORT_FORMAT", "EXPORT_VERSION", "effect", "finding_row", "list_findings", "show_finding",
    "export_findings", "clear_findings",
]
