"""Prompts as versioned text files, ``prompts/<lang>/<name>.txt``, loaded by name.

Placeholders are ``${name}`` (``string.Template``), so JSON braces need no escaping.
Every file starts with a ``# prompt: <name> v<N>`` line that is not sent to the model."""

from __future__ import annotations

import functools
import re
from importlib import resources

from ..errors import ConfigError

LANGUAGES = ("en", "zh")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


@functools.lru_cache(maxsize=64)
def load(name: str, lang: str) -> str:
    """The text of prompt ``name`` in ``lang`` (en or zh), without its header line."""
    if lang not in LANGUAGES:
        raise ConfigError(f"prompt language must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    path = resources.files(__package__).joinpath(lang, f"{name}.txt")
    if not path.is_file():
        raise ConfigError(f"no prompt {name!r} for language {lang!r}")
    text = path.read_text(encoding="utf-8")
    if text.startswith("# prompt:"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text.strip("\n") + "\n"


def version(name: str, lang: str) -> str:
    """The ``v<N>`` of a prompt file's header (for logs and usage records)."""
    first = resources.files(__package__).joinpath(lang, f"{name}.txt").read_text(encoding="utf-8").split("\n", 1)[0]
    m = re.search(r"\bv(\d+)\b", first)
    return f"v{m.group(1)}" if m else "v0"


def render(name: str, lang: str, **values: object) -> str:
    """Prompt ``name`` with its placeholders filled. ``${key}`` and ``{key}`` are both replaced for
    each given key (other braces, as in JSON examples, stay); a ``${key}`` left unfilled is an error."""
    text = load(name, lang)

    def fill(m: re.Match[str]) -> str:
        key = m.group(1) or m.group(2)
        return str(values[key]) if key in values else m.group(0)

    text = re.sub(r"\$\{(\w+)\}|(?<!\$)\{(\w+)\}", fill, text)
    left = re.search(r"\$\{(\w+)\}", text)
    if left:
        raise ConfigError(f"prompt {lang}/{name} needs a value for {left.group(1)!r}")
    return text


def language_of(text: str, default: str = "en") -> str:
    """'zh' when Chinese characters carry the text, 'en' when Latin letters do, else ``default``."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    if not cjk and not latin:
        return default if default in LANGUAGES else "en"
    return "zh" if cjk * 3 >= latin else "en"
