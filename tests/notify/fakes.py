"""Local counterparts of the outside world for notification tests: a webhook receiver that
verifies with the ``standardwebhooks`` library, an ``aiosmtpd`` SMTP server, and a fake Slack
Web API speaking Slack's wire format (form/JSON in, ``{"ok": true, ...}`` out)."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def new_secret() -> str:
    return "whsec_" + base64.b64encode(os.urandom(32)).decode()


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """Serve ``handler`` on a free loopback port in a thread; yields the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    verified: bool
    error: str | None = None


@dataclass
class Receiver:
    """A webhook endpoint. ``fail_first``: answer 500 to that many requests first."""

    secret: str
    fail_first: int = 0
    received: list[Received] = field(default_factory=list)
    seen_ids: set[str] = field(default_factory=set)
    accepted: list[dict[str, Any]] = field(default_factory=list)
    """Events handled once each (deduplicated by ``webhook-id``), as a receiver should."""
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    refused: list[tuple[str, str]] = field(default_factory=list)
    """Calls refused as Slack refuses them (``invalid_blocks``): the method and why."""
    failing: dict[str, list[str]] = field(default_factory=dict)
    """Method -> errors its next calls answer with (see :meth:`fail_next`)."""

    def fail_next(self, method: str, error: str = "ratelimited", times: int = 1) -> None:
        """The next ``times`` calls of ``method`` fail with ``error`` (and are not recorded)."""
        with self.lock:
            self.failing.setdefault(method, []).extend([error] * times)

    def handle(self, headers: dict[str, str], body: bytes) -> int:
        try:
            payload = Webhook(self.secret).verify(body, headers)
            rec = Received(headers, body, True)
        except WebhookVerificationError as exc:
            payload, rec = None, Received(headers, body, False, str(exc))
        with self.lock:
            self.received.append(rec)
            if not rec.verified:
                return 401
            if len(self.received) <= self.fail_first:
                return 500
            wid = headers["webhook-id"]
            if wid not in self.seen_ids:
                self.seen_ids.add(wid)
                self.accepted.append(payload)
        return 200


@contextmanager
def webhook_receiver(secret: str, fail_first: int = 0) -> Iterator[Receiver]:
    receiver = Receiver(secret, fail_first)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            code = receiver.handle({k.lower(): v for k, v in self.headers.items()}, body)
            self.send_response(code)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as port:
        receiver.url = f"http://127.0.0.1:{port}/hook"
        yield receiver


@dataclass
class SlackCall:
    method: str
    args: dict[str, Any]


def block_kit_problem(blocks: Any) -> str | None:
    """What in ``blocks`` Slack would refuse (its documented Block Kit limits), or None."""
    if blocks is None:
        return None
    if len(blocks) > 50:
        return f"{len(blocks)} blocks: at most 50"
    block_ids = [b["block_id"] for b in blocks if "block_id" in b]
    if len(block_ids) != len(set(block_ids)):
        return "block_id repeated"
    for b in blocks:
        if len(b.get("block_id", "")) > 255:
            return "block_id over 255 characters"
        if b["type"] == "section" and len(b["text"]["text"]) > 3000:
            return f"section text of {len(b['text']['text'])} characters: at most 3000"
        elements = b.get("elements", [])
        if b["type"] == "context" and len(elements) > 10:
            return "context with more than 10 elements"
        if b["type"] == "actions":
            if len(elements) > 25:
                return "actions with more than 25 elements"
            ids = [e["action_id"] for e in elements]
            if len(ids) != len(set(ids)):
                return "action_id repeated in a block"
        for e in elements:
            if len(e.get("action_id", "")) > 255:
                return "action_id over 255 characters"
            if e.get("type") == "button" and (len(e["text"]["text"]) > 75
                                              or len(e.get("value", "")) > 2000
                                              or len(e.get("url", "")) > 3000):
                return "button text, value or url over its limit"
    return None


@dataclass
class FakeSlack:
    """Records Web API calls; ``chat.postMessage`` answers with a channel and a ``ts``."""

    token: str
    calls: list[SlackCall] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    refused: list[tuple[str, str]] = field(default_factory=list)
    """Calls refused as Slack refuses them (``invalid_blocks``): the method and why."""
    failing: dict[str, list[str]] = field(default_factory=dict)
    """Method -> errors its next calls answer with (see :meth:`fail_next`)."""

    def fail_next(self, method: str, error: str = "ratelimited", times: int = 1) -> None:
        """The next ``times`` calls of ``method`` fail with ``error`` (and are not recorded)."""
        with self.lock:
            self.failing.setdefault(method, []).extend([error] * times)

    def of(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [c.args for c in self.calls if c.method == method]

    def handle(self, method: str, auth: str, args: dict[str, Any]) -> dict[str, Any]:
        if auth != f"Bearer {self.token}":
            return {"ok": False, "error": "invalid_auth"}
        with self.lock:
            failing = self.failing.get(method)
            error = failing.pop(0) if failing else None
        if error is not None:
            return {"ok": False, "error": error}
        if (problem := block_kit_problem(args.get("blocks"))) is not None:
            with self.lock:
                self.refused.append((method, problem))
            return {"ok": False, "error": "invalid_blocks", "errors": [problem]}
        with self.lock:
            self.calls.append(SlackCall(method, args))
            n = len(self.calls)
        if method == "chat.postMessage":
            return {"ok": True, "channel": "C" + str(args.get("channel", "")).strip("#").upper(),
                    "ts": f"{1700000000 + n}.000100", "message": {"text": args.get("text")}}
        if method in ("chat.update", "chat.postEphemeral"):
            return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts", "1.1")}
        return {"ok": False, "error": "unknown_method"}


@contextmanager
def fake_slack(token: str = "xoxb-test-token") -> Iterator[FakeSlack]:
    slack = FakeSlack(token)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            ctype = self.headers.get("content-type", "")
            if "json" in ctype:
                args = json.loads(raw or b"{}")
            else:
                args = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                for key in ("blocks", "attachments"):
                    if isinstance(args.get(key), str):
                        args[key] = json.loads(args[key])
            method = self.path.rstrip("/").rsplit("/", 1)[-1]
            answer = json.dumps(slack.handle(method, self.headers.get("authorization", ""),
                                             args)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as port:
        slack.url = f"http://127.0.0.1:{port}/api/"
        yield slack


@dataclass
class Mailbox:
    messages: list[Message] = field(default_factory=list)
    port: int = 0

    def wait(self, count: int, timeout: float = 10.0) -> list[Message]:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(self.messages)


@contextmanager
def smtp_server() -> Iterator[Mailbox]:
    """A real SMTP server (``aiosmtpd``) on a free loopback port."""
    import socket

    from aiosmtpd.controller import Controller

    box = Mailbox()

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            box.messages.append(message_from_bytes(envelope.content))
            return "250 OK"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        box.port = s.getsockname()[1]
    controller = Controller(Handler(), hostname="127.0.0.1", port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()
