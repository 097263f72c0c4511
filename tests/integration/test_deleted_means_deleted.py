"""Deleted means deleted (issue 10 §3): after ``delete`` / ``forget`` the words of a memory are in no
file memfold keeps — the index and its write-ahead log, the backups, the search snapshot — while the
history keeps the events. Backups also expire by age, and temp files of crashed writes go at open.
Every check reads the raw bytes of the files."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from memfold import Memory
from memfold.errors import ConfigError
from memfold.index import snapshot
from memfold.text.forgetting import STRUCTURAL_KEYS

from ..conftest import run_cli


def holders(root: Path, *words: str) -> list[str]:
    """Every file under ``root`` whose bytes contain one of ``words`` (as 'file: word'), in UTF-8 or in
    the UTF-32 of numpy's text arrays (the snapshot's ids and vocabulary)."""
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            out += [f"{p.relative_to(root)}: {w}" for w in words
                    if w.encode("utf-8") in data or w.encode("utf-32-le") in data]
    return out


def cut_snapshot(mem: Memory, user_id: str) -> Path:
    """What a process closing a big namespace leaves in index.db.cache/ (index/snapshot.py)."""
    ss = mem.index.inner._search
    m, k = ss.matrix(user_id), ss.keyword_index(user_id)
    path = snapshot.path_for(mem.index.inner.path, user_id)
    snapshot.save(path, instance=ss.instance, seq=m.seq, user_id=user_id, vectors=m, keywords=k)
    return path


def test_delete_leaves_the_words_in_no_file(mem: Memory, root: Path) -> None:
    keep = mem.add("I like jasmine tea in the morning", "alice").added[0]
    r = mem.add("My locker combination word is Zanquorith", "alice").added[0]
    mem.update(r.id, "alice", content="My locker combination word is Zanquorith or Plexivane")
    mem.update(keep.id, "alice", importance=0.9)  # one more backup, holding the updated text
    snap = cut_snapshot(mem, "alice")
    words = ("Zanquorith", "Plexivane", "zanquorith")  # the snapshot's vocabulary holds lower-cased terms
    assert holders(root / "alice" / "backups", *words) and holders(snap.parent, *words)
    mem.delete(r.id, "alice")
    assert holders(root, *words) == []  # index.db, index.db-wal, backups/, index.db.cache/, MEMORY.md
    hist = mem.history(r.id, "alice")
    assert [e.action for e in hist] == ["add", "update", "delete"]
    assert all(e.old_content is None and e.new_content is None for e in hist)
    assert all(set(e.detail) <= STRUCTURAL_KEYS for e in hist)
    # what was not deleted is untouched: the other memory, its history, the backups holding it
    assert mem.get(keep.id, "alice").content == "I like jasmine tea in the morning"
    assert mem.history(keep.id, "alice")[0].new_content == "I like jasmine tea in the morning"
    backups = mem._store("alice").space.backups()
    # before the second add (a backup precedes an append too), the two updates and the delete
    assert len(backups) == 4 and all(b"jasmine tea" in b.read_bytes() for b in backups)
    assert r.id not in [h.record.id for h in mem.search("locker combination", "alice", record_access=False)]
    mem.close()
    assert holders(root, *words) == []  # closing cuts no snapshot with them either


def test_forget_takes_older_versions_and_quoting_history_along(root: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(root=root, embedder=embedder, policy={"dedupe_threshold": 0.8})
    old = mem.add("The user drinks Quillomat oat milk", "alice").added[0]
    new = mem.add("The user drinks almond milk", "alice").added[0]
    other = mem.add("The user walks the dog at seven", "alice").added[0]
    assert mem.get(old.id, "alice").superseded_by == new.id  # archived: the older version of the fact
    assert holders(root, "Quillomat")
    gone = mem.forget(new.id, "alice")
    assert [g.id for g in gone] == [new.id]
    assert holders(root, "Quillomat", "almond milk") == []
    assert mem.get_all("alice", include_archived=True) == [mem.get(other.id, "alice")]
    assert [e.action for e in mem.history(old.id, "alice")] == ["add", "archive", "delete"]
    assert all(e.old_content is None and e.new_content is None
               for e in mem.history(old.id, "alice") + mem.history(new.id, "alice"))
    assert mem.history(old.id, "alice")[-1].detail["superseded_by"] == new.id
    mem.close()


def test_forget_by_words_also_clears_the_next_turns_context(mem: Memory, root: Path) -> None:
    res = mem.add([{"role": "user", "content": "My pet ferret is named Vorquendle", "turn_id": "t1"},
                   {"role": "user", "content": "I also enjoy hiking on weekends", "turn_id": "t2"}], "alice")
    second = next(r for r in res.added if r.source_ids == ("t2",) and r.file == "")
    assert "Vorquendle" in mem.get(second.id, "alice").context  # a turn is indexed with the previous one
    gone = mem.forget("ferret Vorquendle", "alice")
    assert gone and all("Vorquendle" in g.content for g in gone)
    assert holders(root, "Vorquendle", "vorquendl") == []  # vorquendl: its stemmed keyword term
    kept = mem.get(second.id, "alice")
    assert kept.content == "I also enjoy hiking on weekends" and "Vorquendle" not in kept.context
    # re-indexed and found (as itself, or as the memory extracted from it, which carries its turn id)
    assert any(set(second.source_ids) <= set(h.record.source_ids) for h in mem.search("hiking on weekends", "alice"))


def test_a_short_turn_leaves_only_its_own_quotes(mem: Memory) -> None:
    res = mem.add([{"role": "user", "content": "I booked the flight", "turn_id": "t0"},
                   {"role": "user", "content": "Noted the Oslo hotel too", "turn_id": "t1"},
                   {"role": "user", "content": "ok", "turn_id": "t2"},
                   {"role": "user", "content": "What a sunny afternoon", "turn_id": "t3"}], "alice")
    turn = {r.source_ids[0]: r for r in res.added if r.file == ""}
    mem.forget(turn["t2"].id, "alice")
    assert mem.get(turn["t1"].id, "alice").context == turn["t1"].context  # "booked" keeps its "ok"
    assert turn["t3"].context.endswith(" ok") and not mem.get(turn["t3"].id, "alice").context.endswith("ok")


def test_a_forget_request_in_a_conversation_purges_too(mem: Memory, root: Path) -> None:
    r = mem.add("My bank is Trevasquill Savings", "alice").added[0]
    mem.update(r.id, "alice", importance=0.8)  # a backup holding it
    res = mem.add([{"role": "user", "content": "forget that my bank is Trevasquill Savings"}], "alice")
    assert [g.id for g in res.forgotten] == [r.id]
    assert holders(root, "Trevasquill", "trevasquil") == []


@pytest.fixture
def insecure_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite as most builds ship it: secure_delete off unless a connection asks (Debian's is built with it on)."""
    real = sqlite3.connect

    def connect(*args, **kwargs):  # type: ignore[no-untyped-def]
        db = real(*args, **kwargs)
        db.execute("PRAGMA secure_delete=OFF")
        return db

    monkeypatch.setattr(sqlite3, "connect", connect)


def test_sqlite_connections_delete_securely(insecure_sqlite: None, root: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(root=root, embedder=embedder)
    assert mem.index.inner._db.execute("PRAGMA secure_delete").fetchone()[0] == 1
    mem.close()


def test_backups_expire_by_age(root: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(root=root, embedder=embedder)
    assert mem.policy("alice").backup_max_age_days == 30
    r = mem.add("I like green tea", "alice").added[0]
    for i in range(3):
        mem.update(r.id, "alice", content=f"I like green tea, variant {i}")
    mem.close()
    backups = sorted((root / "alice" / "backups").glob("*_MEMORY.md"))
    assert len(backups) == 3
    month_ago = time.time() - 31 * 86400
    for b in backups[:2]:
        os.utime(b, (month_ago, month_ago))
    kept = Memory(root=root, embedder=embedder, policy={"backup_max_age_days": 0})  # 0: no age limit
    kept.get_all("alice")
    kept.close()
    assert len(list((root / "alice" / "backups").glob("*_MEMORY.md"))) == 3
    again = Memory(root=root, embedder=embedder)  # nothing written: expired at the first use of the namespace
    again.get_all("alice")
    assert sorted((root / "alice" / "backups").glob("*_MEMORY.md")) == backups[2:]
    again.close()
    with pytest.raises(ConfigError, match="backup_max_age_days"):
        Memory(root=root, embedder=embedder, policy={"backup_max_age_days": -1})


def test_leftover_temp_files_are_removed_at_open(root: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(root=root, embedder=embedder)
    mem.add("I like green tea", "alice")
    mem.add_note("went for a walk", "alice")
    mem.close()
    user = root / "alice"
    day_dir = next((user / "memory").glob("[0-9]" * 6))
    (user / "backups").mkdir(exist_ok=True)
    crashed = [user / ".MEMORY.md.k2j3h4.tmp", user / "backups" / ".20260101_000000_MEMORY.md.x8y9.tmp",
               day_dir / f".{next(day_dir.glob('*.md')).name}.q1w2.tmp"]
    for p in crashed:
        p.write_text("- 2026-01-01: a half-written Kellubrant line", encoding="utf-8")
    cache = snapshot.cache_dir(root / "index.db")
    cache.mkdir(exist_ok=True)
    old_snap, live_snap = cache / "abc.npz.r4t5.tmp", cache / "def.npz.u6i7.tmp"
    old_snap.write_bytes(b"Kellubrant")
    live_snap.write_bytes(b"another process is writing this one")
    hour_ago = time.time() - 3600
    os.utime(old_snap, (hour_ago, hour_ago))
    again = Memory(root=root, embedder=embedder)
    assert not old_snap.exists() and live_snap.exists()  # at index open; a fresh one may be a live write
    again.get_all("alice")
    assert [p for p in crashed if p.exists()] == []
    assert holders(root, "Kellubrant") == []
    assert (user / "MEMORY.md").exists() and (user / ".lock").exists()
    again.close()


def test_cli_delete_and_forget_leave_no_words(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    add = run_cli(root, "add", "My safe word is Brontelquash", "--user", "bob", "--json")
    assert add.returncode == 0, add.stderr
    mid = json.loads(add.stdout)["added"][0]["id"]
    assert run_cli(root, "add", "My locker is number Fennimorlax", "--user", "bob").returncode == 0
    assert holders(root, "Brontelquash") and holders(root, "Fennimorlax")
    gone = run_cli(root, "forget", "locker Fennimorlax", "--user", "bob")
    assert gone.returncode == 0 and "forgot" in gone.stdout, gone.stderr
    assert holders(root / "bob" / "backups", "Brontelquash")  # the forget backed MEMORY.md up first
    deleted = run_cli(root, "delete", mid, "--user", "bob")
    assert deleted.returncode == 0, deleted.stderr
    assert holders(root, "Brontelquash", "Fennimorlax") == []


def test_wal_and_free_pages_hold_no_deleted_text(insecure_sqlite: None, root: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(root=root, embedder=embedder)
    topics = ["my grandmother's garden", "the train timetable to Lyon", "a recipe for lentil soup",
              "the quarterly tax return", "repairing the bicycle chain"]
    ids = [mem.add(f"Notes on {t}: Glimmerdax{i} " + " ".join(t.split() * 60), "alice").added[0].id
           for i, t in enumerate(topics)]
    assert len(set(ids)) == 5 and len(mem.get_all("alice")) == 5
    for mid in ids:
        mem.delete(mid, "alice")
    wal = root / "index.db-wal"
    assert not wal.exists() or b"Glimmerdax" not in wal.read_bytes()
    assert b"Glimmerdax" not in (root / "index.db").read_bytes()
    assert mem.index.inner._db.execute("PRAGMA freelist_count").fetchone()[0] > 0  # the rows' pages were freed
    mem.close()


def test_an_archived_memory_can_be_deleted(root: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(root=root, embedder=embedder, policy={"dedupe_threshold": 0.8})
    old = mem.add("The user drinks Quillomat oat milk", "alice").added[0]
    new = mem.add("The user drinks almond milk", "alice").added[0]
    assert not mem.get(old.id, "alice").is_active
    mem.delete(old.id, "alice")  # it is in no file any more: only the index row and its history go
    assert holders(root, "Quillomat") == []
    assert mem.get(new.id, "alice").content == "The user drinks almond milk"
    assert [e.action for e in mem.history(old.id, "alice")] == ["add", "archive", "delete"]
    mem.close()


def test_postgres_keeps_no_words_in_its_tables(pg_dsn: str, pg_server, root: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    from memfold.index.postgres import PostgresIndex

    mem = Memory(root=root, embedder=embedder, policy={"dedupe_threshold": 0.8},
                 index=PostgresIndex(pg_dsn, dim=embedder.dim, embedder_name=embedder.name))
    old = mem.add("The user drinks Quillomat oat milk", "alice").added[0]
    new = mem.add("The user drinks almond milk", "alice").added[0]
    r = mem.add("My safe word is Brontelquash", "alice").added[0]
    mem.update(r.id, "alice", content="My safe word is Brontelquash, or Yarrowvind")
    schema = pg_dsn.split("search_path=")[1].split(",")[0]
    words = "Quillomat|almond milk|Brontelquash|Yarrowvind"

    def quoting(table: str, columns: str) -> int:
        return pg_server.execute(f"SELECT count(*) FROM {schema}.{table} WHERE concat_ws(' ', {columns}) ~ %s",
                                 (words,))[0][0]

    assert quoting("memory_history", "old_content, new_content, detail::text") > 0
    mem.forget(new.id, "alice")
    mem.delete(r.id, "alice")
    assert quoting("memory_history", "old_content, new_content, detail::text") == 0
    assert quoting("user_memories", "content, context, terms::text") == 0
    actions = pg_server.execute(f"SELECT memory_id, array_agg(action ORDER BY n) FROM {schema}.memory_history "
                                "GROUP BY memory_id")
    assert dict(actions) == {old.id: ["add", "archive", "delete"], new.id: ["add", "forget"],
                             r.id: ["add", "update", "delete"]}
    assert holders(root, "Quillomat", "almond milk", "Brontelquash", "Yarrowvind") == []  # backups, files
    mem.close()
