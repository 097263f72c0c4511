"""Capacity truncation of injected memory text (seed 002): beyond the limit keep the head
70% and the tail 20% with a visible marker in between. Pure functions, no I/O."""

from __future__ import annotations

from dataclasses import dataclass

HEAD_SHARE = 0.7
TAIL_SHARE = 0.2
MARKERS = {
    "en": "[… memory truncated: {omitted} of {total} characters omitted …]",
    "zh": "[…… 记忆已截断：省略了 {total} 个字符中的 {omitted} 个 ……]",
}
# a cut may move back to a line break when one lies this close (share of the part's length)
SNAP_SHARE = 0.15


@dataclass(frozen=True)
class Capped:
    text: str
    truncated: bool
    total_chars: int
    omitted_chars: int = 0


def _snap_head(text: str, end: int) -> int:
    """Move a head cut back to just after a line break when one is near."""
    nl = text.rfind("\n", 0, end)
    return nl + 1 if nl >= 0 and end - nl <= max(1, int(end * SNAP_SHARE)) else end


def _snap_tail(text: str, start: int) -> int:
    """Move a tail cut forward to just after a line break when one is near."""
    nl = text.find("\n", start)
    return nl + 1 if 0 <= nl < len(text) - 1 and nl - start <= max(1, int((len(text) - start) * SNAP_SHARE)) \
        else start


def cap_text(text: str, limit: int, language: str = "en", *, head_share: float = HEAD_SHARE,
             tail_share: float = TAIL_SHARE) -> Capped:
    """``text`` when it fits in ``limit`` characters; else its head (``head_share`` of the limit)
    + a marker line + its tail (``tail_share``). The result never exceeds ``limit`` characters."""
    if limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    if not (0 < head_share and 0 <= tail_share and head_share + tail_share <= 1):
        raise ValueError("head_share + tail_share must be at most 1")
    total = len(text)
    if total <= limit:
        return Capped(text, False, total)
    head_end = _snap_head(text, int(limit * head_share))
    tail_start = _snap_tail(text, total - int(limit * tail_share))
    template = MARKERS.get(language, MARKERS["en"])
    while True:
        head, tail = text[:head_end].rstrip(), text[tail_start:].lstrip("\n")
        omitted = total - len(head) - len(tail)
        marker = template.format(omitted=omitted, total=total)
        out = f"{head}\n\n{marker}\n\n{tail}" if tail else f"{head}\n\n{marker}"
        if len(out) <= limit or head_end == 0:
            break
        # a tiny limit: shrink the head until the marker fits
        head_end = max(0, head_end - (len(out) - limit))
    if len(out) > limit:  # the marker alone does not fit
        out = out[:limit]
    return Capped(out, True, total, omitted)
