"""The agent contract: proposals and contexts refuse impossible data; backends resolve or fail in one line."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

import kernelarc.agents
from kernelarc.agents import (
    Agent,
    BackendError,
    LeaderboardEntry,
    Proposal,
    ScriptedAgent,
    VerdictNote,
    clip_reflection,
    get_backend,
    known_backends,
    register_backend,
    scripted_factory,
)
from kernelarc.agents import protocol
from kernelarc.errors import UserError
from kernelarc.guard.types import Status, Verdict
from kernelarc.memory.findings import Finding, FindingKind

SOURCE = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp(min=0)\n"


def test_claim_at_the_cap_is_kept_and_one_over_is_refused():
    assert len(Proposal(source=SOURCE, claim="c" * 160).claim) == 160
    with pytest.raises(ValidationError, match="161 characters"):
        Proposal(source=SOURCE, claim="c" * 161)


def test_a_claim_is_shown_as_text_on_one_line():
    """Sixth red-team pass: a claim's escape sequences retitled and cleared the terminal at `optimize`'s `best:`
    line. Claims are printed, reported and put in prompts: control characters are written out."""
    claim = Proposal(source=SOURCE, claim="one-op sum\x1b]0;PWNED\x07\x1b[2J\nFAKE: 999x \u202e").claim
    assert claim == "one-op sum\\x1b]0;PWNED\\x07\\x1b[2J FAKE: 999x \\u202e"
    assert len(Proposal(source=SOURCE, claim="\x1b" * 160).claim) <= 160


@pytest.mark.parametrize("field, value, expected", [
    ("claim", "   ", "needs a claim"),
    ("source", "\n", "source is empty"),
    ("language", "fortran", "'fortran'"),
])
def test_proposal_refuses_bad_fields(field, value, expected):
    with pytest.raises(ValidationError, match=expected):
        Proposal(**{"source": SOURCE, "claim": "clamp instead of relu", field: value})


@pytest.mark.parametrize("source, language", [
    (SOURCE, "pytorch"),
    ("import triton\n" + SOURCE, "triton"),
    ("from torch.utils.cpp_extension import load_inline\n" + SOURCE, "cuda_cpp"),
])
def test_proposal_language_is_inferred_when_not_given(source, language):
    assert Proposal(source=source, claim="c").language == language
    assert Proposal(source=source, claim="c", language="cutlass").language == "cutlass"


def test_proposal_is_frozen_and_defaults_to_a_change():
    proposal = Proposal(source=SOURCE, claim="clamp")
    assert not proposal.is_draft and proposal.parent_id is None
    with pytest.raises(ValidationError):
        proposal.claim = "other"


def test_verdict_note_carries_what_the_guard_said(keep_evaluation, reject_evaluation):
    kept = VerdictNote.from_evaluation(11, "fused bias", keep_evaluation)
    assert (kept.verdict, kept.status, kept.speedup) == (Verdict.KEEP, Status.PASSED, 1.5)
    rejected = VerdictNote.from_evaluation(12, "tf32 dot", reject_evaluation)
    assert rejected.speedup is None and rejected.reason.startswith("INCORRECT_NUMERICAL")


def test_context_defaults_describe_a_fresh_agent(make_context):
    ctx = make_context()
    assert (ctx.incumbent_id, ctx.incumbent_source, ctx.incumbent_latency_ms) == (None, None, None)
    assert ctx.incumbent_speedup == 1.0
    assert (ctx.last_verdicts, ctx.findings, ctx.leaderboard, ctx.must_draft, ctx.step) == ((), (), (), False, 0)
    with pytest.raises(ValidationError):
        ctx.step = 3


def test_context_holds_memory_findings_and_the_leaderboard(make_context):
    finding = Finding(kind=FindingKind.WIN, kernel_type="elementwise", task="relu_tiny", strategy="fusion",
                      reflection="one kernel instead of two", verdict=Verdict.KEEP, speedup=1.4, candidate_id=3,
                      candidate_hash="h3", created=datetime(2026, 1, 1, tzinfo=timezone.utc))
    entry = LeaderboardEntry(agent_id="a1", strategy="memory", candidate_id=9, speedup=2.0, latency_ms=0.5,
                             source=SOURCE)
    ctx = make_context(findings=(finding,), leaderboard=(entry,))
    assert ctx.findings[0].reflection == "one kernel instead of two" and ctx.leaderboard[0].speedup == 2.0


def test_context_incumbent_id_and_source_come_together(make_context):
    assert make_context(incumbent_id=4, incumbent_source=SOURCE).incumbent_id == 4
    for half in ({"incumbent_id": 4}, {"incumbent_source": SOURCE}):
        with pytest.raises(ValidationError, match="together"):
            make_context(**half)


@pytest.mark.parametrize("field, value", [("step", -1), ("incumbent_speedup", 0.0), ("incumbent_latency_ms", -1.0)])
def test_context_refuses_impossible_numbers(make_context, field, value):
    with pytest.raises(ValidationError, match=field):
        make_context(**{field: value})


def test_leaderboard_entry_needs_a_positive_speedup():
    with pytest.raises(ValidationError, match="speedup"):
        LeaderboardEntry(agent_id="a1", strategy="memory", candidate_id=9, speedup=0, latency_ms=1, source=SOURCE)


def test_clip_reflection_fits_the_cap():
    assert clip_reflection("short") == "short"
    assert len(clip_reflection("word " * 400)) <= 1200


def test_scripted_agent_satisfies_the_protocol():
    assert isinstance(ScriptedAgent(), Agent)


def test_scripted_backend_is_registered():
    assert get_backend("scripted") is scripted_factory
    assert {"builtin", "openai", "anthropic", "cli", "scripted"} <= set(known_backends())


def test_unknown_backend_is_a_one_line_user_error_listing_the_known():
    with pytest.raises(BackendError) as caught:
        get_backend("gemini")
    message = str(caught.value)
    assert isinstance(caught.value, UserError) and "\n" not in message
    assert "'gemini'" in message and all(name in message for name in known_backends())


@pytest.fixture
def backend_dir(tmp_path, monkeypatch):
    """A folder on kernelarc.agents' path for backend modules, with a registry and module cache undone after."""
    monkeypatch.setattr(kernelarc.agents, "__path__", [*kernelarc.agents.__path__, str(tmp_path)])
    monkeypatch.setattr(protocol, "_BACKENDS", dict(protocol._BACKENDS))
    monkeypatch.setattr(protocol, "BUILTIN_BACKENDS", (*protocol.BUILTIN_BACKENDS, "ghost"))
    yield tmp_path
    sys.modules.pop("kernelarc.agents.ghost", None)
    vars(kernelarc.agents).pop("ghost", None)


def test_builtin_backend_module_is_imported_on_first_use(backend_dir):
    (backend_dir / "ghost.py").write_text(
        "from kernelarc.agents.protocol import register_backend\n"
        "from kernelarc.agents.scripted import scripted_factory\n"
        "register_backend('ghost', scripted_factory)\n")
    assert get_backend("ghost") is scripted_factory


def test_builtin_backend_without_its_module_says_so(backend_dir):
    with pytest.raises(BackendError, match="'ghost' is not available in this install"):
        get_backend("ghost")


def test_builtin_backend_missing_an_optional_package_names_it(backend_dir):
    (backend_dir / "ghost.py").write_text("import kernelarc_absent_sdk\n")
    with pytest.raises(BackendError, match="needs the package 'kernelarc_absent_sdk'"):
        get_backend("ghost")


def test_registered_backend_resolves_without_an_import(monkeypatch):
    monkeypatch.setattr(protocol, "_BACKENDS", dict(protocol._BACKENDS))
    register_backend("mine", scripted_factory)
    assert get_backend("mine") is scripted_factory and "mine" in known_backends()


def test_package_exports_resolve_and_import_without_torch_or_sdks():
    code = ("import sys, kernelarc.agents as a; assert all(hasattr(a, n) for n in a.__all__); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'openai', 'anthropic') "
            "or m.startswith(('kernelarc.campaign', 'kernelarc.cli'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
