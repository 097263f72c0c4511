"""``memfold`` — the command line. Each command parses input, calls the engine, renders output."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from ..errors import EmbedderChangedError, InvalidInputError, MemfoldError
from . import render
from .help_compat import hide_flag_types

hide_flag_types()  # typer >= 0.26 shows "<bool>" for flags in help

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="memfold: long-term memory for LLM agents (Markdown files + hybrid retrieval).")
out = Console(soft_wrap=True, markup=False)  # memory text like "[x]" is shown as written
err = Console(stderr=True, soft_wrap=True, markup=False)


class State:
    root: Optional[str] = None
    _memory: Any = None

    @classmethod
    def memory(cls, **kw: Any) -> Any:
        if cls._memory is None:
            from ..engine.memory import Memory

            cls._memory = Memory(root=cls.root, **kw)
        return cls._memory


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        sys.stdout.write(f"memfold {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(root: Optional[str] = typer.Option(None, "--root", help="Workspace folder (default $MEMFOLD_HOME or ./.memfold)."),
          verbose: bool = typer.Option(False, "--verbose", "-v", help="Log what the engine does to stderr."),
          version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version of memfold and exit.")) -> None:
    State.root = root
    State._memory = None
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(message)s")


def _json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def _hits_table(hits: list[Any]) -> Table:
    t = Table(show_lines=False)
    for col in ("#", "score", "type", "id", "content"):
        t.add_column(col, overflow="fold")
    for i, h in enumerate(hits, 1):
        t.add_row(str(i), f"{h.score:.3f}", h.record.memory_type.value, h.record.id, h.record.content)
    return t


@app.command()
def init(lang: str = typer.Option("en", "--lang", help="Template language of MEMORY.md: en or zh."),
         user: str = typer.Option("default", "--user", "-u", help="Namespace (user id).")) -> None:
    """Create the workspace and the user's MEMORY.md / learnings.md from the template."""
    folder = State.memory(language=lang).init(user, lang)
    out.print(f"initialised {folder}")


@app.command()
def add(text: str = typer.Argument(..., help="The memory text; - reads it from standard input."),
        user: str = typer.Option("default", "--user", "-u", help="Namespace (user id)."),
        type_: Optional[str] = typer.Option(None, "--type", "-t", help="event|preference|fact|pattern|todo|note|skill"),
        importance: Optional[float] = typer.Option(None, "--importance", help="0..1 (default by type)."),
        agent: Optional[str] = typer.Option(None, "--agent", help="Agent id that saved the memory."),
        note: bool = typer.Option(False, "--note", help="Append to today's daily note instead of MEMORY.md."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Store one memory (type inferred by rules unless --type is given)."""
    text = render.text_argument(text)
    m = State.memory()
    if note:
        r = m.add_note(text, user)
        _json(r.to_dict()) if as_json else out.print(f"noted {r.id} in {r.file}")
        return
    res = m.add(text, user, memory_type=type_, importance=importance, agent_id=agent)
    replaced = render.superseded(m, user, res.added)
    if as_json:
        _json({**res.to_dict(), "superseded": [dict(id=old.id, content=old.content, superseded_by=new.id,
                                                    relation=rel) for new, old, rel in replaced]})
        return
    for r in res.added:
        out.print(f"added {r.id} [{r.memory_type.value}] {r.content}")
        for new, old, rel in replaced:
            if new.id == r.id:
                out.print(render.superseded_line(new, old, rel))
    for r in res.merged:
        out.print(f"already known: {r.id} [{r.memory_type.value}] {r.content}")
    for s in res.skipped:
        out.print(f"skipped: {s}")


@app.command()
def search(query: str = typer.Argument(..., help="What to look for (any language)."),
           user: str = typer.Option("default", "--user", "-u"),
           k: Optional[int] = typer.Option(None, "-k", "--limit", help="How many results (default retrieve_limit)."),
           type_: Optional[str] = typer.Option(None, "--type", "-t", help="Only this memory type."),
           as_json: bool = typer.Option(False, "--json", help="Print hits as a JSON list.")) -> None:
    """Hybrid search: keyword + vector candidates, rescored by similarity, recency and importance."""
    if not query.strip():
        raise InvalidInputError("search needs words to look for; to see every memory use 'memfold list' "
                                "(or 'memfold show' for MEMORY.md)")
    hits = State.memory().search(query, user, limit=k, memory_type=type_)
    if as_json:
        _json([h.to_dict() for h in hits])
    elif hits:
        out.print(_hits_table(hits))
    else:
        out.print("no memories found")


@app.command()
def ingest(file: Path = typer.Argument(..., help="JSON list of messages, or a LoCoMo-format file."),
           user: Optional[str] = typer.Option(None, "--user", "-u", help="Namespace (LoCoMo default: sample_id)."),
           no_extract: bool = typer.Option(False, "--no-extract", help="Store turns only, no rule extraction."),
           as_json: bool = typer.Option(False, "--json")) -> None:
    """Ingest a conversation file: every user turn as an episodic memory plus extracted memories."""
    from rich.progress import Progress

    from ..engine.conversations import load_conversation_file

    convs = load_conversation_file(file)
    m = State.memory()
    totals: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("ingesting", total=sum(c.n_messages for c in convs))
        for c in convs:
            ns = user or c.user_id or "default"
            t = totals.setdefault(ns, {"added": 0, "merged": 0, "refused": 0, "skipped": 0})
            for session in c.sessions:
                res = m.add(session, ns, infer=not no_extract)
                t["added"] += len(res.added)
                t["merged"] += len(res.merged)
                t["refused"] += len(res.refused)
                t["skipped"] += len(res.skipped)
                notes.extend(f"{ns}: {n}" for n in res.skipped)
                bar.advance(task, len(session))
    if as_json:
        _json(totals)
        return
    for n in notes:  # which message was skipped and why
        err.print(f"skipped {n}", markup=False, highlight=False)
    for ns, t in totals.items():
        out.print(f"{ns}: {t['added']} added, {t['merged']} merged into existing, {t['refused']} refused, "
                  f"{t['skipped']} skipped")


@app.command()
def show(user: str = typer.Option("default", "--user", "-u")) -> None:
    """Print the user's MEMORY.md."""
    sys.stdout.write(State.memory().show(user))


@app.command()
def get(memory_id: str = typer.Argument(...), user: str = typer.Option("default", "--user", "-u")) -> None:
    """Print one memory as JSON."""
    _json(State.memory().get(memory_id, user).to_dict())


@app.command("list")
def list_(user: str = typer.Option("default", "--user", "-u"),
          type_: Optional[str] = typer.Option(None, "--type", "-t"),
          archived: bool = typer.Option(False, "--archived", help="Include archived memories."),
          as_json: bool = typer.Option(False, "--json")) -> None:
    """List the user's memories."""
    rows = State.memory().get_all(user, memory_type=type_, include_archived=archived)
    if as_json:
        _json([r.to_dict() for r in rows])
        return
    if not rows:
        what = f"{type_} memories" if type_ else "memories"
        out.print(f"no {what} for user {user!r}" + ("" if archived else " (--archived includes archived ones)"))
    for r in rows:
        out.print(render.record_line(r))


@app.command()
def update(memory_id: str = typer.Argument(...), content: Optional[str] = typer.Option(None, "--content", "-c"),
           importance: Optional[float] = typer.Option(None, "--importance"),
           user: str = typer.Option("default", "--user", "-u")) -> None:
    """Change the text or importance of a memory (MEMORY.md is backed up first)."""
    r = State.memory().update(memory_id, user, content=content, importance=importance)
    out.print(f"updated {r.id}: {r.content}")


@app.command()
def delete(memory_id: str = typer.Argument(...), user: str = typer.Option("default", "--user", "-u")) -> None:
    """Delete one memory by id, and its words from history, backups and the search snapshot."""
    r = State.memory().delete(memory_id, user)
    out.print(f"deleted {r.id}: {r.content}")


@app.command()
def forget(query: str = typer.Argument(..., help="A memory id, or words describing what to forget."),
           user: str = typer.Option("default", "--user", "-u"),
           dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would be forgotten.")) -> None:
    """Delete a memory by id, or every memory matching a query, as delete does."""
    gone = State.memory().forget(query, user, dry_run=dry_run)
    verb = "would forget" if dry_run else "forgot"
    if not gone:
        out.print("nothing matched")
    for r in gone:
        out.print(f"{verb} {r.id}: {r.content}")


@app.command()
def history(memory_id: str = typer.Argument(...), user: str = typer.Option("default", "--user", "-u"),
            as_json: bool = typer.Option(False, "--json")) -> None:
    """Every change of a memory: add, update, merge, archive, delete, forget."""
    entries = State.memory().history(memory_id, user)
    if as_json:
        _json([e.to_dict() for e in entries])
        return
    for e in entries:
        change = f"{e.old_content!r} -> {e.new_content!r}" if e.old_content and e.new_content else \
            repr(e.new_content or e.old_content)
        out.print(f"{e.at.isoformat()} {e.action:8} {change} {json.dumps(e.detail, ensure_ascii=False)}")


@app.command()
def reindex(user: Optional[str] = typer.Option(None, "--user", "-u", help="Only this namespace.")) -> None:
    """Rebuild the index from the Markdown files; after a change of embedder, first re-embed every
    row of the embedded index (episodic turns, history and sessions kept; the old file is kept)."""
    try:
        mem = State.memory()
    except EmbedderChangedError as exc:
        mem = _rebuild_for_new_embedder(exc)
    counts = mem.reindex(user)
    for ns, n in counts.items():
        out.print(f"{ns}: {n} memories indexed")
    if not counts:
        out.print("no namespaces found")


def _rebuild_for_new_embedder(exc: EmbedderChangedError) -> Any:
    from ..config import load_settings
    from ..engine.records import embed_text
    from ..index.transfer import rebuild_for_embedder
    from ..providers.embedder import make_embedder

    settings = load_settings(State.root)
    if settings.index.backend != "sqlite":
        raise exc
    embedder = make_embedder(settings.embedder)
    err.print(f"{exc}", markup=False, highlight=False)
    err.print(f"re-embedding every memory with {embedder.name} …", markup=False, highlight=False)
    report, backup = rebuild_for_embedder(
        settings.root, embedder, embed_text,
        progress=lambda u, n: err.print(f"  {u}: {n} memories", markup=False, highlight=False))
    out.print(f"re-embedded {sum(report.memories.values())} memories of {len(report.memories)} user(s); "
              f"the old index is kept as {backup}", markup=False, highlight=False)
    return State.memory()


@app.command()
def stats(user: str = typer.Option("default", "--user", "-u"), as_json: bool = typer.Option(False, "--json")) -> None:
    """Counts by type, archived, average importance, file sizes."""
    s = State.memory().stats(user)
    if as_json:
        _json(s)
        return
    for line in render.stats_lines(s):
        out.print(line)


from .llm_cmd import register as _register_llm  # noqa: E402  (doctor: check the embedder and LLM endpoints)

_register_llm(app, lambda: State.root)


from .migrate_cmd import register as _register_migrate  # noqa: E402  (migrate --to postgres DSN)

_register_migrate(app, lambda: State.root, out, err)


@app.command("export")
def export_(file: Optional[Path] = typer.Argument(None, help="Output JSONL file (default stdout)."),
            user: Optional[str] = typer.Option(None, "--user", "-u", help="Only this namespace.")) -> None:
    """Export every memory (archived too) as JSON lines."""
    rows = State.memory().export(user)
    try:
        fh = open(file, "w", encoding="utf-8") if file else sys.stdout
    except OSError as exc:
        raise InvalidInputError(f"cannot write {file}: {_os_reason(exc, file)}") from None
    n = 0
    try:
        for d in rows:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
            n += 1
    finally:
        if file:
            fh.close()
    if file:
        err.print(f"exported {n} memories to {file}")


@app.command("import")
def import_(file: Path = typer.Argument(..., help="A JSONL file written by 'memfold export' (or a JSON array of its records).")) -> None:
    """Import memories exported by 'memfold export' (ids are kept)."""
    rows = render.read_records(file)
    n = State.memory().import_records(rows)
    out.print(f"imported {n} memories")


@app.command()
def policy(user: str = typer.Option("default", "--user", "-u")) -> None:
    """Print the effective memory policy of a namespace."""
    _json(State.memory().policy(user).to_dict())


from .session_cmd import register as _register_session  # noqa: E402  (chat, context, summarize, sessions)

_register_session(app, State, out, err)


@app.command()
def demo() -> None:
    """The main job: ingest a small bilingual sample conversation, search it, show MEMORY.md."""
    from .demo import run_demo

    run_demo(State.memory(), out)


from .eval_cmd import bench, eval_app  # noqa: E402  (measurement commands live in their own module)

app.add_typer(eval_app, name="eval")
app.command()(bench)


def _os_reason(exc: OSError, path: Any) -> str:
    if isinstance(exc, FileNotFoundError) and path is not None and not Path(path).parent.is_dir():
        return f"the folder {Path(path).parent} does not exist"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "it is a folder, not a file"
    return exc.strerror or str(exc)


def main() -> None:
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except MemfoldError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False)
        sys.exit(1)
    except OSError as exc:  # a file or folder the system refused: one line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"error: {where}{_os_reason(exc, exc.filename)}", markup=False, highlight=False)
        sys.exit(1)
    except (typer.Abort, KeyboardInterrupt):
        err.print("aborted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:
        # usage errors (click's, or the copy of click that newer typer releases vendor) carry their
        # own message and exit code; matched by shape so either layout works
        show, exit_code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(exit_code, int):
            show()
            sys.exit(exit_code)
        if type(exc).__name__ == "Exit" and isinstance(exit_code, int):
            sys.exit(exit_code)
        raise

if __name__ == "__main__":
    main()
