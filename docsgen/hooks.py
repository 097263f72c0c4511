"""mkdocs hooks of the documentation site.

- The reference pages (command line, settings, HTTP API) are generated from the code at each
  build (``reference.py``) and added to the site as pages that exist in no file.
- Nav entries under ``extra.optional_pages`` are dropped while their page does not exist, so a
  topic page slots into its place in the nav the moment it is added to ``docs/``.
- A link to a file of the repository outside ``docs/`` (``../README.md``, ``../src/...``) is shown as
  the file's path in code, since the site does not carry those files.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import reference  # type: ignore[import-not-found]  # noqa: E402

_OUTSIDE = re.compile(r"\[([^\]]+)\]\((\.\./)+((?!docs/)[^)#\s]+)(#[^)]*)?\)")


def _prune(nav: list[Any], missing: set[str]) -> list[Any]:
    kept: list[Any] = []
    for item in nav:
        if isinstance(item, dict):
            (title, value), = item.items()
            if isinstance(value, list):
                value = _prune(value, missing)
                if value:
                    kept.append({title: value})
            elif value not in missing:
                kept.append(item)
        elif item not in missing:
            kept.append(item)
    return kept


def on_config(config: Any, **kwargs: Any) -> Any:
    docs = Path(config["docs_dir"])
    optional = set(config["extra"].get("optional_pages", []))
    missing = {page for page in optional if not (docs / page).exists()}
    config["nav"] = _prune(config["nav"], missing)
    return config


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    from mkdocs.structure.files import File

    for rel, make in reference.PAGES.items():
        files.append(File.generated(config, rel, content=make()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, **kwargs: Any) -> str:
    docs = Path(config["docs_dir"]).resolve()
    here = (docs / page.file.src_uri).parent

    def plain(m: re.Match[str]) -> str:
        rel = m.group(0)[m.group(0).index("](") + 2:-1].split("#")[0]
        target = (here / rel).resolve()
        if target == docs or docs in target.parents:
            return m.group(0)
        path = target.relative_to(docs.parent).as_posix()
        return m.group(1) if path in m.group(1) else f"{m.group(1)} (`{path}`)"

    return _OUTSIDE.sub(plain, markdown)
