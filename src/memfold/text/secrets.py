"""Secret detection (seed 002 "不应该记的": passwords, keys, tokens, card and ID numbers).

Text that contains a secret is refused as a whole: nothing of it is stored, logged or
sent to a provider. ``find_secret`` returns the *kind* of secret, never the secret."""

from __future__ import annotations

import re

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("password", re.compile(
        r"(?i)(?:\bpass(?:word|wd|phrase)?\b|\bpwd\b|\bpin\s*(?:code)?\b|密码|口令|登录密码|支付密码)"
        r"\s*(?:is|was|=|:|：|是|为|改成|改为|设为)?\s*[\"'“”]?\S{3,}")),
    ("API key", re.compile(r"\b(?:sk|pk|rk)-(?:[A-Za-z0-9_-]{2,}-)?[A-Za-z0-9_-]{16,}\b")),
    ("API key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("API key", re.compile(r"\bAIza[0-9A-Za-z_-]{30,}\b")),
    ("access token", re.compile(r"\b(?:ghp|gho|ghu|ghs|github_pat|xox[abpors]|glpat)[-_][A-Za-z0-9_-]{16,}")),
    ("access token", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}")),
    ("private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("access token", re.compile(
        r"(?i)(?:\b(?:api[_ -]?key|secret(?:[_ -]?key)?|access[_ -]?token|auth[_ -]?token|bearer|token)\b|密钥|令牌|秘钥)"
        r"\s*(?:is|=|:|：|是|为)?\s*[\"'“”]?[A-Za-z0-9_\-./+=]{12,}")),
    ("Chinese ID number", re.compile(r"(?<!\d)\d{6}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?!\d)")),
    ("US social security number", re.compile(r"(?i)\b(?:ssn|social security(?: number)?)\b\D{0,12}\d{3}-?\d{2}-?\d{4}\b")),
]
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")


def _luhn_ok(digits: str) -> bool:
    total, alt = 0, False
    for ch in reversed(digits):
        d = int(ch)
        if alt:
            d *= 2
            if d > 9:
                d -= 9
        total += d
        alt = not alt
    return total % 10 == 0


def find_secret(text: str) -> str | None:
    """The kind of the first secret found in ``text`` ('password', 'API key', …) or None."""
    for kind, pattern in _PATTERNS:
        if pattern.search(text):
            return kind
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and _luhn_ok(digits):
            return "card number"
    return None


def a_kind(kind: str) -> str:
    """The kind with its article, for messages: "a password", "an API key", "a US social security number"."""
    return f"{'an' if kind[:1].lower() in 'aeio' else 'a'} {kind}"


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED <kind>]`` (for text sent to an LLM)."""
    for kind, pattern in _PATTERNS:
        text = pattern.sub(f"[REDACTED {kind}]", text)

    def card(m: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", m.group())
        return "[REDACTED card number]" if 13 <= len(digits) <= 19 and _luhn_ok(digits) else m.group()

    return _CARD.sub(card, text)
