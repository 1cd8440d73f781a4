from pathlib import Path

from kernelarc.memory import schema_doc

DOC = Path(__file__).resolve().parents[2] / "docs" / "memory-schema.md"


def test_committed_schema_page_is_up_to_date():
    assert DOC.read_text() == schema_doc.render(), f"stale: run `{schema_doc.COMMAND}`"


def test_page_shows_every_table_and_finding_field():
    page = schema_doc.render()
    for table in ("campaign", "agents", "candidates", "evaluations", "findings", "events", "llm_calls"):
        assert f"### `{table}`" in page
    assert "| `reflection` | `str` | What changed" in page


def test_main_writes_the_page(tmp_path):
    out = tmp_path / "schema.md"
    schema_doc.main([str(out)])
    assert out.read_text() == schema_doc.render()
