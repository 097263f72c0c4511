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
class Settings:
    root: Path
    language: str = "en"  # en | zh: the MEMORY.md template of new workspaces
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    memory: Mapping[str, Any] = field(default_factory=dict)  # raw policy block, validated by Policy

    def base_policy(self) -> Policy:
        return Policy().merged(self.memory, f"{self.root / 'config.toml'} [memory]")


SECTIONS = {"embedder": EmbedderSettings, "index": IndexSettings, "llm": LLMSettings}
TOP_KEYS = {"language", "memory"} | set(SECTIONS)


def resolve_root(root: str | os.PathLike[str] | None) -> Path:
    if root:
        return Path(root).expanduser().resolve()
    env = os.environ.get("MEMFOLD_HOME")
    if env:
        return Path(env).expanduser().resolve()
    return (Path.cwd() / ".memfold").resolve()


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
        if not name.startswith("MEMFOLD_") or name == "MEMFOLD_HOME" or "__" not in name:
            continue
        section, _, key = name[len("MEMFOLD_"):].lower().partition("__")
        if section not in TOP_KEYS or section == "language":
            if not name.startswith("MEMFOLD_TEST"):
                raise ConfigError(f"environment variable {name}: unknown section {section!r}")
            continue
        out.setdefault(section, {})[key] = value
    return out


def _section(cls: type, values: Mapping[str, Any], where: str) -> Any:
    known = {f.name: f for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, raw in values.items():
        if key not in known:
            raise ConfigError(f"unknown setting {key!r} in {where}; known: {', '.join(known)}")
        typ = known[key].type
        tname = typ if isinstance(typ, str) else typ.__name__
        try:
            if tname == "int":
                kwargs[key] = int(raw)
            elif tname == "float":
                kwargs[key] = float(raw)
            else:
                kwargs[key] = str(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"setting {key!r} in {where} must be a {tname}, got {raw!r}") from None
    return cls(**kwargs)


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
    for key in TOP_KEYS:
        if key == "language":
            continue
        block = dict(data.get(key) or {})
        if not isinstance(data.get(key, {}), dict):
            raise ConfigError(f"[{key}] in {where} must be a table")
        block.update(env.get(key, {}))
        block.update(overrides.get(key) or {})
        merged[key] = block
    language = str(overrides.get("language") or data.get("language") or "en")
    if language not in ("en", "zh"):
        raise ConfigError(f"setting 'language' must be 'en' or 'zh', got {language!r}")
    settings = Settings(
        root=path,
        language=language,
        embedder=_section(EmbedderSettings, merged["embedder"], f"{where} [embedder]"),
        index=_section(IndexSettings, merged["index"], f"{where} [index]"),
        llm=_section(LLMSettings, merged["llm"], f"{where} [llm]"),
        memory=merged["memory"],
    )
    settings.base_policy()  # validate now, with the key's name in the error
    return settings


def with_root(settings: Settings, root: Path) -> Settings:
    return replace(settings, root=root)
