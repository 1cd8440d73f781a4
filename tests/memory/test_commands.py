import json

import pytest

from kernelarc.memory import FindingKind, LongTermMemory, UnknownFindingError
from kernelarc.memory.commands import (
    EXPORT_FORMAT, LIST_COLUMNS, clear_findings, export_findings, finding_row, list_findings, show_finding,
)

from .factories import keep, open_campaign, propose, reject, revert


@pytest.fixture
def remembered(tmp_path):
    """The long-term memory after one campaign: a win, a REJECT trap and a REVERT trap."""
    with open_campaign(tmp_path / "c.sqlite") as store:
        store.record_verdict(propose(store, 1), keep(speedup=1.42), against_incumbent_id=None,
                             reflection="BLOCK_M 128 on 4096^2:\nfewer K-loop iterations")
        store.record_verdict(propose(store, 2), reject(reason="INCORRECT_NUMERICAL: NaN"), against_incumbent_id=None)
        store.record_verdict(propose(store, 3), revert(speedup=0.81), against_incumbent_id=None)
        with LongTermMemory() as memory:
            memory.absorb(store)
            return memory.findings()


def test_list_filters_by_kernel_type_and_kind(remembered):
    assert list_findings() == remembered
    assert [f.kind for f in list_findings("gemm", FindingKind.TRAP)] == [FindingKind.TRAP, FindingKind.TRAP]
    assert list_findings("norm") == []


def test_rows_show_the_measured_effect(remembered):
    rows = [finding_row(f) for f in remembered]
    assert list(rows[0]) == list(LIST_COLUMNS)
    assert [r["effect"] for r in rows] == ["1.42x faster", "rejected", "0.81x (slower)"]
    assert rows[0]["id"] == f"#{remembered[0].id}"


def test_show_prints_one_finding_in_full(remembered):
    text = show_finding(remembered[0].id)
    assert text.splitlines()[0] == f"#{remembered[0].id} win for gemm, learned on task matmul"
    assert "verdict:    KEEP, 1.42x faster" in text
    assert text.endswith("reflection:\n  BLOCK_M 128 on 4096^2:\n  fewer K-loop iterations")


def test_show_unknown_id_is_a_user_error(remembered):
    with pytest.raises(UnknownFindingError, match="no finding #999"):
        show_finding(999)


def test_export_is_json_that_reads_back(remembered):
    document = json.loads(export_findings())
    assert document["format"] == EXPORT_FORMAT and document["version"] == 1
    assert [f["candidate_hash"] for f in document["findings"]] == [f.candidate_hash for f in remembered]
    assert json.loads(export_findings("norm"))["findings"] == []


def test_clear_deletes_and_counts(remembered):
    assert clear_findings("norm") == 0
    assert clear_findings() == 3
    assert list_findings() == []
