"""The language of one user's memory: the language their MEMORY.md was initialised with.

``memfold init --lang zh --user alice`` writes alice's MEMORY.md from the Chinese template; the
prompts injected for alice (context labels, memory instructions) and new section headings follow
that file, whatever the workspace's ``language`` setting says (it only picks the template of new
files)."""

from __future__ import annotations

from pathlib import Path

from ...models import FILE_LEARNINGS, FILE_MEMORY
from ...text.memory_markdown import template_language

HEAD_BYTES = 64 * 1024  # the template's headings are read from the start of the file


def user_language(folder: Path, default: str) -> str:
    """The template language of the user's MEMORY.md (else learnings.md), or ``default`` when neither
    exists or neither still has a heading of a template."""
    for name in (FILE_MEMORY, FILE_LEARNINGS):
        try:
            with open(folder / name, "rb") as fh:
                head = fh.read(HEAD_BYTES).decode("utf-8", errors="ignore")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
            continue
        lang = template_language(head)
        if lang:
            return lang
    return default
