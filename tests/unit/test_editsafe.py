"""The bullet-level three-way merge of a hand save with what memfold wrote since its base."""

from memfold.text import memory_markdown as md
from memfold.workspace.bullet_merge import bullet_hashes, merge3, split_marker, with_marker

BASE = md.MEMORY_TEMPLATE["en"].replace("## Notes\n", "## Notes\n"
                                        "- 2026-11-20: tea at five <!-- mf:aaaa1111 -->\n"
                                        "- 2026-11-20: a red bike <!-- mf:bbbb2222 -->\n"
                                        "- a typed line\n")


def _contents(text: str) -> dict[str | None, str]:
    return {e.id or e.content: e.content for e in md.parse(text)}


def test_both_sides_changes_are_kept_and_a_conflict_keeps_the_editors_version():
    ours = (BASE.replace("tea at five", "tea at six").replace("a red bike", "a blue bike")
            .replace("- a typed line\n", "- 2026-11-20: a typed line <!-- mf:cccc3333 -->\n")
            .replace("## Notes\n", "## Notes\n- 2026-11-21: new from memfold <!-- mf:dddd4444 -->\n"))
    theirs = (BASE.replace("a red bike", "a green bike")  # the editor changed the bike too
              .replace("## Notes\n", "## Notes\n- new from the editor\n"))
    got = _contents(merge3(bullet_hashes(BASE), ours, theirs, "en", False))
    assert got == {"aaaa1111": "tea at six", "bbbb2222": "a green bike", "cccc3333": "a typed line",
                   "dddd4444": "new from memfold", "new from the editor": "new from the editor"}


def test_removals_and_ids_given_meanwhile_do_not_bring_lines_back():
    ours = BASE.replace("- 2026-11-20: tea at five <!-- mf:aaaa1111 -->\n", "") \
        .replace("- a typed line\n", "- 2026-11-20: a typed line <!-- mf:cccc3333 -->\n")
    theirs = BASE.replace("- a typed line\n", "- a typed line, edited\n") \
        .replace("- 2026-11-20: a red bike <!-- mf:bbbb2222 -->\n", "")
    got = _contents(merge3(bullet_hashes(BASE), ours, theirs, "en", False))
    assert got == {"a typed line, edited": "a typed line, edited"}


def test_the_marker_is_the_last_line_and_comes_off_cleanly():
    text = with_marker(BASE, 7)
    assert text.endswith("\n<!-- memfold-rev 7 -->\n") and split_marker(text) == (BASE, 7)
    assert split_marker(with_marker(text, 8)) == (BASE, 8)
    assert md.parse(text) == md.parse(BASE)


def test_a_kept_copy_of_the_older_form_is_read_then_rewritten_in_the_checked_form(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A copy kept by an earlier release (a counter line, then the text) is still memfold's latest
    text; the next write puts the header with length and checksum in its place."""
    from memfold.workspace import editsafe

    folder = tmp_path / ".edits"
    folder.mkdir()
    text = with_marker(BASE, 7)
    (folder / "MEMORY.md.last").write_bytes(b"7\n" + text.encode())
    v = editsafe.Versions(folder, "MEMORY.md")
    assert v.last() == text and v.next_rev() == 8
    newer = with_marker(BASE + "- 2026-11-21: a green door <!-- mf:cccc3333 -->\n", 8)
    v.record(newer, own=True, accept=True)  # into the other copy: the older one stays as it was
    assert (folder / "MEMORY.md.last-b").read_bytes().startswith(editsafe.LATEST_MAGIC)
    assert (folder / "MEMORY.md.last").read_bytes() == b"7\n" + text.encode()
    again = editsafe.Versions(folder, "MEMORY.md")  # another process
    assert again.last() == newer and again.next_rev() == 9
    newest = with_marker(BASE + "- 2026-11-22: a blue gate <!-- mf:dddd4444 -->\n", 9)
    again.record(newest, own=True, accept=True)
    assert (folder / "MEMORY.md.last").read_bytes().startswith(editsafe.LATEST_MAGIC)
    assert editsafe.Versions(folder, "MEMORY.md").last() == newest and v.last() == newest
