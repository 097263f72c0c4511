"""Skills: what an agent learned to do, kept in the skills section of ``learnings.md``.

A skill is one entry whose fields are labelled lines a person can read and edit::

    - 2026-11-28: Publish the docs site
      When to use: the user asks to publish or refresh the documentation
      Steps:
      1. mkdocs build --strict
      2. rsync -a site/ web:/var/www/docs
      Tools: mkdocs, rsync
      Outcome: the site shows the new pages
      Successes: 2 (last 2026-11-28) <!-- mf:... -->

The first line is the skill's name. The labels are read in English or Chinese whatever the
file's language (适用场景 / 步骤 / 工具 / 结果 / 成功次数); a line without a label is part of the
field above it (a step when under ``Steps``). The words are the skill: a hand edit of a step is
the skill changed, and search and the context read the same text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInputError
from ..limits import SKILL_FIELD, SKILL_STEPS, SKILL_TOOLS, Bound, over

LABELS = {
    "en": {"when": "When to use", "steps": "Steps", "tools": "Tools", "outcome": "Outcome", "successes": "Successes"},
    "zh": {"when": "适用场景", "steps": "步骤", "tools": "工具", "outcome": "结果", "successes": "成功次数"},
}
_KEY_OF_LABEL = {label.casefold(): key for lang in LABELS.values() for key, label in lang.items()}
_LABEL_LINE = re.compile(r"^\s*([^:：]{1,20}?)\s*[:：]\s*(.*)$")
_STEP = re.compile(r"^\s*(?:\d+\s*[.)、．]|[-*•])\s*(.+)$")
_INLINE_STEPS = re.compile(r"\s*(?:→|->|;|；)\s*")
_LIST = re.compile(r"\s*[,，、;；]\s*")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_COUNT = re.compile(r"\d+")


@dataclass(frozen=True)
class Skill:
    """The fields of a skill (``successes`` and ``last_success`` counted by ``with_success``)."""

    name: str
    when_to_use: str = ""
    steps: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    outcome: str = ""
    successes: int = 0
    last_success: str | None = None  # YYYY-MM-DD
    extra: tuple[str, ...] = field(default=())  # lines under the name that carry no label

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "when_to_use": self.when_to_use, "steps": list(self.steps),
                "tools": list(self.tools), "outcome": self.outcome, "successes": self.successes,
                "last_success": self.last_success}


def _one_line(value: Any, what: str, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text, got {type(value).__name__}", field=field)
    over(SKILL_FIELD, len(value), what, field, "keep each field to one short line")
    return " ".join(value.split())


def _items(values: Any, field: str, bound: Bound) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise InvalidInputError(f"{field} must be a list of texts, got {type(values).__name__}", field=field)
    over(bound, len(values), field, field)
    return tuple(t for t in (_one_line(v, f"each of {field}", field) for v in values) if t)


def make(name: str, *, when_to_use: str | None = None, steps: Any = None, tools: Any = None,
         outcome: str | None = None) -> Skill:
    """A new skill from a caller's fields, checked (each field one line, bounded)."""
    title = _one_line(name, "the skill's name", "name")
    if not title:
        raise InvalidInputError("a skill needs a name (what it does, in a few words)", field="name")
    return Skill(name=title, when_to_use=_one_line(when_to_use or "", "when_to_use", "when_to_use"),
                 steps=_items(steps, "steps", SKILL_STEPS), tools=_items(tools, "tools", SKILL_TOOLS),
                 outcome=_one_line(outcome or "", "outcome", "outcome"))


def render(skill: Skill, lang: str = "en") -> str:
    """The skill as the text of its entry (the first line its name, then its labelled fields)."""
    lab = LABELS.get(lang, LABELS["en"])
    sep = "：" if lang == "zh" else ": "
    lines = [skill.name, *skill.extra]
    if skill.when_to_use:
        lines.append(f"{lab['when']}{sep}{skill.when_to_use}")
    if skill.steps:
        lines.append(f"{lab['steps']}{sep.rstrip()}")
        lines += [f"{i}. {s}" for i, s in enumerate(skill.steps, 1)]
    if skill.tools:
        lines.append(f"{lab['tools']}{sep}{('、' if lang == 'zh' else ', ').join(skill.tools)}")
    if skill.outcome:
        lines.append(f"{lab['outcome']}{sep}{skill.outcome}")
    if skill.successes or skill.last_success:
        if lang == "zh":
            last = f"（最近 {skill.last_success}）" if skill.last_success else ""
            lines.append(f"{lab['successes']}{sep}{skill.successes}{last}")
        else:
            last = f" (last {skill.last_success})" if skill.last_success else ""
            lines.append(f"{lab['successes']}{sep}{skill.successes}{last}")
    return "\n".join(lines)


def parse(content: str) -> Skill:
    """The fields of a skill's text (as ``render`` writes it, or as a person edited it)."""
    lines = [ln for ln in content.split("\n") if ln.strip()]
    if not lines:
        return Skill(name="")
    name, extra = lines[0].strip(), []
    fields: dict[str, list[str]] = {}
    current: str | None = None
    for line in lines[1:]:
        m = _LABEL_LINE.match(line)
        key = _KEY_OF_LABEL.get(m.group(1).strip().casefold()) if m else None
        if key is not None and m is not None:
            current = key
            rest = m.group(2).strip()
            fields.setdefault(key, [])
            if rest:
                fields[key].append(rest)
            continue
        if current is None:
            extra.append(line.strip())
        else:
            fields.setdefault(current, []).append(line.strip())
    steps: list[str] = []
    for ln in fields.get("steps", []):
        s = _STEP.match(ln)
        steps += [s.group(1).strip()] if s else [p for p in _INLINE_STEPS.split(ln) if p]
    tools = [t for ln in fields.get("tools", []) for t in _LIST.split(ln) if t]
    count_text = " ".join(fields.get("successes", []))
    day = _DAY.search(count_text)
    count = _COUNT.search(_DAY.sub("", count_text))
    return Skill(name=name, when_to_use=" ".join(fields.get("when", [])), steps=tuple(steps), tools=tuple(tools),
                 outcome=" ".join(fields.get("outcome", [])), successes=int(count.group(0)) if count else 0,
                 last_success=day.group(0) if day else None, extra=tuple(extra))


def with_success(content: str, day: str, lang: str = "en") -> str:
    """A skill's text with one more success, the last on ``day`` (YYYY-MM-DD)."""
    s = parse(content)
    last = max(day, s.last_success) if s.last_success else day
    return render(Skill(s.name, s.when_to_use, s.steps, s.tools, s.outcome, s.successes + 1, last, s.extra), lang)
