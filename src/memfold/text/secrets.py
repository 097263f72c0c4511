"""Secret detection and redaction (seed 002 "不应该记的": passwords, keys, tokens, card and ID numbers).

``find_secrets`` returns the spans of secret *values* (the password, not the word "password");
``redact`` replaces each with the visible marker ``[redacted]``; ``screen`` also says whether a
text is mostly a secret (nothing worth keeping once the clauses holding secrets are taken away),
which the write path refuses as a whole. ``find_secret`` names the kind of the first secret,
never the secret itself. ``find_secret_in_data`` / ``redact_data`` walk structured values
(dicts, lists), reading each value together with its key ("password" → "hunter2").

Detection is rule based, for English and Chinese: a keyword ("password", "pw", "passcode",
"PIN", "密码", "验证码", "api key", "token", "密钥", also spelled out "p a s s w o r d") followed
by a value; known token formats (``sk-…``, ``ghp_…``, ``AKIA…``, JWTs, PEM private keys and bare
key bodies); credentials in URLs and login pairs (``admin / admin12345``); card numbers
(Luhn-checked, any of the separators `` -.``) and Chinese ID numbers (region and birth date
checked, grouped or not). Order numbers, dates, versions, phone numbers and ISBNs are not
secrets; ``docs/secrets.md`` reports detection and false-positive counts on the test corpus."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from .casefold import lower_as_regex
from .secret_numbers import card_spans, id_spans
from .terms import terms

MARKER = "[redacted]"


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Screened:
    """``text`` with secrets redacted; ``kinds`` of the secrets found; ``mostly_secret`` when
    nothing of substance is left outside the clauses that held them; ``kept`` is the text
    without those clauses (what rule-based extraction reads)."""

    text: str
    kinds: tuple[str, ...] = ()
    mostly_secret: bool = False
    kept: str = ""

    @property
    def redacted(self) -> bool:
        return bool(self.kinds)


# ---- keyword + value ----------------------------------------------------------------------
def _spread(word: str) -> str:
    """``word`` with an optional separator between letters ("p a s s w o r d", "pass-word") and
    common look-alike characters (p@ssw0rd)."""
    alt = {"a": "[a@4]", "o": "[o0]", "s": "[s$5]", "e": "[e3]", "i": "[i1!]"}
    return r"[\s._*-]?".join(alt.get(ch, re.escape(ch)) for ch in word)


_PASSWORD_WORDS = "|".join(_spread(w) for w in ("password", "passcode", "passphrase", "passwd"))
_PASSWORD_KW = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(?:{_PASSWORD_WORDS}|pwd|pw|pin(?:[\s-]?code)?|cvv2?|cvc|security[\s-]code"
    r"|verification[\s-]code|one[\s-]time[\s-](?:code|password)|otp|access[\s-]code|door[\s-]code"
    r"|unlock[\s-]code|login[\s-]code|(?:wpa[23]?|wep|wi-?fi|wlan|network)(?:[\s-]?(?:personal|psk))?[\s-]?"
    r"(?:key|psk|pre-?shared[\s-]key))(?![A-Za-z])"
    r"|密[\s　]?码|口令|验证码|动态码|校验码|安全码|识别码|PIN码|pin码|开锁码|门禁码|解锁码")
_TOKEN_KW = re.compile(
    r"(?i)(?<![A-Za-z])(?:api[\s_-]?key|secret(?:[\s_-]?(?:key|token))?|client[\s_-]?secret|access[\s_-]?key"
    r"|access[\s_-]?token|auth(?:entication|orization)?[\s_-]?token|refresh[\s_-]?token|bearer|token|private[\s_-]?key"
    r"|app[\s_-]?secret|signing[\s_-]?key)(?![A-Za-z])|密钥|秘钥|令牌|私钥")
_FILLER = re.compile(
    r"(?i)\s+(?:for|of|on|to|at|in)\s+(?:(?:the|my|our|your|this|that|his|her|their)\s+)?[\w-]+(?:\s+[\w-]+)?"
    r"(?=\s*(?:is\b|was\b|=|:|：))")
_CONNECTOR = re.compile(
    r"(?i)\s*(?:(?:(?:is|was|are|will be|has been|changed to|set to|now)\b|=|:=|:|：|是|为|改成了?|改为|设为|设置为|换成了?|"
    r"其实是|就是|->|=>)\s*)+")
_QUOTED = re.compile(r"[\"'“”‘’「『]([^\"'“”‘’」』\n]{3,80})[\"'“”‘’」』]")
_ASCII_VALUE = re.compile(r"[\x21-\x7e]+")
_ZH_DIGITS = re.compile(r"[零〇一二三四五六七八九幺两]{4,}")
_TRAIL = ".,;:!?)]}>'\"。，；：！？）*`"
_PLACEHOLDER = re.compile(r"(?i)your|example|placeholder|changeme|xxxx|\*\*\*|<|(?-i:^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$)")
_CODE = re.compile(r"^(?:[A-Za-z_][\w.]*[(\[]|[{(\[$%@#])")  # "Column(String,", "request.form[", "{(byte)", "$pass"
_KEYWORD_WORDS = frozenset({"password", "passwd", "pass", "secret", "token", "pin", "pwd", "key", "apikey", "api_key"})
# words that describe a password rather than being one ("my password is weak", "密码是什么")
_DESCRIPTORS = frozenset(
    """weak strong wrong right correct incorrect invalid valid expired required needed missing empty blank
    same different long short secure insecure safe unsafe easy hard simple complex changed reset updated saved
    stored forgotten lost locked unlocked new old sent shared visible hidden encrypted hashed case-sensitive
    mandatory optional ok okay fine good bad great terrible too very really quite not no never still also
    already just only the a an my your our his her their its this that these those what which who where when
    how why here there in on at for of to by with from about into over under and or but if then so as it
    something anything nothing everything somewhere printed written below above attached included enabled
    disabled""".split())


def _value_after(text: str, pos: int, min_len: int, token: bool, zh_keyword: bool) -> tuple[int, int] | None:
    """The span of the value following a keyword that ends at ``pos``, or None."""
    i = pos
    if text[i:i + 1] in ("\"", "'") and re.match(r"\s*[:=]", text[i + 1:i + 4]):
        i += 1  # a quoted key: {"password": "…"}
    filler = _FILLER.match(text, i)
    if filler:
        i = filler.end()
    m = _CONNECTOR.match(text, i)
    connector = m.group().strip().lower() if m else ""
    if connector:
        i = m.end()  # type: ignore[union-attr]
    else:
        ws = re.compile(r"[\s_-]+" if not zh_keyword else r"[\s_-]*").match(text, i)
        if not ws or (not ws.group() and not zh_keyword):
            return None
        i = ws.end()
    if text.startswith(MARKER, i):
        return None
    q = _QUOTED.match(text, i)
    if q:  # quoted: the value as written, words and spaces included
        value, start, end = q.group(1), q.start(1), q.end(1)
        return (start, end) if len(value) >= min_len and _plausible(value) and (not token or
                                                                              re.search(r"\d", value)) else None
    else:
        z = _ZH_DIGITS.match(text, i)
        if z:
            return (z.start(), z.end())
        v = _ASCII_VALUE.match(text, i)
        if not v:
            return None
        value, start, end = _trimmed(v.group(), v.start())
    if len(value) < min_len or not _plausible(value):
        return None
    if token:  # a token has digits; a bare identifier ("squareAccessToken") is a variable's name
        if len(value) < 8 or not re.search(r"\d", value) or not re.fullmatch(r"[A-Za-z0-9_\-./+=:~]+", value) \
                or re.search(r"=[^=]", value):  # "UPLOAD_MAX_FILESIZE=10M" is the next setting, not a value
            return None
        return (start, end)
    if re.fullmatch(r"[A-Za-z]+", value):
        # one plain word is a password only when said to be one ("my password is tiger", "pwd=secret"),
        # not after a colon ("pwd: Shows the directory"), "has been …" or a qualifier ("… of the employee is")
        if not (connector in ("is", "=", "是", "为") and not filler and len(value) >= 4):
            return None
        return (start, end)
    if not _looks_secret(value):
        return None
    return (start, end)


def _trimmed(value: str, start: int) -> tuple[str, int, int]:
    """A bare value without the sentence's punctuation after it and Markdown emphasis around it."""
    lead = len(value) - len(value.lstrip("*`"))
    stripped = value.rstrip(_TRAIL)
    return stripped[lead:], start + lead, start + len(stripped)


def _plausible(value: str) -> bool:
    """Not a word that describes a password, a placeholder, a keyword again, or a piece of code."""
    low = value.lower()
    return not (low in _DESCRIPTORS or low in _KEYWORD_WORDS or value.startswith(MARKER)
                or _PLACEHOLDER.search(value) or _CODE.match(value))


def _looks_secret(value: str) -> bool:
    """A value that does not read as a word: digits ("CVV 371", "PIN 4821", but not a year as in
    "PW 2024 conference"), or letters and digits together ("hunter2xyz", "Zx9!kLm2")."""
    if value.isdigit():
        return len(value) >= 3 and not (len(value) == 4 and 1900 <= int(value) <= 2099)
    return len(value) >= 4 and bool(re.search(r"\d", value)) and bool(re.search(r"[^\W\d_]", value))


# ---- known formats ------------------------------------------------------------------------
_FORMATS: list[tuple[str, re.Pattern[str]]] = [
    ("private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                               r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)")),
    ("API key", re.compile(r"(?<![A-Za-z0-9])(?:sk|pk|rk)-(?:[A-Za-z0-9_]{2,}-)*[A-Za-z0-9_-]{16,}")),
    ("API key", re.compile(r"(?<![A-Za-z0-9])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("API key", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])")),
    ("API key", re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{30,}")),
    ("access token", re.compile(r"(?<![A-Za-z0-9])(?:ghp|gho|ghu|ghs|ghr|github_pat|glpat|xox[abpors]|hf|npm)"
                                r"[-_][A-Za-z0-9_-]{16,}")),
    ("access token", re.compile(r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}")),
]
_SSN = re.compile(r"(?i)\b(?:ssn|social security(?: number| no\.?)?)\b\D{0,12}?(\d{3}[- ]?\d{2}[- ]?\d{4})\b")
_URL_CREDS = re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]+:([^\s@/]+)@")
_URL_PARAM = re.compile(r"(?i)[?&](?:access_token|api_key|apikey|token|key|password|passwd|pwd|secret|"
                        r"client_secret|sig|signature|auth)=([^&\s#]{6,})")
_LOGIN = re.compile(r"(?i)(?<![A-Za-z0-9])(?:(?:login|log-in|username|user|account|acct)(?![A-Za-z0-9_-])|账号|帐号|用户名|"
                    r"登录名)(?:\s*[:：=]\s*|\s+is\s+|\s+|(?<=[^\x00-\x7f]))([A-Za-z0-9_.@-]{2,40})\s*[/|]\s*([^\s,，。；;]{4,})")
_CLI_PASSWORD = re.compile(r"(?i)\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump)\b[^\n]*?"
                           r"(?<!\S)(?:-p|--password=)('[^'\n]+'|\"[^\"\n]+\"|[^\s'\"]+)")
_BASIC_AUTH = re.compile(r"(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")
_PHRASE_KW = re.compile(r"(?i)(?:\b(?:seed|recovery|mnemonic|backup|secret[\s-]recovery|wallet)[\s-]+(?:phrase|words)"
                        r"|\bmnemonic\b|助记词)")
_PHRASE_WORDS = re.compile(r"\s*(?:(?:is|are|was)\b|[:：=是为])?\s*[\"'“「]?((?:[a-z]{3,8}[\s,]+){11,23}[a-z]{3,8})")
_PHRASE_LENGTHS = (24, 21, 18, 15, 12)


def _basic_credentials(value: str) -> bool:
    """Whether a base64 value decodes to ``user:password`` (HTTP basic authentication)."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in raw and raw.isprintable()


def _phrase_spans(text: str) -> list[Finding]:
    """A wallet's recovery phrase: 12 to 24 short lower-case words after "seed phrase",
    "recovery phrase", "mnemonic" or "助记词" (as many of them as a phrase has: 24, 21, 18, 15 or 12)."""
    out: list[Finding] = []
    for kw in _PHRASE_KW.finditer(text):
        m = _PHRASE_WORDS.match(text, kw.end())
        if not m:
            continue
        words = list(re.finditer(r"[a-z]{3,8}", m.group(1)))
        n = next(k for k in _PHRASE_LENGTHS if k <= len(words))
        out.append(Finding("recovery phrase", m.start(1) + words[0].start(), m.start(1) + words[n - 1].end()))
    return out


_KEY_BODY = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40,}={0,2}(?![A-Za-z0-9+/=])")
def _key_body_spans(text: str) -> list[Finding]:
    out: list[Finding] = []
    for m in _KEY_BODY.finditer(text):
        s = m.group()
        word_start = max(text.rfind(" ", 0, m.start()), text.rfind("\n", 0, m.start())) + 1
        if "://" in text[word_start:m.start()] or text[word_start:m.start()].startswith(("www.", "/")):
            continue  # a path of a URL
        if re.search(r"(?i)(?:sha\d+|md5)[-:]$", text[max(0, m.start() - 7):m.start()]):
            continue  # a subresource integrity hash, a key's fingerprint
        upper, lower, digits = (sum(ch.isupper() for ch in s), sum(ch.islower() for ch in s),
                                sum(ch.isdigit() for ch in s))
        # random base64 mixes cases and digits throughout; a path or a word-run does not
        if upper >= len(s) * 0.15 and lower >= len(s) * 0.15 and digits >= 2 and len(set(s)) >= 16 \
                and not s.startswith("/"):
            out.append(Finding("private key", m.start(), m.end()))
    return out


# ---- a first look: which rules can find anything in this text at all ---------------------------
# Each rule below needs something a substring test sees: a keyword rule one of these words (a
# prefix of each of its alternatives, compared case-insensitively as ``(?i)`` does), a number rule
# 9 digits (a US SSN has 9; cards 12 or more, a Chinese ID 17), a known format its prefix. Most
# texts have none of them and skip the rules' regular expressions (``tests/unit/test_secret_first_look.py``).
_KEYWORD_HINTS = ("pw", "pin", "wpa", "wep", "psk", "wifi", "wi-fi", "wlan", "network",
                  "cvv", "cvc", "security", "verification", "time", "otp", "access", "door", "unlock",
                  "login", "api", "secret", "client", "auth", "refresh", "bearer", "token", "private", "app",
                  "signing", "密", "口令", "码", "钥", "令牌")
_SPREAD_PASS = re.compile(r"p[\s._*-]?[a@4][\s._*-]?[s$5][\s._*-]?[s$5]")  # "pass…" spread (p a s s, p@ss)
_FORMAT_HINTS: tuple[tuple[str, ...], ...] = (
    ("PRIVATE KEY",), ("k-",), ("k_",), ("AKIA", "ASIA"), ("AIza",),
    ("ghp", "gho", "ghu", "ghs", "ghr", "github_pat", "glpat", "xox", "hf", "npm"), ("eyJ",))
_ANY_FORMAT = tuple(h for hints in _FORMAT_HINTS for h in hints)
_LOGIN_HINTS = ("/", "|")
_DIGIT = re.compile(r"\d")


def _keyword_rules_apply(text: str) -> bool:
    low = lower_as_regex(text)
    return any(map(low.__contains__, _KEYWORD_HINTS)) or _SPREAD_PASS.search(low) is not None


def find_secrets(text: str, *, first_look: bool = True) -> list[Finding]:
    """The secrets in ``text``: non-overlapping spans, in order. ``first_look=False`` runs every
    rule whatever the text holds (the reference the first look is tested against)."""
    if not text:
        return []
    every = not first_look
    found: list[Finding] = []
    if every or _keyword_rules_apply(text):
        for kind, kw, token in (("password", _PASSWORD_KW, False), ("access token", _TOKEN_KW, True)):
            for m in kw.finditer(text):
                zh = not m.group().isascii()
                span = _value_after(text, m.end(), 3 if not token else 8, token, zh)
                if span:
                    found.append(Finding(kind, *span))
    if every or any(map(text.__contains__, _ANY_FORMAT)):
        for (kind, pat), hints in zip(_FORMATS, _FORMAT_HINTS):
            if every or any(map(text.__contains__, hints)):
                found.extend(Finding(kind, m.start(), m.end()) for m in pat.finditer(text))
    numbers = every or len(_DIGIT.findall(text)) >= 9
    for kind, pat, may in (("US social security number", _SSN, numbers),
                           ("password", _URL_CREDS, every or "://" in text),
                           ("access token", _URL_PARAM, every or "=" in text)):
        if may:
            found.extend(Finding(kind, m.start(1), m.end(1)) for m in pat.finditer(text)
                         if kind.startswith("US") or _plausible(m.group(1)))
    low = text.lower() if not every else ""
    if every or "mysql" in low or "mariadb" in low:
        for m in _CLI_PASSWORD.finditer(text):
            quoted = m.group(1)[:1] in "'\""
            found.append(Finding("password", m.start(1) + quoted, m.end(1) - quoted))
    if every or "basic" in low:
        found.extend(Finding("password", m.start(1), m.end(1)) for m in _BASIC_AUTH.finditer(text)
                     if _basic_credentials(m.group(1)))
    if every or "phrase" in low or "mnemonic" in low or "words" in low or "助记词" in text:
        found += _phrase_spans(text)
    if every or any(map(text.__contains__, _LOGIN_HINTS)):
        for m in _LOGIN.finditer(text):
            value, start, end = _trimmed(m.group(2), m.start(2))
            if _looks_secret(value) and _plausible(value) and "://" not in m.group():
                found.append(Finding("password", start, end))
    if numbers:
        found += [Finding("card number", a, b) for a, b in card_spans(text)]
        found += [Finding("Chinese ID number", a, b) for a, b in id_spans(text)]
    if every or len(text) >= 40:
        found += _key_body_spans(text)
    return _merge(text, found)


def _merge(text: str, found: list[Finding]) -> list[Finding]:
    """Overlapping spans joined; spans separated only by whitespace (a key body over several
    lines) joined too."""
    found.sort(key=lambda f: (f.start, -f.end))
    out: list[Finding] = []
    for f in found:
        if out and (f.start <= out[-1].end or (not text[out[-1].end:f.start].strip() and out[-1].kind == f.kind)):
            last = out[-1]
            out[-1] = Finding(last.kind, last.start, max(last.end, f.end))
        else:
            out.append(f)
    return out


def find_secret(text: str) -> str | None:
    """The kind of the first secret found in ``text`` ('password', 'API key', …) or None."""
    found = find_secrets(text)
    return found[0].kind if found else None


def a_kind(kind: str) -> str:
    """The kind with its article, for messages: "a password", "an API key", "a US social security number"."""
    return f"{'an' if kind[:1].lower() in 'aeio' else 'a'} {kind}"


def redact(text: str) -> str:
    """``text`` with every secret replaced by the visible marker ``[redacted]``."""
    found = find_secrets(text)
    for f in reversed(found):
        text = text[:f.start] + MARKER + text[f.end:]
    return text


# ---- mostly a secret? ---------------------------------------------------------------------
_CLAUSE_SEP = re.compile(r"((?<=[.!?;])\s+|[。！？；，、\n]+\s*|,\s+|;\s*|\s+(?:and|but|also|plus|then|btw|by the way)\s+"
                         r"|还有|而且|并且|但是|另外|然后|顺便说一下|顺便)", re.I)
# words that only frame a secret: what is left of "my wifi password is [redacted]" says nothing
_FRAME = frozenset(
    """password passcode passphrase passwd pwd pw pin code cvv cvc otp secret key token api access login user
    username account card number no num id ssn social security wifi wi-fi bank door phone laptop email mail
    credential credentials private bearer auth verification one-time new old current remember note use save
    store keep here way redact redacted the is""".split())
_FRAME_ZH = ("密码", "口令", "验证码", "密钥", "秘钥", "令牌", "私钥", "身份证", "号码", "卡号", "银行卡", "信用卡", "账号",
             "帐号", "用户名", "登录", "记住", "记一下", "我的", "是", "号", "为", "码")


def screen(text: str) -> Screened:
    """Redact ``text`` and judge whether anything of substance is left besides the secrets."""
    found = find_secrets(text)
    red = text
    for f in reversed(found):
        red = red[:f.start] + MARKER + red[f.end:]
    if MARKER not in red:
        return Screened(red, (), False, red)
    parts = _CLAUSE_SEP.split(red)  # even indexes: clauses; odd: the separators between them
    kept: list[str] = []
    for n in range(0, len(parts), 2):
        clause = parts[n]
        if MARKER in clause:
            continue
        kept.append(clause)
        if n + 1 < len(parts) and clause.strip():
            kept.append(parts[n + 1])
    kept_text = "".join(kept).strip()
    kept_text = re.sub(r"(?:\s+(?:and|but|also|plus|then)|[,，、;；])\s*$", "", kept_text, flags=re.I).strip()
    kept_text = re.sub(r"^(?:(?:and|but|also|plus|then)\s+|[,，、;；]\s*)", "", kept_text, flags=re.I).strip()
    # a clause that holds a secret but says more besides ("the token [redacted] opens the staging dashboard
    # for the QA team") is ordinary text with a secret in it: redacted, not refused
    says_more = any(MARKER in parts[n] and _content_words(_prose(parts[n].replace(MARKER, " "))) >= 3
                    for n in range(0, len(parts), 2))
    return Screened(red, tuple(dict.fromkeys(f.kind for f in found)) or ("secret",),
                    not (_substantive(kept_text) or says_more), kept_text)


def _substantive(text: str) -> bool:
    """Whether ``text`` says something besides the words that frame a secret."""
    return _content_words(text) > 0


_NOT_PROSE = re.compile(r"[\d/:@=\\\[\]{}<>|$#%&*+_~^`\"']")


def _prose(text: str) -> str:
    """The words of ``text`` that read as prose: no token of a URL, a command, a key or a number."""
    words = (tok.rstrip(".,;!?") for tok in text.split())
    return " ".join(w for w in words if not _NOT_PROSE.search(w) and (len(w) >= 3 or not w.isascii()))


def _content_words(text: str) -> int:
    """How many words of ``text`` are not among the words that frame a secret."""
    for frame in _FRAME_ZH:
        text = text.replace(frame, " ")
    return sum(t not in _FRAME for t in terms(text))


# ---- structured values --------------------------------------------------------------------
_SECRET_KEY = re.compile(r"password|passwd|passphrase|passcode|secret|apikey|privatekey|accesstoken|refreshtoken"
                         r"|authtoken|mnemonic|seedphrase|recoveryphrase|密码|口令|密钥|秘钥|私钥|助记词")
_SECRET_KEY_WHOLE = frozenset({"pwd", "pw", "pass", "pin", "pincode", "token", "otp", "cvv", "cvc", "psk", "wpakey",
                               "wifikey", "验证码"})
_NOT_SECRET_KEY = re.compile(r"hint|policy|length|strength|changed|updated|expir|reset|rule|required|set$|manager")


def _secret_key(key: str) -> bool:
    """A key whose value is a secret whatever it looks like ("password", "wifi_password", "apiKey", "密码")."""
    k = re.sub(r"[\W_]+", "", key.lower())
    return (k in _SECRET_KEY_WHOLE or bool(_SECRET_KEY.search(k))) and not _NOT_SECRET_KEY.search(k)


def _pair_secret(key: Any, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    text = str(value)
    if not isinstance(key, str):
        return find_secret(text)
    if _secret_key(key) and len(text.strip()) >= 3 and _plausible(text.strip()) and MARKER not in text:
        return "recovery phrase" if re.search(r"mnemonic|seed|recovery|助记词", key.lower()) else "password"
    # read with its key: "password": "hunter2" is a secret, "order": "4532 0151 1283 0366" is not
    return find_secret(f"{key.replace('_', ' ')} is {text}") or find_secret(f"{key}: {text}")


def find_secret_in_data(value: Any, path: str) -> tuple[str, str] | None:
    """(where, kind) of the first secret in a structured value: a dict's keys, its values read
    with their keys ("password": "hunter2"), lists, nested. ``path`` names the value."""
    if isinstance(value, dict):
        for k, v in value.items():
            where = f"{path}[{k!r}]"
            if isinstance(k, str):
                kind = find_secret(k)
                if kind:
                    return where, kind
            if isinstance(v, (dict, list, tuple)):
                got = find_secret_in_data(v, where)
                if got:
                    return got
            else:
                kind = _pair_secret(k, v)
                if kind:
                    return where, kind
        return None
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            got = find_secret_in_data(v, f"{path}[{i}]")
            if got:
                return got
        return None
    kind = _pair_secret(None, value)
    return (path, kind) if kind else None


def redact_data(value: Any, key: Any = None) -> Any:
    """A copy of a structured value with every secret replaced by ``[redacted]``."""
    if isinstance(value, dict):
        return {(redact(k) if isinstance(k, str) else k): redact_data(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    if isinstance(value, str):
        if not _pair_secret(key, value):
            return value
        red = redact(value)
        return red if red != value else MARKER
    if isinstance(value, (int, float)) and not isinstance(value, bool) and _pair_secret(key, value):
        return MARKER
    return value
