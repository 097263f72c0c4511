"""Three groups of ``Memory`` methods kept out of ``memory.py`` (mixins of the facade): the policy of
a namespace (its cache, policy files, evolution), what agents call through ``tools/`` (memory
on/off, exact text edits, file views) and upkeep (reindex, maintenance runs, export/import)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..engine.storage import guard
from ..engine.write import text_edit
from ..errors import ConfigError
from ..maintenance.evolution import PolicyEvolution
from ..maintenance.policy_files import PolicyFiles
from ..metrics import measured
from ..workspace.userspace import check_user_id
from . import admin, switch

if TYPE_CHECKING:
    from ..engine.storage.store import UserStore
    from ..policy import Policy
    from ..providers.chat import ChatModel
    from ..workspace.userspace import Workspace
    from .memory import Memory

log = logging.getLogger("memfold")


class PolicyAccess:
    """The effective policy of a namespace, its policy files and policy evolution."""

    if TYPE_CHECKING:  # provided by Memory
        workspace: Workspace
        index: Any  # the index behind the hot cache (cache.cached)
        _base_policy: Policy
        _policy_args: dict[str, Any]
        _policies: dict[str, tuple[tuple[int, int, int] | None, Policy, PolicyFiles]]
        _lock: threading.RLock

        @property
        def chat_model(self) -> ChatModel | None: ...
        def language(self, user_id: str = "default") -> str: ...

    def policy(self, user_id: str = "default") -> Policy:
        """The effective policy of a namespace: defaults → config → policy_overrides.json → arguments.
        Read again when the overrides file changed (a session keeps the policy it started with);
        a file made unreadable meanwhile keeps the last good policy (with a warning)."""
        with self._lock:
            cached = self._policies.get(user_id)
            if cached is None:  # asked first: the id checked, in the form every other call uses
                user_id = check_user_id(user_id)
                cached = self._policies.get(user_id)
            # a namespace asked before: its files object is kept (the id was checked then); one stat per call
            files = cached[2] if cached is not None else self.policy_files(user_id)
            stamp = files.stamp()
            if cached is not None and cached[0] == stamp:
                return cached[1]
            try:
                pol = files.effective(self._base_policy).merged(self._policy_args, "arguments")
            except ConfigError as exc:
                if cached is None:
                    raise
                log.warning("keeping the policy of %s loaded before: %s", user_id, exc)
                pol = cached[1]
            self._policies[user_id] = (stamp, pol, files)
            return pol

    def policy_files(self, user_id: str = "default") -> PolicyFiles:
        """The namespace's ``policy_overrides.json`` and ``policy_snapshots/``: ``set``, ``reset``,
        ``snapshots``, ``rollback`` (each change snapshotted first)."""
        return PolicyFiles(self.workspace.user(check_user_id(user_id)).dir)

    @property
    def evolution(self) -> PolicyEvolution:
        """Policy evolution (``evolution_enabled``): told of every session message."""
        with self._lock:
            if "_evolution" not in self.__dict__:
                self._evolution = PolicyEvolution(policy=self.policy, files=self.policy_files, state=self.index,
                                                  chat=lambda: self.chat_model, language=self.language,
                                                  user_lock=lambda u: self.workspace.user(u).lock)
            return self._evolution


class AgentCalls(PolicyAccess):
    """Memory on/off, file edits and views (the tools/ package calls these)."""

    if TYPE_CHECKING:  # provided by Memory
        workspace: Workspace
        _base_policy: Policy
        _policy_args: dict[str, Any]
        _policies: dict[str, Any]
        _lock: threading.RLock

        def _store(self, user_id: str) -> UserStore: ...

    def memory_enabled(self, user_id: str = "default") -> bool:
        """Whether memory is on for the namespace (``[memory] enabled``, ``memfold memory on|off``), read fresh;
        an overrides file broken by hand: the last good policy's switch (a warning), else the config's."""
        try:
            return switch.is_enabled(self.workspace.user(check_user_id(user_id)), self._base_policy, self._policy_args)
        except ConfigError as exc:
            log.warning("memory on/off of %s: %s", user_id, exc)
            try:
                return self.policy(user_id).enabled
            except ConfigError:
                return self._base_policy.merged(self._policy_args, "arguments").enabled

    def set_memory_enabled(self, enabled: bool, user_id: str = "default") -> Path:
        """Switch memory on or off for a namespace (the ``enabled`` key of its policy_overrides.json)."""
        user_id = check_user_id(user_id)
        files = self.policy_files(user_id)
        files.set({"enabled": guard.flag(enabled, "enabled")}, "memory on/off")  # snapshotted first
        with self._lock:
            self._policies.pop(user_id, None)
        return files.path

    def edit_text(self, path: str, old_text: str, new_text: str, user_id: str = "default", *,
                  author: str = "memory_edit") -> text_edit.TextEditResult:
        """Replace the one occurrence of ``old_text`` in the user's MEMORY.md, learnings.md or a daily note,
        as a hand edit (backup, re-index, history ``edit`` by ``author``); PathRefusedError, TextMatchError."""
        return text_edit.edit_text(self._store(guard.user(user_id)), path, guard.text(old_text, "old_text"),
                                   guard.text(new_text, "new_text"), guard.ident(author, "author"))

    def read_file(self, path: str | None = None, user_id: str = "default", *,
                  section: str | None = None) -> text_edit.FileView:
        """A memory file (MEMORY.md by default) or one section of it as an agent sees it: no id comments,
        at most ``memory_char_limit`` characters."""
        user_id = guard.user(user_id)
        section = guard.optional_text(section, "section")
        return text_edit.read_view(self._store(user_id), path, section, self.policy(user_id).memory_char_limit)


class Upkeep:
    """Reindex, maintenance runs, export and import (``self`` is the ``Memory``)."""

    def _memory(self) -> "Memory":
        return cast("Memory", self)

    @measured("reindex", job=True)
    def reindex(self, user_id: str | None = None) -> dict[str, int]:
        """Rebuild the file-backed index rows from the files (all namespaces when ``user_id`` is None)."""
        return admin.reindex(self._memory(), user_id)

    def maintain(self, user_id: str | None = None, *, dry_run: bool = False, jobs: Sequence[str] | None = None,
                 force: bool = False, progress: Callable[[Any], None] | None = None) -> Any:
        """Run the due maintenance jobs (tidy, old-memory and long-term compression) of one namespace
        or of all; a ``MaintenanceRun`` of what was (``dry_run``: would be) done (``maintenance.run_due``)."""
        from ..maintenance import run_due

        return run_due(self._memory(), None if user_id is None else guard.user(user_id), dry_run=guard.flag(dry_run, "dry_run"),
                       jobs=jobs, force=guard.flag(force, "force"), progress=progress)

    def export(self, user_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Every record (archived ones too) as a dict, one namespace or all."""
        return admin.export(self._memory(), user_id)

    def import_records(self, rows: Iterable[dict[str, Any]]) -> int:
        """Import exported records, keeping their ids; existing ids of the same namespace are replaced,
        an id another namespace holds gets a new one. Every row is checked (fields, ranges, user ids,
        secrets) before anything is written. Returns the count."""
        return admin.import_records(self._memory(), rows)
