"""The LLM decider of the dedupe planner (seed 003 ``_merge_or_update``, SPEC §4.4).

When a new memory is similar to an existing one (cosine ≥ ``dedupe_threshold``) and its words
differ, the LLM answers ``{"action": "replace|merge|keep_both", "reason", "merged_content"}``.
``replace`` and ``merge`` archive the old record (``superseded_by``) and relate the two
(``contradicts`` / ``refines``). The questions are asked before the workspace lock is taken
(``LlmDecider.prepare``), at most one per existing memory and within the operation's call cap;
the locked plan re-checks that the existing memory did not change. When the LLM fails or
answers nonsense, both are kept: nothing stored changes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ... import prompts
from ...errors import ProviderError
from ...models import EPISODIC, MemoryRecord
from ...text.secrets import redact
from ..llm.llm_calls import LLMCalls, answer_text, parse_json_answer
from ..storage import records as rec
from .dedupe import Candidate, Decision, Neighbours, Origin, Verdict, keep_both, merged_record, same_words, stored_twin

if TYPE_CHECKING:
    from ...providers.embedder import Embedder

log = logging.getLogger("memfold")
ACTIONS = ("replace", "merge", "keep_both")
MAX_MERGED_CHARS = 4000

MERGE_SCHEMA: dict[str, Any] = {
    "title": "merge_decision",
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "reason": {"type": "string"},
        "merged_content": {"type": "string"},
    },
    "required": ["action", "reason"],
}


def parse_decision(text: str) -> tuple[str, str, str]:
    """(action, reason, merged_content) from an answer; ValueError says what is wrong."""
    data = parse_json_answer(text)
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    action = str(data.get("action", "")).strip().lower().replace("-", "_").replace(" ", "_")
    if action not in ACTIONS:
        raise ValueError(f"action {data.get('action')!r} is not one of {', '.join(ACTIONS)}")
    reason = data.get("reason")
    reason = redact(reason.strip()) if isinstance(reason, str) else ""  # kept in the history
    if action != "merge":
        return action, reason, ""
    merged = answer_text(data.get("merged_content"), "merged_content", MAX_MERGED_CHARS)
    if not merged:
        raise ValueError("action 'merge' needs a non-empty merged_content")
    return action, reason, merged


def ask(calls: LLMCalls, old: MemoryRecord, new: MemoryRecord, language: str) -> Decision:
    """Ask the LLM once what to do with ``new`` given the similar ``old``."""
    lang = language if language in prompts.LANGUAGES else "en"
    messages = [
        {"role": "system", "content": prompts.render("system", lang)},
        {"role": "user", "content": prompts.render("merge", lang, existing=redact(old.content),
                                                   new=redact(new.content))},
    ]
    try:
        result = calls.complete(messages, purpose="merge", json_schema=MERGE_SCHEMA)
    except ProviderError as exc:
        log.warning("LLM merge decision for %s failed (%s); both memories are kept", old.id, exc)
        return keep_both(f"LLM merge decision failed: {exc}", old)
    try:
        action, reason, merged = parse_decision(result.text)
    except ValueError as exc:
        calls.failed()
        problem = redact(str(exc))  # it may quote the answer
        log.warning("LLM merge decision for %s is unusable (%s); both memories are kept", old.id, problem)
        return keep_both(f"LLM merge answer unusable: {problem}", old)
    return Decision(Verdict(action), "llm", True, reason, merged, old.id, old.content)


class LlmDecider:
    """The LLM's merge decisions, asked in ``prepare`` (outside the workspace lock); ``decide``
    answers from them, or keeps both when there is none for the pair (the memory changed
    meanwhile, or another candidate already asked about it)."""

    def __init__(self, calls: LLMCalls, embedder: "Embedder", language: str):
        self.calls = calls
        self.embedder = embedder
        self.language = language
        self.decisions: dict[int, Decision] = {}

    def prepare(self, cands: Sequence[Candidate], near: Neighbours) -> list[str]:
        """Ask about every candidate whose nearest stored memory is a changed near-duplicate, at
        most once per stored memory (the first candidate asks); the warnings of failed answers."""
        asked: set[str] = set()
        out: dict[int, Decision] = {}
        for i, c in enumerate(cands):
            new = c.record
            if c.origin is Origin.KEPT or new.file == EPISODIC:
                continue
            twin = stored_twin(new, near.near[i], near.existing, near.threshold)
            if twin is None or same_words(twin, new) or twin.id in asked:
                continue
            asked.add(twin.id)
            out[i] = ask(self.calls, twin, new, prompts.language_of(twin.content + "\n" + new.content,
                                                                    self.language))
        merged = sorted(i for i, d in out.items() if d.verdict is Verdict.MERGE)
        if merged:
            texts = [rec.embed_text(merged_record(near.existing[out[i].old_id], cands[i].record, out[i]))
                     for i in merged]
            for i, v in zip(merged, self.embedder.embed(texts)):
                out[i] = replace(out[i], vector=v)
        self.decisions = out
        return [f"{d.rule}; kept both memories ({d.old_id} and the new one)" for d in out.values() if not d.by_llm]

    def decide(self, i: int, old: MemoryRecord, new: MemoryRecord) -> Decision:
        got = self.decisions.get(i)
        if got is not None and got.applies_to(old):
            return got
        return keep_both("no LLM decision for this pair (changed meanwhile, or one call per memory)", old)
