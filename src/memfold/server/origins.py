"""Which ``Host`` and ``Origin`` headers a memfold HTTP server answers: the guard against DNS
rebinding (a page on another site whose name is made to resolve to 127.0.0.1, so that the browser
sends it requests to the local server). One rule for ``memfold serve`` and ``memfold mcp --http``.

On a loopback address (127.0.0.1, ::1, localhost) the server answers only the loopback names (any
port) and the names of ``[server] allowed_hosts``, and a browser request's ``Origin`` must be one
of them. On another address a request's key is what guards it (a page on another site cannot read
the key a browser keeps for this one), so any name is answered unless ``allowed_hosts`` is set;
then only those names are. This module imports no web framework (the MCP server uses it too)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class HostRule:
    """Host names (lower case, no port; IPv6 in brackets) a server answers; ``None``: any."""

    names: tuple[str, ...] | None

    def host_allowed(self, host: str | None) -> bool:
        """Whether a ``Host`` header (with or without a port) names this server."""
        if self.names is None:
            return True
        if not host:
            return False
        return _name_of(host) in self.names

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether a browser ``Origin`` header is a page of this server (no ``Origin``: not a
        cross-site browser request)."""
        if origin is None or self.names is None:
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and bool(parts.netloc) and _name_of(parts.netloc) in self.names

    def check(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        """``None`` when the request may go on, else the status and the reason to refuse it with."""
        if not self.host_allowed(host):
            return 421, (f"this server does not answer Host {host!r}; add the name to [server] allowed_hosts "
                         "to reach it by that name")
        if not self.origin_allowed(origin):
            return 403, (f"requests from pages of {origin!r} are refused (another site); add its host name to "
                         "[server] allowed_hosts to allow it")
        return None

    def sdk_patterns(self) -> tuple[list[str], list[str]]:
        """The rule as the MCP SDK's ``TransportSecuritySettings`` lists (allowed hosts, allowed origins)."""
        names = self.names or ()
        hosts = [p for n in names for p in (n, f"{n}:*")]
        origins = [p for n in names for scheme in ("http", "https") for p in (f"{scheme}://{n}", f"{scheme}://{n}:*")]
        return hosts, origins


def _name_of(netloc: str) -> str:
    """``Host``/netloc without the port, lower case (``[::1]:8765`` -> ``[::1]``)."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        end = netloc.find("]")
        return netloc[:end + 1] if end > 0 else netloc
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def _setting_name(name: str) -> str:
    name = name.strip().lower()
    if name.startswith("[") or name.count(":") == 1:  # [v6]:port, [v6], name:port
        return _name_of(name)
    return f"[{name}]" if ":" in name else name  # a bare IPv6 address


def parse_hosts(text: str) -> tuple[str, ...]:
    """``[server] allowed_hosts``: comma-separated names (``memory.example.com, 10.0.0.5``)."""
    return tuple(_setting_name(n) for n in text.split(",") if n.strip())


def host_rule(bind_host: str, allowed_hosts: str = "") -> HostRule:
    """The rule for a server listening on ``bind_host`` with the setting ``allowed_hosts``."""
    extra = parse_hosts(allowed_hosts)
    if bind_host.strip().lower().strip("[]") in LOOPBACK_HOSTS:
        return HostRule(tuple(dict.fromkeys(_LOOPBACK_NAMES + extra)))
    return HostRule(extra or None)
