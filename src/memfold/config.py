"""Settings: where the workspace is and which providers to use.

Sources, later wins: built-in defaults → ``<root>/config.toml`` (or ``config.json``) →
environment variables ``MEMFOLD_<SECTION>__<KEY>`` → explicit arguments.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError
from .policy import Policy


@dataclass(frozen=True)
class EmbedderSettings:
    provider: str = "use"  # use | e5 | openai
    model: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    dim: int = 0  # only for openai: 0 = ask the endpoint
    timeout: float = 30.0
    batch_size: int = 64
    threads: int = 0  # bundled USE: batches embedded at once on worker threads; 0 = all cores
    max_chars: int = 2000  # each text is cut to this many characters for its vector (the text is kept whole)


@dataclass(frozen=True)
class IndexSettings:
    backend: str = "sqlite"  # sqlite | postgres
    dsn: str = ""
    vector_exact_max: int = 20_000  # sqlite: above this many vectors per user, a two-stage (PCA) vector search
    record_cache: int = 4096  # sqlite: rows read by searches kept in process while the file is unchanged (0: off)
    # write-ahead mode: add() returns once the memory is in its file and the index (keyword-searchable);
    # its vector follows from a background worker within write_ahead_delay_ms (engine/write/vector_worker.py)
    write_ahead: bool = False
    write_ahead_delay_ms: int = 200
    # postgres: connection pool (per process) and HNSW parameters (m, ef_construction: when the index is created)
    pool_min: int = 1
    pool_max: int = 8
    pool_timeout: float = 30.0
    hnsw_m: int = 16
    hnsw_ef_construction: int = 64
    hnsw_ef_search: int = 100
    access_delay_ms: int = 100  # postgres: searches' access statistics written by a background thread (0: inside)


@dataclass(frozen=True)
class CacheSettings:
    backend: str = "memory"  # memory (in process) | redis | off
    url: str = ""  # redis: redis://host:port/db
    max_entries: int = 2000  # memory: entries kept (least recently used go first)
    ttl: float = 3600.0  # seconds an entry lives at most (the hot set: 1 h)
    hot_size: int = 20  # the hot set: most accessed memories per namespace
    timeout: float = 0.05  # redis: seconds a call may take before Redis counts as unavailable
    retry_after: float = 30.0  # redis: seconds the cache is skipped after a failure


@dataclass(frozen=True)
class LLMSettings:
    provider: str = ""  # "" = no LLM; "openai" = any OpenAI-compatible endpoint
    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 2
    backoff: float = 1.0  # seconds before the first retry; doubles with each further retry
    json_mode: str = "auto"  # auto | json_object | json_schema | off (see docs/llm.md)
    max_calls_per_operation: int = 8  # LLM calls one add() may make (extraction + merge decisions)


@dataclass(frozen=True)
class ServerSettings:
    host: str = "127.0.0.1"  # memfold serve: the address to listen on
    port: int = 8765
    workers: int = 1  # worker processes (each loads its own embedder; they share the index, keys and sessions)
    max_body_bytes: int = 2_000_000  # a request body above this is refused with 413
    maintenance_interval_minutes: float = 60.0  # background maintenance (memfold maintain's jobs) every N minutes; 0 = never
    # requests doing engine work (embedding, indexing, searching) at once per worker process; further
    # requests wait up to busy_wait_seconds for a turn, then get 503 with Retry-After
    max_concurrent: int = 4
    busy_wait_seconds: float = 10.0
    # glibc malloc arenas (heaps) of a worker process: 1 = its request threads share one heap, which the
    # trim after a burst can hand back to the system; 0 = the C library's default (8 per core)
    malloc_arenas: int = 1
    # Host names (comma-separated) the server answers besides the loopback names when it listens on a
    # loopback address; on another address, when set, the only Host names it answers (DNS-rebinding guard)
    allowed_hosts: str = ""
    metrics_namespaces: bool = False  # GET /metrics labels counts by namespace for every scrape (else: admin key only)
    log_format: str = "text"  # memfold serve's log on stderr (one access line per request): text | json


@dataclass(frozen=True)
class MaintenanceSettings:
    """Maintenance in the background of a long-lived process (``memfold mcp``, ``memfold chat``, a
    library ``Memory`` kept open; ``memfold serve`` runs every ``[server] maintenance_interval_minutes``)."""

    background: bool = True  # false: no process runs maintenance by itself (only `memfold maintain`)
    interval_minutes: float = 60.0  # mcp, chat, a library Memory: look for due jobs every N minutes
    first_run_seconds: float = 60.0  # the first look this long after the process started (one-shot commands are gone by then)
    pause_seconds: float = 2.0  # rest between two namespaces of a background run
    job_seconds: float = 120.0  # a background job stops between steps past this time; the rest waits for the next run


@dataclass(frozen=True)
class RerankSettings:
    """The opt-in quality stage of the read path (``memfold/rerank/``): off unless a backend is named."""

    backend: str = "off"  # off | llm (an OpenAI-compatible chat endpoint) | endpoint (a /rerank endpoint)
    url: str = ""  # llm: the base URL (…/v1); endpoint: the /rerank URL (…/rerank is added when missing)
    model: str = ""
    api_key_env: str = ""  # name of the environment variable holding the key ("" = no key sent)
    candidates: int = 20  # the top N hits of a search that are re-ordered (2-100)
    timeout_seconds: float = 10.0  # one call; past it the search keeps the incoming order
    rewrite: bool = False  # split multi-part and time questions into sub-queries (an LLM call)


@dataclass(frozen=True)
class Settings:
    root: Path
    language: str = "en"  # en | zh: the MEMORY.md template of new workspaces
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    maintenance: MaintenanceSettings = field(default_factory=MaintenanceSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    memory: Mapping[str, Any] = field(default_factory=dict)  # raw policy block, validated by Policy
    # where each [memory] key came from ("<root>/config.json [memory]", "environment variable MEMFOLD_MEMORY__X", …)
    memory_sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def base_policy(self) -> Policy:
        pol = Policy()
        default = f"{self.root / 'config.toml'} [memory]"
        for key, value in self.memory.items():  # one key at a time, so an error names the key's own source
            pol = pol.merged({key: value}, self.memory_sources.get(key, default))
        return pol


SECTIONS = {"embedder": EmbedderSettings, "index": IndexSettings, "llm": LLMSettings, "server": ServerSettings,
            "cache": CacheSettings, "maintenance": MaintenanceSettings, "rerank": RerankSettings}
TOP_KEYS = {"language", "memory"} | set(SECTIONS)


def resolve_root(root: str | os.PathLike[str] | None) -> Path:
    if root:
        return _folder(Path(root).expanduser().resolve(), "the workspace (--root)")
    env = os.environ.get("MEMFOLD_HOME")
    if env:
        return _folder(Path(env).expanduser().resolve(), "the workspace (MEMFOLD_HOME)")
    return _folder((Path.cwd() / ".memfold").resolve(), "the workspace")


def _folder(path: Path, what: str) -> Path:
    """``path`` when it is a folder or can be made one (nothing in its way is a file)."""
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                named = "is a file" if p == path else f"is inside {p}, which is a file"
                raise ConfigError(f"{what} {path} {named}: give the folder of a memfold workspace "
                                  "(it is created when missing)")
            break
    return path


def _read_file(root: Path) -> tuple[dict[str, Any], str]:
    toml_path, json_path = root / "config.toml", root / "config.json"
    if toml_path.exists():
        try:
            return tomllib.loads(toml_path.read_text(encoding="utf-8")), str(toml_path)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{toml_path} is not valid TOML: {exc}") from exc
    if json_path.exists():
        try:
            data = json.loads(json_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{json_path} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{json_path} must hold a JSON object")
        return data, str(json_path)
    return {}, "defaults"


def _env_values() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in os.environ.items():
        if name == "MEMFOLD_LANGUAGE":
            out["language"] = value
            continue
        if not name.startswith("MEMFOLD_") or name == "MEMFOLD_HOME" or "__" not in name:
            continue
        section, _, key = name[len("MEMFOLD_"):].lower().partition("__")
        if section not in TOP_KEYS or section == "language":
            if not name.startswith("MEMFOLD_TEST"):
                raise ConfigError(f"environment variable {name}: unknown section {section!r}")
            continue
        out.setdefault(section, {})[key] = value
    return out


def a_or_an(word: str) -> str:
    """``word`` with its indefinite article: "an int", "a float"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _env_name(section: str, key: str) -> str:
    return f"MEMFOLD_{section.upper()}__{key.upper()}"


def _section(cls: type, values: Mapping[str, Any], where: str | Mapping[str, str]) -> Any:
    """``where`` names the source of the values, or of each key (a key absent from the mapping: its "")."""
    known = {f.name: f for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, raw in values.items():
        src = where if isinstance(where, str) else where.get(key, "")
        if key not in known:
            raise ConfigError(f"unknown setting {key!r} in {src}; known: {', '.join(known)}")
        typ = known[key].type
        tname = typ if isinstance(typ, str) else typ.__name__
        try:
            if tname == "bool":
                kwargs[key] = _bool(raw)
            elif tname == "int":
                kwargs[key] = int(raw)
            elif tname == "float":
                kwargs[key] = float(raw)
            else:
                kwargs[key] = str(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"setting {key!r} in {src} must be {a_or_an(tname)}, got {raw!r}") from None
    return cls(**kwargs)


def _bool(raw: Any) -> bool:
    """A TOML/JSON boolean, or its spelling in an environment variable."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off", ""):
        return False
    raise ValueError(raw)


def load_settings(root: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Build Settings for a workspace root. ``overrides`` may hold ``language``,
    ``embedder``/``index``/``llm`` (dicts) and ``memory`` (policy dict)."""
    path = resolve_root(root)
    data, where = _read_file(path)
    for key in data:
        if key not in TOP_KEYS:
            raise ConfigError(f"unknown section {key!r} in {where}; known: {', '.join(sorted(TOP_KEYS))}")
    env = _env_values()
    merged: dict[str, Any] = {}
    sources: dict[str, dict[str, str]] = {}  # per section, where each key came from
    for key in TOP_KEYS:
        if key == "language":
            continue
        if not isinstance(data.get(key, {}), dict):
            raise ConfigError(f"[{key}] in {where} must be a table")
        block: dict[str, Any] = {}
        src: dict[str, str] = {}
        for layer, name in ((data.get(key) or {}, lambda k: f"{where} [{key}]"),
                            (env.get(key, {}), lambda k: f"environment variable {_env_name(key, k)}"),
                            (overrides.get(key) or {}, lambda k: f"the arguments [{key}]")):
            for k, v in layer.items():
                block[k] = v
                src[k] = name(k)
        merged[key], sources[key] = block, src
    language = str(overrides.get("language") or env.get("language") or data.get("language") or "en")
    if language not in ("en", "zh"):
        lang_src = ("arguments" if overrides.get("language") else "environment variable MEMFOLD_LANGUAGE"
                    if env.get("language") else where)
        raise ConfigError(f"setting 'language' in {lang_src} must be 'en' or 'zh', got {language!r}")
    llm = _section(LLMSettings, merged["llm"], sources["llm"])
    settings = Settings(
        root=path,
        language=language,
        embedder=_section(EmbedderSettings, merged["embedder"], sources["embedder"]),
        index=_section(IndexSettings, merged["index"], sources["index"]),
        llm=_implied_provider(llm, sources["llm"]),
        server=_section(ServerSettings, merged["server"], sources["server"]),
        cache=_section(CacheSettings, merged["cache"], sources["cache"]),
        maintenance=_maintenance(_section(MaintenanceSettings, merged["maintenance"], sources["maintenance"]),
                                 sources["maintenance"]),
        rerank=_section(RerankSettings, merged["rerank"], sources["rerank"]),
        memory=merged["memory"],
        memory_sources=sources["memory"],
    )
    settings.base_policy()  # validate now, with the key's name in the error
    return settings


def _maintenance(m: MaintenanceSettings, sources: Mapping[str, str]) -> MaintenanceSettings:
    for key in ("interval_minutes", "first_run_seconds", "pause_seconds", "job_seconds"):
        value = getattr(m, key)
        if not value >= 0 or value > 10_000_000:  # NaN fails the first test
            raise ConfigError(f"setting {key!r} in {sources.get(key, 'the settings')} must be between 0 and "
                              f"10000000, got {value!r}")
    return m


def _implied_provider(llm: LLMSettings, sources: Mapping[str, str]) -> LLMSettings:
    """An endpoint without a provider means the OpenAI-compatible one (the only kind of endpoint memfold
    speaks to), rather than silently running without an LLM."""
    if llm.provider or not llm.base_url.strip():
        return llm
    if not llm.model.strip():
        raise ConfigError(f"[llm] base_url is set (in {sources.get('base_url', 'the settings')}) but no model: "
                          "set [llm] model (or MEMFOLD_LLM__MODEL) to use that endpoint, or remove base_url "
                          "to run without an LLM")
    return replace(llm, provider="openai")
