"""Response security headers and request guards (pure ASGI, so SSE streams are untouched).

* Every response: a strict Content-Security-Policy (scripts and styles only from this origin,
  no inline script, no framing, no form submissions), ``nosniff``, no referrer; API responses
  are not cached. The e-mail confirmation page lives under it too: its
  script posts with ``fetch``, which ``form-action`` does not govern.
* Local mode (no tokens): only loopback clients with a loopback ``Host`` header are served —
  this also defeats DNS-rebinding pages in the reviewer's browser.
* State-changing requests whose ``Origin`` is not this server (same scheme, host and port) are
  refused (no CSRF, with or without tokens), except from origins configured for the LangGraph
  API (Agent Inbox), and only under its path.
* Request bodies larger than ``max_body_bytes`` are refused with 413 before any route sees them.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .auth import host_header_is_loopback, is_loopback

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
_UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _authority(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` with the scheme's default port filled in."""
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port
    except ValueError:
        return None
    if parts.hostname is None:
        return None
    return (scheme.lower(), parts.hostname.lower(),
            port if port is not None else _DEFAULT_PORTS.get(scheme.lower(), -1))


def same_origin(origin: str, scheme: str, host_header: str) -> bool:
    """Whether the ``Origin`` header names this server: the same scheme, host and port as the
    request itself (``scheme`` as the server saw it, after a trusted proxy's
    ``X-Forwarded-Proto``; ``Host`` as sent)."""
    if origin == "null":
        return False
    o = urlsplit(origin)
    if not o.scheme or o.path not in ("", "/") or o.query or o.username or o.password:
        return False
    mine = _authority(scheme, host_header)
    theirs = _authority(o.scheme, o.netloc)
    return mine is not None and mine == theirs


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, *, local_only: bool,
                 max_body_bytes: int = 1024 * 1024, trusted_origins: Collection[str] = (),
                 trusted_prefix: str = "") -> None:
        self.app = app
        self.local_only = local_only
        self.max_body_bytes = max_body_bytes
        self.trusted_origins = frozenset(o.rstrip("/").lower() for o in trusted_origins)
        self.trusted_prefix = trusted_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await self._refuse(send, *refusal)
            return
        if scope.get("method") in _UNSAFE:
            body = await self._read_body(receive, headers)
            if body is None:
                await self._refuse(
                    send, "PayloadTooLarge",
                    f"The request body is larger than {self.max_body_bytes} bytes "
                    f"(max_body_bytes), so it was refused and nothing was stored. Send less, "
                    f"or raise the server's Limits(max_body_bytes=...).", status=413)
                return
            receive = _replay(body, receive)
        is_api = str(scope.get("path", "")).startswith("/api/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = list(_HEADERS)
                if is_api:
                    extra.append((b"cache-control", b"no-store"))
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (k, v) for k, v in extra if k not in present
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[str, str] | None:
        host = headers.get("host", "")
        if self.local_only:
            client = scope.get("client")
            client_host = client[0] if client else ""
            if not is_loopback(client_host) or not host_header_is_loopback(host):
                return ("LoopbackOnly",
                        "This interlock server runs without reviewer tokens, so it only serves "
                        "requests from this machine addressed to localhost/127.0.0.1. Configure "
                        "tokens to serve other clients.")
        origin = headers.get("origin")
        if (scope.get("method") in _UNSAFE and origin is not None
                and not same_origin(origin, str(scope.get("scheme", "http")), host)
                and not self._trusted(scope, origin)):
            return ("CrossOriginRequest",
                    f"Refused a {scope.get('method')} from origin {origin!r}: state-changing "
                    f"requests must come from this server's own pages (same scheme, host and "
                    f"port) or from non-browser clients.")
        return None

    async def _read_body(self, receive: Receive, headers: dict[str, str]) -> bytes | None:
        """The whole body, or None once it is larger than the limit (the rest is not read)."""
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    def _trusted(self, scope: Scope, origin: str) -> bool:
        """A configured origin (e.g. Agent Inbox's) calling the mounted LangGraph API."""
        if not self.trusted_prefix or origin.rstrip("/").lower() not in self.trusted_origins:
            return False
        path = str(scope.get("path", ""))
        root = str(scope.get("root_path", "")).rstrip("/")
        return path.startswith(self.trusted_prefix) or \
            path.startswith(root + self.trusted_prefix)

    @staticmethod
    async def _refuse(send: Send, error: str, message: str, status: int = 403) -> None:
        payload = json.dumps({"error": error, "message": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(payload)).encode()), *_HEADERS]})
        await send({"type": "http.response.body", "body": payload})


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the already-read body to the app, then waits as before."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
