"""The Strategy model refuses what a user strategy file could get wrong."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from kernelarc.strategies import Strategy

FIELDS = dict(name="sparsity", title="Structured sparsity", scope="Use 2:4 sparsity where weights allow.",
              playbook="# Sparsity\n\n1. Prune.\n")


def test_valid_strategy_strips_scope_and_is_frozen():
    s = Strategy(**{**FIELDS, "scope": "  One paragraph.\n"})
    assert s.scope == "One paragraph."
    with pytest.raises(ValidationError):
        s.name = "other"


@pytest.mark.parametrize("name", ["Sparsity", "2to4", "sparse strategy", "", "spa/rse"])
def test_bad_names_are_refused_quoting_the_value(name):
    with pytest.raises(ValidationError, match=re.escape(f"got {name!r}")):
        Strategy(**{**FIELDS, "name": name})


def test_kebab_and_snake_names_are_accepted():
    assert Strategy(**{**FIELDS, "name": "my-sparse_2"}).name == "my-sparse_2"


def test_scope_must_be_one_paragraph():
    with pytest.raises(ValidationError, match="one paragraph"):
        Strategy(**{**FIELDS, "scope": "First paragraph.\n\nSecond paragraph."})


@pytest.mark.parametrize("field", ["title", "scope", "playbook"])
def test_blank_text_fields_are_refused(field):
    with pytest.raises(ValidationError, match="empty"):
        Strategy(**{**FIELDS, field: "  \n"})


def test_unknown_kernel_type_is_refused():
    with pytest.raises(ValidationError, match="applies_to"):
        Strategy(**{**FIELDS, "applies_to": ("gemm", "matmul")})


def test_relevance_follows_applies_to():
    narrow = Strategy(**{**FIELDS, "applies_to": ("gemm",)})
    assert narrow.is_relevant("gemm") and not narrow.is_relevant("norm")
    assert Strategy(**FIELDS).is_relevant("norm")
