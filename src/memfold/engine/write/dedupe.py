"""The near-duplicate planner of the write path (SPEC §4.4): pure, no I/O.

Given the candidates of one ``add``, their vectors, their near neighbours in the index (one
query, ``neighbours``) and a ``Decider``, ``plan`` returns what to store and typed actions:

- ``Absorb``: the same words (or an episodic turn close to a stored one): the existing memory
  takes the new one's source ids; nothing new is stored;
- ``Replace``: a changed near-duplicate supersedes the old memory (archived, ``contradicts``);
- ``Merge``: the LLM's merged text supersedes the old memory (archived, ``refines``);
- ``KeepBoth``: both stay (an LLM said so, or could not decide); where the LLM judged them two
  distinct memories that agree, or two pieces of one call say nearly the same in other words, the
  new one ``supports`` the old.

Every action carries ``score``, the cosine of the pair, which becomes the strength of the relation
it leaves.

The ``RuleDecider`` is the deterministic rule (the newest wins); the LLM decider
(``merge.LlmDecider``) asks the chat model before the workspace lock is taken."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, Union

import numpy as np

from ...limits import MAX_SOURCE_IDS
from ...models import EPISODIC, MemoryRecord, utcnow

if TYPE_CHECKING:
    from ...index.base import Index


class Origin(enum.Enum):
    """Where a candidate came from (its value is written into the ``add`` history entry)."""

    TEXT = "text"  # add("…")
    TURN = "turn"  # a user turn of a conversation, kept as an episodic memory
    EXTRACTED = "extracted"  # a memory extracted from the turns (rules or LLM)
    KEPT = "kept"  # what the user said, kept as a note because the LLM extraction failed


@dataclass(frozen=True)
class Candidate:
    record: MemoryRecord
    origin: Origin


class Verdict(enum.Enum):
    REPLACE = "replace"
    MERGE = "merge"
    KEEP_BOTH = "keep_both"


@dataclass(frozen=True)
class Decision:
    """What to do with a new memory given a changed near-duplicate ``old_id``."""

    verdict: Verdict
    rule: str  # "llm", "newest wins", or why the LLM could not decide (kept in the history)
    by_llm: bool = False  # the LLM answered (its reason and action go into the history)
    reason: str = ""
    merged_content: str = ""
    old_id: str = ""  # the existing record the decision is about
    old_content: str = ""
    vector: np.ndarray | None = field(default=None, compare=False)  # the merged content's vector (MERGE)

    @property
    def relation(self) -> str:
        return {Verdict.REPLACE: "contradicts", Verdict.MERGE: "refines"}.get(self.verdict, "")

    def applies_to(self, old: MemoryRecord) -> bool:
        """False when the existing record changed since the decision was made."""
        return self.old_id == old.id and self.old_content == old.content


NEWEST_WINS = Decision(Verdict.REPLACE, "newest wins")


def keep_both(rule: str, old: MemoryRecord | None = None) -> Decision:
    return Decision(Verdict.KEEP_BOTH, rule, old_id=old.id if old else "", old_content=old.content if old else "")


class Decider(Protocol):
    """Decides about a candidate ``i`` whose nearest stored memory ``old`` has other words."""

    def decide(self, i: int, old: MemoryRecord, new: MemoryRecord) -> Decision: ...


class RuleDecider:
    """Without an LLM: the newest wins."""

    def decide(self, i: int, old: MemoryRecord, new: MemoryRecord) -> Decision:
        return NEWEST_WINS


# ---- neighbours ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Neighbours:
    """For each candidate, its nearest stored memories ``(id, score)``; and those records."""

    near: Sequence[Sequence[tuple[str, float]]]
    existing: dict[str, MemoryRecord]
    threshold: float


def neighbours(index: "Index", user_id: str, vecs: np.ndarray, threshold: float) -> Neighbours:
    """The one neighbour query of the write path: the 3 nearest memories of every candidate."""
    near = index.vector_search_many(user_id, vecs, 3, min_score=threshold)
    ids = sorted({mid for row in near for mid, s in row if s >= threshold})
    return Neighbours(near, {r.id: r for r in index.get(user_id, ids)}, threshold)


def stored_twin(new: MemoryRecord, row: Sequence[tuple[str, float]], lookup: dict[str, MemoryRecord],
                threshold: float) -> MemoryRecord | None:
    """The near-duplicate choice: the first active stored memory at least ``threshold`` close
    to ``new``, of the same kind (episodic turns against turns, memories against memories)."""
    episodic = new.file == EPISODIC
    for mid, s in row:
        old = lookup.get(mid)
        if s >= threshold and old is not None and old.is_active and (old.file == EPISODIC) == episodic:
            return old
    return None


def same_words(a: MemoryRecord, b: MemoryRecord) -> bool:
    return a.content.strip().lower() == b.content.strip().lower()


def _bounded(ids: tuple[str, ...]) -> tuple[str, ...]:
    """Source ids without repeats, the newest ``MAX_SOURCE_IDS`` of them (a memory said again and
    again keeps the latest turns that said it)."""
    return tuple(dict.fromkeys(ids))[-MAX_SOURCE_IDS:]


def absorb(keep: MemoryRecord, dup: MemoryRecord) -> MemoryRecord:
    """``keep`` carrying ``dup``'s source ids and the higher importance."""
    src = _bounded(keep.source_ids + dup.source_ids)
    return keep.with_(source_ids=src, importance=max(keep.importance, dup.importance), updated_at=utcnow())


def merged_record(old: MemoryRecord, new: MemoryRecord, decision: Decision) -> MemoryRecord:
    """The new record carrying the merged content and what both sides knew."""
    return new.with_(content=decision.merged_content, importance=max(old.importance, new.importance),
                     source_ids=_bounded(old.source_ids + new.source_ids),
                     structured_data={**old.structured_data, **new.structured_data},
                     confidence=(old.confidence + new.confidence) / 2)


BLOCK = 256  # candidates compared with the earlier ones in one product


class _Block:
    """Which earlier candidates of the call are near candidate ``i``: the rows of one block of
    ``BLOCK`` candidates against the candidates up to the block's end, made when the plan reaches
    the block (at most ``BLOCK`` × n booleans at a time instead of an n × n matrix)."""

    def __init__(self, vecs: np.ndarray, threshold: float):
        self.vecs, self.threshold = vecs, threshold
        self.start = self.end = 0
        self.near = np.zeros((0, 0), dtype=bool)
        self.largest = 0  # the most cells one block held (what the planner's memory grows with)

    def row(self, i: int) -> np.ndarray:
        """near[j] for every earlier candidate j < i."""
        if i >= self.end:
            self.start, self.end = i, min(i + BLOCK, len(self.vecs))
            self.near = (self.vecs[self.start: self.end] @ self.vecs[: self.end].T) >= self.threshold
            self.largest = max(self.largest, self.near.size)
        return self.near[i - self.start, :i]

    def changed(self, i: int) -> None:
        """Candidate ``i`` has a new vector (a merged text): the later rows of the block see it."""
        if self.start <= i < self.end:
            self.near[:, i] = (self.vecs[self.start: self.end] @ self.vecs[i]) >= self.threshold


# ---- actions ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Absorb:
    """A stored memory takes the source ids of new ones with the same words (one per memory)."""

    old: MemoryRecord
    updated: MemoryRecord


@dataclass(frozen=True)
class Replace:
    """``new`` (stored) supersedes ``old``: archived, related by ``contradicts``."""

    old: MemoryRecord
    new: MemoryRecord
    decision: Decision
    score: float = 1.0


@dataclass(frozen=True)
class Merge:
    """``new`` (stored, the merged text) supersedes ``old``: archived, related by ``refines``;
    ``incoming``: what the candidate said before the merge."""

    old: MemoryRecord
    new: MemoryRecord
    decision: Decision
    incoming: str
    score: float = 1.0


@dataclass(frozen=True)
class KeepBoth:
    """``new`` is stored next to its near-duplicate ``old``."""

    old: MemoryRecord
    new: MemoryRecord
    decision: Decision | None  # None: two candidates of one call with other words
    score: float = 1.0

    @property
    def agrees(self) -> bool:
        """Whether the two are distinct memories that agree: an LLM judged them worth keeping both,
        or two pieces of one call said nearly the same in other words (not a failed LLM answer)."""
        return self.decision is None or self.decision.by_llm


Action = Union[Absorb, Replace, Merge, KeepBoth]


@dataclass(frozen=True)
class Plan:
    store: list[Candidate]  # the new records to store, in order
    vectors: np.ndarray  # their vectors (a merged record has its merged text's vector)
    actions: list[Action]


def plan(cands: Sequence[Candidate], vecs: np.ndarray, near: Neighbours, decider: Decider) -> Plan:
    """What to store and what to do with the stored near-duplicates (no I/O).

    The candidates are compared with each other a block of ``BLOCK`` rows at a time (each block
    against the candidates before its end), so the memory the comparison takes grows linearly
    with the number of candidates, never with its square."""
    threshold = near.threshold
    cands = list(cands)
    vecs = np.array(vecs, copy=True)
    keep: list[int] = []
    updates: dict[str, MemoryRecord] = {}  # stored id -> that record with the absorbed source ids
    supersede: list[tuple[int, MemoryRecord, Decision, str | None, float]] = []  # (i, old, decision, incoming, score)
    both: list[tuple[int, MemoryRecord, Decision | None, float]] = []
    block = _Block(vecs, threshold)
    kept = np.zeros(len(cands), dtype=bool)  # kept[j]: j is in ``keep``
    lookup = dict(near.existing)  # the stored records, with the absorbed source ids as the plan goes
    for i, c in enumerate(cands):
        if keep and not kept[keep[-1]]:  # the one candidate the previous round kept
            kept[keep[-1]] = True
        episodic = c.record.file == EPISODIC
        twin = stored_twin(c.record, near.near[i], lookup, threshold)
        if twin is None:  # also look among the earlier candidates of this call (one product per block)
            close: list[int] = np.flatnonzero(block.row(i) & kept[:i]).tolist() if keep else []
            twin = next((cands[j].record for j in close if (cands[j].record.file == EPISODIC) == episodic), None)
            if twin is not None and not same_words(twin, c.record) and not episodic:
                j = next(j for j in close if cands[j].record.id == twin.id)
                both.append((i, twin, None, float(vecs[i] @ vecs[j])))  # a near-duplicate with other words, one call
                keep.append(i)
                continue
            if twin is not None:
                j = next(j for j in keep if cands[j].record.id == twin.id)
                cands[j] = Candidate(absorb(cands[j].record, c.record), cands[j].origin)
                continue
            keep.append(i)
            continue
        if episodic or same_words(twin, c.record):
            updates[twin.id] = lookup[twin.id] = absorb(updates.get(twin.id, twin), c.record)
            continue
        decision = decider.decide(i, twin, c.record)  # a changed near-duplicate
        score = next((float(s) for mid, s in near.near[i] if mid == twin.id), threshold)
        if decision.verdict is Verdict.MERGE:
            incoming = c.record.content
            cands[i] = Candidate(merged_record(twin, c.record, decision), c.origin)
            if decision.vector is not None:
                vecs[i] = decision.vector
                block.changed(i)
            supersede.append((i, twin, decision, incoming, score))
        elif decision.verdict is Verdict.REPLACE:
            supersede.append((i, twin, decision, None, score))
        else:
            both.append((i, twin, decision, score))
        keep.append(i)
    actions: list[Action] = [Absorb(near.existing[mid], new) for mid, new in updates.items()]
    for i, old, decision, said, score in supersede:
        new = cands[i].record
        actions.append(Merge(old, new, decision, said, score) if said is not None
                       else Replace(old, new, decision, score))
    actions.extend(KeepBoth(old, cands[i].record, decision, score) for i, old, decision, score in both)
    stored = [cands[i] for i in keep]
    return Plan(stored, vecs[keep] if keep else np.zeros((0, vecs.shape[1]), np.float32), actions)
