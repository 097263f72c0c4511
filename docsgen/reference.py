"""Reference pages made from the code at build time, so they cannot drift from it.

- ``cli_page``: every ``memfold`` command, from the click commands typer builds (usage line,
  arguments, options with defaults, examples).
- ``settings_page``: every setting of ``config.toml`` and every memory policy key, with its
  default read from the dataclasses in ``memfold.config`` and ``memfold.policy``.
- ``http_page``: every HTTP route, from the server's OpenAPI description (``app.openapi()``).

Run ``python docsgen/reference.py OUT_DIR`` to write the three pages without mkdocs.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from settings_text import MEANINGS, SECTION_INTRO  # type: ignore[import-not-found]


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# ---- CLI ---------------------------------------------------------------------------------------

def _walk(cmd: Any, path: list[str], parent: Any) -> list[tuple[list[str], Any, Any]]:
    ctx = cmd.context_class(cmd, info_name=path[-1], parent=parent)
    subs = getattr(cmd, "commands", None)
    if not subs:
        return [(path, cmd, ctx)]
    found: list[tuple[list[str], Any, Any]] = [(path, cmd, ctx)] if len(path) > 1 else []
    for name in sorted(subs) if len(path) > 1 else subs:
        found += _walk(subs[name], path + [name], ctx)
    return found


def _default(param: Any) -> str:
    if getattr(param, "is_flag", False) or param.default is None or param.required:
        return ""
    d = param.default
    if callable(d):
        return ""
    return f"`{d}`" if str(d) != "" else '`""`'


def cli_page() -> str:
    import typer.main

    from memfold.cli.help_examples import COMMON, EXAMPLES
    from memfold.cli.main import app

    root = typer.main.get_command(app)
    lines = ["# Command line", "",
             "Generated from the commands themselves (`memfold COMMAND --help` prints the same).",
             "The global options come before the command: `memfold [--root DIR] [-v] COMMAND ...`.",
             "The workspace is `--root`, else `$MEMFOLD_HOME`, else `./.memfold`. Errors print one line",
             "`error: ...` and exit with code 1 (usage errors: 2).", "",
             "`memfold` alone prints the common commands:", "", "```text"]
    width = max(len(cmd) for cmd, _ in COMMON)
    lines += [f"{cmd.ljust(width)}  # {what}" for cmd, what in COMMON]
    lines += ["```", ""]
    lines += ["## Global options", "", "| option | meaning |", "|---|---|"]
    for p in root.params:
        if p.param_type_name == "option":
            lines.append(f"| `{' / '.join(p.opts)}` | {_cell(p.help or '')} |")
    lines.append("")
    for path, cmd, ctx in _walk(root, ["memfold"], None):
        name = " ".join(path)
        lines += [f"## {' '.join(path[1:])}", ""]
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        lines += ["```text", f"{name} {usage}", "```", ""]
        if cmd.help:
            lines += [inspect.cleandoc(cmd.help), ""]
        if getattr(cmd, "commands", None):
            lines += ["| command | what it does |", "|---|---|"]
            for sub_name, sub in cmd.commands.items():
                lines.append(f"| `{name} {sub_name}` | {_cell((sub.help or '').splitlines()[0] if sub.help else '')} |")
            lines.append("")
            continue
        rows = [p for p in cmd.params if p.name != "help"]
        if rows:
            lines += ["| argument / option | default | meaning |", "|---|---|---|"]
            for p in rows:
                if p.param_type_name == "argument":
                    label = f"`{str(p.name).upper()}`" + (" (required)" if p.required else "")
                else:
                    label = "`" + " / ".join(p.opts + list(getattr(p, "secondary_opts", []))) + "`"
                lines.append(f"| {label} | {_default(p)} | {_cell(getattr(p, 'help', '') or '')} |")
            lines.append("")
        examples = EXAMPLES.get(" ".join(path[1:]), ())
        if examples:
            lines += ["Examples:", "", "```bash", *examples, "```", ""]
    return "\n".join(lines) + "\n"


# ---- settings ----------------------------------------------------------------------------------

def _comments(module: Any) -> dict[tuple[str, str], str]:
    """``(class, field) -> comment`` from the source: the comment at the end of the field's line."""
    src = inspect.getsource(module)
    tree = ast.parse(src)
    text = src.splitlines()
    found: dict[tuple[str, str], str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    line = text[stmt.lineno - 1]
                    if "#" in line:
                        found[(node.name, stmt.target.id)] = line.split("#", 1)[1].strip()
    return found


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def settings_page() -> str:
    from memfold import config, policy

    comments = {**_comments(config), **_comments(policy)}
    lines = ["# Settings", "",
             "Every setting with its default, read from the code at build time.", "",
             "Sources, later wins: built-in defaults → `<root>/config.toml` (or `config.json` with the same",
             "structure) → environment variables `MEMFOLD_<SECTION>__<KEY>` (the top-level `language` is",
             "`MEMFOLD_LANGUAGE`) → arguments to `Memory(...)`. The `[memory]` policy is further overridden per user",
             "by `<root>/<user>/policy_overrides.json` (see [Policy](../concepts/policy.md)). An unknown key or a",
             "value out of range fails with an error naming the key and where it came from.", ""]
    sections: list[tuple[str, type, str]] = [("", config.Settings, "")]
    for f in dataclasses.fields(config.Settings):
        if dataclasses.is_dataclass(f.default_factory) if f.default_factory is not dataclasses.MISSING else False:
            sections.append((f.name, f.default_factory, f.name.upper()))  # type: ignore[arg-type]
    sections.append(("memory", policy.Policy, "MEMORY"))
    for name, cls, env in sections:
        title = f"[{name}]" if name else "top level"
        lines += [f"## `{title}`" if name else "## Top level", ""]
        if SECTION_INTRO.get(name):
            lines += [SECTION_INTRO[name], ""]
        bounded = name == "memory"
        lines += ["| key | default | " + ("range | " if bounded else "") + "environment | meaning |",
                  "|---|---|" + ("---|" if bounded else "") + "---|---|"]
        for f in dataclasses.fields(cls):
            if not name and (f.name in {"root", "memory", "memory_sources"} or f.default is dataclasses.MISSING):
                continue
            default = f.default if f.default is not dataclasses.MISSING else ""
            var = f"MEMFOLD_{env}__{f.name.upper()}" if env else f"MEMFOLD_{f.name.upper()}"
            meaning = MEANINGS.get(f"{name}.{f.name}") or comments.get((cls.__name__, f.name), "")
            span = ""
            if bounded:
                if f.name in policy.BOUNDS:
                    low, high = policy.BOUNDS[f.name]
                    span = f"{low:g} – {high:g} | "
                elif f.name in policy.CHOICES:
                    span = " · ".join(policy.CHOICES[f.name]) + " | "
                else:
                    span = "true · false | " if isinstance(default, bool) else "– | "
            lines.append(f"| `{f.name}` | `{_toml(default)}` | {span}`{var}` | {_cell(meaning)} |")
        lines.append("")
    return "\n".join(lines)


# ---- HTTP --------------------------------------------------------------------------------------

def _ref(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _type(spec: dict[str, Any], schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1].split("__")[-1]
    if "anyOf" in schema:
        return " or ".join(_type(spec, s) for s in schema["anyOf"] if s.get("type") != "null") + \
            (" (optional)" if any(s.get("type") == "null" for s in schema["anyOf"]) else "")
    if schema.get("type") == "array":
        return f"list of {_type(spec, schema.get('items', {}))}"
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    return str(schema.get("type", "any"))


def http_page() -> str:
    from memfold.server.app import create_app

    with tempfile.TemporaryDirectory() as root:
        app = create_app(root=root)
        spec = app.openapi()
        app.state.memory.close()
    lines = ["# HTTP API", "",
             "Generated from the server's OpenAPI description (a running server serves it at `/openapi.json`",
             "and as a browsable page at `/docs`). Every route but `/healthz` and `/metrics` needs a key:",
             "`Authorization: Bearer mfk_...` (see [HTTP server and keys](../guides/http-server.md)). Every route",
             "takes `?user_id=` (default: the key's first namespace); a route with a JSON body takes `user_id`",
             "there too (given in both places, the two must be the same).", "",
             "Every list is `{\"results\": [...], \"next\": cursor or null}`: `limit` sets the page size, and",
             "`next` given back as `cursor` gives the following page. A memory has the same fields in every",
             "answer; a search hit adds `score`, `similarity` and `relevance`.", "",
             "Errors have one shape, `{\"error\": {\"code\", \"message\", \"field\"}}`; a 422 also lists every",
             "problem of the request in `problems` (`[{\"field\", \"message\"}]`).", "",
             "| method | path | what it does |", "|---|---|---|"]
    ops = [(path, method, op) for path, ms in spec["paths"].items() for method, op in ms.items()]
    for path, method, op in ops:
        what = (op.get("description") or op.get("summary") or "").split("\n")[0]
        anchor = f"{method}-{path}".lower().replace("/", "").replace("{", "").replace("}", "").replace("_", "-")
        lines.append(f"| {method.upper()} | [`{path}`](#{anchor}) | {_cell(what)} |")
    lines.append("")
    for path, method, op in ops:
        anchor = f"{method}-{path}".lower().replace("/", "").replace("{", "").replace("}", "").replace("_", "-")
        lines += [f"## {method.upper()} {path} {{ #{anchor} }}", ""]
        if op.get("description"):
            lines += [op["description"].strip(), ""]
        params = op.get("parameters", [])
        if params:
            lines += ["| parameter | in | type | meaning |", "|---|---|---|---|"]
            for p in params:
                lines.append(f"| `{p['name']}` | {p['in']} | {_type(spec, p.get('schema', {}))} | "
                             f"{_cell(p.get('description', ''))} |")
            lines.append("")
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body:
            schema = _ref(spec, body)
            required = set(schema.get("required", []))
            lines += ["Request body (JSON):", "", "| field | type | required | meaning |", "|---|---|---|---|"]
            for name, prop in schema.get("properties", {}).items():
                default = f" (default `{json.dumps(prop['default'], ensure_ascii=False)}`)" if "default" in prop else ""
                lines.append(f"| `{name}` | {_type(spec, prop)} | {'yes' if name in required else 'no'} | "
                             f"{_cell(prop.get('description', ''))}{default} |")
            lines.append("")
            for example in schema.get("examples", [])[:2]:
                lines += ["Example:", "", "```json", json.dumps(example, ensure_ascii=False), "```", ""]
        ok = op.get("responses", {}).get("200", {}).get("content", {}).get("application/json", {}).get("schema")
        if ok:
            props = _ref(spec, ok).get("properties", {})
            if {"results", "next"} <= set(props):  # a page of a list
                rest = "".join(f", `{k}`" for k in props if k not in ("results", "next"))
                lines += [f"Answer: a page, `results` ({_type(spec, props['results'])}) and `next`{rest}.", ""]
            else:
                lines += [f"Answer: {_type(spec, ok)}.", ""]
    return "\n".join(lines)


PAGES = {"reference/cli.md": cli_page, "reference/settings.md": settings_page, "reference/http.md": http_page}


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "site-reference")
    for rel, make in PAGES.items():
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(make(), encoding="utf-8")
        print(target)
