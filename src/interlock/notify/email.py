"""E-mail: one message per request to each reviewer of its roles, with signed decision links.

A link names one reviewer, one call and the exact call it was sent for (a digest of the tool,
the arguments and the call's revision), and expires after ``link_ttl`` seconds. Its signed
token is in the URL's fragment (``/notify/email#<token>``), which browsers do not send:
opening the link loads a confirmation page whose script posts the token in a request body,
so the token is in no server's or proxy's log, and a mail scanner that fetches the link has
nothing to log or use. Opening it only shows what it is for; the decision is the page's
second ``POST``, which goes through the same decision path as every other surface. A link
works once: afterwards the call is decided, or this reviewer's approval is already counted,
or the call changed (an edit), and the link is refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import smtplib
import ssl
import time
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

from .._canonical import canonical_json
from ..errors import InterlockError
from ..outbox import Delivery, NoticeCall, OutboxEvent
from .config import EmailSettings, NotifyConfig, Person
from .dispatcher import DeliveryFailed
from .render import call_lines, visible


def call_digest(name: str, args: dict[str, Any], revision: int | None = None) -> str:
    """Identifies the exact call a link or button was made for: its tool, its arguments and
    its revision, so that a call edited away and back again (revision 3 with the tool and
    arguments of revision 1) is not taken for the revision the message showed.
    ``revision=None`` gives the digest of messages sent before revisions were named, which
    stand for revision 1 only (as a decision that names no revision does)."""
    canon = canonical_json([name, args] if revision is None else [name, args, revision])
    return hashlib.sha256(canon.encode()).hexdigest()[:32]


def shown_digests(name: str, args: dict[str, Any], revision: int) -> tuple[str, ...]:
    """The digests a link or button for this revision of a call may carry."""
    current = call_digest(name, args, revision)
    return (current, call_digest(name, args)) if revision == 1 else (current,)


class LinkRefused(InterlockError):
    """A decision link is invalid, expired or already used."""


@dataclass(frozen=True)
class Link:
    thread_id: str
    interrupt_id: str
    tool_call_id: str
    reviewer: str
    digest: str
    expires: float


class LinkSigner:
    """Signs and checks decision links (``itsdangerous``, salted for this purpose)."""

    def __init__(self, secret: str) -> None:
        from itsdangerous import URLSafeSerializer

        self._s = URLSafeSerializer(secret, salt="interlock-email-decision-link")

    def make(self, link: Link) -> str:
        return str(self._s.dumps([link.thread_id, link.interrupt_id, link.tool_call_id,
                                  link.reviewer, link.digest, link.expires]))

    def check(self, token: str, now: float) -> Link:
        from itsdangerous import BadSignature

        try:
            raw = self._s.loads(token)
            link = Link(str(raw[0]), str(raw[1]), str(raw[2]), str(raw[3]), str(raw[4]),
                        float(raw[5]))
        except (BadSignature, IndexError, TypeError, ValueError):
            raise LinkRefused("This decision link is not valid (it was changed or cut short). "
                              "Open the request in the inbox instead.") from None
        if link.expires < now:
            raise LinkRefused("This decision link has expired. Open the request in the inbox "
                              "instead, or wait for a new notification.")
        return link


def recipients(config: NotifyConfig, roles: set[str] | None,
               role_of: dict[str, frozenset[str]]) -> list[Person]:
    """People with an e-mail address holding one of ``roles`` (``None``: everyone)."""
    out = []
    for p in config.reviewers:
        if not p.email:
            continue
        held = set(p.roles) if p.roles is not None else set(role_of.get(p.id, frozenset()))
        if roles is None or held & roles:
            out.append(p)
    return out


def notice_roles(event: OutboxEvent) -> set[str] | None:
    """The roles an event is for: the escalation roles, else the calls' reviewer roles."""
    n = event.notice
    if n.roles is not None:
        return set(n.roles)
    roles: set[str] = set()
    for c in n.calls:
        if c.reviewers is None:
            return None
        roles |= set(c.reviewers)
    return roles


class EmailChannel:
    name = "email"

    def __init__(self, settings: EmailSettings, config: NotifyConfig,
                 role_of: dict[str, frozenset[str]] | None = None,
                 clock: Any = None) -> None:
        self.settings = settings
        self.config = config
        self.role_of = role_of or {}
        self.signer = LinkSigner(settings.link_secret)
        self._clock = clock or time.time

    def wants(self, event: OutboxEvent) -> bool:
        return event.type in self.settings.events and event.notice.pending

    def link_url(self, event: OutboxEvent, call: NoticeCall, person: Person) -> str:
        token = self.signer.make(Link(
            event.notice.thread_id, event.notice.interrupt_id, call.tool_call_id, person.id,
            call_digest(call.name, call.args, call.revision),
            self._clock() + self.settings.link_ttl))
        # the token in the fragment: browsers do not send it, so no server or proxy logs it
        return f"{self.config.public_url}/notify/email#{token}"

    def message(self, event: OutboxEvent, person: Person) -> EmailMessage:
        n = event.notice
        pending = [c for c in n.calls if c.state == "pending_review"]
        names = ", ".join(visible(c.name, 60) for c in pending)
        escalated = event.type == "request.escalated"
        msg = EmailMessage()
        msg["Subject"] = (("[escalated] " if escalated else "")
                          + f"Approval needed: {names} (thread {visible(n.thread_id, 60)})")
        msg["From"] = self.settings.sender
        assert person.email is not None
        msg["To"] = person.email
        msg["Message-ID"] = f"<{event.id}.{person.id}@interlock>"
        lines = [f"Hello {person.id},", ""]
        if escalated:
            lines += ["No reviewer has decided this request yet; it is escalated to you.", ""]
        lines += [f"An agent waits for your decision on thread {visible(n.thread_id, 200)}.",
                  ""]
        for c in pending:
            lines += call_lines(c, n)
            lines += ["", f"Decide (opens a confirmation page): {self.link_url(event, c, person)}",
                      ""]
        lines += [f"Inbox: {self.config.request_url(n.thread_id)}",
                  f"Links expire after {self.settings.link_ttl / 3600:g} hour(s) and work once."]
        msg.set_content("\n".join(lines))
        return msg

    async def deliver(self, event: OutboxEvent, delivery: Delivery) -> dict[str, str] | None:
        people = recipients(self.config, notice_roles(event), self.role_of)
        if not people:
            return {"sent_to": ""}
        messages = [self.message(event, p) for p in people]
        await asyncio.to_thread(self._send, messages)
        return {"sent_to": ",".join(p.id for p in people)}

    def _send(self, messages: list[EmailMessage]) -> None:
        s = self.settings
        try:
            smtp: smtplib.SMTP
            if s.ssl:
                smtp = smtplib.SMTP_SSL(s.host, s.port, timeout=s.timeout,
                                        context=ssl.create_default_context())
            else:
                smtp = smtplib.SMTP(s.host, s.port, timeout=s.timeout)
            with smtp:
                if s.starttls:
                    smtp.starttls(context=ssl.create_default_context())
                if s.username:
                    smtp.login(s.username, s.password or "")
                for m in messages:
                    smtp.send_message(m)
        except (OSError, smtplib.SMTPException) as exc:
            raise DeliveryFailed(f"SMTP {s.host}:{s.port}: {exc}") from exc
