"""Memory on/off (seed 002 "记忆关闭时"): ``[memory] enabled`` in the config, overridden per user by
the ``enabled`` key of ``<root>/<user>/policy_overrides.json`` (``memfold memory off --user U``).

Read fresh at every call, not from a running ``Memory``'s policy cache: switching memory off
takes effect at once in every process (context building, tools, chat, MCP)."""

from __future__ import annotations

from typing import Any

from ..policy import Policy, load_overrides
from ..workspace.userspace import UserSpace

OVERRIDES = "policy_overrides.json"


def is_enabled(space: UserSpace, base: Policy, arguments: dict[str, Any]) -> bool:
    """Whether memory is on for the namespace: config → the user's overrides → ``Memory(policy=)``."""
    path = space.dir / OVERRIDES
    return base.merged({k: v for k, v in load_overrides(path).items() if k == "enabled"}, str(path)) \
        .merged({k: v for k, v in arguments.items() if k == "enabled"}, "arguments").enabled
