"""Memory policy: defaults → config ``memory`` block → policy_overrides.json → arguments."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError


@dataclass(frozen=True)
class Policy:
    enabled: bool = True  # memory on/off: off = nothing read, injected, written; no tools
    retrieve_limit: int = 10
    recent_days: int = 3
    session_summary_message_threshold: int = 20
    session_summary_token_percent: int = 75
    session_summary_keep_count: int = 4
    session_relevant_history_limit: int = 0
    session_relevant_fallback_keep: int = 8
    session_ttl_minutes: int = 1440  # a session untouched this long is ended (its turns extracted); 0 = never
    long_term_compress_char_threshold: int = 0
    evolution_enabled: bool = False
    memory_char_limit: int = 5000
    max_recent_memories: int = 10
    dedupe_threshold: float = 0.95
    score_weight_similarity: float = 0.6
    score_weight_time: float = 0.2
    score_weight_importance: float = 0.2
    decay_tau_days: float = 30.0
    fusion_keyword_weight: float = 0.5
    candidate_pool_min: int = 20
    score_bonus_speaker: float = 0.3
    score_penalty_question: float = 0.1
    score_bonus_time: float = 0.1  # a memory dated in a range the query names ("last May", "上个月"); cross-validated
    query_last_line_weight: float = 0.25  # chosen by cross-validation with the other defaults (docs/benchmarks.md)
    keyword_feedback_weight: float = 0.3  # feedback for questions, cross-validated (docs/benchmarks.md; was 0.2); 0 = off
    query_speaker_mask: float = 1.0  # > 0: speakers the query names masked on the vector side (rank_speakers.py); cross-validated
    word_match_weight: float = 0.0  # soft word match by static word vectors (rank_wordvec.py, extra [wordvec]); 0 = off
    # the second embedding model's cosine mixed into the fusion (rank_passages.py); used with [search] profile =
    # "quality", which computes those vectors (extra [e5]); 0 = off
    e5_weight: float = 0.0
    session_key_weight: float = 0.0  # session keys (engine/read/rank_sessions.py), measured and left off (docs/benchmarks.md)
    min_score: float = 0.15  # calibrated relevance (engine/read/relevance.py) a search hit needs; 0 = no floor
    backup_keep: int = 20
    backup_max_age_days: int = 30  # backups of MEMORY.md older than this are deleted (0 = no age limit)
    usage_max_entries: int = 1000  # searches kept in the usage record (query, time, ids); 0 = none recorded
    usage_max_age_days: int = 90  # usage record entries older than this are deleted (0 = no age limit)
    context_window: int = 32768  # tokens the chat model accepts (sessions and build_context fit in it)
    token_encoding: str = "o200k_base"  # toktok encoding used to count tokens
    # maintenance (memfold maintain): old-memory compression and the "tidy your memory" instruction
    old_memory_merge_days: int = 30  # first stage: similar memories not accessed for this many days are merged (0 = off)
    old_memory_days: int = 90  # second stage: memories not accessed for this many days are compressed harder (0 = never)
    old_memory_access_below: int = 5  # ... when accessed fewer times than this
    memory_tidy_percent: int = 80  # the tidy instruction is injected from this share of memory_char_limit

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def merged(self, values: Mapping[str, Any] | None, source: str) -> "Policy":
        """A copy with ``values`` applied; unknown keys and bad values raise ConfigError naming the key."""
        if not values:
            return self
        known = {f.name: f for f in fields(self)}
        changes: dict[str, Any] = {}
        for key, raw in values.items():
            if key not in known:
                raise ConfigError(f"unknown policy key {key!r} in {source}; known keys: {', '.join(known)}")
            changes[key] = _coerce(key, raw, known[key].type, source)
        return replace(self, **changes)


# what ``[search] profile = "quality"`` sets (keys given in [memory], policy files or arguments win)
QUALITY_POLICY: dict[str, Any] = {"e5_weight": 0.4}

# inclusive bounds per key
BOUNDS: dict[str, tuple[float, float]] = {
    "retrieve_limit": (1, 1000),
    "recent_days": (0, 365),
    "session_summary_message_threshold": (2, 100_000),
    "session_summary_token_percent": (1, 100),
    "session_summary_keep_count": (0, 1000),
    "session_relevant_history_limit": (0, 10_000),
    "session_relevant_fallback_keep": (0, 10_000),
    "session_ttl_minutes": (0, 5_256_000),
    "long_term_compress_char_threshold": (0, 100_000_000),
    "memory_char_limit": (100, 10_000_000),
    "max_recent_memories": (1, 10_000),
    "dedupe_threshold": (0.5, 1.0),
    "score_weight_similarity": (0.0, 1.0),
    "score_weight_time": (0.0, 1.0),
    "score_weight_importance": (0.0, 1.0),
    "decay_tau_days": (0.01, 36_500),
    "fusion_keyword_weight": (0.0, 1.0),
    "candidate_pool_min": (1, 10_000),
    "score_bonus_speaker": (0.0, 1.0),
    "score_penalty_question": (0.0, 1.0),
    "score_bonus_time": (0.0, 1.0),
    "query_last_line_weight": (0.0, 4.0),
    "min_score": (0.0, 1.0),
    "keyword_feedback_weight": (0.0, 2.0),
    "query_speaker_mask": (0.0, 1.0),
    "session_key_weight": (0.0, 1.0),
    "word_match_weight": (0.0, 1.0),
    "e5_weight": (0.0, 1.0),
    "backup_keep": (1, 10_000),
    "backup_max_age_days": (0, 36_500),
    "usage_max_entries": (0, 1_000_000),
    "usage_max_age_days": (0, 36_500),
    "context_window": (512, 10_000_000),
    "old_memory_days": (0, 36_500),
    "old_memory_merge_days": (0, 36_500),
    "old_memory_access_below": (1, 1_000_000),
    "memory_tidy_percent": (1, 100),
}
# allowed values of the text keys
CHOICES: dict[str, tuple[str, ...]] = {
    "token_encoding": ("o200k_base", "cl100k_base", "o200k_harmony", "qwen3.5"),
}


def _coerce(key: str, raw: Any, typ: Any, source: str) -> Any:
    tname = typ if isinstance(typ, str) else typ.__name__
    if key in CHOICES:
        if not isinstance(raw, str) or raw not in CHOICES[key]:
            raise ConfigError(f"policy key {key!r} in {source} must be one of {', '.join(CHOICES[key])}, got {raw!r}")
        return raw
    if tname == "bool":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.lower() in ("true", "false", "1", "0", "yes", "no"):
            return raw.lower() in ("true", "1", "yes")
        raise ConfigError(f"policy key {key!r} in {source} must be true or false, got {raw!r}")
    try:
        if isinstance(raw, bool):
            raise ValueError
        value: float = int(raw) if tname == "int" else float(raw)
        if tname == "int" and isinstance(raw, float) and not raw.is_integer():
            raise ValueError
    except (TypeError, ValueError):
        article = "an" if tname[:1] in "aeiou" else "a"
        raise ConfigError(f"policy key {key!r} in {source} must be {article} {tname}, got {raw!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"policy key {key!r} in {source} must be finite, got {raw!r}")
    lo, hi = BOUNDS[key]
    if not lo <= value <= hi:
        raise ConfigError(f"policy key {key!r} in {source} is {raw!r}; it must be between {lo:g} and {hi:g}")
    return value


def load_overrides(path: Path) -> dict[str, Any]:
    """Read a policy_overrides.json file; a missing file is no overrides."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object of policy keys")
    return data


def policy_keys() -> list[str]:
    return [f.name for f in fields(Policy)]
