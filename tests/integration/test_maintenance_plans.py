"""Maintenance plans a person can judge: a dry run lists each change with the memories' words
(shortened), the words written instead and the characters saved, on the command line and in
``--json``; archive.md is written in the user's language."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memfold import Memory
from memfold.models import FILE_MEMORY

from ..conftest import run_cli
from .test_maintenance_compress import OLD_FACTS, seed_old_facts

LONG_TODO = ("[x] Write the long letter to the housing office about the broken heating in the stairwell, "
             "the mould in the cellar and the missing mailbox keys")


def test_dry_run_shows_each_change_with_the_words_on_the_command_line_and_in_json(root: Path, embedder):
    with Memory(root=root, embedder=embedder) as m:
        done = m.add(LONG_TODO, "frank", memory_type="todo").added[0]
        expired = m.add("Renew the gym membership before 2020-03-01", "frank", memory_type="todo").added[0]
        p = root / "frank" / FILE_MEMORY
        p.write_text(p.read_text(encoding="utf-8").replace(
            "## Notes\n", "## Notes\n\n- 2026-01-02: My sister Lena lives in Lyon\n"
            "- 2026-03-04: My sister Lena lives in Lyon\n"), encoding="utf-8")
        m.get_all("frank")  # the hand edit is read
    before = p.read_text(encoding="utf-8")

    out = run_cli(root, "maintain", "--user", "frank", "--dry-run", "--job", "tidy")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"archive (todo completed, saves {len(LONG_TODO)} characters):" in text
    assert f"{done.id}  [x] Write the long letter to the housing office" in text
    assert "missing mailbox keys" not in text and "…" in text  # shortened
    assert f"archive (todo expired 2020-03-01, saves {len(expired.content)} characters):" in text
    assert f"{expired.id}  Renew the gym membership before 2020-03-01" in text
    assert "merge (near-duplicate: the newer one stays, saves 28 characters):" in text
    assert "→ My sister Lena lives in Lyon" in text
    assert p.read_text(encoding="utf-8") == before  # a dry run changes nothing

    out = run_cli(root, "maintain", "--user", "frank", "--dry-run", "--job", "tidy", "--json")
    assert out.returncode == 0, out.stderr
    (res,) = json.loads(out.stdout)["results"]
    changes = {c["reason"]: c for c in res["changes"]}
    c = changes["todo completed"]
    assert c["action"] == "archive" and c["result"] is None and c["chars_saved"] == len(LONG_TODO)
    assert c["memories"][0]["id"] == done.id and c["memories"][0]["text"].endswith("…")
    assert len(c["memories"][0]["text"]) <= 80
    merge = changes["near-duplicate: the newer one stays"]
    assert merge["result"] == "My sister Lena lives in Lyon" and merge["memories"][0]["text"] == merge["result"]


def test_dry_run_of_old_memory_compression_shows_what_the_merge_writes(root: Path, embedder):
    seed_old_facts(root, embedder)
    out = run_cli(root, "maintain", "--user", "bob", "--dry-run", "--job", "compress_old_memories", "--json")
    assert out.returncode == 0, out.stderr
    (res,) = json.loads(out.stdout)["results"]
    (change,) = res["changes"]
    assert change["action"] == "compress" and len(change["memories"]) == 4
    assert {m["text"] for m in change["memories"]} == set(OLD_FACTS)
    assert change["result"].startswith("The user drinks coffee: ") and change["result"].count("drinks coffee") == 1
    assert change["chars_saved"] == sum(len(f) for f in OLD_FACTS) - len(change["result"]) > 50
    out = run_cli(root, "maintain", "--user", "bob", "--dry-run", "--job", "compress_old_memories")
    assert "compress (old fact memories not used for 90 days, compressed harder (words in archive.md), saves " \
           in out.stdout, out.stdout
    assert "\n    → The user drinks coffee: " in out.stdout


def test_a_week_distilled_shows_its_notes_and_the_event(mem: Memory):
    monday = (datetime.now(timezone.utc) - timedelta(days=40)).replace(hour=9)
    monday -= timedelta(days=monday.weekday())
    mem.add_note("Went hiking at Mount Tamalpais with Leo", "carol", when=monday)
    mem.add_note("Dinner at the ramen place on Valencia", "carol", when=monday + timedelta(days=2))
    (res,) = mem.maintain("carol", dry_run=True, jobs=["tidy"]).results
    (change,) = res.changes
    assert change["action"] == "distill" and change["reason"].startswith("daily notes of week ")
    assert sorted(m["text"] for m in change["memories"]) == ["Dinner at the ramen place on Valencia",
                                                             "Went hiking at Mount Tamalpais with Leo"]
    assert "Mount Tamalpais" in change["result"] and change["chars_saved"] == -len(change["result"])


def test_a_chinese_users_archive_is_written_in_chinese(mem: Memory, root: Path):
    mem.init("li", "zh")
    done = mem.add("[x] 给妈妈买生日礼物", "li", memory_type="todo").added[0]
    mem.add("在2020-03-01之前续办健身卡", "li", memory_type="todo")
    assert mem.maintain("li", jobs=["tidy"]).results[0].status == "done"
    archive = (root / "li" / "archive.md").read_text(encoding="utf-8")
    assert archive.startswith("# 归档\n")
    assert "给妈妈买生日礼物（已完成）" in archive and "续办健身卡（已过期 2020-03-01）" in archive
    for english in ("Archive", "completed", "expired"):
        assert english not in archive
    mem.delete(done.id, "li")  # a delete still finds its line by the id
    assert "生日礼物" not in (root / "li" / "archive.md").read_text(encoding="utf-8")

    mem.init("amy", "en")
    mem.add("[x] Buy a birthday present for Anna", "amy", memory_type="todo")
    mem.maintain("amy", jobs=["tidy"])
    archive = (root / "amy" / "archive.md").read_text(encoding="utf-8")
    assert archive.startswith("# Archive\n") and "Buy a birthday present for Anna (completed)" in archive


def test_an_english_archive_of_a_chinese_user_is_reworded_at_the_next_tidy(mem: Memory, root: Path):
    mem.init("li", "zh")
    (root / "li" / "archive.md").write_text(  # written in English by an earlier version
        "# Archive\n\n## 2026-01-05\n\n- 2026-01-02: [x] 交房租 (completed) <!-- mf:abcd1234efgh -->\n"
        "- 2025-12-01: 在2026-01-01之前续签合同 (expired 2026-01-01) <!-- mf:ijkl5678mnop -->\n"
        "- 我自己写的一行 (completed)\n", encoding="utf-8")
    mem.add("[x] 给妈妈买生日礼物", "li", memory_type="todo")
    mem.maintain("li", jobs=["tidy"])
    archive = (root / "li" / "archive.md").read_text(encoding="utf-8")
    assert archive.startswith("# 归档\n") and "# Archive" not in archive
    assert "- 2026-01-02：[x] 交房租（已完成） <!-- mf:abcd1234efgh -->" in archive
    assert "- 2025-12-01：在2026-01-01之前续签合同（已过期 2026-01-01） <!-- mf:ijkl5678mnop -->" in archive
    assert "- 我自己写的一行 (completed)" in archive  # a line a person wrote stays as written
    assert "给妈妈买生日礼物（已完成）" in archive


def test_archive_lines_made_in_english_are_written_in_the_users_language(mem: Memory, root: Path):
    """Whatever closes a todo hands archive.md its line; a Chinese user's file gets it in Chinese."""
    from memfold.engine.storage.changes import _append_archive

    mem.init("li", "zh")
    todo = mem.add("[x] 交房租", "li", memory_type="todo").added[0]
    store = mem._store("li")
    _append_archive(store, [f"- 2026-01-02: {todo.content} (completed) <!-- mf:{todo.id} -->"])
    archive = (root / "li" / "archive.md").read_text(encoding="utf-8")
    assert archive.startswith("# 归档\n") and f"- 2026-01-02：[x] 交房租（已完成） <!-- mf:{todo.id} -->" in archive
