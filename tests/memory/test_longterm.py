import pytest

from kernelarc.memory import (
    HOME_ENV, FindingKind, LongTermMemory, RetentionPolicy, StoreError, UnknownFindingError, longterm_path,
    user_cache_dir, user_data_dir,
)

from .factories import keep, open_campaign, propose, reject


def _campaign(path, wins, traps=0, strategy="tiling"):
    """A finished campaign store with `wins` (speedups) and `traps` REJECTs, candidates numbered from 0."""
    store = open_campaign(path, strategy=strategy)
    for n, speedup in enumerate(wins):
        store.record_verdict(propose(store, n, strategy=strategy), keep(speedup=speedup), against_incumbent_id=None)
    for n in range(traps):
        store.record_verdict(propose(store, 100 + n, strategy=strategy), reject(reason=f"wrong {n}"),
                             against_incumbent_id=None)
    return store


def test_user_dirs_follow_kernelarc_home(tmp_path, monkeypatch):
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    assert user_data_dir() == tmp_path / "home"
    assert user_cache_dir() == tmp_path / "home" / "cache"
    assert longterm_path() == tmp_path / "home" / "memory.sqlite"


def test_user_dirs_fall_back_to_the_platform_dirs(monkeypatch):
    monkeypatch.delenv(HOME_ENV)
    assert user_data_dir().name == "kernelarc" and user_cache_dir().name == "kernelarc"
    assert user_data_dir() != user_cache_dir()


def test_default_location_is_under_kernelarc_home(_isolated_user_dirs):
    with LongTermMemory() as memory:
        assert memory.path == _isolated_user_dirs / "memory.sqlite"
    assert memory.path.is_file()


def test_absorb_copies_findings_once(tmp_path):
    store = _campaign(tmp_path / "c.sqlite", wins=[1.5, 2.0], traps=1)
    with LongTermMemory() as memory:
        assert memory.absorb(store) == 3
        assert memory.absorb(store) == 0  # a resumed campaign absorbing again adds nothing
        kept = memory.findings()
    assert [(f.kind, f.candidate_hash) for f in kept] == [(f.kind, f.candidate_hash) for f in store.findings()]
    assert {f.task for f in kept} == {"matmul"}
    store.close()


def test_absorb_applies_a_retention_policy(tmp_path):
    first = _campaign(tmp_path / "a.sqlite", wins=[1.1, 3.0])
    second = _campaign(tmp_path / "b.sqlite", wins=[2.0])  # same sources 0: a kernel already known
    third = _campaign(tmp_path / "c.sqlite", wins=[9.0, 1.05, 2.5])
    with LongTermMemory() as memory:
        memory.absorb(first)
        assert memory.absorb(second) == 0
        memory.absorb(third, policy=RetentionPolicy.parse("2"))
        assert sorted(f.speedup for f in memory.findings(kind=FindingKind.WIN)) == [2.5, 3.0]
    for s in (first, second, third):
        s.close()


def test_recall_merges_the_campaign_with_long_term_memory(tmp_path):
    past = _campaign(tmp_path / "past.sqlite", wins=[3.0], strategy="fusion")
    with LongTermMemory() as memory:
        memory.absorb(past)
        now = open_campaign(tmp_path / "now.sqlite")
        now.record_verdict(propose(now, 50), keep(speedup=1.2), against_incumbent_id=None)
        got = memory.recall("gemm", "tiling", limit=5, campaign=now)
        assert [(f.strategy, f.speedup) for f in got.wins] == [("tiling", 1.2), ("fusion", 3.0)]
        assert memory.recall("gemm", "tiling", limit=5).wins[0].strategy == "fusion"
        assert memory.recall("norm", "tiling", limit=5).wins == ()
    past.close()
    now.close()


def test_recall_counts_a_kernel_known_to_both_once(tmp_path):
    store = _campaign(tmp_path / "c.sqlite", wins=[1.5])
    with LongTermMemory() as memory:
        memory.absorb(store)
        assert len(memory.recall("gemm", "tiling", limit=5, campaign=store).wins) == 1
    store.close()


def test_clear_all_or_one_kernel_type(tmp_path):
    store = _campaign(tmp_path / "c.sqlite", wins=[1.5], traps=2)
    with LongTermMemory() as memory:
        memory.absorb(store)
        assert memory.clear("norm") == 0
        assert memory.clear("gemm") == 3
        assert memory.findings() == []
    store.close()


def test_unknown_finding_is_a_user_error():
    with LongTermMemory() as memory, pytest.raises(UnknownFindingError, match="no finding #7"):
        memory.finding(7)


def test_campaign_stores_and_long_term_memories_are_not_mixed_up(tmp_path):
    open_campaign(tmp_path / "c.sqlite").close()
    with pytest.raises(StoreError, match="c.sqlite: not a kernelarc long-term memory"):
        LongTermMemory(tmp_path / "c.sqlite")
    LongTermMemory(tmp_path / "m.sqlite").close()
    with pytest.raises(StoreError, match="m.sqlite: not a kernelarc campaign store"):
        open_campaign(tmp_path / "m.sqlite")
