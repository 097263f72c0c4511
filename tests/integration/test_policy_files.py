"""Per-user policy files (seed 001 §1.2, §1.4, §3.5; issue 14 item 5): ``policy_overrides.json``
changed by ``set`` / ``reset`` / ``rollback`` through the API and the ``memfold policy`` command,
each change preceded by a ``policy_snapshots/YYYYMMDD_HHMMSS.json`` of the overrides it replaces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold import Memory
from memfold.errors import ConfigError, InvalidInputError, NotFoundError
from memfold.maintenance import policy_files
from memfold.maintenance.policy_files import PolicyFiles

from ..conftest import run_cli
from ..support.hash_embedder import HashEmbedder


@pytest.fixture
def hmem(root: Path):
    m = Memory(root=root, embedder=HashEmbedder())
    yield m
    m.close()


def _overrides(root: Path, user: str) -> dict | None:
    p = root / user / "policy_overrides.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None


def _snapshot_files(root: Path, user: str) -> list[Path]:
    d = root / user / "policy_snapshots"
    return sorted(d.glob("*.json")) if d.is_dir() else []


def test_set_snapshots_the_old_overrides_first_and_memory_reads_the_new_ones(hmem: Memory, root: Path):
    assert hmem.policy("alice").retrieve_limit == 10
    files = hmem.policy_files("alice")
    change = files.set({"retrieve_limit": "15"})  # a string as the command line gives it
    assert change.changed and change.before == {} and change.after == {"retrieve_limit": 15}
    assert _overrides(root, "alice") == {"retrieve_limit": 15}  # stored as the key's type
    snaps = _snapshot_files(root, "alice")
    assert [p.stem for p in snaps] == [change.snapshot.name]
    assert json.loads(snaps[0].read_text()) == {}  # the overrides before the change
    assert hmem.policy("alice").retrieve_limit == 15  # the changed file is read again
    assert hmem.policy("bob").retrieve_limit == 10  # per user

    change = files.set({"evolution_enabled": "true", "dedupe_threshold": 0.9})
    assert json.loads(change.snapshot.path.read_text()) == {"retrieve_limit": 15}
    assert _overrides(root, "alice") == {"retrieve_limit": 15, "evolution_enabled": True, "dedupe_threshold": 0.9}
    # the same value again changes nothing and writes nothing
    again = files.set({"retrieve_limit": 15})
    assert not again.changed and again.snapshot is None
    assert len(_snapshot_files(root, "alice")) == 2
    assert not list((root / "alice").glob(".*.tmp")) and not list((root / "alice" / "policy_snapshots").glob(".*"))


@pytest.mark.parametrize("key,value,words", [
    ("retrieve_limit", "0", "between 1 and 1000"),
    ("retrieve_limit", "5000", "between 1 and 1000"),
    ("retrieve_limit", "1.5", "must be an int"),
    ("dedupe_threshold", "2", "between 0.5 and 1"),
    ("evolution_enabled", "maybe", "true or false"),
    ("token_encoding", "gpt2", "must be one of"),
    ("decay_tau_days", "nan", "finite"),
    ("retrieve_limt", "5", "unknown policy key"),
])
def test_a_bad_value_is_refused_with_the_key_named_and_nothing_written(hmem: Memory, root: Path, key, value, words):
    files = hmem.policy_files("alice")
    files.set({"recent_days": 5})
    before = _snapshot_files(root, "alice")
    with pytest.raises(ConfigError) as exc:
        files.set({"recent_days": 6, key: value})
    assert repr(key) in str(exc.value) and words in str(exc.value)
    assert _overrides(root, "alice") == {"recent_days": 5}  # not even the good key of the same call
    assert _snapshot_files(root, "alice") == before


def test_snapshots_within_one_second_get_unique_names_in_order(hmem: Memory, root: Path):
    files = hmem.policy_files("alice")
    for n in range(1, 8):
        files.set({"retrieve_limit": n})
    snaps = files.snapshots()
    assert len(snaps) == 7 == len({s.name for s in snaps})
    # each snapshot holds the state before the next change: the chain of values in order
    assert [s.overrides.get("retrieve_limit") for s in snaps] == [None, 1, 2, 3, 4, 5, 6]
    assert all(s.path.name == f"{s.name}.json" for s in snaps)
    assert all(len(s.name.split("_")[0]) == 8 and len(s.name.split("_")[1]) == 6 for s in snaps)


def test_rollback_restores_the_newest_or_a_named_snapshot_and_can_be_undone(hmem: Memory, root: Path):
    files = hmem.policy_files("alice")
    with pytest.raises(NotFoundError, match="no policy snapshots"):
        files.rollback()
    files.set({"retrieve_limit": 12})
    first = files.set({"retrieve_limit": 20, "recent_days": 9}).snapshot
    assert hmem.policy("alice").retrieve_limit == 20

    back = files.rollback()  # the newest: the state before the last change
    assert back.restored == first.name and _overrides(root, "alice") == {"retrieve_limit": 12}
    assert hmem.policy("alice").retrieve_limit == 12 and hmem.policy("alice").recent_days == 3
    files.rollback()  # the rollback was snapshotted too: rolling back again undoes it
    assert _overrides(root, "alice") == {"retrieve_limit": 20, "recent_days": 9}

    oldest = files.snapshots()[0]
    files.rollback(oldest.name + ".json")
    assert _overrides(root, "alice") is None  # the empty overrides: the file is gone, the config applies
    assert hmem.policy("alice").retrieve_limit == 10
    with pytest.raises(NotFoundError, match="no policy snapshot '20000101_000000'"):
        files.rollback("20000101_000000")
    with pytest.raises(InvalidInputError, match="invalid snapshot name"):
        files.rollback("../policy_overrides")


def test_reset_all_or_some_keys(hmem: Memory, root: Path):
    files = hmem.policy_files("alice")
    assert not files.reset().changed and not _snapshot_files(root, "alice")  # nothing to reset: nothing written
    files.set({"retrieve_limit": 12, "recent_days": 9})
    files.reset(["recent_days"])
    assert _overrides(root, "alice") == {"retrieve_limit": 12}
    with pytest.raises(ConfigError, match="'recent_dayz'"):
        files.reset(["recent_dayz"])
    change = files.reset()
    assert _overrides(root, "alice") is None and change.snapshot.overrides == {"retrieve_limit": 12}
    assert hmem.policy("alice").retrieve_limit == 10


def test_a_broken_overrides_file_is_named_and_reset_keeps_its_text(hmem: Memory, root: Path):
    files = hmem.policy_files("alice")
    files.set({"retrieve_limit": 12})
    assert hmem.policy("alice").retrieve_limit == 12
    (root / "alice" / "policy_overrides.json").write_text('{"retrieve_limit": 13,', encoding="utf-8")
    assert hmem.policy("alice").retrieve_limit == 12  # a running Memory keeps its last good policy
    with pytest.raises(ConfigError, match="policy_overrides.json is not valid JSON"):
        files.set({"recent_days": 4})
    assert (root / "alice" / "policy_overrides.json").read_text() == '{"retrieve_limit": 13,'  # untouched
    change = files.reset()
    assert change.snapshot.path.read_text() == '{"retrieve_limit": 13,'  # the hand edit is not lost
    assert _overrides(root, "alice") is None and hmem.policy("alice").retrieve_limit == 10
    listed = files.snapshots()[-1]
    assert listed.error and listed.overrides == {}
    with pytest.raises(ConfigError, match="cannot be restored"):
        files.rollback(listed.name)
    # a key that is valid JSON but out of bounds, written by hand, is named before anything changes
    (root / "alice" / "policy_overrides.json").write_text('{"recent_days": 999}', encoding="utf-8")
    with pytest.raises(ConfigError, match="'recent_days'"):
        files.set({"retrieve_limit": 4})


def test_snapshots_are_bounded(hmem: Memory, root: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(policy_files, "SNAPSHOTS_KEPT", 3)
    files = hmem.policy_files("alice")
    for n in range(1, 7):
        files.set({"retrieve_limit": n})
    assert [s.overrides["retrieve_limit"] for s in files.snapshots()] == [3, 4, 5]  # the newest three


def test_a_session_keeps_its_policy_a_new_one_reads_the_changed_file(hmem: Memory, root: Path):
    old = hmem.session("s1", "alice")
    hmem.policy_files("alice").set({"session_summary_keep_count": 7})
    assert old.policy.session_summary_keep_count == 4
    assert hmem.session("s2", "alice").policy.session_summary_keep_count == 7
    # another process's change (written the same way) is seen too
    PolicyFiles.of(root, "alice").set({"session_summary_keep_count": 6})
    assert hmem.session("s3", "alice").policy.session_summary_keep_count == 6


def test_policy_commands(root: Path):
    r = run_cli(root, "policy", "set", "retrieve_limit", "15", "--user", "alice")
    assert r.returncode == 0, r.stderr
    assert "retrieve_limit: (config) -> 15" in r.stdout and "snapshot" in r.stdout
    r = run_cli(root, "policy", "set", "retrieve_limit", "5000", "--user", "alice")
    assert r.returncode == 1 and "'retrieve_limit'" in r.stderr and "between 1 and 1000" in r.stderr
    r = run_cli(root, "policy", "-u", "alice", "set", "recent_days", "6", "--json")  # group option works too
    assert r.returncode == 0 and json.loads(r.stdout)["after"] == {"retrieve_limit": 15, "recent_days": 6}
    shown = json.loads(run_cli(root, "policy", "show", "--user", "alice").stdout)
    assert shown["retrieve_limit"] == 15 and shown["recent_days"] == 6
    assert json.loads(run_cli(root, "policy", "--user", "alice").stdout) == shown  # bare "policy" shows it
    assert json.loads(run_cli(root, "policy").stdout)["retrieve_limit"] == 10  # the default user is untouched

    r = run_cli(root, "policy", "snapshots", "--user", "alice", "--json")
    snaps = json.loads(r.stdout)
    assert [s["overrides"] for s in snaps] == [{}, {"retrieve_limit": 15}]
    r = run_cli(root, "policy", "rollback", "--user", "alice")
    assert r.returncode == 0 and f"snapshot {snaps[-1]['name']}" in r.stdout
    assert _overrides(root, "alice") == {"retrieve_limit": 15}
    r = run_cli(root, "policy", "rollback", snaps[0]["name"], "--user", "alice")
    assert r.returncode == 0 and _overrides(root, "alice") is None
    r = run_cli(root, "policy", "rollback", "20000101_000000", "--user", "alice")
    assert r.returncode == 1 and "no policy snapshot" in r.stderr
    run_cli(root, "policy", "set", "recent_days", "2", "--user", "alice")
    r = run_cli(root, "policy", "reset", "--user", "alice")
    assert r.returncode == 0 and "recent_days: 2 -> (config)" in r.stdout and _overrides(root, "alice") is None
    r = run_cli(root, "policy", "snapshots", "--user", "alice")
    assert len(r.stdout.strip().splitlines()) == 6


def test_a_running_memory_applies_a_changed_backup_keep(hmem: Memory, root: Path):
    r = hmem.add("the boat is moored at pier 4", "alice", infer=False).added[0]
    for pier in (5, 6, 7):
        hmem.update(r.id, "alice", content=f"the boat is moored at pier {pier}")
    assert len(list((root / "alice" / "backups").glob("*_MEMORY.md"))) == 3
    hmem.policy_files("alice").set({"backup_keep": 1})
    hmem.update(r.id, "alice", content="the boat is moored at pier 8")
    assert len(list((root / "alice" / "backups").glob("*_MEMORY.md"))) == 1
