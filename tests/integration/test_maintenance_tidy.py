"""The tidy job without an LLM (seed 002): finished todos leave MEMORY.md into the archive,
near-duplicates are merged, old weeks of daily notes become one event; a dry run changes
nothing; the tidy instruction appears when the injected memory approaches its limit; a dated
backup precedes an append (seed 001 §4.5)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from memfold import Memory
from memfold.models import FILE_MEMORY

from ..conftest import run_cli


def statuses(run) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {r.job: r.status for r in run.results}


def test_finished_todos_leave_memory_md_and_stay_searchable_as_archived(mem: Memory, root: Path):
    done = mem.add("[x] Buy a birthday present for Anna", "alice", memory_type="todo").added[0]
    expired = mem.add("Renew the gym membership before 2020-03-01", "alice", memory_type="todo").added[0]
    open_ = mem.add("Call the plumber about the kitchen sink", "alice", memory_type="todo").added[0]
    mem.add("I prefer oat milk in my coffee", "alice", memory_type="preference")
    text = mem.show("alice")
    dry = mem.maintain("alice", dry_run=True, jobs=["tidy"])
    (res,) = dry.results
    assert res.status == "planned" and sorted(res.archived) == sorted([done.id, expired.id])
    assert {t["why"] for t in res.details["todos"]} == {"completed", "expired 2020-03-01"}
    assert mem.show("alice") == text  # a dry run changes nothing
    run = mem.maintain("alice", jobs=["tidy"])
    assert statuses(run) == {"tidy": "done"}
    text = mem.show("alice")
    assert "birthday present" not in text and "gym membership" not in text and open_.content in text
    for r in (done, expired):
        old = mem.get(r.id, "alice")
        assert not old.is_active
        assert mem.history(r.id, "alice")[-1].action == "archive"
    archive = (root / "alice" / "archive.md").read_text(encoding="utf-8")
    assert "Buy a birthday present for Anna" in archive and "(expired 2020-03-01)" in archive
    assert done.id not in [h.record.id for h in mem.search("birthday present for Anna", "alice")]
    assert done.id in [h.record.id for h in mem.search("birthday present for Anna", "alice", include_archived=True)]
    # nothing left to do: a second run changes nothing
    assert statuses(mem.maintain("alice", jobs=["tidy"])) == {"tidy": "nothing"}


def test_near_duplicates_in_the_file_are_merged_into_the_newer(root: Path, embedder):
    m = Memory(root=root, embedder=embedder)
    m.init("bob")
    p = root / "bob" / FILE_MEMORY
    text = p.read_text(encoding="utf-8").replace(
        "## Notes\n", "## Notes\n\n- 2026-01-02: My sister Lena lives in Lyon\n- 2026-03-04: My sister Lena lives in Lyon\n")
    p.write_text(text, encoding="utf-8")  # a hand edit with the same line twice
    rows = [r for r in m.get_all("bob") if "Lena" in r.content]
    assert len(rows) == 2
    res = m.maintain("bob", jobs=["tidy"]).results[0]
    assert res.status == "done" and len(res.details["duplicates"]) == 1
    kept = [r for r in m.get_all("bob") if "Lena" in r.content]
    assert len(kept) == 1 and m.show("bob").count("My sister Lena lives in Lyon") == 1
    gone = res.details["duplicates"][0]["archived"]
    assert m.get(gone, "bob").superseded_by == kept[0].id
    assert {r["relation"] for r in m.relations(kept[0].id, "bob")} == {"duplicates"}
    # a later hand edit adds a near-duplicate (other punctuation): the next tidy finds it too
    p.write_text(p.read_text(encoding="utf-8").replace("## Notes\n", "## Notes\n\n- 2026-06-01: My sister Lena lives in Lyon.\n"),
                 encoding="utf-8")
    res = m.maintain("bob", jobs=["tidy"]).results[0]
    assert res.status == "done" and res.details["duplicates"][0]["archived"] == kept[0].id
    assert [r.content for r in m.get_all("bob") if "Lena" in r.content] == ["My sister Lena lives in Lyon."]
    m.close()


def test_a_week_of_old_daily_notes_is_distilled_once_into_the_events(mem: Memory):
    monday = (datetime.now(timezone.utc) - timedelta(days=40)).replace(hour=9)
    monday -= timedelta(days=monday.weekday())
    mem.add_note("Went hiking at Mount Tamalpais with Leo", "carol", when=monday)
    mem.add_note("Dinner at the ramen place on Valencia", "carol", when=monday + timedelta(days=2))
    mem.add_note("Today I planned the garden", "carol")  # recent: stays a daily note only
    res = mem.maintain("carol", jobs=["tidy"]).results[0]
    assert res.status == "done" and len(res.details["weeks"]) == 1
    events = [r for r in mem.get_all("carol", memory_type="event")]
    assert len(events) == 1
    ev = events[0]
    assert "Mount Tamalpais" in ev.content and "ramen" in ev.content and "garden" not in ev.content
    assert ev.file == FILE_MEMORY and ev.structured_data["week"] == res.details["weeks"][0] and len(ev.source_ids) == 2
    assert "Mount Tamalpais" in mem.show("carol")
    assert mem.maintain("carol", jobs=["tidy"]).results[0].status == "nothing"  # once


FACTS = ["My dentist is Dr. Okafor on Elm Street, appointments on Tuesdays",
         "The Zephyr account's quarterly report is due at the end of March",
         "I keep my climbing shoes in the blue locker at the gym downtown",
         "My daughter Ines plays the cello in the school orchestra",
         "The wifi router in the attic needs a restart every few weeks",
         "I am allergic to penicillin and mildly to cats",
         "Our landlord Mr. Petrov prefers messages over phone calls",
         "The garden shed key hangs behind the kitchen door",
         "My passport expires in 2031 and lives in the desk drawer",
         "Saturday mornings are for the farmers market on Pine Avenue",
         "I switched my phone plan to the prepaid one last autumn",
         "Grandma's birthday dinner is always at the Lebanese restaurant"]


def test_tidy_instruction_appears_when_memory_approaches_the_limit(root: Path, embedder):
    near = "Tidy MEMORY.md during this conversation before it overflows"
    m = Memory(root=root, embedder=embedder, policy={"memory_char_limit": 1200, "memory_tidy_percent": 80})
    for text in FACTS[:3]:
        m.add(text, "dan")
    system = m.build_context("", "dan")[0]["content"]
    assert near not in system  # about 440 of 1200 characters
    for text in FACTS[3:]:
        m.add(text, "dan")
    system = m.build_context("", "dan")[0]["content"]
    assert "memory truncated" not in system  # not truncated yet (about 1080 of 1200) ...
    assert near in system and "fills 8" in system  # ... but close: 8x %
    m.close()
    m = Memory(root=root, embedder=embedder, policy={"memory_char_limit": 1200, "memory_tidy_percent": 95})
    assert near not in m.build_context("", "dan")[0]["content"]
    m.close()


def test_an_append_is_preceded_by_a_dated_backup_pruned_by_backup_keep(root: Path, embedder):
    m = Memory(root=root, embedder=embedder, policy={"backup_keep": 2})
    m.add("I like green tea", "eve")
    backups = root / "eve" / "backups"
    assert not backups.exists() or not list(backups.glob("*_MEMORY.md"))  # no file before the first add
    before = (root / "eve" / FILE_MEMORY).read_text(encoding="utf-8")
    m.add("My cat is called Miso", "eve")
    (b,) = sorted(backups.glob("*_MEMORY.md"))
    assert b.read_text(encoding="utf-8") == before  # the file as it was before the append
    for text in ("I run on Sundays", "I read before sleep", "My bike is blue"):
        m.add(text, "eve")
    assert len(list(backups.glob("*_MEMORY.md"))) == 2
    m.close()


def test_cli_maintain_dry_run_and_search_include_archived(root: Path, embedder):
    with Memory(root=root, embedder=embedder) as m:
        done = m.add("[x] Send the invoice to Quillmark", "frank", memory_type="todo").added[0]
    out = run_cli(root, "maintain", "--user", "frank", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "dry run" in out.stdout and "frank: tidy: planned (would archive 1 memory" in out.stdout and done.id in out.stdout
    assert "frank: tidy: planned" in out.stderr or "tidy: planned" in out.stderr  # progress line
    out = run_cli(root, "maintain", "--user", "frank", "--json")
    assert out.returncode == 0, out.stderr
    import json

    data = json.loads(out.stdout)
    assert data["dry_run"] is False and {r["job"]: r["status"] for r in data["results"]}["tidy"] == "done"
    out = run_cli(root, "search", "invoice Quillmark", "--user", "frank", "--json")
    assert done.id not in out.stdout
    out = run_cli(root, "search", "invoice Quillmark", "--user", "frank", "--include-archived", "--json")
    assert done.id in out.stdout




def test_deleting_an_archived_todo_takes_its_words_out_of_archive_md(mem: Memory, root: Path):
    done = mem.add("[x] Post the letter to Vrellinga Street", "gina", memory_type="todo").added[0]
    other = mem.add("[x] Pay the electricity bill", "gina", memory_type="todo").added[0]
    mem.maintain("gina", jobs=["tidy"])
    archive = root / "gina" / "archive.md"
    assert "Vrellinga" in archive.read_text(encoding="utf-8") and f"mf:{done.id}" in archive.read_text(encoding="utf-8")
    mem.delete(done.id, "gina")
    text = archive.read_text(encoding="utf-8")
    assert "Vrellinga" not in text and other.content in text


def test_the_tidy_hint_measures_the_file_and_is_shown_once_per_session(root: Path, embedder):
    """With a query only the hits are injected, yet a MEMORY.md over its capacity asks the model to
    tidy it: once per session, in the user's language; a new session asks again."""
    over = "MEMORY.md holds"
    with Memory(root=root, embedder=embedder, background=False, policy={"memory_char_limit": 600}) as m:
        m.add("I like green tea", "gus")
        s = m.session("s1", "gus")
        assert over not in s.build_context("what tea do I like?")[0]["content"]
        for i in range(12):
            m.add(f"Project Kestrel note {i}: the review of module {i} moved to room {200 + i} on Friday", "gus")
        ctx = s.context("what tea do I like?")
        system = ctx.messages[0]["content"]
        assert ctx.memory_chars < 600 and not ctx.truncated  # the injected hits are small ...
        assert over in system and "over its capacity of 600" in system and ctx.tidy_hint  # ... the file is not
        assert over not in s.build_context("and which coffee?")[0]["content"]  # once per session
        assert over not in m.session("s1", "gus").build_context("tea?")[0]["content"]  # resumed: still shown
        assert over in m.session("s2", "gus").build_context("tea?")[0]["content"]  # a new session: again
        assert over in m.build_context("tea?", "gus")[0]["content"]  # no session: whenever it applies
        m.init("hua", "zh")
        for i in range(12):
            m.add(f"项目红隼第{i}次评审改到{200 + i}号会议室，时间是周五下午三点，请提前准备材料", "hua")
        zh = m.session("z1", "hua", language="zh").build_context("我喜欢什么茶？")[0]["content"]
        assert "注意：MEMORY.md 已有" in zh and "超过 600 字符的容量上限" in zh
