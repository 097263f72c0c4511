"""An add does not parse or hash the whole MEMORY.md again: where the new lines go and the bullet
hashes that keep hand edits safe are carried over from the write before, and the version log grows
by what changed. Hand edits stay safe: a save from a stale copy keeps every add made since."""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path

import pytest

from memfold import Memory
from memfold.errors import MemoryIndexError
from memfold.text import memory_markdown as md
from memfold.workspace import bullet_merge, editsafe

from ..support.hash_embedder import HashEmbedder

N = 2_000


@pytest.fixture
def big(tmp_path: Path):  # type: ignore[no-untyped-def]
    mem = Memory(root=tmp_path / "ws", embedder=HashEmbedder())
    mem.init("u", language="en")
    path = tmp_path / "ws" / "u" / "MEMORY.md"
    bullets = "\n".join(f"- 2026-01-01: old note {i} about the river w{i}" for i in range(N))
    path.write_text(path.read_text(encoding="utf-8").replace("## Notes\n", "## Notes\n\n" + bullets + "\n", 1),
                    encoding="utf-8")
    mem.search("warm", "u")  # indexed once, ids stamped
    yield mem, path
    mem.close()


def test_an_add_parses_only_what_it_adds(big, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    mem, path = big
    for i in range(2):
        mem.add(f"first adds {i}: the blue kettle number q{i}", "u", memory_type="note")
    parsed = []
    real = md._spans

    def counting(lines):  # type: ignore[no-untyped-def]
        parsed.append(len(lines))
        return real(lines)

    monkeypatch.setattr(md, "_spans", counting)
    log = path.parent / ".edits" / "MEMORY.md.log"
    log_before = log.stat().st_size
    for i in range(5):
        mem.add(f"a later add {i}: the green lamp number z{i}", "u", memory_type="note")
    assert sum(parsed) < 5 * 50, parsed  # never the file's 2,000 lines again
    assert log.stat().st_size - log_before < 5 * 2_000, "the version log grew by the whole file per add"
    text = path.read_text(encoding="utf-8")
    assert all(f"the green lamp number z{i}" in text for i in range(5)) and text.count("old note") == N


def test_a_stale_save_after_several_adds_keeps_them(big) -> None:  # type: ignore[no-untyped-def]
    mem, path = big
    mem.add("before the editor opened the file: the red kite", "u", memory_type="note")
    stale = path.read_text(encoding="utf-8")  # the editor reads the file
    for i in range(4):  # memfold adds meanwhile (the version log records each as a change)
        mem.add(f"added while the editor had it open {i}: the copper bell c{i}", "u", memory_type="note")
    # the editor saves its stale copy with a line of its own and one old line removed
    lines = stale.split("\n")
    lines.remove(next(ln for ln in lines if ln.startswith("- 2026-01-01: old note 7 ")))
    lines.insert(lines.index("## Notes") + 1, "- typed by hand: the walnut table")
    path.write_text("\n".join(lines), encoding="utf-8")
    mem.add("after the save: the silver spoon", "u", memory_type="note")
    contents = [r.content for r in mem.get_all("u", limit=1000, offset=0)] + \
        [r.content for r in mem.get_all("u", limit=1000, offset=1000)] + \
        [r.content for r in mem.get_all("u", limit=1000, offset=2000)]
    text = path.read_text(encoding="utf-8")
    for i in range(4):
        assert f"the copper bell c{i}" in text
    assert "the walnut table" in text and "the silver spoon" in text and "the red kite" in text
    assert "old note 7 about" not in text and text.count("old note") == N - 1
    assert sorted(contents) == sorted(e.content for e in md.parse(text))


def test_an_add_does_not_read_back_the_file_it_wrote_last(big, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The file memfold wrote last (same inode, time and size, no other writer's version since) is
    not read and decoded again before the next add; a file changed meanwhile still is."""
    mem, path = big
    mem.add("before counting: the amber lamp", "u", memory_type="note")
    reads: list[Path] = []
    real = editsafe.read_settled

    def counting(p: Path, expect_marker: bool):  # type: ignore[no-untyped-def]
        reads.append(Path(p))
        return real(p, expect_marker)

    monkeypatch.setattr(editsafe, "read_settled", counting)
    for i in range(3):
        mem.add(f"an add of the counted run {i}: the teal cup t{i}", "u", memory_type="note")
    assert path not in reads
    path.write_text(path.read_text(encoding="utf-8").replace("## Notes\n", "## Notes\n\n- typed by hand: the oak door\n"),
                    encoding="utf-8")
    mem.add("after a hand edit: the brass key", "u", memory_type="note")
    assert path in reads  # changed by someone else: read, merged and indexed
    assert "the oak door" in path.read_text(encoding="utf-8")
    assert "typed by hand: the oak door" in [r.content for r in mem.get_all("u", limit=1000, offset=2000)]


def test_an_edit_in_place_that_keeps_size_and_time_is_not_lost(big) -> None:  # type: ignore[no-untyped-def]
    """An editor rewrites the file in place with as many bytes and the same time (the stat cannot
    tell it from memfold's own file): the write after it still finds the save and keeps it."""
    mem, path = big
    mem.add("first: the violet scarf", "u", memory_type="note")
    st = path.stat()
    text = path.read_text(encoding="utf-8")
    edited = text.replace("old note 5 about the river w5", "OLD NOTE 5 ABOUT THE RIVER W5")
    assert len(edited.encode()) == st.st_size and edited != text
    with open(path, "r+", encoding="utf-8") as fh:  # in place: same inode
        fh.write(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_ino, path.stat().st_mtime_ns, path.stat().st_size) == (st.st_ino, st.st_mtime_ns, st.st_size)
    mem.add("second: the indigo hat", "u", memory_type="note")
    after = path.read_text(encoding="utf-8")
    assert "OLD NOTE 5 ABOUT THE RIVER W5" in after and "the indigo hat" in after and "the violet scarf" in after


def test_backups_are_kept_versions_not_copies(big, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Each add keeps the version it replaces in backups/ without copying the file; a backup stays
    as it was when later versions are written, and the newest ones are kept."""
    mem, path = big
    space = mem._store("u").space
    monkeypatch.setattr(shutil, "copyfile", lambda *a, **k: pytest.fail("MEMORY.md was copied for a backup"))
    before = path.read_text(encoding="utf-8")
    mem.add("with a backup: the olive jar", "u", memory_type="note")
    newest = space.backups()[-1]
    assert newest.read_text(encoding="utf-8") == before
    for i in range(3):
        mem.add(f"later adds {i}: the plum box p{i}", "u", memory_type="note")
    assert newest.read_text(encoding="utf-8") == before  # a version kept never changes with the live file
    assert all(b.stat().st_ino != path.stat().st_ino for b in space.backups())
    assert space.backups()[-1].read_text(encoding="utf-8").count("the plum box") == 2


def test_an_undone_add_leaves_no_backup_sharing_the_file(big, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """When the index refuses an add, the file is put back; the backup of that add (the same
    version) goes, so no backup is another name of the live file."""
    mem, path = big
    mem.add("stored: the cobalt bowl", "u", memory_type="note")
    before = path.read_text(encoding="utf-8")

    def refuse(*a, **k):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(mem.index, "upsert", refuse)
    with pytest.raises(MemoryIndexError):
        mem.add("refused: the saffron tin", "u", memory_type="note")
    monkeypatch.undo()
    assert path.read_text(encoding="utf-8") == before
    live = path.stat().st_ino
    assert all(b.stat().st_ino != live for b in mem._store("u").space.backups())
    mem.add("after the refusal: the pewter mug", "u", memory_type="note")
    assert mem._store("u").space.backups()[-1].read_text(encoding="utf-8") == before


def test_the_text_memfold_wrote_last_is_kept_in_place(big) -> None:  # type: ignore[no-untyped-def]
    """The copy of what memfold wrote last (the base a hand save is merged with) is rewritten in
    place, not created anew per add, in two copies written in turn; it holds exactly the file
    memfold wrote, and the other copy the version before."""
    mem, path = big
    for i in range(2):
        mem.add(f"first adds {i}: the linen sack s{i}", "u", memory_type="note")
    copies = [path.parent / ".edits" / "MEMORY.md.last", path.parent / ".edits" / "MEMORY.md.last-b"]
    inodes = [c.stat().st_ino for c in copies]
    before = path.read_text(encoding="utf-8")
    for i in range(3):
        before = path.read_text(encoding="utf-8")
        mem.add(f"later adds {i}: the tin whistle w{i}", "u", memory_type="note")
    assert [c.stat().st_ino for c in copies] == inodes
    assert editsafe.Versions(path.parent / ".edits", "MEMORY.md").last() == path.read_text(encoding="utf-8")
    held = {c.read_bytes()[editsafe.LATEST_HEAD:] for c in copies}
    assert held == {path.read_bytes(), before.encode()}


def _newest_copy(path: Path) -> Path:
    copies = [path.parent / ".edits" / "MEMORY.md.last", path.parent / ".edits" / "MEMORY.md.last-b"]
    return max(copies, key=lambda c: int(c.read_bytes().split()[1]))


@pytest.mark.parametrize("cut", ["shorter", "same length", "both copies"])
def test_a_copy_cut_short_by_a_crash_is_not_taken_as_memfolds_text(big, tmp_path: Path, cut: str) -> None:  # type: ignore[no-untyped-def]
    """A crash between writing a kept copy's text and its header leaves an older header before
    another text: that copy reads as none, the other copy (the version before) is memfold's latest
    text, and with both spoiled the next add takes MEMORY.md as it is. (A copy taken as memfold's
    own text would have its differences merged into the file as memfold's changes.)"""
    mem, path = big
    mem.add("acknowledged before: the oak chest", "u", memory_type="note")
    mem.add("acknowledged: the cedar box", "u", memory_type="note")
    mem.close()
    spoil = [_newest_copy(path)]
    if cut == "both copies":
        spoil = [path.parent / ".edits" / "MEMORY.md.last", path.parent / ".edits" / "MEMORY.md.last-b"]
    for last in spoil:
        data = last.read_bytes()
        head, body = data[:editsafe.LATEST_HEAD], data[editsafe.LATEST_HEAD:]
        if cut == "same length":  # as long as the text the header names, another checksum
            other = body.replace(b"old note 7 about the river w7", b"OLD NOTE 7 ABOUT THE RIVER W7")
        else:  # a version without one old line, written, then killed before its header
            other = re.sub(rb"- 2026-01-01: old note 7 about the river w7 [^\n]*\n", b"", body)
        assert other != body
        last.write_bytes(head + other)
    kept = editsafe.Versions(path.parent / ".edits", "MEMORY.md").last()
    if cut == "both copies":
        assert kept is None
    else:
        assert kept is not None and "old note 7 about" in kept and "the oak chest" in kept and "the cedar box" not in kept
    before = path.read_text(encoding="utf-8")
    with Memory(root=tmp_path / "ws", embedder=HashEmbedder()) as again:  # the next process
        again.add("after the crash: the maple spoon", "u", memory_type="note")
    after = path.read_text(encoding="utf-8")
    assert "the maple spoon" in after and "the cedar box" in after and "the oak chest" in after
    assert "- 2026-01-01: old note 7 about the river w7 " in after and "OLD NOTE 7" not in after
    assert after.count("\n") == before.count("\n") + 1


def test_an_add_does_not_search_the_whole_file_for_a_marker(big, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Lines added to a text known to hold no revision marker make a text known to hold none: the
    write does not scan the file for one."""
    mem, path = big
    for i in range(2):
        mem.add(f"warming adds {i}: the jade frog j{i}", "u", memory_type="note")
    scanned: list[int] = []
    real = bullet_merge._split_marker

    def counting(text: str):  # type: ignore[no-untyped-def]
        scanned.append(len(text))
        return real(text)

    monkeypatch.setattr(bullet_merge, "_split_marker", counting)
    for i in range(3):
        mem.add(f"counted adds {i}: the onyx ring o{i}", "u", memory_type="note")
    assert not [n for n in scanned if n > 10_000], scanned
    assert all(f"the onyx ring o{i}" in path.read_text(encoding="utf-8") for i in range(3))


def test_the_bytes_written_are_the_text_whatever_the_script_and_section(big, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The bytes of the file an add writes are made from the bytes of the file before and the new
    lines' (the whole text is not encoded again); in sections before and after others, with
    characters of one to four bytes, they are exactly the text memfold holds, encoded."""
    mem, path = big
    for kind in ("note", "event", "preference", "todo", "note"):  # every section has bullets, the bytes are known
        mem.add(f"warm: the slate roof of the {kind}", "u", memory_type=kind)
    known: list[bool] = []
    real = md.known_utf8

    def watching(text: str):  # type: ignore[no-untyped-def]
        got = real(text)
        known.append(got is not None)
        return got

    monkeypatch.setattr(md, "known_utf8", watching)
    added = []
    for i, (kind, words) in enumerate([("event", "在杭州喝了龙井茶 🍵"), ("note", "naïve café crème"),
                                       ("preference", "喜欢下雨天读书"), ("todo", "call Zoë about the 🚲"),
                                       ("note", "plain words only")]):
        mem.add(f"{words} {i}", "u", memory_type=kind)
        added.append(f"{words} {i}")
        data = path.read_bytes()
        text = data.decode("utf-8")
        assert editsafe.Versions(path.parent / ".edits", "MEMORY.md").last() == text
        assert all(a in text for a in added), text[-400:]
    assert known and all(known), known
    assert {a for a in added} <= {e.content for e in md.parse(text)} and text.count("old note") == N
