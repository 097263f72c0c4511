"""The secret guard at every entry point (seed 002 "不应该记的"; ``text/secrets.py`` finds them).

- Free text (a text given to ``add``, a conversation turn, a daily note, new content in
  ``update``, imported content, a session message) is stored with each secret replaced by the
  visible marker ``[redacted]``. A text, turn or note that is *mostly* a secret (nothing of
  substance outside the clauses holding it, e.g. "my wifi password is hunter2xyz") is refused:
  ``SecretRefusedError`` for a single text, ``AddResult.refused`` for a turn. Session messages are
  always kept, redacted, so that the conversation still reads.
- Fields a caller sets on purpose (``structured_data`` at any depth, ``source_ids``,
  ``agent_id``, ``session_id``) are not rewritten behind the caller's back: a secret in one of
  them raises ``SecretRefusedError`` naming the field, and nothing is stored."""

from __future__ import annotations

from typing import Any

from ..errors import SecretRefusedError
from ..models import MemoryRecord
from ..text.secrets import Screened, find_secret_in_data, find_secrets, redact, redact_data, screen


def screen_text(text: str, what: str = "the text") -> Screened:
    """``text`` screened; raises SecretRefusedError when it is mostly a secret."""
    s = screen(text)
    if s.mostly_secret:
        raise SecretRefusedError(f"refused: {what} contains a {s.kinds[0]} and little else; "
                                 "secrets are never stored")
    return s


def check_fields(what: str = "", **fields: Any) -> None:
    """Raise SecretRefusedError naming the first field that holds a secret (``what`` prefixes
    the message, e.g. "record 3")."""
    for name, value in fields.items():
        if value is None:
            continue
        got = find_secret_in_data(value, name)
        if got:
            where = f"{what}: {got[0]}" if what else got[0]
            raise SecretRefusedError(f"refused: {where} contains a {got[1]}; secrets are never stored")


def redacted_note(label: str, s: Screened) -> str:
    return f"{label}: {' and '.join(f'a {k}' for k in s.kinds)} redacted"


def redact_record(r: MemoryRecord) -> tuple[MemoryRecord, tuple[str, ...]]:
    """A record read from a hand-edited file with every secret redacted (content, structured data,
    source ids, agent, session), and the kinds found; the same record and () when it had none."""
    kinds = [f.kind for f in find_secrets(r.content)]
    for name, value in (("structured_data", r.structured_data), ("source_ids", r.source_ids),
                        ("agent_id", r.agent_id), ("source_session_id", r.source_session_id)):
        got = find_secret_in_data(value, name) if value else None
        if got:
            kinds.append(got[1])
    if not kinds:
        return r, ()
    clean = r.with_(content=redact(r.content), structured_data=redact_data(r.structured_data),
                    source_ids=tuple(redact(s) for s in r.source_ids),
                    agent_id=redact(r.agent_id) if r.agent_id else r.agent_id,
                    source_session_id=redact(r.source_session_id) if r.source_session_id else r.source_session_id)
    return clean, tuple(dict.fromkeys(kinds))
