"""The MADial-Bench memory-recall protocol (``memfold eval madial``).

A language folder holds ``memory.jsonl`` (one ``{id: {time, scene, emotion, event, user-id}}``
per line) and ``dialogue_dev.jsonl`` (``{dialogue, test-turn, relevant-id, user-id}``). The
memories of a user are that user's corpus (text = scene + emotion + event, dated by ``time``);
the query is the dialogue up to the test turn; gold = ``relevant-id``. The English memory file
has no ``user-id``: the Chinese file beside it (``../zh/memory.jsonl``), matched by id, supplies it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.write.conversations import read_jsonl
from ..errors import InvalidInputError
from ..facade.memory import Memory
from ..providers.embedder import Embedder
from .harness import (
    Clock,
    NoProgress,
    Probe,
    Progress,
    ask_all,
    eval_memory,
    methods,
    namespace_for,
    require_empty,
)
from .metrics import QuestionResult, summarise

MADIAL_KS = (1, 3, 5, 10)
DIALOGUE_FILES = ("dialogue_dev.jsonl", "dialogue.jsonl")


@dataclass(frozen=True)
class MadialMemory:
    id: str
    user: str
    time: str
    text: str


@dataclass(frozen=True)
class MadialDialogue:
    user: str
    query: str
    gold: tuple[str, ...]


def _raw_memories(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for n, row in enumerate(read_jsonl(path), 1):
        if not isinstance(row, dict) or len(row) != 1 or not isinstance(next(iter(row.values())), dict):
            raise InvalidInputError(f"{path} line {n}: expected {{\"<id>\": {{time, scene, emotion, event}}}}")
        mid, body = next(iter(row.items()))
        out[str(mid)] = body
    return out


def load_madial(lang_dir: str | Path) -> tuple[list[MadialMemory], list[MadialDialogue]]:
    folder = Path(lang_dir)
    if not folder.is_dir():
        raise InvalidInputError(f"MADial folder {folder} does not exist (give the language folder, e.g. madial/zh)")
    mem_path = folder / "memory.jsonl"
    dia_path = next((folder / f for f in DIALOGUE_FILES if (folder / f).exists()), None)
    if not mem_path.exists() or dia_path is None:
        raise InvalidInputError(f"{folder} is not a MADial-Bench language folder: it needs memory.jsonl and "
                                f"{' or '.join(DIALOGUE_FILES)}")
    raw = _raw_memories(mem_path)
    owners: dict[str, Any] = {}
    if any("user-id" not in b for b in raw.values()):
        sibling = folder.parent / "zh" / "memory.jsonl"
        if sibling.exists() and sibling != mem_path:
            owners = {mid: b.get("user-id") for mid, b in _raw_memories(sibling).items()}
    memories = []
    for mid, b in raw.items():
        user = b.get("user-id", owners.get(mid))
        if user is None:
            raise InvalidInputError(f"{mem_path}: memory {mid} has no user-id, and no ../zh/memory.jsonl supplies it")
        parts = [str(b.get(key) or "").strip() for key in ("scene", "emotion", "event")]
        if not parts[2]:
            raise InvalidInputError(f"{mem_path}: memory {mid} has no event text")
        memories.append(MadialMemory(mid, str(user), str(b.get("time") or ""), " ".join(p for p in parts if p)))
    dialogues = []
    for n, d in enumerate(read_jsonl(dia_path), 1):
        try:
            turns, test_turn = d["dialogue"], int(d["test-turn"][0])
            gold = tuple(str(g) for g in d["relevant-id"])
            user = str(d["user-id"])
        except (KeyError, IndexError, TypeError, ValueError):
            raise InvalidInputError(f"{dia_path} line {n}: expected {{dialogue, test-turn, relevant-id, user-id}}") \
                from None
        dialogues.append(MadialDialogue(user, "".join(str(t) for t in turns[:test_turn]), gold))
    return memories, dialogues


def ingest_madial(mem: Memory, lang_dir: str | Path, *, infer: bool = True,
                  progress: Progress | None = None) -> tuple[list[Probe], int]:
    """Ingest every user's memories into ``mem``; returns the scorable dialogues (group = the
    dialogue's line number) and the number of memories stored."""
    progress = progress or NoProgress()
    memories, dialogues = load_madial(lang_dir)
    users = sorted({m.user for m in memories})
    for user in users:
        require_empty(mem, namespace_for(user, "madial"))
    progress.start("ingesting memories", len(memories))
    for m in memories:
        msg = {"role": "user", "content": m.text, "turn_id": m.id, **({"timestamp": m.time} if m.time else {})}
        mem.add([msg], namespace_for(m.user, "madial"), infer=infer)
        progress.advance()
    known = {m.id for m in memories}
    probes = []
    for n, d in enumerate(dialogues):
        gold = tuple(g for g in d.gold if g in known)
        if gold and d.query.strip():
            probes.append(Probe(f"dialogue-{n}", namespace_for(d.user, "madial"), d.query, gold, "all"))
    return probes, sum(mem.index.count(namespace_for(u, "madial")) for u in users)


def last_line(query: str) -> str:
    """The last line of a dialogue excerpt that holds anything (the message the memories answer)."""
    lines = [ln.strip() for ln in query.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def per_dialogue(probes: Sequence[Probe], results: Sequence[QuestionResult], ks: Sequence[int]) -> list[dict[str, Any]]:
    """Each dialogue's outcome (for finding where recall is lost): its id (``dialogue-<line>``), user
    namespace, last line and gold memory ids, and per k its recall and the gold ids not returned."""
    return [{"id": p.group, "namespace": p.namespace, "last_line": last_line(p.query), "gold": list(p.gold),
             "recall": {str(k): round(r.recall(k), 4) for k in ks},
             "missing": {str(k): [g for g in p.gold if g not in r.found[k]] for k in ks}}
            for p, r in zip(probes, results, strict=True)]


def run_madial(lang_dir: str | Path, ks: Sequence[int] = MADIAL_KS, *, baselines: bool = False,
               root: str | Path | None = None, embedder: Embedder | None = None,
               policy: dict[str, Any] | None = None, infer: bool = True,
               progress: Progress | None = None, vector_cache: str | Path | None = None,
               questions: bool = False) -> dict[str, Any]:
    """Run the protocol; with ``questions``, each dialogue's outcome under memfold's ranking too
    (``per_question``: the gold ids missing at each k)."""
    progress = progress or NoProgress()
    memories, _ = load_madial(lang_dir)  # a bad folder fails before a workspace is made
    clock = Clock()
    results: dict[str, list[QuestionResult]] = {m: [] for m in methods(baselines)}
    with eval_memory(root, embedder=embedder, policy=policy, vector_cache=vector_cache) as mem:
        probes, n_memories = ingest_madial(mem, lang_dir, infer=infer, progress=progress)
        ask_all(mem, probes, results, ks, progress, "asking dialogues")
        embedder_name = mem.embedder.name
        fusion = mem.policy().fusion_keyword_weight
    folder = Path(lang_dir)
    report: dict[str, Any] = {"dataset": f"madial:{folder.name}", **summarise(results["memfold"], ks)}
    report.update(users=len({m.user for m in memories}), memories=n_memories, embedder=embedder_name,
                  fusion_keyword_weight=fusion, infer=infer)
    if baselines:
        report["baselines"] = {m: summarise(r, ks) for m, r in results.items() if m != "memfold"}
    if questions:
        report["per_question"] = per_dialogue(probes, results["memfold"], ks)
    report["seconds"] = clock.seconds()
    return report
