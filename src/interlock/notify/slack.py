"""Slack: a message per request with buttons, updated with the outcome (the ``slack``
    extra: ``pip install -e '.[slack]'`` in the checkout).

Uses the official ``slack_sdk`` Web API client (``chat.postMessage``, ``chat.update``,
``chat.postEphemeral``) against ``api_url`` (``https://slack.com/api/`` unless configured), and
``slack_sdk``'s :class:`~slack_sdk.signature.SignatureVerifier` for interactive callbacks.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from ..errors import MissingDependency
from ..outbox import Delivery, NoticeCall, OutboxEvent, request_event_prefix
from ..storage.base import ROW_ONLY, Checkpointer
from .config import NotifyConfig, SlackSettings
from .dispatcher import DeliveryFailed
from .email import call_digest
from .render import args_text, args_whole, outcome_text, subagent_lines, visible, warning_lines

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
    # value would end the block (so no two backticks stay side by side)
    return "```" + re.sub("`(?=`)", "`\u200b", _mrkdwn(text)) + "```"


# Slack's Block Kit limits: a message over any of them is refused (``invalid_blocks``), and a
# refused message would leave the reviewers without a word of the request.
MAX_BLOCKS = 50
SECTION_CHARS = 3000
BUTTON_VALUE_CHARS = 2000


def _args_code(args: dict[str, Any]) -> tuple[str, bool]:
    """The arguments as a code block of at most :data:`SECTION_CHARS` characters once
    escaped (escaping makes ``&`` five characters): cut shorter, with its note, as needed;
    and whether they are shown whole."""
    limit = 2500
    while len(text := _code(args_text(args, limit))) > SECTION_CHARS:
        limit = limit * 2 // 3
    return text, args_whole(args, limit)


def shows_args_whole(args: dict[str, Any]) -> bool:
    """Whether a Slack message shows these arguments whole. Where it does not, it offers
    no Approve button (the call is approved in the inbox, which shows them whole), and an
    approval sent as if from such a message is refused."""
    return _args_code(args)[1]


def call_blocks(event: OutboxEvent, call: NoticeCall, config: NotifyConfig,
                index: int = 0) -> list[dict[str, Any]]:
    """The blocks of one call (the ``index``-th of its request): what it is, its state, and
    the allowed decisions as buttons."""
    n = event.notice
    head = f"*{_mrkdwn(visible(call.name, 150))}*"
    args_code, whole = _args_code(call.args)
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
        {"type": "section", "text": {"type": "mrkdwn", "text": args_code}},
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
    if len(value) > BUTTON_VALUE_CHARS:  # a call id too long to name in a button
        blocks.append({"type": "context", "elements": [{"type": "plain_text", "text": (
            "This call's id is too long for Slack's buttons: decide it in the inbox."),
            "emoji": False}]})
    elif not whole and "approve" in call.allowed_decisions:
        # nothing runs on an approval of arguments its reviewer was not shown
        blocks.append({"type": "context", "elements": [{"type": "plain_text", "text": (
            "The arguments are too long to show here in full: approve this call in the "
            "inbox, which shows them whole."), "emoji": False}]})
    for d in call.allowed_decisions:
        if d in ("approve", "reject") and len(value) <= BUTTON_VALUE_CHARS and (
                whole or d == "reject"):
            action, style = (ACTION_APPROVE, "primary") if d == "approve" else (
                ACTION_REJECT, "danger")
            buttons.append(_button(d.capitalize(), f"{action}:{index}", value, style=style))
        else:
            buttons.append(_button(f"{d.capitalize()} in inbox…",
                                   f"{ACTION_OPEN}:{d}:{index}", url=url))
    blocks.append({"type": "actions", "block_id": f"interlock:{index}", "elements": buttons})
    return blocks


def message_blocks(event: OutboxEvent, config: NotifyConfig, *, escalated: bool = False,
                   ) -> tuple[str, list[dict[str, Any]]]:
    """The message of a request as ``event`` shows it (``escalated``: as posted to the
    escalation roles), within Slack's limits: calls that do not fit in its 50 blocks are
    named in a last line that sends the reviewer to the inbox."""
    n = event.notice
    names = _cut_names([visible(c.name, 60) for c in n.calls], 400)
    if n.pending:
        title = f"Approval needed: {names}"
        if escalated or event.type == "request.escalated":
            title = f"Escalated — still waiting: {names}"
    else:
        title = f"Decided: {names}"
    url = config.request_url(n.thread_id)
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": (
            f"*{_mrkdwn(title)}*\nThread `{_mrkdwn(visible(n.thread_id, 100))}` · "
            f"<{url}|open in the inbox>")}}]
    for i, c in enumerate(n.calls):
        more = [{"type": "divider"}, *call_blocks(event, c, config, i)]
        if len(blocks) + len(more) > MAX_BLOCKS - (1 if i < len(n.calls) - 1 else 0):
            left = len(n.calls) - i
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": (
                f"*{left} more call(s) of this request are not shown here:* "
                f"<{url}|open it in the inbox> to see and decide them.")}})
            break
        blocks += more
    # the message's text (notifications, clients without blocks) is mrkdwn too
    return _mrkdwn(title), blocks


def _cut_names(names: list[str], limit: int) -> str:
    """The tool names, as many as fit in ``limit`` characters, then how many more."""
    shown: list[str] = []
    for name in names:
        if shown and len(", ".join([*shown, name])) > limit:
            return f"{', '.join(shown)} and {len(names) - len(shown)} more"
        shown.append(name)
    return ", ".join(shown)


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

    def channels_for(self, roles: list[str] | None) -> list[str]:
        """Every channel of ``roles`` (an escalation to several roles reaches each), once."""
        found = [self.settings.channels[r] for r in roles or [] if r in self.settings.channels]
        return list(dict.fromkeys(found)) or [self.settings.channel]

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

    async def _post(self, text: str, blocks: list[dict[str, Any]],
                    channels: list[str]) -> dict[str, str]:
        """Post the message in each of ``channels``; the reference of where they are: the
        first as ``channel`` / ``ts``, every one in ``posts`` (JSON)."""
        posts = []
        for channel in channels:
            resp = await self._call("chat_postMessage", channel=channel, text=text,
                                    blocks=blocks, unfurl_links=False, unfurl_media=False)
            posts.append([str(resp["channel"]), str(resp["ts"])])
        return {"channel": posts[0][0], "ts": posts[0][1],
                "posts": json.dumps(posts, separators=(",", ":"))}

    @staticmethod
    def _posted(event: OutboxEvent) -> list[tuple[str, str]]:
        """Where the messages an earlier event posted are (none: it posted none)."""
        if event.deliveries is None or CHANNEL not in event.deliveries:
            return []
        d = event.deliveries[CHANNEL]
        if d.status == "pending":
            raise DeliveryFailed(f"the request's Slack message ({event.id}) is not posted yet")
        if d.status != "delivered" or "ts" not in d.ref:
            return []
        if "posts" in d.ref:
            return [(str(c), str(t)) for c, t in json.loads(d.ref["posts"])]
        return [(d.ref["channel"], d.ref["ts"])]

    async def _as_now(self, event: OutboxEvent) -> OutboxEvent:
        """``event`` as its request stands now: when the request no longer waits on its
        thread (the events that said so may have been pruned), its calls with the states the
        journal holds, and no buttons."""
        n = event.notice
        if not n.pending:
            return event
        snap = await self.store.load(n.thread_id, after_seq=ROW_ONLY)
        if snap is None or any(i.id == n.interrupt_id for i in snap.thread.pending):
            return event
        journal = {e.tool_call_id: e for e in
                   await self.store.journal(n.subagent_thread_id or n.thread_id)}
        calls = []
        for c in n.calls:
            e = journal.get(c.tool_call_id)
            calls.append(c if e is None else c.model_copy(update={
                "state": e.state.value, "decided_by": e.decided_by,
                "message": e.decision.message if e.decision is not None else None}))
        return event.model_copy(update={"notice": n.model_copy(update={
            "pending": False, "calls": calls})})

    async def deliver(self, event: OutboxEvent, delivery: Delivery) -> dict[str, str] | None:
        n = event.notice
        # Every message of a request shows the newest state an event of the request holds: an
        # event delivered late (a retry, a slow dispatcher) never shows an older state over a
        # newer one, such as a decided call's buttons again.
        others = [e for e in await self.store.outbox_list(
            thread_id=event.thread_id, id_prefix=request_event_prefix(n.interrupt_id),
            limit=10_000) if e.id != event.id]
        newest = await self._as_now(max(
            (e for e in others if e.notice.thread_version > n.thread_version),
            key=lambda e: e.notice.thread_version, default=event))
        escalated = event.type == "request.escalated"
        text, blocks = message_blocks(newest, self.config, escalated=escalated)
        if event.type == "request.raised":
            roles = sorted({r for c in n.calls for r in (c.reviewers or [])}) or None
            return await self._post(text, blocks, [self.channel_for(roles)])
        updated: dict[str, str] = {}
        for source in others:
            if source.type not in ("request.raised", "request.escalated"):
                continue
            for channel, ts in self._posted(source):
                await self._call("chat_update", channel=channel, ts=ts, text=text,
                                 blocks=blocks)
                updated[f"{source.id}:{channel}"] = ts
        if escalated and newest.notice.pending:  # the escalation roles are told while it waits
            return {**updated, **await self._post(text, blocks, self.channels_for(n.roles))}
        return updated
