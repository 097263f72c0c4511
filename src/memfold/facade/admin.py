"""Administration use cases: reindex, export, import, re-embedding after a change of embedder,
migration to PostgreSQL and the endpoint checks of ``doctor``.

``reindex``/``export``/``import_records`` work on a ``Memory`` (its facade methods delegate here);
``reembed``, ``migrate`` and ``doctor`` take the ``Settings`` only, since they run where a
``Memory`` cannot be opened (another embedder's index) or is not needed. Providers are imported
inside the functions so that ``memfold --help`` stays fast. API keys are never reported: only
whether the environment variable named by ``api_key_env`` is set."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import LLMSettings, Settings
from ..engine.storage import guard
from ..engine.storage import records as rec
from ..engine.storage.guard import check_fields, screen_text
from ..errors import EmbedderChangedError, InvalidInputError, MemfoldError
from ..limits import SOURCE_IDS, over
from ..models import EPISODIC, HistoryEntry, MemoryRecord, utcnow
from ..text.secrets import redact
from .relations import check_kind

if TYPE_CHECKING:
    from ..index.transfer import CopyReport
    from ..providers.chat import ChatModel
    from .memory import Memory

log = logging.getLogger("memfold")
Progress = Callable[[str, int], None]
PROBE_SCHEMA = {"title": "probe", "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


# ---- reindex, export, import --------------------------------------------------------------
def reindex(memory: "Memory", user_id: str | None = None) -> dict[str, int]:
    """Rebuild the file-backed index rows from the files (all namespaces when ``user_id`` is None)."""
    users = [guard.user(user_id)] if user_id is not None else memory.users()
    return {u: memory._store(u).reindex() for u in users}


def export(memory: "Memory", user_id: str | None = None) -> Iterator[dict[str, Any]]:
    """Every record (archived ones too) as a dict, one namespace or all."""
    for u in ([guard.user(user_id)] if user_id is not None else memory.users()):
        memory._store(u).sync(wait=False)
        offset = 0
        while True:
            rows = memory.index.list_records(u, active_only=False, limit=1000, offset=offset)
            if not rows:
                break
            for r in rows:  # relations live in the index only: each record carries those it is the source of
                links = [{"target_id": x["target_id"], "relation": x["relation"], "strength": x["strength"]}
                         for x in memory.index.relations(u, r.id) if x["source_id"] == r.id]
                yield {**r.to_dict(), "relations": links} if links else r.to_dict()
            offset += len(rows)


def import_records(memory: "Memory", rows: Iterable[dict[str, Any]]) -> int:
    """Import exported records, keeping their ids; existing ids of the same namespace are replaced,
    an id another namespace holds gets a new one. Every row is checked (fields, ranges, user ids,
    secrets) before anything is written. Returns the count."""
    index = memory.index
    rows = list(rows) if isinstance(rows, Iterable) and not isinstance(rows, (str, bytes, dict)) else rows
    batches, links = _checked_import(memory, rows)
    total = 0
    for u, recs in batches.items():
        st = memory._store(u)
        with st.space.lock:
            st.sync()
            for old in index.get(u, [r.id for r in recs]):
                if old.is_active and old.file != EPISODIC:
                    st.rewrite(old, None, "delete", {"by": "import"})
                else:  # an episodic turn or an archived record: no line in a file
                    index.delete(u, [old.id])
                    index.append_history([HistoryEntry(old.id, u, "delete", utcnow(), old.content, None,
                                                       {"by": "import"})])
            active = [r for r in recs if r.is_active]
            st.append(active, None, [HistoryEntry(r.id, u, "add", utcnow(), None, r.content, {"by": "import"})
                                     for r in active])
            archived = [r for r in recs if not r.is_active]
            if archived:
                vecs = memory.embedder.embed([rec.embed_text(r) for r in archived])
                index.upsert([rec.item(r, vecs[i]) for i, r in enumerate(archived)])
            # access statistics are index-only: restore them as exported
            index.upsert([rec.item(r, None) for r in active])
            held = {r.id for r in index.get(u, sorted({i for src, dst, _, _ in links.get(u, ()) for i in (src, dst)}))}
            for src, dst, kind, strength in links.get(u, ()):
                if src in held and dst in held:
                    index.add_relation(u, src, dst, kind, strength)
        total += len(recs)
    return total


Link = tuple[str, str, str, float]  # source id, target id, relation, strength


def _checked_import(memory: "Memory", rows: Iterable[dict[str, Any]]
                    ) -> tuple[dict[str, list[MemoryRecord]], dict[str, list[Link]]]:
    """The rows of an import, every one checked, grouped by namespace; an id that another
    namespace holds (in the index or earlier in the import) is replaced by a new one. And the
    relations the rows carry, by namespace, with the same ids."""
    if isinstance(rows, (str, bytes, dict)) or not isinstance(rows, Iterable):
        raise InvalidInputError(f"rows must be a list of exported records, got {type(rows).__name__}")
    batches: dict[str, dict[str, MemoryRecord]] = {}
    raw_links: dict[str, list[Link]] = {}
    for n, d in enumerate(rows, 1):
        r = _guarded(guard.record_row(d, f"record {n}"), n)
        batches.setdefault(r.user_id, {})[r.id] = r  # the same id twice in a namespace: the last row wins
        raw_links.setdefault(r.user_id, []).extend(_links(d, r.id, n))
    owner: dict[str, str] = {}
    out: dict[str, list[MemoryRecord]] = {}
    links: dict[str, list[Link]] = {}
    for u, recs in batches.items():
        taken = memory.index.foreign_ids(u, list(recs))
        remap: dict[str, str] = {}
        for mid in recs:
            if mid in taken or owner.get(mid, u) != u:
                remap[mid] = rec.new_id()
                log.warning("import: memory id %s of user %s is another namespace's; imported as %s",
                            mid, u, remap[mid])
            owner[remap.get(mid, mid)] = u
        out[u] = [r.with_(id=remap.get(r.id, r.id), superseded_by=remap.get(r.superseded_by or "", r.superseded_by))
                  for r in recs.values()]
        links[u] = [(remap.get(a, a), remap.get(b, b), kind, w) for a, b, kind, w in raw_links.get(u, ())]
    return out, links


def _links(d: dict[str, Any], source_id: str, n: int) -> list[Link]:
    """The relations one exported record carries (``relations``: target_id, relation, strength), checked."""
    got = d.get("relations") or []
    where = f"record {n}: relations"
    if not isinstance(got, list):
        raise InvalidInputError(f"{where} must be a list, got {type(got).__name__}")
    over(SOURCE_IDS, len(got), where, "relations")
    out: list[Link] = []
    for x in got:
        if not isinstance(x, dict):
            raise InvalidInputError(f"{where}: each relation must be a JSON object")
        kind = check_kind(x.get("relation"))
        assert kind is not None
        out.append((source_id, guard.ident(x.get("target_id"), f"{where}: target_id"), kind,
                    guard.number(x.get("strength", 1.0), f"{where}: strength")))
    return out


def _guarded(r: MemoryRecord, n: int) -> MemoryRecord:
    """An imported record with the secrets of its text redacted; SecretRefusedError (nothing is
    imported) when its content is mostly a secret or another field holds one."""
    what = f"record {n} ({r.id})"
    check_fields(what, id=r.id, structured_data=r.structured_data, source_ids=r.source_ids or None,
                 agent_id=r.agent_id, source_session_id=r.source_session_id, superseded_by=r.superseded_by)
    content = screen_text(r.content, f"the content of {what}").text if r.content else r.content
    return r.with_(content=content, context=redact(r.context) if r.context else r.context)


# ---- re-embedding and migration ------------------------------------------------------------
def reembed(settings: Settings, changed: EmbedderChangedError, *, notice: Callable[[str], None] | None = None,
            progress: Progress | None = None) -> tuple["CopyReport", Path]:
    """After a change of embedder: re-embed every row of the embedded index (episodic turns, history
    and sessions kept). Returns the report and the old file, kept as a backup. ``changed`` is
    raised again for another backend (only the embedded index can be rebuilt)."""
    from ..index.transfer import rebuild_for_embedder
    from ..providers.embedder import make_embedder

    if settings.index.backend != "sqlite":
        raise changed
    embedder = make_embedder(settings.embedder)
    if notice is not None:
        notice(str(changed))
        notice(f"re-embedding every memory with {embedder.name} …")
    return rebuild_for_embedder(settings.root, embedder, rec.embed_text, progress=progress)


def migrate(settings: Settings, to: str, dsn: str, user_ids: list[str] | None = None, *,
            progress: Progress | None = None) -> tuple["CopyReport", str]:
    """Copy the embedded index (index.db) into PostgreSQL: records, vectors, history, sessions; no
    re-embedding. Returns the report and where the copy went (the DSN without its password)."""
    from ..index.postgres import PostgresIndex
    from ..index.transfer import SqliteSource, copy_index

    if to != "postgres":
        raise InvalidInputError(f"--to must be 'postgres', got {to!r}")
    with SqliteSource.open(settings.root / "index.db") as source:
        target = PostgresIndex(dsn, dim=source.dim, embedder_name=source.embedder)
        try:
            report = copy_index(source, target, user_ids or None, progress=progress)
        finally:
            target.close()
    return report, target.where


# ---- doctor and chat endpoints -------------------------------------------------------------
@dataclass
class Check:
    name: str
    ok: bool | None  # None = not configured (not a failure)
    summary: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "summary": self.summary, **self.details}


def doctor(settings: Settings, *, skip_embedder: bool = False) -> list[Check]:
    """Check the configured embedder (unless skipped) and LLM endpoints: what answers, how fast."""
    return ([] if skip_embedder else [check_embedder(settings.embedder)]) + [check_llm(settings.llm)]


def check_embedder(settings: Any) -> Check:
    from ..providers.embedder import make_embedder

    where = settings.base_url or "bundled, offline"
    details: dict[str, Any] = {"provider": settings.provider, "endpoint": where}
    if settings.provider == "openai":
        details["api_key_env"] = f"{settings.api_key_env} ({'set' if os.environ.get(settings.api_key_env) else 'not set'})"
    started = time.perf_counter()
    try:
        emb = make_embedder(settings)
        vec = emb.embed(["memfold doctor: 你好, hello"])
    except MemfoldError as exc:
        return Check("embedder", False, f"{settings.provider} ({where}) failed: {exc}", details)
    ms = (time.perf_counter() - started) * 1000
    details.update(model=emb.name, dim=int(vec.shape[1]), latency_ms=round(ms, 1))
    return Check("embedder", True, f"{emb.name} ({where}) answers: {vec.shape[1]} dims in {ms:.0f} ms", details)


def check_llm(settings: Any) -> Check:
    from ..engine.llm.llm_calls import parse_json_answer
    from ..providers.chat import make_chat_model

    if not settings.provider:
        return Check("llm", None, "no LLM configured ([llm] provider is empty): extraction and merge decisions "
                                  "use the deterministic rules", {"provider": ""})
    details: dict[str, Any] = {"provider": settings.provider, "endpoint": settings.base_url, "model": settings.model,
                               "json_mode": settings.json_mode}
    if settings.api_key_env:
        details["api_key_env"] = f"{settings.api_key_env} ({'set' if os.environ.get(settings.api_key_env) else 'not set'})"
    started = time.perf_counter()
    try:
        chat = make_chat_model(settings)
        if chat is None:
            return Check("llm", None, "no LLM configured", details)
        result = chat.complete([{"role": "user", "content": 'Answer with the JSON object {"ok": true} and nothing else.'}],
                               json_schema=PROBE_SCHEMA, temperature=0.0)
    except MemfoldError as exc:
        return Check("llm", False, f"{settings.model or '?'} at {settings.base_url or '?'} failed: {exc}", details)
    ms = (time.perf_counter() - started) * 1000
    used = getattr(chat, "last_json_mode", "")
    details.update(answered_model=result.model, latency_ms=round(ms, 1), usage=result.usage,
                   json_mode_used=used or "n/a")
    try:
        json_ok = isinstance(parse_json_answer(result.text), dict)
    except ValueError:
        json_ok = False
    details["json_answer"] = json_ok
    note = "answers JSON" if json_ok else "answers, but not with JSON: extraction will often fall back to notes"
    return Check("llm", json_ok, f"{result.model} at {settings.base_url} {note} "
                                 f"(response_format: {used or 'n/a'}, {ms:.0f} ms)", details)


def chat_endpoint(llm: LLMSettings, *, base_url: str | None = None, model: str | None = None,
                  api_key_env: str | None = None) -> "ChatModel | None":
    """The chat model of an OpenAI-compatible endpoint given by the arguments over ``[llm]``; None
    when neither names one (base URL and model)."""
    from ..providers.chat import make_chat_model

    if base_url or model or api_key_env:
        llm = replace(llm, provider="openai", base_url=base_url or llm.base_url, model=model or llm.model,
                      api_key_env=api_key_env or llm.api_key_env)
    if not llm.provider or not llm.base_url or not llm.model:
        return None
    return make_chat_model(llm)
