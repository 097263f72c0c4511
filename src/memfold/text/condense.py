"""Extractive condensing of a group of memories without an LLM: the sentences that carry the
group's distinct facts are kept, repeats are dropped, and sentences opening with the same words
share them once ("The user drinks coffee: espresso mornings; a latte after lunch").

A sentence is kept when it brings a fact no kept sentence holds yet (a date, a time, a number, a
name: a capitalised word, a word of Latin letters in Chinese text) or enough words of its own (its
share of new terms — stemmed words, Chinese character bigrams — reaches ``novelty``). The strict
mode (``novelty`` higher) keeps fewer: what it drops is kept elsewhere by the caller (the
memories stay in the index, and the harder stage lists them in ``archive.md``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .terms import EN_STOP, ZH_STOP_CHARS, terms

_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_MONTHS = ("jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april|june|july|august|"
           "september|october|november|december")
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_FACT = re.compile(
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"  # 2026-03-05
    r"|\d{1,2}:\d{2}"  # 14:30
    r"|\d+(?:[.,]\d+)*(?:年|月|日|号|点|岁|元|块|公里|分钟|小时|天|%)?"  # numbers, with a Chinese unit
    r"|[一二三四五六七八九十两]+(?:月|号|点|岁)(?:[一二三四五六七八九十]+[日号])?"  # 三月, 九月一日
    r"|(?:周|星期|礼拜)[一二三四五六日天]"
    rf"|\b(?i:{_MONTHS}|{_DAYS})\b"
    r"|\b[A-Z][\w'’&-]*(?:\s+[A-Z][\w'’&-]*)*"  # Lisbon, Clara, New York
    r"|[A-Za-z][A-Za-z0-9+#.-]*[A-Za-z0-9+#]")  # Latin words (in Chinese text: names, products)
_GENERIC = EN_STOP | {"user", "users", "person", "people", "note", "notes"}  # opening words that name nobody
_CAP = re.compile(r"^[A-Z]")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_TRAIL = ".;。；!！?？ "


def sentences(text: str) -> list[str]:
    """The sentences of a memory (a decimal point or a time does not end one)."""
    return [s.strip() for s in _SPLIT.split(text) if s and s.strip(_TRAIL)]


def facts(sentence: str) -> set[str]:
    """The facts a sentence names (case-folded): dates, times, numbers, names."""
    chinese = bool(_CJK.search(sentence))
    out: set[str] = set()
    for m in _FACT.finditer(sentence):
        word = m.group(0).strip()
        if not word:
            continue
        if word[0].isalpha() and word.isascii():
            parts = word.split()
            while len(parts) > 1 and parts[0].casefold() in _GENERIC:  # "The Harbor" names Harbor
                parts.pop(0)
            word = " ".join(parts)
            low = word.casefold()
            is_date_word = re.fullmatch(rf"(?:{_MONTHS}|{_DAYS})", low) is not None
            if not (is_date_word or chinese or _CAP.match(word)) or low in _GENERIC:
                continue
        out.add(word.casefold())
    return out


def _terms(sentence: str) -> set[str]:
    return {t for t in terms(sentence) if not (len(t) == 2 and (t[0] in ZH_STOP_CHARS or t[1] in ZH_STOP_CHARS))}


def _norm(sentence: str) -> str:
    return " ".join(re.sub(r"[\W_]+", " ", sentence.casefold()).split())


@dataclass
class Condenser:
    """The sentences kept so far of one group: ``offer`` each memory's text in turn."""

    novelty: float = 0.34  # share of a sentence's terms that must be new for it to stay without a new fact
    new_terms: int = 3  # ... or this many new terms (a fact said in new words: "不喜欢绿茶")
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    _facts: set[str] = field(default_factory=set)
    _terms: set[str] = field(default_factory=set)
    _seen: set[str] = field(default_factory=set)

    def judge(self, text: str) -> list[tuple[str, bool]]:
        """Each sentence of ``text`` with whether it would be kept (nothing is recorded)."""
        out = []
        seen, known, have = set(self._seen), set(self._facts), set(self._terms)
        for s in sentences(text):
            norm = _norm(s)
            ts = _terms(s)
            new_facts = facts(s) - known
            new_terms = ts - have
            keep = bool(norm) and norm not in seen and (
                bool(new_facts) or len(new_terms) >= min(self.new_terms, max(1.0, self.novelty * len(ts))))
            if keep:
                seen.add(norm)
                known |= new_facts
                have |= ts
            out.append((s, keep))
        return out

    def offer(self, text: str) -> list[str]:
        """Keep the sentences of ``text`` that add something; the ones kept. A kept sentence that a new
        one holds whole is replaced by it, in place (``kept`` may then hold empty strings)."""
        got = []
        for s, keep in self.judge(text):
            if keep:
                norm = _norm(s)
                self._seen.add(norm)
                self._facts |= facts(s)
                self._terms |= _terms(s)
                within = [i for i, k in enumerate(self.kept) if _norm(k) in norm]  # said again, with more
                if within:
                    self.dropped.extend(self.kept[i] for i in within)
                    self.kept[within[0]] = s  # in place (a caller may hold positions); others left empty
                    for i in within[1:]:
                        self.kept[i] = ""
                else:
                    self.kept.append(s)
                got.append(s)
            else:
                self.dropped.append(s)
        return got


def join(kept: list[str], lang: str = "en") -> str:
    """The kept sentences as one text; sentences that open with the same words (at least two, or
    four Chinese characters, ending at a colon, comma or space) share them once."""
    kept = [k for k in kept if k]
    if not kept:
        return ""
    sep = "；" if lang == "zh" else "; "
    groups: list[tuple[str, list[str]]] = []  # (shared opening, the rests)
    for s in kept:
        body = s.rstrip(_TRAIL)
        for i, (lead, rests) in enumerate(groups):
            if lead and body.startswith(lead) and len(body) > len(lead):
                rests.append(body[len(lead):].strip())
                break
            if not lead and len(rests) == 1:
                common = _common_lead(rests[0], body)
                if common:
                    groups[i] = (common, [rests[0][len(common):].strip(), body[len(common):].strip()])
                    break
        else:
            groups.append(("", [body]))
    parts = []
    for lead, rests in groups:
        if lead:
            parts.append(lead + (" " if lead[-1:].isascii() and not lead.endswith(" ") else "") + sep.join(rests))
        else:
            parts.append(rests[0])
    end = "。" if lang == "zh" else "."
    return (end if lang == "zh" else ". ").join(p.rstrip(_TRAIL) for p in parts) + end


_LEAD_END = re.compile(r"[:,]\s+|[：，]\s*")  # not the colon of 14:30 or the comma of 3,500


def _common_lead(a: str, b: str) -> str:
    """The opening ``a`` and ``b`` share up to a colon or comma (and the spaces after it): two words
    at least (four characters of Chinese); '' when they share less."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    for m in sorted(_LEAD_END.finditer(a[:n]), key=lambda m: -m.end()):
        lead = a[: m.end()]
        if len(lead) >= len(a) or len(lead) >= len(b):
            continue
        if (len(lead.strip()) >= 4) if _CJK.search(lead) else (len(lead.split()) >= 2):
            return lead
    return ""
