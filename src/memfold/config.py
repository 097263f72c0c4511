"""Settings: where the workspace is and which providers to use.

Sources, later wins: built-in defaults → ``<root>/config.toml`` (or ``config.json``) →
environment variables ``MEMFOLD_<SECTION>__<KEY>`` → explicit arguments. The sources are read and
merged by ``pydantic-settings`` (``_Sources``), each section validated by pydantic; an error names
the key and the source its value came from (the last source that set it).
"""

from __future__ import annotations

import json
import os
import tomllib
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from pydantic import ConfigDict, ValidationError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    JsonConfigSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from .errors import ConfigError
from .policy import QUALITY_POLICY, Policy


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
class SearchSettings:
    """How searches rank (``engine/read``): ``default``, or ``quality`` (a third relevance signal from a
    second embedding model, multilingual-e5-small, computed after each add by a background worker;
    and the word-vector match)."""

    profile: str = "default"  # default | quality


PROFILES = ("default", "quality")


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
    search: SearchSettings = field(default_factory=SearchSettings)
    memory: Mapping[str, Any] = field(default_factory=dict)  # raw policy block, validated by Policy
    # where each [memory] key came from ("<root>/config.json [memory]", "environment variable MEMFOLD_MEMORY__X", …)
    memory_sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def base_policy(self) -> Policy:
        pol = Policy()
        if self.search.profile == "quality":  # the profile's weights; [memory] keys set below win over them
            pol = pol.merged(QUALITY_POLICY, "[search] profile = 'quality'")
        default = f"{self.root / 'config.toml'} [memory]"
        for key, value in self.memory.items():  # one key at a time, so an error names the key's own source
            pol = pol.merged({key: value}, self.memory_sources.get(key, default))
        return pol


SECTIONS = {"embedder": EmbedderSettings, "index": IndexSettings, "llm": LLMSettings, "server": ServerSettings,
            "cache": CacheSettings, "maintenance": MaintenanceSettings, "rerank": RerankSettings,
            "search": SearchSettings}
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


def a_or_an(word: str) -> str:
    """``word`` with its indefinite article: "an int", "a float"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _env_name(section: str, key: str) -> str:
    return f"MEMFOLD_{section.upper()}__{key.upper()}"


def _section_value(section: str, key: str, value: Any) -> Any:
    """An environment variable's text as the setting's value: an empty value of a true/false
    setting is false (as ``MEMFOLD_X=`` reads in a shell)."""
    cls = SECTIONS.get(section)
    types = {f.name: f.type for f in fields(cls)} if cls else {}
    return "false" if value == "" and types.get(key) in ("bool", bool) else value


class _Env(EnvSettingsSource):
    """``MEMFOLD_<SECTION>__<KEY>`` (and ``MEMFOLD_LANGUAGE``), case-insensitive."""

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        return {k: ({kk: _section_value(k, kk, vv) for kk, vv in v.items()} if isinstance(v, dict) else v)
                for k, v in data.items()}


_FILES: ContextVar[tuple[Path, Path]] = ContextVar("memfold_config_files")


def _file_source(settings_cls: type[BaseSettings]) -> tuple[PydanticBaseSettingsSource, str]:
    """The workspace's settings file as a source (``config.toml``, else ``config.json``), and its name."""
    toml_path, json_path = _FILES.get()
    if toml_path.exists():
        try:
            return TomlConfigSettingsSource(settings_cls, toml_file=toml_path), str(toml_path)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{toml_path} is not valid TOML: {exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{toml_path} is not UTF-8 text: {exc}") from exc
    if json_path.exists():
        try:
            source = JsonConfigSettingsSource(settings_cls, json_file=json_path)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{json_path} is not valid JSON: {exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{json_path} is not UTF-8 text: {exc}") from exc
        except (ValueError, TypeError, AttributeError):  # a list or a scalar: the source cannot merge it
            raise ConfigError(f"{json_path} must hold a JSON object") from None
        if not isinstance(source.json_data, dict):
            raise ConfigError(f"{json_path} must hold a JSON object")
        return source, str(json_path)
    return InitSettingsSource(settings_cls, {}), "defaults"


for _cls in SECTIONS.values():
    # validated by pydantic: an unknown key is refused, a number where a text goes is that text
    setattr(_cls, "__pydantic_config__", ConfigDict(extra="forbid", coerce_numbers_to_str=True))


class _Sources(BaseSettings):
    """What the sources may set: the top-level language, one table per section, the raw [memory]
    policy block (validated by ``Policy``, key by key)."""

    model_config = SettingsConfigDict(env_prefix="MEMFOLD_", env_nested_delimiter="__", case_sensitive=False,
                                      extra="forbid")

    language: str = "en"
    embedder: EmbedderSettings = EmbedderSettings()
    index: IndexSettings = IndexSettings()
    llm: LLMSettings = LLMSettings()
    server: ServerSettings = ServerSettings()
    cache: CacheSettings = CacheSettings()
    maintenance: MaintenanceSettings = MaintenanceSettings()
    rerank: RerankSettings = RerankSettings()
    search: SearchSettings = SearchSettings()
    memory: dict[str, Any] = {}

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _Env(settings_cls), _file_source(settings_cls)[0]  # the first wins


def _unknown_env_sections() -> None:
    """An environment variable ``MEMFOLD_<X>__<KEY>`` whose X is no section is a typo, not silence."""
    for name in os.environ:
        if not name.startswith("MEMFOLD_") or name == "MEMFOLD_HOME" or "__" not in name:
            continue
        section = name[len("MEMFOLD_"):].lower().partition("__")[0]
        if (section not in TOP_KEYS or section == "language") and not name.startswith("MEMFOLD_TEST"):
            raise ConfigError(f"environment variable {name}: unknown section {section!r}")


def _origins(file_data: Mapping[str, Any], where: str, env: Mapping[str, Any], overrides: Mapping[str, Any]
             ) -> dict[str, dict[str, str]]:
    """Where the value of each key of each section came from (the last source that set it)."""
    out: dict[str, dict[str, str]] = {}
    for section in TOP_KEYS - {"language"}:
        src: dict[str, str] = {}
        for k in file_data.get(section) or {}:
            src[k] = f"{where} [{section}]"
        for k in env.get(section) or {}:
            src[k] = f"environment variable {_env_name(section, k)}"
        for k in overrides.get(section) or {}:
            src[k] = f"the arguments [{section}]"
        out[section] = src
    return out


def _config_error(exc: ValidationError, origins: Mapping[str, Mapping[str, str]]) -> ConfigError:
    """The first problem pydantic found, as the message memfold gives: the key and its source."""
    e = exc.errors(include_url=False)[0]
    loc = [str(p) for p in e["loc"]]
    section, key = (loc + ["", ""])[:2]
    src = origins.get(section, {}).get(key, "")
    cls = SECTIONS.get(section)
    if cls is None:
        return ConfigError(f"[{section}]: {e['msg']}")
    known = {f.name: f for f in fields(cls)}
    if key not in known:
        return ConfigError(f"unknown setting {key!r} in {src}; known: {', '.join(known)}")
    typ = known[key].type
    tname = typ if isinstance(typ, str) else typ.__name__
    return ConfigError(f"setting {key!r} in {src} must be {a_or_an(tname)}, got {e.get('input')!r}")


def load_settings(root: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Build Settings for a workspace root. ``overrides`` may hold ``language``,
    ``embedder``/``index``/``llm`` (dicts) and ``memory`` (policy dict)."""
    path = resolve_root(root)
    token = _FILES.set((path / "config.toml", path / "config.json"))
    try:
        file_source, where = _file_source(_Sources)
        data = file_source()
        for key, value in data.items():
            if key not in TOP_KEYS:
                raise ConfigError(f"unknown section {key!r} in {where}; known: {', '.join(sorted(TOP_KEYS))}")
            if key != "language" and not isinstance(value, dict):
                raise ConfigError(f"[{key}] in {where} must be a table")
        _unknown_env_sections()
        try:
            env = _Env(_Sources)()
        except SettingsError as exc:
            raise ConfigError(f"environment variables MEMFOLD_*: {exc}") from None
        origins = _origins(data, where, env, overrides)
        given = {k: v for k, v in overrides.items() if v is not None and (k != "language" or v)}
        language = str(given.get("language") or env.get("language") or data.get("language") or "en")
        if language not in ("en", "zh"):
            lang_src = ("arguments" if given.get("language") else "environment variable MEMFOLD_LANGUAGE"
                        if env.get("language") else where)
            raise ConfigError(f"setting 'language' in {lang_src} must be 'en' or 'zh', got {language!r}")
        try:
            sources = _Sources(**given)
        except ValidationError as exc:
            raise _config_error(exc, origins) from None
        except SettingsError as exc:
            raise ConfigError(f"environment variables MEMFOLD_*: {exc}") from None
    finally:
        _FILES.reset(token)
    settings = Settings(
        root=path,
        language=language,
        embedder=sources.embedder,
        index=sources.index,
        llm=_implied_provider(sources.llm, origins["llm"]),
        server=sources.server,
        cache=sources.cache,
        maintenance=_maintenance(sources.maintenance, origins["maintenance"]),
        rerank=sources.rerank,
        search=_search(sources.search, origins["search"]),
        memory=sources.memory,
        memory_sources=origins["memory"],
    )
    settings.base_policy()  # validate now, with the key's name in the error
    return settings


def _search(s: SearchSettings, sources: Mapping[str, str]) -> SearchSettings:
    profile = s.profile.strip().lower()
    if profile not in PROFILES:
        raise ConfigError(f"setting 'profile' in {sources.get('profile', 'the settings')} must be one of "
                          f"{', '.join(PROFILES)}, got {s.profile!r}")
    return replace(s, profile=profile)


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
