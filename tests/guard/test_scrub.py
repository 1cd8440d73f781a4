"""Secrets never travel on in text: values of secret-named variables and credential shapes are redacted."""

from __future__ import annotations

from kernelarc.guard.scrub import REDACTED, scrub


def test_values_of_secret_named_variables_are_redacted_wherever_they_appear():
    env = {"MY_SERVICE_TOKEN": "tok-0123456789", "PATH": "/usr/bin", "SHORT_KEY": "abc"}
    text = "error: auth with tok-0123456789 failed; PATH=/usr/bin; key abc"
    assert scrub(text, env) == f"error: auth with {REDACTED} failed; PATH=/usr/bin; key abc"


def test_credential_shapes_are_redacted_without_knowing_the_variable():
    for secret in ("sk-proj-abcdefghijklmnop1234", "sk-ant-api03-abcdefgh", "ghp_" + "a" * 36, "AKIA" + "B" * 16,
                   "hf_" + "c" * 30, "Bearer abcdefghijklmnopqrstu"):
        assert secret not in scrub(f"leaked: {secret}!", {}), secret
    assert scrub("a skeleton sketch of sk-3", {}) == "a skeleton sketch of sk-3"  # not credential-shaped


def test_terminal_controls_are_written_out_and_newlines_and_tabs_kept():
    """Sixth red-team pass: a candidate's error message retitled and cleared the terminal `eval` printed it on."""
    text = "a\x1b]0;title\x07b\x1b[2J\tc\nd\re\x9b\u202eevil\u2066 é"
    assert scrub(text, {}) == "a\\x1b]0;title\\x07b\\x1b[2J\tc\nd\\re\\x9b\\u202eevil\\u2066 é"
