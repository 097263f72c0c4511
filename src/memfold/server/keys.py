"""API keys: ``mfk_<id>_<secret>``, shown once, stored as the SHA-256 of the secret in the index's
state store under the reserved namespace ``_memfold`` (no user namespace can start with ``_``), so
every worker and every machine sharing the index sees a new or revoked key at its next request."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInputError, NotFoundError
from ..index.base import StateStore
from ..models import utcnow
from ..workspace.userspace import check_user_id

RESERVED_NAMESPACE = "_memfold"
STATE_KIND = "api_key"
PREFIX = "mfk"
SCOPES = ("read", "write", "admin")  # each includes the ones before it
ALL_NAMESPACES = "*"  # an admin key bound to every namespace


@dataclass(frozen=True)
class ApiKey:
    """What is stored about a key (never the key itself)."""

    key_id: str
    namespaces: tuple[str, ...]
    scope: str
    name: str = ""
    created_at: str = ""
    revoked_at: str | None = None
    digest: str = field(default="", repr=False)

    @property
    def user(self) -> str:
        """The namespace a request uses when it names none."""
        return self.namespaces[0]

    def allows(self, scope: str) -> bool:
        return SCOPES.index(self.scope) >= SCOPES.index(scope)

    def covers(self, user_id: str) -> bool:
        return ALL_NAMESPACES in self.namespaces or user_id in self.namespaces

    def to_dict(self) -> dict[str, Any]:
        """The public description (``keys list``, ``GET /v1/whoami``): no digest."""
        return {"key_id": self.key_id, "namespaces": list(self.namespaces), "scope": self.scope, "name": self.name,
                "created_at": self.created_at, "revoked_at": self.revoked_at}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def check_scope(scope: str) -> str:
    if scope not in SCOPES:
        raise InvalidInputError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}", field="scope")
    return scope


class KeyStore:
    """Create, look up, list and revoke API keys in an index's state store."""

    def __init__(self, state: StateStore):
        self._state = state

    def create(self, namespaces: list[str], scope: str = "write", name: str = "") -> tuple[str, ApiKey]:
        """A new key: returns the key (shown once) and what is stored about it."""
        check_scope(scope)
        if not namespaces:
            raise InvalidInputError("a key needs at least one namespace (--user)")
        namespaces = [ns if ns == ALL_NAMESPACES else check_user_id(ns, "user") for ns in namespaces]
        if ALL_NAMESPACES in namespaces and scope != "admin":
            raise InvalidInputError("only an admin key may cover every namespace ('*')")
        if not isinstance(name, str) or len(name) > 200 or any(ord(c) < 32 for c in name):
            raise InvalidInputError("name must be at most 200 characters without control characters", field="name")
        key_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        key = ApiKey(key_id, tuple(dict.fromkeys(namespaces)), scope, name, utcnow().isoformat(), None,
                     _digest(secret))
        self._state.put_state(RESERVED_NAMESPACE, STATE_KIND, key_id, self._to_state(key))
        return f"{PREFIX}_{key_id}_{secret}", key

    def verify(self, token: str) -> ApiKey | None:
        """The live key a presented token belongs to, or None (unknown, wrong secret, revoked)."""
        parts = token.split("_", 2) if isinstance(token, str) else []
        if len(parts) != 3 or parts[0] != PREFIX or not parts[1] or not parts[2]:
            return None
        key = self.get(parts[1])
        if key is None or key.revoked_at is not None:
            return None
        return key if hmac.compare_digest(key.digest, _digest(parts[2])) else None

    def get(self, key_id: str) -> ApiKey | None:
        if not key_id.isalnum() or len(key_id) > 64:
            return None
        d = self._state.get_state(RESERVED_NAMESPACE, STATE_KIND, key_id)
        if d is None:
            return None
        return ApiKey(key_id, tuple(d.get("namespaces") or ()), str(d.get("scope", "read")), str(d.get("name", "")),
                      str(d.get("created_at", "")), d.get("revoked_at"), str(d.get("digest", "")))

    def list(self) -> list[ApiKey]:
        keys = [self.get(k) for k in self._state.list_state(RESERVED_NAMESPACE, STATE_KIND)]
        return sorted((k for k in keys if k is not None), key=lambda k: k.created_at)

    def revoke(self, key_id_or_key: str) -> ApiKey:
        """Revoke by id (or by the whole key); the record stays, marked revoked."""
        key_id = key_id_or_key.split("_")[1] if key_id_or_key.startswith(PREFIX + "_") else key_id_or_key
        key = self.get(key_id)
        if key is None:
            raise NotFoundError(f"no API key {key_id!r} (see 'memfold keys list')")
        if key.revoked_at is None:
            key = ApiKey(key.key_id, key.namespaces, key.scope, key.name, key.created_at, utcnow().isoformat(),
                         key.digest)
            self._state.put_state(RESERVED_NAMESPACE, STATE_KIND, key.key_id, self._to_state(key))
        return key

    @staticmethod
    def _to_state(key: ApiKey) -> dict[str, Any]:
        return {"namespaces": list(key.namespaces), "scope": key.scope, "name": key.name,
                "created_at": key.created_at, "revoked_at": key.revoked_at, "digest": key.digest}
