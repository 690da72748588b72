"""Webhooks following the Standard Webhooks specification (https://www.standardwebhooks.com).

Every delivery is a ``POST`` of JSON with the headers ``webhook-id`` (the event id: the same on
every retry), ``webhook-timestamp`` (seconds since the epoch, of this attempt) and
``webhook-signature`` (``v1,`` + base64 of HMAC-SHA256 over ``id.timestamp.body`` with the
endpoint's secret). Any 2xx answer counts as delivered; anything else is retried.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ..outbox import Delivery, OutboxEvent
from .config import NotifyConfig, WebhookEndpoint, secret_key
from .dispatcher import DeliveryFailed


def event_payload(event: OutboxEvent, config: NotifyConfig) -> dict[str, Any]:
    """The documented JSON body of an event (docs/notifications.md, "Webhook payload")."""
    n = event.notice
    return {
        "type": event.type,
        "timestamp": event.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "data": {
            "event_id": event.id,
            "thread_id": n.thread_id,
            "interrupt_id": n.interrupt_id,
            "subagent_thread_id": n.subagent_thread_id,
            "thread_version": n.thread_version,
            "url": config.request_url(n.thread_id),
            "api_url": f"{config.public_url}/api/threads/{n.thread_id}",
            "actor": n.actor,
            "roles": n.roles,
            "pending": n.pending,
            "calls": [c.model_dump(mode="json") for c in n.calls],
        },
    }


def shown_url(url: str) -> str:
    """An endpoint's URL as logs, errors and metric labels show it: its scheme, host and port
    only. A user's password, a query's token or a secret path (many services put the key in
    the path) stay out of every log line and label."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    rest = "/…" if parts.path.strip("/") or parts.query or parts.fragment else ""
    return f"{parts.scheme}://{host}{port}{rest}"


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value for one attempt."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    mac = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


class WebhookChannel:
    """Delivers events to one endpoint."""

    def __init__(self, endpoint: WebhookEndpoint, config: NotifyConfig,
                 *, clock: Any = None) -> None:
        self.endpoint = endpoint
        self.config = config
        # an unnamed endpoint is named by what shows of its URL and a digest of the rest, so
        # two endpoints on one host stay apart and no secret of the URL is in the name
        self.name = f"webhook:{endpoint.name}" if endpoint.name else (
            f"webhook:{shown_url(endpoint.url)}#"
            f"{hashlib.sha256(endpoint.url.encode()).hexdigest()[:8]}")
        self._shown = shown_url(endpoint.url)
        self._clock = clock or (lambda: datetime.now(UTC))

    def wants(self, event: OutboxEvent) -> bool:
        return event.type in self.endpoint.events

    async def deliver(self, event: OutboxEvent, delivery: Delivery) -> dict[str, str] | None:
        import httpx

        body = json.dumps(event_payload(event, self.config), ensure_ascii=False,
                          separators=(",", ":")).encode()
        ts = int(self._clock().timestamp())
        headers = {
            "content-type": "application/json",
            "user-agent": "interlock-webhooks",
            "webhook-id": event.id,
            "webhook-timestamp": str(ts),
            "webhook-signature": sign(self.endpoint.secret, event.id, ts, body),
        }
        try:
            async with httpx.AsyncClient(timeout=self.endpoint.timeout) as client:
                response = await client.post(self.endpoint.url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            said = str(exc).replace(self.endpoint.url, self._shown)
            raise DeliveryFailed(f"{type(exc).__name__} from {self._shown}: {said}") from exc
        if not 200 <= response.status_code < 300:
            raise DeliveryFailed(f"HTTP {response.status_code} from {self._shown}")
        return None
