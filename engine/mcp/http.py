"""The streamable-HTTP transport and its guards.

* **DNS rebinding**: the SDK's Host/Origin validation is always on. A loopback
  bind accepts only loopback Host headers and loopback (or no) Origins; any
  other bind accepts its own address and name, plus what the user listed in
  ``mcp.allowedHosts`` / ``mcp.allowedOrigins``. A browser page on another
  origin gets 403, a rebound name gets 421.
* **Bearer token**: required for any bind that is not loopback (the server
  refuses to start without one), and enforced on loopback too when one is
  configured. Compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from engine.mcp.settings import TOKEN_ENV, McpSettings

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_HOST = "127.0.0.1"
MCP_PATH = "/mcp"


class HttpSetupError(ValueError):
    """``--http`` cannot be served as asked (bad address, missing token)."""


@dataclass(frozen=True)
class Bind:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}{MCP_PATH}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_bind(text: str) -> Bind:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT``; the host defaults to 127.0.0.1."""
    raw = text.strip()
    if raw.startswith("["):
        host, _, rest = raw[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif raw.count(":") == 1:
        host, port_text = raw.split(":")
    elif ":" in raw:
        raise HttpSetupError(f"--http {text!r}: write an IPv6 address as [ADDR]:PORT")
    else:
        host, port_text = DEFAULT_HOST, raw
    host = host or DEFAULT_HOST
    try:
        port = int(port_text)
    except ValueError:
        raise HttpSetupError(
            f"--http {text!r}: expected [HOST:]PORT, e.g. 8765 or 0.0.0.0:8765"
        ) from None
    if not 0 <= port <= 65535:
        raise HttpSetupError(f"--http {text!r}: port must be 0–65535 (0 picks a free port)")
    return Bind(host, port)


def security_settings(bind: Bind, settings: McpSettings) -> TransportSecuritySettings:
    """Allowed Host and Origin values for a bind (see the module docstring)."""
    names = {*LOOPBACK_HOSTS, bind.host}  # the printed URL's own host (127.0.0.2 too)
    if bind.host in ("0.0.0.0", "::"):
        names |= _own_names()
    hosts, origins = [], []
    for name in sorted(names):
        shown = f"[{name}]" if ":" in name else name
        hosts += [shown, f"{shown}:*"]
        origins += [
            f"http://{shown}:*",
            f"https://{shown}:*",
            f"http://{shown}",
            f"https://{shown}",
        ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts + list(settings.allowed_hosts),
        allowed_origins=origins + list(settings.allowed_origins),
    )


def _own_names() -> set[str]:
    """This machine's name and addresses: what a Host header says on a wildcard bind."""
    out: set[str] = set()
    try:
        name = socket.gethostname()
        out.add(name)
        out |= {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
    except OSError:
        pass
    return out


def require_token(bind: Bind, settings: McpSettings) -> str | None:
    """The token to enforce, or ``HttpSetupError`` for a non-loopback bind without one."""
    if settings.token:
        return settings.token
    if not bind.loopback:
        raise HttpSetupError(
            f"--http {bind.host}:{bind.port} listens beyond this machine, so it needs a bearer "
            f'token: set ${TOKEN_ENV} (or "mcp": {{"token": "…"}} in memdeck\'s '
            "settings.json); clients then send `Authorization: Bearer <token>`"
        )
    return None


ASGIApp = Callable[
    [dict[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


_HOST_HEADER = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.\-_]+)(?::[0-9]{1,5})?$")


class HostHeaderGuard:
    """ASGI middleware: a Host header must be a name or address with at most a numeric
    port. The SDK's own check accepts ``127.0.0.1:80.evil.example`` for an allowed
    ``127.0.0.1:*`` (a prefix match); such a header is answered 421 here first."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            if not _HOST_HEADER.match(host):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 421,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"Invalid Host header"})
                return
        await self.app(scope, receive, send)


class BearerTokenGuard:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            scheme, _, value = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self._token):
                body = b'{"error": "missing or wrong bearer token (Authorization: Bearer <token>)"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="memdeck"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def open_socket(bind: Bind) -> socket.socket:
    """Bind the listening socket ourselves, so port 0 can be reported as the real port."""
    family = socket.AF_INET6 if ":" in bind.host else socket.AF_INET
    try:
        infos = socket.getaddrinfo(bind.host, bind.port, family, socket.SOCK_STREAM)
        address = infos[0][4]
    except OSError as exc:
        raise HttpSetupError(f"--http: cannot resolve {bind.host!r} ({exc})") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise HttpSetupError(
            f"--http: cannot listen on {bind.host}:{bind.port} ({exc.strerror or exc})"
        ) from None
    sock.listen(2048)
    sock.setblocking(False)
    return sock
