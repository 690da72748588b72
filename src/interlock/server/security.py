"""Response security headers and request guards (pure ASGI, so SSE streams are untouched).

* Every response: a strict Content-Security-Policy (scripts and styles only from this origin,
  no inline script, no framing), ``nosniff``, no referrer; API responses are not cached.
* Local mode (no tokens): only loopback clients with a loopback ``Host`` header are served —
  this also defeats DNS-rebinding pages in the reviewer's browser.
* State-changing requests whose ``Origin`` is not this server are refused (no CSRF, with or
  without tokens).
"""

from __future__ import annotations

import json
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


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, *, local_only: bool) -> None:
        self.app = app
        self.local_only = local_only

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
        if scope.get("method") in _UNSAFE and origin is not None:
            parts = urlsplit(origin)
            if origin == "null" or parts.netloc.lower() != host.lower():
                return ("CrossOriginRequest",
                        f"Refused a {scope.get('method')} from origin {origin!r}: state-changing "
                        f"requests must come from this server's own pages or from non-browser "
                        f"clients.")
        return None

    @staticmethod
    async def _refuse(send: Send, error: str, message: str) -> None:
        payload = json.dumps({"error": error, "message": message}).encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(payload)).encode()), *_HEADERS]})
        await send({"type": "http.response.body", "body": payload})
