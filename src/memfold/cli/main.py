"""``memfold`` — the command line. Each command parses input, calls the engine, renders output."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..errors import EmbedderChangedError, InvalidInputError, MemfoldError
from . import (
    eval_cmd,
    knowledge_cmd,
    llm_cmd,
    maintain_cmd,
    mcp_cmd,
    memory_cmd,
    metrics_view,
    migrate_cmd,
    policy_cmd,
    render,
    serve_cmd,
    session_cmd,
)
from .common import Json, OneUser, Runtime, User, err, out, print_json, runtime, shell_word
from .help_compat import hide_flag_types, plain_usage_names
from .help_examples import attach as attach_examples
from .help_examples import overview

hide_flag_types()  # typer >= 0.26 shows "<bool>" for flags in help
plain_usage_names()  # typer >= 0.26 shows "{text}" for a required argument

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="memfold: long-term memory for LLM agents (Markdown files + hybrid retrieval).")


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        sys.stdout.write(f"memfold {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(ctx: typer.Context,
          root: Optional[str] = typer.Option(None, "--root", help="Workspace folder (default $MEMFOLD_HOME or ./.memfold)."),
          verbose: bool = typer.Option(False, "--verbose", "-v", help="Log what the engine does to stderr."),
          version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version of memfold and exit.")) -> None:
    ctx.obj = Runtime(root)
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(message)s")


def _hits_table(hits: list[Any]) -> Table:
    t = Table(show_lines=False)
    for col in ("#", "score", "type", "id", "content"):
        t.add_column(col, overflow="fold")
    for i, h in enumerate(hits, 1):
        t.add_row(str(i), f"{h.score:.3f}", h.record.kind, h.record.id, h.record.content)
    return t


@app.command()
def init(ctx: typer.Context, lang: str = typer.Option("en", "--lang", help="Template language of MEMORY.md: en or zh."),
         user: User = "default") -> None:
    """Create the workspace and the user's MEMORY.md / learnings.md from the template."""
    from ..config import resolve_root
    from ..workspace.userspace import Workspace

    rt = runtime(ctx)
    fresh = not Workspace(resolve_root(rt.root)).exists
    m = rt.memory(language=lang, announce=False)
    folder = m.init(user, lang)
    root = m.settings.root
    out.print(f"{'created a new memfold workspace in' if fresh else 'workspace:'} {root}", markup=False, highlight=False)
    out.print(f"memory of user {folder.name!r}: {folder / 'MEMORY.md'}", markup=False, highlight=False)
    if root != resolve_root(None):  # other commands look in ./.memfold or MEMFOLD_HOME unless told
        out.print(f"other commands use it with --root {shell_word(str(root))} or MEMFOLD_HOME={shell_word(str(root))}",
                  markup=False, highlight=False)


@app.command()
def add(ctx: typer.Context, text: str = typer.Argument(..., help="The memory text; - reads it from standard input."),
        user: User = "default",
        type_: Optional[str] = typer.Option(None, "--type", "-t", help="event|preference|fact|pattern|todo|note|skill"),
        importance: Optional[float] = typer.Option(None, "--importance", help="0..1 (default by type)."),
        agent: Optional[str] = typer.Option(None, "--agent", help="Agent id that saved the memory."),
        note: bool = typer.Option(False, "--note", help="Append to today's daily note instead of MEMORY.md."),
        as_json: Json = False) -> None:
    """Store one memory (type inferred by rules unless --type is given)."""
    from ..engine.storage import guard

    text = guard.memory_text(render.text_argument(text), "the memory text")  # checked before a workspace is made
    m = runtime(ctx).memory()
    if not m.memory_enabled(user):  # switched off: nothing is written, by the CLI either
        from ..errors import MemoryOffError

        raise MemoryOffError(f"memory is switched off for user {user!r}; nothing was stored "
                             f"(`memfold memory on --user {user}` switches it on)")
    if note:
        r = m.add_note(text, user)
        print_json(r.to_dict()) if as_json else out.print(f"noted {r.id} in {r.file}")
        return
    res = m.add(text, user, memory_type=type_, importance=importance, agent_id=agent)
    replaced = render.superseded(m, user, res.added)
    if as_json:
        print_json({**res.to_dict(), "superseded": [dict(id=old.id, content=old.content, superseded_by=new.id,
                                                         relation=rel) for new, old, rel in replaced]})
        return
    for r in res.added:
        out.print(f"added {r.id} [{r.kind}] {r.content}")
        for new, old, rel in replaced:
            if new.id == r.id:
                out.print(render.superseded_line(new, old, rel))
    for r in res.merged:
        out.print(f"already known: {r.id} [{r.kind}] {r.content}")
    for r in res.completed:
        out.print(f"completed {r.id} [{r.kind}] {r.content}")
    for s in res.skipped:
        out.print(f"skipped: {s}")
    for s in res.warnings:
        out.print(f"note: {s}")


@app.command()
def search(ctx: typer.Context, query: str = typer.Argument(..., help="What to look for (any language)."),
           user: User = "default",
           k: Optional[int] = typer.Option(None, "-k", "--limit", help="How many results (default retrieve_limit)."),
           type_: Optional[str] = typer.Option(None, "--type", "-t", help="Only this memory type."),
           include_archived: bool = typer.Option(False, "--include-archived",
                                                 help="Search archived memories too (merged, compressed, tidied)."),
           related: bool = typer.Option(False, "--related", help="Show each hit's related memories (supports, "
                                        "contradicts, refines, ...)."),
           as_json: Json = False) -> None:
    """Hybrid search: keyword + vector candidates, rescored by similarity, recency and importance."""
    if not query.strip():
        raise InvalidInputError("search needs words to look for; to see every memory use 'memfold list' "
                                "(or 'memfold show' for MEMORY.md)")
    hits = runtime(ctx).existing().search(query, user, limit=k, memory_type=type_, include_archived=include_archived,
                                          related=related)
    if as_json:
        print_json([h.to_dict() for h in hits])
    elif hits:
        out.print(_hits_table(hits))
        for i, h in enumerate(hits, 1):
            for r in h.related or ():
                out.print(f"  #{i} {knowledge_cmd.related_line(r)}", highlight=False)
    else:
        out.print("no memories found")


@app.command()
def ingest(ctx: typer.Context, file: Path = typer.Argument(..., help="JSON list of messages, or a LoCoMo-format file."),
           user: Optional[str] = typer.Option(None, "--user", "-u", help="Namespace (LoCoMo default: sample_id)."),
           no_extract: bool = typer.Option(False, "--no-extract", help="Store turns only, no rule extraction."),
           as_json: Json = False) -> None:
    """Ingest a conversation file: every user turn as an episodic memory plus extracted memories."""
    from rich.progress import Progress

    from ..engine.write.conversations import batches, load_conversation_file

    convs = load_conversation_file(file)
    m = runtime(ctx).memory()
    totals: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("ingesting", total=sum(c.n_messages for c in convs))
        for c in convs:
            ns = user or c.user_id or "default"
            t = totals.setdefault(ns, {"added": 0, "merged": 0, "refused": 0, "skipped": 0})
            for batch in batches(c.sessions):  # a long session goes in several calls of at most MAX_MESSAGES
                res = m.add(batch, ns, infer=not no_extract)
                t["added"] += len(res.added)
                t["merged"] += len(res.merged)
                t["refused"] += len(res.refused)
                t["skipped"] += len(res.skipped)
                notes.extend(f"{ns}: {n}" for n in res.skipped)
                bar.advance(task, len(batch))
    if as_json:
        print_json(totals)
        return
    for n in notes:  # which message was skipped and why
        err.print(f"skipped {n}", markup=False, highlight=False)
    for ns, t in totals.items():
        out.print(f"{ns}: {t['added']} added, {t['merged']} merged into existing, {t['refused']} refused, "
                  f"{t['skipped']} skipped")


@app.command()
def show(ctx: typer.Context, user: User = "default") -> None:
    """Print the user's MEMORY.md."""
    sys.stdout.write(runtime(ctx).existing().show(user))


@app.command()
def get(ctx: typer.Context, memory_id: str = typer.Argument(...), user: User = "default") -> None:
    """Print one memory as JSON."""
    print_json(runtime(ctx).existing().get(memory_id, user).to_dict())


@app.command("list")
def list_(ctx: typer.Context, user: User = "default",
          type_: Optional[str] = typer.Option(None, "--type", "-t"),
          archived: bool = typer.Option(False, "--archived", help="Include archived memories."),
          as_json: Json = False) -> None:
    """List the user's memories."""
    rows = runtime(ctx).existing().get_all(user, memory_type=type_, include_archived=archived)
    if as_json:
        print_json([r.to_dict() for r in rows])
        return
    if not rows:
        what = f"{type_} memories" if type_ else "memories"
        out.print(f"no {what} for user {user!r}" + ("" if archived else " (--archived includes archived ones)"))
    for r in rows:
        out.print(render.record_line(r))


@app.command()
def update(ctx: typer.Context, memory_id: str = typer.Argument(...),
           content: Optional[str] = typer.Option(None, "--content", "-c"),
           importance: Optional[float] = typer.Option(None, "--importance"),
           user: User = "default") -> None:
    """Change the text or importance of a memory (MEMORY.md is backed up first)."""
    m = runtime(ctx).existing()
    before = m.get(memory_id, user)
    r = m.update(memory_id, user, content=content, importance=importance)
    out.print(f"{'unchanged' if r == before else 'updated'} {r.id}: {r.content}")


@app.command()
def delete(ctx: typer.Context, memory_id: str = typer.Argument(...), user: User = "default") -> None:
    """Delete one memory by id, and its words from history, backups and the search snapshot."""
    r = runtime(ctx).existing().delete(memory_id, user)
    out.print(f"deleted {r.id}: {r.content}")


@app.command()
def forget(ctx: typer.Context, query: str = typer.Argument(..., help="A memory id, or words describing what to forget."),
           user: User = "default",
           dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would be forgotten.")) -> None:
    """Delete a memory by id, or every memory matching a query, as delete does."""
    gone = runtime(ctx).existing().forget(query, user, dry_run=dry_run)
    verb = "would forget" if dry_run else "forgot"
    if not gone:
        out.print("nothing matched")
    for r in gone:
        out.print(f"{verb} {r.id}: {r.content}")


@app.command()
def history(ctx: typer.Context, memory_id: str = typer.Argument(...), user: User = "default",
            as_json: Json = False) -> None:
    """Every change of a memory: add, update, merge, archive, delete, forget."""
    entries = runtime(ctx).existing().history(memory_id, user)
    if as_json:
        print_json([e.to_dict() for e in entries])
        return
    for e in entries:
        change = f"{e.old_content!r} -> {e.new_content!r}" if e.old_content and e.new_content else \
            repr(e.new_content or e.old_content)
        out.print(f"{e.at.isoformat()} {e.action:8} {change} {json.dumps(e.detail, ensure_ascii=False)}")


@app.command()
def reindex(ctx: typer.Context, user: OneUser = None) -> None:
    """Rebuild the index from the Markdown files; after a change of embedder, re-embed every row first.

    Re-embedding keeps the episodic turns, history and sessions of the embedded index, and the old file."""
    rt = runtime(ctx)
    try:
        mem = rt.existing()
    except EmbedderChangedError as exc:
        from ..facade import admin

        say = lambda text: err.print(text, markup=False, highlight=False)  # noqa: E731
        report, backup = admin.reembed(rt.settings(), exc, notice=say,
                                       progress=lambda u, n: say(f"  {u}: {n} memories"))
        out.print(f"re-embedded {sum(report.memories.values())} memories of {len(report.memories)} user(s); "
                  f"the old index is kept as {backup}", markup=False, highlight=False)
        mem = rt.memory()
    counts = mem.reindex(user)
    for ns, n in counts.items():
        out.print(f"{ns}: {n} memories indexed")
    if not counts:
        out.print("no namespaces found")


@app.command()
def stats(ctx: typer.Context, user: User = "default", as_json: Json = False,
          metrics: bool = typer.Option(False, "--metrics", help="Latency p50/p95/p99 per operation, LLM tokens, "
                                       "cache hit rate of the memfold serve and mcp processes running on this "
                                       "workspace.")) -> None:
    """Counts by type, archived, average importance, file sizes; --metrics: the live metrics."""
    if metrics:
        from ..config import resolve_root
        from ..errors import NoWorkspaceError
        from ..metrics.exposition import multiprocess_dir

        try:
            mem = runtime(ctx).existing()
        except NoWorkspaceError as exc:  # the processes' metrics need no workspace (and none is made for them)
            if multiprocess_dir():
                err.print(f"{exc} Showing the metrics of {multiprocess_dir()} only.", markup=False, highlight=False)
            mem = None
        m = metrics_view.live_summary(mem, user, resolve_root(runtime(ctx).root))
        if as_json:
            print_json(m)
            return
        for line in metrics_view.metrics_lines(m):
            out.print(line)
        return
    s = runtime(ctx).existing().stats(user)
    if as_json:
        print_json(s)
        return
    for line in render.stats_lines(s):
        out.print(line)


llm_cmd.register(app)  # doctor (registered here: the help lists commands in this order)
migrate_cmd.register(app)  # migrate --to postgres DSN


@app.command("export")
def export_(ctx: typer.Context, file: Optional[Path] = typer.Argument(None, help="Output JSONL file (default stdout)."),
            user: OneUser = None) -> None:
    """Export every memory (archived too) as JSON lines."""
    rows = runtime(ctx).existing().export(user)
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
def import_(ctx: typer.Context,
            file: Path = typer.Argument(
                ..., help="A JSONL file written by 'memfold export' (or a JSON array of its records).")) -> None:
    """Import memories exported by 'memfold export' (ids are kept)."""
    rows = render.read_records(file)
    n = runtime(ctx).memory().import_records(rows)
    out.print(f"imported {n} memories")


policy_cmd.register(app)  # policy [show|set|reset|snapshots|rollback]


session_cmd.register(app)  # chat, context, summarize, sessions


@app.command()
def demo(ctx: typer.Context) -> None:
    """The main job: ingest a small bilingual sample conversation, search it, show MEMORY.md."""
    from .demo import run_demo

    run_demo(runtime(ctx).memory(), out)


eval_cmd.register(app)  # eval locomo|madial, bench
memory_cmd.register(app)  # memory on|off|status
knowledge_cmd.register(app)  # skill add|used|list, relation add|remove|list
serve_cmd.register(app)  # serve, keys create|list|revoke
maintain_cmd.register(app)  # maintain
mcp_cmd.register(app)  # mcp [--http]: the memory tools as an MCP server
attach_examples(app)  # every command's --help ends with examples (help_examples.py)


def _os_reason(exc: OSError, path: Any) -> str:
    if isinstance(exc, FileNotFoundError) and path is not None and not Path(path).parent.is_dir():
        return f"the folder {Path(path).parent} does not exist"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "it is a folder, not a file"
    return exc.strerror or str(exc)


def main() -> None:
    if len(sys.argv) == 1:  # memfold alone: the common commands, not the whole list
        sys.stdout.write(overview())
        return
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
