"""The CLI on PostgreSQL: reindex and export/import unchanged, and ``memfold migrate --to postgres``."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from memfold import Memory
from memfold.config import load_settings

from ..conftest import run_cli


def _pg_memory(root: Path, dsn: str, embedder) -> Memory:  # type: ignore[no-untyped-def]
    return Memory(settings=load_settings(root, index={"backend": "postgres", "dsn": dsn}), embedder=embedder)


def test_migrate_copies_the_embedded_index(root: Path, pg_dsn: str, embedder) -> None:  # type: ignore[no-untyped-def]
    with Memory(root=root, embedder=embedder) as mem:
        a = mem.add("I prefer green tea over coffee", "alice").added[0]
        mem.add("我的生日是五月三日", "alice")
        mem.add([{"role": "user", "content": "We adopted a parrot called Kiwi", "turn_id": "t1"}], "alice")
        mem.update(a.id, "alice", content="I prefer oolong tea over coffee")
        mem.add("Bob keeps bees", "bob")
        mem.search("tea", "alice")
        mem.index.put_state("alice", "session", "s1", {"messages": [{"role": "user", "content": "你好"}]})
        before = sorted(mem.export(), key=lambda d: d["id"])
        history = mem.history(a.id, "alice")
        hits = [(h.record.id, round(h.similarity, 4)) for h in mem.search("生日", "alice", record_access=False)]

    res = run_cli(root, "migrate", "--to", "postgres", pg_dsn)
    assert res.returncode == 0, res.stderr
    assert "migrated" in res.stdout and 'backend = "postgres"' in res.stdout

    with _pg_memory(root, pg_dsn, embedder) as pg:
        assert pg._store("alice").sync() == 0  # file states came along: nothing to reconcile
        assert sorted(pg.export(), key=lambda d: d["id"]) == before  # access stats and timestamps included
        assert pg.history(a.id, "alice") == history
        assert pg.index.get_state("alice", "session", "s1") == {"messages": [{"role": "user", "content": "你好"}]}
        assert [(h.record.id, round(h.similarity, 4)) for h in pg.search("生日", "alice", record_access=False)] == hits

    again = run_cli(root, "migrate", "--to", "postgres", pg_dsn)
    assert again.returncode == 1 and "already holds memories" in again.stderr
    wrong = run_cli(root, "migrate", "--to", "mysql", pg_dsn)
    assert wrong.returncode == 1 and "--to must be 'postgres'" in wrong.stderr


def test_migrate_without_an_embedded_index(tmp_path: Path, pg_dsn: str) -> None:
    res = run_cli(tmp_path / "empty", "migrate", "--to", "postgres", pg_dsn)
    assert res.returncode == 1 and "no embedded index" in res.stderr


def test_cli_reindex_export_import_on_postgres(tmp_path: Path, pg_server) -> None:  # type: ignore[no-untyped-def]
    schemas = []
    for name in ("one", "two"):
        schema = f"mf_cli_{name}_{secrets.token_hex(4)}"
        pg_server.execute(f"CREATE SCHEMA {schema}")
        schemas.append(schema)
    try:
        roots = []
        for schema in schemas:
            r = tmp_path / schema
            r.mkdir()
            dsn = pg_server.schema_dsn(schema).replace("\\", "\\\\").replace('"', '\\"')
            (r / "config.toml").write_text(f'[index]\nbackend = "postgres"\ndsn = "{dsn}"\n', encoding="utf-8")
            roots.append(r)
        one, two = roots
        for text in ("My sister lives in Lisbon", "下个月去成都看熊猫"):
            assert run_cli(one, "add", text).returncode == 0
        assert not (one / "index.db").exists()
        stats = json.loads(run_cli(one, "stats", "--json").stdout)
        assert stats["index"] == "postgres" and stats["active"] == 2
        reindexed = run_cli(one, "reindex")
        assert reindexed.returncode == 0 and "default: 2 memories indexed" in reindexed.stdout
        hits = json.loads(run_cli(one, "search", "熊猫", "--json").stdout)
        assert hits[0]["content"] == "下个月去成都看熊猫"
        dump = tmp_path / "dump.jsonl"
        assert run_cli(one, "export", str(dump)).returncode == 0
        assert len(dump.read_text(encoding="utf-8").splitlines()) == 2
        imported = run_cli(two, "import", str(dump))
        assert imported.returncode == 0 and "imported 2 memories" in imported.stdout
        hits = json.loads(run_cli(two, "search", "where does the sister live", "--json").stdout)
        assert hits[0]["content"] == "My sister lives in Lisbon"
        assert "Lisbon" in (two / "default" / "MEMORY.md").read_text(encoding="utf-8")
    finally:
        for schema in schemas:
            pg_server.execute(f"DROP SCHEMA {schema} CASCADE")
