"""The catalogue: eight built-ins with real playbooks, lookup, the default spread, and user strategy files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelarc.errors import UserError
from kernelarc.strategies import (
    StrategyError,
    all_strategies,
    builtin_strategies,
    default_spread,
    get_strategy,
    load_user_strategy,
    parse_strategies,
    user_strategy_dir,
)
from kernelarc.task.classify import KernelType

BUILTIN_NAMES = {"library", "memory", "tensor_cores", "fusion", "precision", "reduction", "scheduling", "arch"}
PLAYBOOK_SECTIONS = ("## Moves, in trial order", "## What to measure", "## Traps")

SPARSITY_YAML = """\
name: sparsity
title: Structured sparsity
scope: Use 2:4 structured sparsity on weights that allow it; keep dense activations.
applies_to: [gemm]
playbook_file: books/sparsity.md
"""


def write_user_strategy(folder: Path, name: str = "sparsity", applies_to: str = "[gemm]") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "books").mkdir(exist_ok=True)
    (folder / "books" / f"{name}.md").write_text(f"# {name}\n\n1. Prune to 2:4.\n")
    path = folder / f"{name}.yaml"
    path.write_text(SPARSITY_YAML.replace("sparsity", name).replace("[gemm]", applies_to))
    return path


def test_catalogue_has_the_eight_families():
    assert {s.name for s in builtin_strategies()} == BUILTIN_NAMES
    assert len(builtin_strategies()) == 8
    assert all_strategies() == builtin_strategies()  # KERNELARC_HOME is an empty temp dir


@pytest.mark.parametrize("name", sorted(BUILTIN_NAMES))
def test_each_playbook_loads_with_moves_measures_and_traps(name):
    strategy = get_strategy(name)
    lines = strategy.playbook.splitlines()
    assert lines[0].startswith("# ")
    assert 40 <= len(lines) <= 80, f"{name}.md has {len(lines)} lines"
    for section in PLAYBOOK_SECTIONS:
        assert section in strategy.playbook, f"{name}.md lacks {section!r}"
    assert "\n1. " in strategy.playbook  # moves are numbered, in trial order
    assert strategy.builtin_moves == name
    assert strategy.scope and strategy.title


def test_lookup_accepts_kebab_or_snake_case():
    assert get_strategy("tensor-cores") is get_strategy("tensor_cores")


def test_unknown_strategy_is_one_line_naming_it_and_listing_the_known():
    with pytest.raises(StrategyError) as caught:
        get_strategy("vectorize")
    message = str(caught.value)
    assert "'vectorize'" in message and "\n" not in message
    assert all(name in message for name in BUILTIN_NAMES)
    assert isinstance(caught.value, UserError)


def test_parse_keeps_order_and_repeats_and_ignores_spaces():
    assert [s.name for s in parse_strategies(" arch, fusion ,arch,")] == ["arch", "fusion", "arch"]


@pytest.mark.parametrize("text, expected", [("library,warp", "'warp'"), ("", "no strategy"), (" , ", "no strategy")])
def test_parse_errors(text, expected):
    with pytest.raises(StrategyError, match=expected):
        parse_strategies(text)


@pytest.mark.parametrize("kernel_type", [k.value for k in KernelType])
def test_default_spread_is_deterministic_distinct_and_relevant_first(kernel_type):
    for n in range(1, 9):
        spread = default_spread(n, kernel_type)
        assert spread == default_spread(n, kernel_type)
        assert len({s.name for s in spread}) == n
    full = default_spread(8, kernel_type)
    relevance = [s.is_relevant(kernel_type) for s in full]
    assert relevance == sorted(relevance, reverse=True)


def test_default_spread_puts_matmul_strategies_first_for_gemm():
    names = [s.name for s in default_spread(4, "gemm")]
    assert "tensor_cores" in names and "memory" not in names and "reduction" not in names


def test_strategies_with_work_come_first_among_the_relevant_ones():
    plain = [s.name for s in default_spread(4, "gemm")]
    assert plain == ["library", "fusion", "tensor_cores", "scheduling"]
    work = frozenset({"library", "tensor_cores", "scheduling", "arch"})
    assert [s.name for s in default_spread(4, "gemm", work)] == ["library", "tensor_cores", "scheduling", "arch"]
    assert [s.name for s in default_spread(8, "gemm", work)][4:] == ["fusion", "precision", "memory", "reduction"]


def test_default_spread_cycles_past_the_catalogue():
    spread = default_spread(19, "norm")
    assert spread[8:16] == spread[:8] and spread[16:] == spread[:3]


def test_default_spread_needs_an_agent():
    with pytest.raises(ValueError, match="got 0"):
        default_spread(0, "gemm")


def test_user_strategy_from_yaml_reads_its_playbook_file(tmp_path):
    strategy = load_user_strategy(write_user_strategy(tmp_path))
    assert strategy.name == "sparsity"
    assert strategy.applies_to == (KernelType.GEMM,)
    assert strategy.playbook.startswith("# sparsity")
    assert strategy.builtin_moves is None


def test_user_strategy_from_toml_with_inline_playbook(tmp_path):
    path = tmp_path / "graphs.toml"
    path.write_text('name = "graphs-only"\ntitle = "Graphs"\nscope = "Only CUDA graphs."\n'
                    'playbook = """\n# Graphs\n1. Capture.\n"""\nbuiltin_moves = "scheduling"\n')
    strategy = load_user_strategy(path)
    assert (strategy.name, strategy.builtin_moves, strategy.applies_to) == ("graphs-only", "scheduling", ())
    assert "1. Capture." in strategy.playbook


def test_user_strategies_are_picked_up_from_kernelarc_home():
    folder = user_strategy_dir()
    assert folder == Path(os.environ["KERNELARC_HOME"]) / "strategies"
    write_user_strategy(folder)
    write_user_strategy(folder, name="alpha", applies_to="[norm]")
    names = [s.name for s in all_strategies()]
    assert names[:8] == [s.name for s in builtin_strategies()] and names[8:] == ["alpha", "sparsity"]
    assert parse_strategies("sparsity,library")[0].playbook.startswith("# sparsity")
    assert "sparsity" in [s.name for s in default_spread(7, "gemm")]  # relevant to gemm: before memory
    assert "sparsity" not in [s.name for s in default_spread(9, "norm")][:8]


def test_user_strategy_cannot_take_a_builtin_name():
    write_user_strategy(user_strategy_dir(), name="fusion")
    with pytest.raises(StrategyError, match="reuses the name 'fusion'"):
        all_strategies()


@pytest.mark.parametrize("content, expected", [
    ("name: [unclosed", "cannot read"),
    ("- just\n- a list\n", "mapping"),
    ("name: x\ntitle: X\nscope: s\n", "exactly one of 'playbook' and 'playbook_file'"),
    ("name: x\ntitle: X\nscope: s\nplaybook: p\nplaybook_file: p.md\n", "exactly one"),
    ("name: x\ntitle: X\nscope: s\nplaybook_file: missing.md\n", "cannot read playbook_file"),
    ("name: x\ntitle: X\nscope: s\nplaybook: p\napplies_to: [matmul]\n", "applies_to.0.*'matmul'"),
    ("name: X Y\ntitle: X\nscope: s\nplaybook: p\n", "name"),
    ("name: x\ntitle: X\nscope: s\nplaybook: p\ncolour: red\n", "colour"),
])
def test_malformed_user_strategy_files_are_one_line_errors(tmp_path, content, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(StrategyError, match=expected) as caught:
        load_user_strategy(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_user_strategy_file_needs_a_known_suffix_and_must_exist(tmp_path):
    with pytest.raises(StrategyError, match="must end in"):
        load_user_strategy(tmp_path / "s.json")
    with pytest.raises(StrategyError, match="cannot read"):
        load_user_strategy(tmp_path / "absent.yaml")


def test_malformed_toml_is_a_one_line_error(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x\n')
    with pytest.raises(StrategyError, match="cannot read strategy file") as caught:
        load_user_strategy(path)
    assert "\n" not in str(caught.value)


def test_package_exports_resolve_and_import_points_down_only():
    code = ("import sys, kernelarc.strategies as s; assert all(hasattr(s, n) for n in s.__all__); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch' "
            "or m.startswith(('kernelarc.agents', 'kernelarc.campaign'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
