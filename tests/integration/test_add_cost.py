"""An add does not parse or hash the whole MEMORY.md again: where the new lines go and the bullet
hashes that keep hand edits safe are carried over from the write before, and the version log grows
by what changed. Hand edits stay safe: a save from a stale copy keeps every add made since."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfold import Memory
from memfold.text import memory_markdown as md

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
