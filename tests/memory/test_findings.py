import sqlite3
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from kernelarc.errors import UserError
from kernelarc.guard.types import Verdict
from kernelarc.memory import (
    REFLECTION_CAP, STRATEGY_CAP, Finding, FindingKind, RetentionPolicy, RetentionSpecError, finding_from_verdict,
    recall,
)
from kernelarc.memory.migrations import migrate

from .factories import accept, keep, reject, revert

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _from(evaluation, strategy="tiling", reflection="bigger tiles helped on 4096^2", candidate_id=1, hash_="h1"):
    return finding_from_verdict(evaluation, kernel_type="gemm", task="matmul", strategy=strategy,
                                reflection=reflection, candidate_id=candidate_id, candidate_hash=hash_)


def _win(speedup, hash_, strategy="tiling", minutes=0):
    return Finding(kind=FindingKind.WIN, kernel_type="gemm", task="t", strategy=strategy, reflection="r",
                   verdict=Verdict.KEEP, speedup=speedup, candidate_id=1, candidate_hash=hash_,
                   created=T0 + timedelta(minutes=minutes))


def _trap(hash_, minutes, strategy="tiling", kernel_type="gemm"):
    return Finding(kind=FindingKind.TRAP, kernel_type=kernel_type, task="t", strategy=strategy, reflection="r",
                   verdict=Verdict.REJECT, reason="wrong", candidate_id=1, candidate_hash=hash_,
                   created=T0 + timedelta(minutes=minutes))


# -- finding_from_verdict ---------------------------------------------------------------------------


def test_keep_teaches_a_win_with_the_measured_speedup():
    f = _from(keep(speedup=1.8))
    assert (f.kind, f.verdict, f.speedup, f.strategy) == (FindingKind.WIN, Verdict.KEEP, 1.8, "tiling")
    assert f.reflection == "bigger tiles helped on 4096^2"


def test_reject_teaches_a_trap_with_the_guards_reason():
    f = _from(reject(reason="RUNTIME_ERROR: illegal memory access"))
    assert (f.kind, f.verdict, f.speedup, f.reason) == (FindingKind.TRAP, Verdict.REJECT, None,
                                                       "RUNTIME_ERROR: illegal memory access")


def test_revert_teaches_a_trap_only_with_a_reason():
    f = _from(revert(speedup=0.6, reason="0.60x: slower"))
    assert (f.kind, f.speedup, f.reason) == (FindingKind.TRAP, 0.6, "0.60x: slower")
    assert _from(revert(reason="   ")) is None


def test_accept_teaches_nothing():
    assert _from(accept()) is None


def test_agent_text_is_clipped_to_the_caps():
    f = _from(keep(), strategy="s " * 200, reflection="word " * 400)
    assert len(f.strategy) <= STRATEGY_CAP and f.strategy.endswith("…")
    assert len(f.reflection) <= REFLECTION_CAP and f.reflection.endswith("…")


def test_empty_reflection_falls_back_to_the_guards_reason():
    assert _from(keep(reason="1.50x beyond noise 2%"), reflection="").reflection == "1.50x beyond noise 2%"


# -- the Finding model refuses what no verdict could produce -------------------------------------------


def test_over_cap_text_is_refused_quoting_its_length():
    with pytest.raises(ValidationError, match="strategy has 161 characters, over the cap of 160"):
        Finding.model_validate({**_win(1.5, "h").model_dump(), "strategy": "s" * 161})
    with pytest.raises(ValidationError, match="reflection has 1201 characters"):
        Finding.model_validate({**_win(1.5, "h").model_dump(), "reflection": "r" * 1201})


@pytest.mark.parametrize("changes, message", [
    ({"verdict": Verdict.ACCEPT}, "a win cannot rest on verdict ACCEPT"),
    ({"verdict": Verdict.REJECT}, "a win cannot rest on verdict REJECT"),
    ({"speedup": None}, "a win needs the measured speedup"),
    ({"kind": FindingKind.TRAP, "verdict": Verdict.REJECT, "speedup": None}, "a trap needs the guard's reason"),
])
def test_inconsistent_findings_are_refused(changes, message):
    with pytest.raises(ValidationError, match=message):
        Finding.model_validate({**_win(1.5, "h").model_dump(), **changes})


def test_sql_checks_match_the_caps():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    insert = ("INSERT INTO findings (kind, kernel_type, task, strategy, reflection, verdict, speedup, reason,"
              " candidate_id, candidate_hash, created) VALUES ('win', 'gemm', 't', ?, ?, 'KEEP', 1.5, '', 1, ?, 'now')")
    conn.execute(insert, ("s" * STRATEGY_CAP, "r" * REFLECTION_CAP, "a"))
    for strategy, reflection in (("s" * (STRATEGY_CAP + 1), "r"), ("s", "r" * (REFLECTION_CAP + 1))):
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            conn.execute(insert, (strategy, reflection, "b"))


# -- retention --------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, wins, traps, canonical", [
    ("unbounded", None, None, "unbounded"),
    ("16", 16, 16, "16"),
    ("16/8", 16, 8, "16/8"),
    (" Unbounded/4 ", None, 4, "unbounded/4"),
    ("0", 0, 0, "0"),
])
def test_retention_parses_and_round_trips(spec, wins, traps, canonical):
    policy = RetentionPolicy.parse(spec)
    assert (policy.wins, policy.traps, policy.spec) == (wins, traps, canonical)
    assert RetentionPolicy.parse(policy.spec) == policy


@pytest.mark.parametrize("spec", ["", "all", "16/", "-1", "16/8/4", "1.5"])
def test_bad_retention_specs_are_user_errors(spec):
    with pytest.raises(RetentionSpecError, match=f"got {spec!r}") as info:
        RetentionPolicy.parse(spec)
    assert isinstance(info.value, UserError)


def test_cap_two_two_evicts_smallest_wins_and_oldest_traps_per_kernel_type():
    wins = [_win(1.2, "w1"), _win(2.0, "w2"), _win(1.1, "w3"), _win(1.6, "w4")]
    traps = [_trap("t1", 3), _trap("t2", 1), _trap("t3", 2), _trap("n1", 0, kernel_type="norm")]
    evicted = RetentionPolicy.parse("2/2").to_evict(wins + traps)
    assert {f.candidate_hash for f in evicted} == {"w1", "w3", "t2"}


def test_equal_speedups_evict_the_older_win_first():
    older, newer, best = _win(1.5, "b", minutes=0), _win(1.5, "a", minutes=5), _win(3.0, "c")
    assert RetentionPolicy.parse("2").to_evict([newer, best, older]) == [older]


def test_unbounded_evicts_nothing():
    many = [_win(1.0 + i / 10, f"w{i}") for i in range(40)] + [_trap(f"t{i}", i) for i in range(40)]
    assert RetentionPolicy.parse("unbounded").to_evict(many) == []


# -- recall -----------------------------------------------------------------------------------------


def test_recall_puts_the_asking_strategy_first_then_the_largest_speedup():
    found = [_win(3.0, "other-big", strategy="vectorize"), _win(1.2, "mine-small"), _win(1.9, "mine-big"),
             _win(2.0, "other-mid", strategy="vectorize")]
    got = recall(found, kernel_type="gemm", strategy="Tiling ", limit=3)
    assert [f.candidate_hash for f in got.wins] == ["mine-big", "mine-small", "other-big"]


def test_recall_ranks_traps_by_strategy_then_newest_and_filters_the_kernel_type():
    found = [_trap("old", 0), _trap("new", 9), _trap("other", 20, strategy="fusion"), _trap("norm", 30, kernel_type="norm")]
    got = recall(found, kernel_type="gemm", strategy="tiling", limit=10)
    assert [f.candidate_hash for f in got.traps] == ["new", "old", "other"]
    assert got.wins == ()


def test_recall_is_deterministic_on_ties_and_counts_a_kernel_once():
    a, b = _win(1.5, "a"), _win(1.5, "b")
    duplicate = _win(9.9, "a", strategy="other")  # the same kernel from a second source: the first copy counts
    for order in ([a, b, duplicate], [b, a, duplicate]):
        assert [f.candidate_hash for f in recall(order, kernel_type="gemm", strategy="tiling", limit=5).wins] == ["a", "b"]


def test_recall_limit_applies_to_each_kind():
    found = [_win(1.0 + i, f"w{i}") for i in range(5)] + [_trap(f"t{i}", i) for i in range(5)]
    got = recall(found, kernel_type="gemm", strategy="tiling", limit=2)
    assert (len(got.wins), len(got.traps)) == (2, 2)
    assert [f.kind for f in got.all] == [FindingKind.WIN, FindingKind.WIN, FindingKind.TRAP, FindingKind.TRAP]
