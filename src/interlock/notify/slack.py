"""Slack: a message per request with buttons, updated with the outcome (the ``slack``
    extra: ``pip install -e '.[slack]'`` in the checkout).

Uses the official ``slack_sdk`` Web API client (``chat.postMessage``, ``chat.update``,
``chat.postEphemeral``) against ``api_url`` (``https://slack.com/api/`` unless configured), and
``slack_sdk``'s :class:`~slack_sdk.signature.SignatureVerifier` for interactive callbacks.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..errors import MissingDependency
from ..outbox import Delivery, NoticeCall, OutboxEvent, escalated_event_id, raised_event_id
from ..storage.base import Checkpointer
from .config import NotifyConfig, SlackSettings
from .dispatcher import DeliveryFailed
from .email import call_digest
from .render import args_text, outcome_text, subagent_lines, visible, warning_lines

CHANNEL = "slack"
ACTION_APPROVE = "interlock_approve"
ACTION_REJECT = "interlock_reject"
ACTION_OPEN = "interlock_open"


def web_client(settings: SlackSettings) -> Any:
    try:
        from slack_sdk import WebClient
    except ImportError as exc:
        raise MissingDependency("Slack notifications", "slack", "slack_sdk") from exc
    base = settings.api_url if settings.api_url.endswith("/") else settings.api_url + "/"
    return WebClient(token=settings.token, base_url=base, timeout=15)


def _button(text: str, action: str, value: str | None = None, url: str | None = None,
            style: str | None = None) -> dict[str, Any]:
    b: dict[str, Any] = {"type": "button", "text": {"type": "plain_text", "text": text},
                         "action_id": action}
    if value is not None:
        b["value"] = value
    if url is not None:
        b["url"] = url
    if style is not None:
        b["style"] = style
    return b


def _mrkdwn(text: str) -> str:
    """Untrusted text inside Slack ``mrkdwn``: ``&``, ``<`` and ``>`` escaped as Slack asks, so
    that a tool's name or description, a reviewer's message or a thread id cannot become a
    link, a mention (``<!channel>``) or a user or channel reference."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    # a code block shows text as it is, but Slack reads &, < and > there too; a ``` in the
    # value would end the block
    return "```" + _mrkdwn(text).replace("```", "`\u200b``") + "```"


def call_blocks(event: OutboxEvent, call: NoticeCall, config: NotifyConfig) -> list[dict[str, Any]]:
    """The blocks of one call: what it is, its state, and the allowed decisions as buttons."""
    n = event.notice
    head = f"*{_mrkdwn(visible(call.name, 150))}*"
    status = outcome_text(call)
    if call.approvals_required > 1:
        who = ", ".join(visible(a.by, 80) for a in call.approvals) or "nobody yet"
        status += (f" — approvals {len(call.approvals)} of {call.approvals_required} "
                   f"({who})")
    blocks: list[dict[str, Any]] = [
        # where a sub-agent's call comes from, as plain text (no mrkdwn: names stay literal)
        *({"type": "context", "elements": [{"type": "plain_text", "text": line[:2000]}]}
          for line in subagent_lines(n, call)),
        {"type": "section", "text": {"type": "mrkdwn", "text": head}},
        # the description (a model may have written it) and the status (with a reviewer's
        # message) as plain text: no bold "APPROVED", no code block, no link can be faked
        *({"type": "section", "text": {"type": "plain_text", "text": visible(d, 500),
                                        "emoji": False}}
          for d in ([call.description] if call.description else [])),
        {"type": "section", "text": {"type": "mrkdwn", "text": _code(args_text(call.args, 2500))}},
    ]
    for warning in warning_lines([call]):
        blocks.append({"type": "context", "elements": [
            {"type": "plain_text", "text": f"⚠ {warning}"[:2000]}]})
    blocks.append({"type": "context", "elements": [
        {"type": "plain_text", "text": f"Status: {status}"[:2000], "emoji": False}]})
    if call.state != "pending_review" or not n.pending:
        return blocks
    value = json.dumps({"t": n.thread_id, "i": n.interrupt_id, "c": call.tool_call_id,
                        "d": call_digest(call.name, call.args, call.revision)},
                       separators=(",", ":"))
    url = config.request_url(n.thread_id)
    buttons = []
    for d in call.allowed_decisions:
        if d == "approve":
            buttons.append(_button("Approve", f"{ACTION_APPROVE}:{call.tool_call_id}", value,
                                   style="primary"))
        elif d == "reject":
            buttons.append(_button("Reject", f"{ACTION_REJECT}:{call.tool_call_id}", value,
                                   style="danger"))
        else:
            buttons.append(_button(f"{d.capitalize()} in inbox…",
                                   f"{ACTION_OPEN}:{d}:{call.tool_call_id}", url=url))
    blocks.append({"type": "actions", "block_id": f"interlock:{call.tool_call_id}"[:255],
                   "elements": buttons})
    return blocks


def message_blocks(event: OutboxEvent, config: NotifyConfig) -> tuple[str, list[dict[str, Any]]]:
    n = event.notice
    names = ", ".join(visible(c.name, 60) for c in n.calls)
    if n.pending:
        title = f"Approval needed: {names}"
        if event.type == "request.escalated":
            title = f"Escalated — still waiting: {names}"
    else:
        title = f"Decided: {names}"
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": (
            f"*{_mrkdwn(title)}*\nThread `{_mrkdwn(visible(n.thread_id, 100))}` · "
            f"<{config.request_url(n.thread_id)}|open in the inbox>")}}]
    for c in n.calls:
        blocks += [{"type": "divider"}, *call_blocks(event, c, config)]
    # the message's text (notifications, clients without blocks) is mrkdwn too
    return _mrkdwn(title), blocks


class SlackChannel:
    name = CHANNEL

    def __init__(self, settings: SlackSettings, config: NotifyConfig,
                 store: Checkpointer) -> None:
        self.settings = settings
        self.config = config
        self.store = store
        self.client = web_client(settings)

    def wants(self, event: OutboxEvent) -> bool:
        return event.type in self.settings.events

    def channel_for(self, roles: list[str] | None) -> str:
        for r in roles or []:
            if r in self.settings.channels:
                return self.settings.channels[r]
        return self.settings.channel

    async def _call(self, method: str, **kwargs: Any) -> Any:
        from slack_sdk.errors import SlackApiError

        try:
            return await asyncio.to_thread(getattr(self.client, method), **kwargs)
        except SlackApiError as exc:
            error = exc.response.get("error", "unknown") if exc.response else "unknown"
            retry = error in ("ratelimited", "internal_error", "fatal_error",
                              "service_unavailable", "request_timeout")
            raise DeliveryFailed(f"Slack {method}: {error}", retry=retry) from exc
        except OSError as exc:
            raise DeliveryFailed(f"Slack {method}: {exc}") from exc

    async def _post(self, event: OutboxEvent, roles: list[str] | None) -> dict[str, str]:
        text, blocks = message_blocks(event, self.config)
        resp = await self._call("chat_postMessage", channel=self.channel_for(roles), text=text,
                                blocks=blocks, unfurl_links=False, unfurl_media=False)
        return {"channel": str(resp["channel"]), "ts": str(resp["ts"])}

    async def _posted(self, event_id: str) -> dict[str, str] | None:
        """Where an earlier event's message is (``None``: it was not posted)."""
        ev = await self.store.outbox_get(event_id)
        if ev is None or ev.deliveries is None or CHANNEL not in ev.deliveries:
            return None
        d = ev.deliveries[CHANNEL]
        if d.status == "pending":
            raise DeliveryFailed(f"the request's Slack message ({event_id}) is not posted yet")
        return d.ref if d.status == "delivered" and "ts" in d.ref else None

    async def deliver(self, event: OutboxEvent, delivery: Delivery) -> dict[str, str] | None:
        n = event.notice
        if event.type == "request.raised":
            roles = sorted({r for c in n.calls for r in (c.reviewers or [])}) or None
            return await self._post(event, roles)
        updated: dict[str, str] = {}
        text, blocks = message_blocks(event, self.config)
        for source in (raised_event_id(n.interrupt_id), escalated_event_id(n.interrupt_id)):
            if source == event.id:
                continue
            ref = await self._posted(source)
            if ref is not None:
                await self._call("chat_update", channel=ref["channel"], ts=ref["ts"], text=text,
                                 blocks=blocks)
                updated[source] = ref["ts"]
        if event.type == "request.escalated":
            return {**updated, **await self._post(event, n.roles)}
        return updated
