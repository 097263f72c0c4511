"""What every maintenance job shares: the ``Job`` protocol, the context a job runs in and the
results it reports (what was done, or in a dry run what would be done: which memories, how
many characters).

A job is a plain object with a ``name`` and ``run(ctx) -> JobResult``. It reads through the
index and the files, asks the LLM (if any) outside the user lock, and writes through
the namespace's store port (``Namespace``: ``engine/storage/changes.py`` and
``commit``), so backups, the hand-edit merge and history come with every
change. A job that fails (the LLM answered garbage, timed out, the file changed meanwhile)
changes nothing and reports why; the runner records only successful runs, so it is tried again
at the next run."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from ..config import Settings
from ..engine.llm.llm_calls import LLMCalls
from ..engine.storage.store import Namespace
from ..models import FILE_MEMORY, MemoryRecord
from ..policy import Policy
from ..providers.chat import ChatModel
from ..workspace.editsafe import split_marker
from ..workspace.userspace import Workspace

PREVIEW_CHARS = 80  # a memory's words in a plan are cut at this many characters
RESULT_CHARS = 200  # the words a change writes, cut at this many


def shorten(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` on one line, cut at ``limit`` characters with an ellipsis."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1].rstrip() + "…"


def planned_change(action: str, reason: str, records: Iterable[MemoryRecord], result: str | None = None,
                   saved: int | None = None) -> dict[str, Any]:
    """One change a job makes (or would make) as a person judges it: what it does and why, the
    memories it takes (id and shortened words), the words it writes instead (None: none, or written
    by the LLM only when the job runs) and the characters it saves in the memory files (negative:
    it adds). ``saved`` defaults to the memories' characters minus the result's."""
    rows = list(records)
    if saved is None:
        saved = sum(len(r.content) for r in rows) - len(result or "")
    return {"action": action, "reason": reason,
            "memories": [{"id": r.id, "text": shorten(r.content)} for r in rows],
            "result": shorten(result, RESULT_CHARS) if result is not None else None, "chars_saved": saved}


class Host(Protocol):
    """What maintenance needs of the memory it keeps (``Memory`` is one): its settings, workspace and
    index, the namespaces, each one's policy and store port, the LLM and its per-operation call cap."""

    settings: Settings
    workspace: Workspace
    index: Any

    @property
    def chat_model(self) -> ChatModel | None: ...

    @property
    def llm_calls_per_operation(self) -> int: ...

    @property
    def closed(self) -> bool: ...

    def users(self) -> list[str]: ...

    def policy(self, user_id: str = "default") -> Policy: ...

    def namespace_store(self, user_id: str) -> Namespace: ...


# statuses of a JobResult
DONE, PLANNED, NOT_DUE, NOTHING, FAILED, BUSY = "done", "planned", "not_due", "nothing", "failed", "busy"
STATE_KIND = "maintenance"  # the index state document of a job's last run: kind, key = job name


@dataclass
class JobResult:
    job: str
    user_id: str
    status: str  # done | planned (dry run) | not_due | nothing (due, nothing to change) | failed | busy
    reason: str = ""
    archived: list[str] = field(default_factory=list)  # ids taken out of the files (kept in the index)
    created: list[str] = field(default_factory=list)  # ids written (or, dry run: nothing)
    chars_before: int = 0  # characters of what the job touches (MEMORY.md, or the memories it merges)
    chars_after: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    changes: list[dict[str, Any]] = field(default_factory=list)  # planned_change() of each change made or planned

    @property
    def ok(self) -> bool:
        return self.status != FAILED

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job, "user_id": self.user_id, "status": self.status, "reason": self.reason,
                "archived": list(self.archived), "created": list(self.created), "chars_before": self.chars_before,
                "chars_after": self.chars_after, "details": self.details,
                "changes": [dict(c) for c in self.changes]}

    def summary(self) -> str:
        """One line for the CLI."""
        line = f"{self.user_id}: {self.job}: {self.status}"
        chars = ""
        if self.chars_before and (self.chars_after or self.status == DONE):
            chars = f"{self.chars_before} -> {self.chars_after} characters"
        elif self.chars_before:
            chars = f"{self.chars_before} characters"
        if self.status == PLANNED and (self.archived or self.created):
            noun = "memory" if len(self.archived) == 1 else "memories"
            line += f" (would archive {len(self.archived)} {noun}" + (f", {chars}" if chars else "") + ")"
        elif self.archived or self.created:
            line += f" ({len(self.archived)} archived, {len(self.created)} written" + (f", {chars}" if chars else "") + ")"
        elif chars and self.status in (DONE, PLANNED):
            line += f" ({chars})"
        return line + (f": {self.reason}" if self.reason else "")


@dataclass
class MaintenanceRun:
    started_at: datetime
    dry_run: bool
    results: list[JobResult] = field(default_factory=list)
    finished_at: datetime | None = None

    @property
    def failed(self) -> list[JobResult]:
        return [r for r in self.results if r.status == FAILED]

    def to_dict(self) -> dict[str, Any]:
        return {"started_at": self.started_at.isoformat(),
                "finished_at": self.finished_at.isoformat() if self.finished_at else None,
                "dry_run": self.dry_run, "results": [r.to_dict() for r in self.results]}


@dataclass
class JobContext:
    """What a job may use: one namespace's store and policy, the LLM (None: deterministic paths)."""

    user_id: str
    store: Namespace
    policy: Policy
    chat: ChatModel | None
    max_calls: int
    now: datetime
    dry_run: bool = False
    force: bool = False
    shared: dict[str, Any] = field(default_factory=dict)  # one run's plans, reused by later jobs of a dry run
    deadline: float | None = None  # time.monotonic() past which a background job stops between two steps
    stop: Callable[[], bool] | None = None  # true when the process is closing: stop between two steps

    def out_of_time(self) -> bool:
        """Whether a job should stop at its next step (what is left waits for the next run)."""
        return bool((self.deadline is not None and time.monotonic() > self.deadline) or (self.stop and self.stop()))

    @property
    def language(self) -> str:
        return self.store.space.language

    def calls(self) -> LLMCalls | None:
        """A call budget for one job, or None without an LLM."""
        return LLMCalls(self.chat, self.max_calls) if self.chat is not None else None

    def memory_text(self) -> str:
        """MEMORY.md without memfold's revision marker ('' when there is none)."""
        p = self.store.space.dir / FILE_MEMORY
        return split_marker(p.read_text(encoding="utf-8"))[0] if p.exists() else ""

    def last_run(self, job: str) -> datetime | None:
        doc = self.store.index.get_state(self.user_id, STATE_KIND, job) or {}
        at = doc.get("last_success")
        try:
            return datetime.fromisoformat(at) if isinstance(at, str) else None
        except ValueError:
            return None

    def result(self, job: str, status: str, reason: str = "", **kw: Any) -> JobResult:
        return JobResult(job=job, user_id=self.user_id, status=status, reason=reason, **kw)


class Job(Protocol):
    name: str

    def run(self, ctx: JobContext) -> JobResult:
        """Do what is due (``ctx.dry_run``: only report what would be done; no LLM call, no write)."""
        ...


class JobFailed(Exception):
    """A job could not do its work; nothing was changed. The message says why."""
