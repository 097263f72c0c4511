"""The documentation site explains every setting and policy key (the generated settings page lists them
with their defaults; each needs a meaning a user can read, not only its default)."""

import sys
from dataclasses import fields
from pathlib import Path

from memfold.config import SECTIONS
from memfold.policy import policy_keys

REPO = Path(__file__).resolve().parents[2]
DOCS = "\n".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "docs").rglob("*.md")))
sys.path.insert(0, str(REPO / "docsgen"))
try:
    from settings_text import MEANINGS  # type: ignore[import-not-found]
finally:
    sys.path.pop(0)


def _explained(section: str, key: str) -> bool:
    return f"{section}.{key}" in MEANINGS or f"`{key}`" in DOCS


def test_every_setting_and_policy_key_is_explained():
    missing = [f"memory.{k}" for k in policy_keys() if not _explained("memory", k)]
    for section, cls in SECTIONS.items():
        missing += [f"{section}.{f.name}" for f in fields(cls) if not _explained(section, f.name)]
    assert not missing, f"add a meaning to docsgen/settings_text.py (or a docs page) for: {missing}"


def test_the_settings_page_lists_every_key_with_its_default():
    sys.path.insert(0, str(REPO / "docsgen"))
    try:
        import reference  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    page = reference.settings_page()
    for section, cls in SECTIONS.items():
        assert f"## `[{section}]`" in page
        for f in fields(cls):
            assert f"| `{f.name}` |" in page, f"{section}.{f.name}"
    for key in policy_keys():
        assert f"| `{key}` |" in page, key
    assert "| `retrieve_limit` | `10` | 1 – 1000 | `MEMFOLD_MEMORY__RETRIEVE_LIMIT` |" in page
