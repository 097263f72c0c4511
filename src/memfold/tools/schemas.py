"""Tool schemas for function-calling APIs, generated from the input models (never written by hand):
OpenAI ``tools=[{"type": "function", ...}]`` and Anthropic ``tools=[{"name", "description",
"input_schema"}]``. Descriptions come in the user's language (``en`` or ``zh``)."""

from __future__ import annotations

import copy
import functools
from typing import Any

from ..errors import InvalidInputError
from .registry import TOOLS, Tool

LANGUAGES = ("en", "zh")


def _check(language: str) -> str:
    if language not in LANGUAGES:
        raise InvalidInputError(f"language must be 'en' or 'zh', got {language!r}", field="language")
    return language


def input_schema(tool: Tool, language: str = "en") -> dict[str, Any]:
    """The JSON schema of a tool's arguments: an object of typed properties, each described in
    ``language``; optional fields are plain (not ``anyOf`` with null), no titles."""
    return copy.deepcopy(_schema(tool.name, _check(language)))  # the caller may change its copy


@functools.lru_cache(maxsize=64)
def _schema(name: str, language: str) -> dict[str, Any]:
    schema = copy.deepcopy(TOOLS[name].input.model_json_schema())
    props: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        zh = prop.pop("zh", None)
        if language == "zh" and zh:
            prop["description"] = zh
        prop.pop("title", None)
        options = prop.pop("anyOf", None)
        if options:  # X | None: the non-null option, the field just optional
            kept = [o for o in options if o.get("type") != "null"]
            if len(kept) == 1:
                prop.update(kept[0])
            else:
                prop["anyOf"] = kept
            if prop.get("default", ...) is None:
                del prop["default"]
        props[name] = prop
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    return out


def openai_tools(language: str = "en", names: list[str] | None = None) -> list[dict[str, Any]]:
    """``tools`` for the OpenAI chat completions API (and every compatible endpoint)."""
    return [{"type": "function", "function": {"name": t.name, "description": t.describe(language),
                                              "parameters": input_schema(t, language)}}
            for t in _selected(names)]


def anthropic_tools(language: str = "en", names: list[str] | None = None) -> list[dict[str, Any]]:
    """``tools`` for the Anthropic messages API."""
    return [{"name": t.name, "description": t.describe(language), "input_schema": input_schema(t, language)}
            for t in _selected(names)]


def _selected(names: list[str] | None) -> list[Tool]:
    if names is None:
        return list(TOOLS.values())
    unknown = [n for n in names if n not in TOOLS]
    if unknown:
        raise InvalidInputError(f"unknown tool(s) {', '.join(map(repr, unknown))}; known: {', '.join(TOOLS)}")
    return [TOOLS[n] for n in names]
