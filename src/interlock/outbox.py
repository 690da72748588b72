"""The notification outbox: events stored in the same commit as the change they announce.

When a review request is raised, decided, expired or escalated, the commit that stores that
change also stores one :class:`OutboxEvent`. A dispatcher (``interlock dispatch``, or the one
inside ``interlock serve``) later delivers each event to every configured channel (webhook,
Slack, e-mail) at least once, with retries and backoff. The event's ``id`` never changes, so a
receiver can drop a repeated delivery. A crash between the commit and the delivery loses
nothing: the row is still there for the next dispatcher.

These are plain records; they know nothing of HTTP, SMTP or Slack.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from .interrupts import PathStep

EventType = Literal[
    "request.raised",
    "request.approval_recorded",
    "request.decided",
    "request.expired",
    "request.escalated",
    "request.cancelled",
]
EVENT_TYPES: tuple[EventType, ...] = (
    "request.raised", "request.approval_recorded", "request.decided", "request.expired",
    "request.escalated", "request.cancelled",
)
OutboxStatus = Literal["pending", "delivered", "dead"]
DeliveryStatus = Literal["pending", "delivered", "dead", "skipped"]


class NoticeApproval(BaseModel):
    """One approval of a call that needs several."""

    by: str
    at: datetime


class NoticeCall(BaseModel):
    """One tool call of a request, as a notification shows it."""

    tool_call_id: str
    name: str
    """The tool that will run (the edited one after an edit)."""
    args: dict[str, Any]
    """The arguments it will run with (the edited ones after an edit)."""
    revision: int | None = None
    """The revision of the call shown (1 until an edit); ``None`` in events stored before
    revisions were named. A link or button decides this revision only."""
    description: str = ""
    allowed_decisions: list[str] = Field(default_factory=list)
    reviewers: list[str] | None = None
    """Roles allowed to decide (``None``: any reviewer)."""
    approvals_required: int = 1
    approvals: list[NoticeApproval] = Field(default_factory=list)
    state: str = "pending_review"
    """``pending_review`` while undecided, else the journal state (approved, rejected, ...)."""
    decided_by: str | None = None
    message: str | None = None
    """The reviewer's message of a reject / respond."""
    expires_at: datetime | None = None
    escalate_at: datetime | None = None
    path: list[PathStep] | None = None
    """For a call of a sub-agent (``Agent.as_tool``): the steps from the top-most thread
    (``Notice.thread_id``) down to the call itself, as in the API's ``ActionRequest.path``;
    ``None`` for a call of the thread's own agent."""


class Notice(BaseModel):
    """What happened to one review request: the body of every channel's message."""

    thread_id: str
    """The thread the request is decided on: for a sub-agent's request, the top-most thread
    that shows it (decisions posted to the sub-agent's own thread are refused)."""
    interrupt_id: str
    subagent_thread_id: str | None = None
    """For a sub-agent's request: the sub-agent's thread that raised it (``None``: raised on
    ``thread_id`` itself)."""
    thread_version: int
    """Orders the events of one request (deliveries may arrive out of order after retries)."""
    actor: str | None = None
    """Who caused the event: a reviewer id, ``system:expiry``, ``system:escalation``."""
    roles: list[str] | None = None
    """The roles to notify (``None``: everyone configured for the event)."""
    calls: list[NoticeCall] = Field(default_factory=list)
    pending: bool = True
    """Whether the request still waits for a decision after this event."""


class Delivery(BaseModel):
    """How far the delivery of one event to one channel has got."""

    status: DeliveryStatus = "pending"
    attempts: int = 0
    next_at: datetime | None = None
    last_error: str | None = None
    delivered_at: datetime | None = None
    ref: dict[str, str] = Field(default_factory=dict)
    """What the channel returned that later events need (e.g. Slack's channel and ``ts``)."""


class OutboxEvent(BaseModel):
    """One notification event and the state of its deliveries."""

    id: str
    """Stable delivery id (``webhook-id``): the same on every attempt to every channel."""
    type: EventType
    thread_id: str
    created_at: datetime
    notice: Notice
    status: OutboxStatus = "pending"
    next_at: datetime
    """When a dispatcher should next look at it."""
    deliveries: dict[str, Delivery] | None = None
    """Channel name -> delivery state; ``None`` until a dispatcher first handles the event
    (the channels configured then are the ones it goes to)."""
    lease_owner: str | None = None
    lease_until: datetime | None = None


def raised_event_id(interrupt_id: str) -> str:
    """The id of the ``request.raised`` event of a request (later events look it up)."""
    return f"evt_{interrupt_id}_raised"


def request_event_prefix(interrupt_id: str) -> str:
    """What the id of every event of a request starts with (see :func:`request_event_id`)."""
    return f"evt_{interrupt_id}_"


def request_event_id(interrupt_id: str, type: EventType, thread_version: int) -> str:
    """The id of an event of a request other than ``request.raised``: the request, what
    happened and the thread version the commit made. Each escalation, approval and decision
    of a request has an id of its own (a second escalation is announced too), a commit stored
    again after a lost reply makes the same id, and the events of one request are found by
    :func:`request_event_prefix`."""
    return f"{request_event_prefix(interrupt_id)}{type.removeprefix('request.')}_{thread_version}"


def outbox_json(event: OutboxEvent) -> str:
    """How an event is stored (its lease lives in columns of its own)."""
    return event.__pydantic_serializer__.to_json(
        event, exclude=_NO_LEASE, exclude_defaults=True).decode()


_NO_LEASE = {"lease_owner", "lease_until"}
