"""Rough edges a new user hit on the command line (the command's ``main()`` run in the test process)."""

from __future__ import annotations

import json
from pathlib import Path

import memfold

from ..conftest import run_cli


def _ok(root: Path, *args: str, input: str | None = None) -> str:
    r = run_cli(root, *args, input=input)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def test_version_and_help_without_bool_types(root: Path):
    assert _ok(root, "--version").strip() == f"memfold {memfold.__version__}"
    for args in (("--help",), ("add", "--help"), ("list", "--help"), ("eval", "locomo", "--help")):
        page = _ok(root, *args)
        assert "--help" in page and "<bool>" not in page, page
    page = _ok(root, "add", "--help")
    assert "--json" in page and "<float>" in page  # options that take a value keep their type


def test_add_list_stats_search_import_read_like_a_cli(root: Path, tmp_path: Path):
    # add - reads standard input (the text is not stored as "-")
    out = _ok(root, "add", "-", "--json", input="My sister Anna lives in Lisbon\n")
    assert json.loads(out)["added"][0]["content"] == "My sister Anna lives in Lisbon"
    r = run_cli(root, "add", "-", input="x" * 1_000_000)
    assert r.returncode == 1 and "1,000,000" in r.stderr and "20,000" in r.stderr and "Traceback" not in r.stderr
    # list of a user without memories says so
    assert "no memories for user 'nobody'" in _ok(root, "list", "--user", "nobody")
    # add says which memory the new one replaced; list --archived marks it
    first = _ok(root, "add", "The team meeting is on Friday at 3pm").split()[1]
    out = _ok(root, "add", "The team meeting is on Friday at 4pm")
    assert f"replaced: {first} [event] The team meeting is on Friday at 3pm" in out
    rows = {line.split()[0]: line for line in _ok(root, "list", "--archived").splitlines()}
    assert "[archived, superseded by" in rows[first]
    assert sum("[archived" in line for line in rows.values()) == 1
    # stats prints lines a person reads, no Python reprs
    text = _ok(root, "stats")
    assert "by type: event 1, fact 1" in text or "by type: event 1, note 1" in text, text
    assert "{" not in text and "'" not in text and "memories: 3 in all: 2 active" in text
    assert "LLM: no calls (extraction and merges by rules)" in text and "0 operations" not in text  # no LLM here
    assert json.loads(_ok(root, "stats", "--json"))["archived"] == 1
    # an empty query says what a CLI user can do instead
    r = run_cli(root, "search", "")
    assert r.returncode == 1 and "memfold list" in r.stderr and "retrieve(None)" not in r.stderr
    # import takes a JSON array of exported records too; anything else gets a message saying what is expected
    dump = tmp_path / "dump.jsonl"
    _ok(root, "export", str(dump))
    array = tmp_path / "array.json"
    array.write_text(json.dumps([json.loads(line) for line in dump.read_text().splitlines()], indent=2))
    assert "imported 3 memories" in _ok(tmp_path / "other", "import", str(array))
    bad = tmp_path / "bad.json"
    bad.write_text('[["a", "b"]]\n')
    r = run_cli(root, "import", str(bad))
    assert r.returncode == 1 and "written by 'memfold export'" in r.stderr and "list indices" not in r.stderr


def _commands(group, path=()):  # noqa: ANN001 - click's Group
    import click
    for name, cmd in getattr(group, "commands", {}).items():
        yield path + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, path + (name,))


def test_command_summaries_are_not_cut_mid_sentence():
    """``memfold --help`` lists each command with the first paragraph of its help, line breaks kept as
    written: a docstring whose first sentence runs onto a second source line printed "re-embed every"
    and "row of the embedded index" on separate lines of the list."""
    import typer

    from memfold.cli.main import app
    cut = [(" ".join(path), (cmd.help or "").split("\n\n")[0]) for path, cmd in _commands(typer.main.get_command(app))
           if "\n" in (cmd.help or "").strip().split("\n\n")[0]]
    assert not cut, cut


def test_no_help_text_is_eaten_as_markup(root: Path):
    """The help pages are rendered with rich: a "[server]" in a help text is taken for a markup tag and
    vanishes ("default  host"). Every command's and option's help must survive rendering."""
    import re

    import typer

    from memfold.cli.main import app
    tag = re.compile(r"(?<!\\)\[[a-z][a-z_ ]*\]")
    eaten = []
    for path, cmd in _commands(typer.main.get_command(app)):
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        eaten += [(" ".join(path), t) for t in texts if tag.search(t)]
    assert not eaten, eaten
    page = _ok(root, "serve", "--help")
    assert "server.host in" in " ".join(page.split()), page


def test_a_root_that_is_a_file_is_named_as_such(tmp_path):
    afile = tmp_path / "notes.txt"
    afile.write_text("not a workspace", encoding="utf-8")
    for root, said in ((afile, "is a file"), (afile / "ws", f"is inside {afile}, which is a file")):
        for args in (("search", "tea"), ("add", "I like tea"), ("serve",)):
            res = run_cli(root, *args)
            assert res.returncode != 0
            assert said in res.stderr and "--root" in res.stderr, res.stderr
            assert "File exists" not in res.stderr and "Traceback" not in res.stderr
    assert afile.read_text(encoding="utf-8") == "not a workspace"
