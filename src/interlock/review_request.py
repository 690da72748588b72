"""The review request: what a paused turn asks reviewers to decide, typed (SPEC §4).

A review interrupt's ``value`` is a :class:`HITLRequest`: the gated calls
(:class:`ActionRequest`) and what a reviewer may do with each (:class:`ReviewConfig`, with the
approvals given so far, :class:`ApprovalRecord`). It is stored as plain JSON of the same shape
as LangChain's ``HITLRequest`` (``action_requests`` / ``review_configs``, snake case), so rows
written by any earlier version load unchanged.

Code reads a stored value with :func:`read_request` and makes one with :func:`request_value`,
and nowhere else looks into the JSON: every reader below (access rules, notifications, search,
deadlines, the server, the CLI) asks the typed request (:meth:`HITLRequest.calls`,
:meth:`HITLRequest.deadline`, ...). Storage reads it too, so this module imports nothing but
the interrupt types.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from ._canonical import canonical_json
from .interrupts import PathStep

DecisionType = Literal["approve", "edit", "reject", "respond"]
DECISION_TYPES: tuple[DecisionType, ...] = ("approve", "edit", "reject", "respond")


class ActionRequest(BaseModel):
    """One gated tool call waiting for a decision."""

    tool_call_id: str
    name: str
    args: dict[str, Any]
    description: str
    reason: str | None = None
    """Why the call pauses when it is not the plain policy: e.g. ``outcome_unknown``."""
    path: list[PathStep] | None = None
    """For a call of a sub-agent shown in its parent's request: the steps from the parent's
    thread to this call, the last one being this call itself in the sub-agent's thread
    (see :class:`~interlock.interrupts.PathStep`). ``None``: a call of this thread."""


class ApprovalRecord(BaseModel):
    """One reviewer's approval of a call that needs several (quorum)."""

    by: str
    at: datetime


class ReviewConfig(BaseModel):
    """What a reviewer may do with the matching action request."""

    action_name: str
    allowed_decisions: list[DecisionType]
    args_schema: dict[str, Any] = Field(default_factory=dict)
    reviewers: list[str] | None = None
    expires_at: datetime | None = None
    approvals: int | None = None
    """Distinct approvals the call needs (``None``: one)."""
    approved_by: list[ApprovalRecord] | None = None
    """Approvals given so far, while fewer than ``approvals``."""
    self_approval: bool | None = None
    """``False``: whoever started the run may not approve this call."""
    requested_by: str | None = None
    """Who started the run that raised the request (when known)."""
    escalate_to: list[str] | None = None
    escalate_at: datetime | None = None
    escalated_at: datetime | None = None
    allow_remember: bool = True
    """Whether an approval may be remembered for later calls (``remember="thread"``)."""
    revision: int = 1
    """Which version of the call this is: 1 as the model proposed it, one more at every edit
    that changes the tool or the arguments. A decision names the revision it was made for
    (without one it counts only for revision 1); approvals count only for their revision."""
    edited_by: str | None = None
    """Who made this revision by an edit (``None``: revision 1, the model's proposal)."""

    @property
    def approvals_required(self) -> int:
        return self.approvals or 1

    @property
    def reviewer_roles(self) -> tuple[str, ...] | None:
        """The roles allowed to decide (``None``: anyone), as a tuple."""
        return tuple(self.reviewers) if self.reviewers is not None else None


@dataclass(frozen=True)
class PendingCall:
    """One call of a review request with its review settings."""

    request: ActionRequest
    config: ReviewConfig

    @property
    def tool_call_id(self) -> str:
        return self.request.tool_call_id


class ReviewRules(Protocol):
    """The review settings of a policy (:class:`InterruptOn`, or a middleware's review mark)."""

    @property
    def allowed_decisions(self) -> Sequence[DecisionType]: ...
    @property
    def reviewers(self) -> Sequence[str] | None: ...
    @property
    def expires_after(self) -> timedelta | None: ...
    @property
    def approvals(self) -> int: ...
    @property
    def self_approval(self) -> bool: ...
    @property
    def escalate_to(self) -> Sequence[str] | None: ...
    @property
    def escalate_after(self) -> timedelta | None: ...
    @property
    def allow_remember(self) -> bool: ...


def review_config(name: str, rules: ReviewRules, *, now: datetime,
                  args_schema: dict[str, Any], requested_by: str | None,
                  revision: int = 1, edited_by: str | None = None,
                  approved_by: list[ApprovalRecord] | None = None) -> ReviewConfig:
    """The review settings of one call of tool ``name`` under ``rules``, its deadlines
    counted from ``now`` (when the call, or this revision of it, was raised)."""
    return ReviewConfig(
        action_name=name, allowed_decisions=list(rules.allowed_decisions),
        args_schema=args_schema,
        reviewers=list(rules.reviewers) if rules.reviewers is not None else None,
        expires_at=now + rules.expires_after if rules.expires_after else None,
        approvals=rules.approvals if rules.approvals > 1 else None,
        approved_by=approved_by or None,
        self_approval=False if not rules.self_approval else None,
        requested_by=requested_by,
        escalate_to=list(rules.escalate_to) if rules.escalate_to else None,
        escalate_at=now + rules.escalate_after if rules.escalate_after else None,
        allow_remember=rules.allow_remember, revision=revision, edited_by=edited_by)


def shown_digest(action: ActionRequest, config: ReviewConfig) -> str:
    """A digest of what a reviewer is shown of one call: the tool, its arguments (canonical
    JSON) and the rules it is decided under. Audit rows of decisions record it."""
    shown = {"name": action.name, "args": action.args, "revision": config.revision,
             "allowed_decisions": config.allowed_decisions, "reviewers": config.reviewers,
             "approvals": config.approvals_required, "self_approval": config.self_approval,
             "allow_remember": config.allow_remember}
    return hashlib.sha256(canonical_json(shown).encode()).hexdigest()[:32]


class HITLRequest(BaseModel):
    """The value of a review interrupt: one per model turn that has gated calls.

    Shaped like LangChain's ``HITLRequest`` (``action_requests`` / ``review_configs``, snake
    case) plus ``tool_call_id`` and ``args_schema``, so LangChain-style clients can read it.
    """

    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    @classmethod
    def of(cls, value: Any) -> HITLRequest:
        """The request of a review interrupt's ``value`` (stored JSON or already typed)."""
        return value if isinstance(value, cls) else cls.model_validate(value)

    def pairs(self) -> Iterator[tuple[ActionRequest, ReviewConfig]]:
        """Each call with its review settings, in the request's order."""
        return zip(self.action_requests, self.review_configs, strict=True)

    def calls(self) -> list[PendingCall]:
        """Each call with its review settings, in the request's order."""
        return [PendingCall(a, c) for a, c in self.pairs()]

    def remaining(self, decided: Collection[str]) -> list[PendingCall]:
        """The calls whose ids are not in ``decided``, in the request's order."""
        return [c for c in self.calls() if c.request.tool_call_id not in decided]

    def tool_names(self) -> list[str]:
        return [a.name for a in self.action_requests]

    def paths(self) -> dict[str, list[PathStep] | None]:
        """Each call's path (``None``: a call of this thread), by tool call id."""
        return {a.tool_call_id: a.path for a in self.action_requests}


_READ_KEPT = 512
_read_cache: dict[int, tuple[Any, HITLRequest]] = {}
_read_lock = threading.Lock()


def read_request(value: Any) -> HITLRequest:
    """The typed request of a review interrupt's ``value`` (stored JSON or already typed), for
    code that only reads it. The typed request of a stored ``value`` is built once and shared
    by every reader of that same object (the engine, the access rules, the notifications and
    the store all read a pending request in one cycle). Never hand the result to a caller
    that may change it, and never change it: a change would show in every later read. A
    stored value is never changed in place either (a new request is a new object), so a
    shared result cannot go stale."""
    if isinstance(value, HITLRequest):
        return value
    key = id(value)
    with _read_lock:
        hit = _read_cache.get(key)
    if hit is not None and hit[0] is value:  # the entry holds ``value``: its id is not reused
        return hit[1]
    req = HITLRequest.model_validate(value)
    with _read_lock:
        if len(_read_cache) >= _READ_KEPT:
            del _read_cache[next(iter(_read_cache))]
        _read_cache[key] = (value, req)
    return req


def request_value(calls: Sequence[PendingCall]) -> dict[str, Any]:
    """The stored value of a review request for ``calls``: plain JSON (see the module's
    docstring). Its readers get the typed request it was made from (:func:`read_request`),
    without parsing it back."""
    req = HITLRequest(action_requests=[c.request for c in calls],
                      review_configs=[c.config for c in calls])
    value = req.model_dump(mode="json", exclude_none=True)
    with _read_lock:
        if len(_read_cache) >= _READ_KEPT:
            del _read_cache[next(iter(_read_cache))]
        _read_cache[id(value)] = (value, req)
    return value


# ---------------------------------------------------------------------- what a store indexes
# A store derives a row's indexed columns from its pending requests at every commit, for rows
# of any writer (a third-party backend's conformance rows hold partial requests): these read
# the stored JSON (or a typed request) field by field, never validating it.


def index_deadline(value: Any) -> datetime | None:
    """The earliest ``expires_at`` — or ``escalate_at`` of a call not escalated yet — of a
    stored review request (``None``: no deadline)."""
    earliest: datetime | None = None
    plain = isinstance(value, dict)
    for config in (value.get("review_configs") if plain
                   else getattr(value, "review_configs", None)) or []:
        if isinstance(config, dict):
            times = [config.get("expires_at"),
                     None if config.get("escalated_at") else config.get("escalate_at")]
        else:
            times = [getattr(config, "expires_at", None), None if getattr(
                config, "escalated_at", None) else getattr(config, "escalate_at", None)]
        for at in times:
            if isinstance(at, str):
                at = datetime.fromisoformat(at)
            if isinstance(at, datetime) and (earliest is None or at < earliest):
                earliest = at
    return earliest


def index_calls(value: Any) -> list[tuple[Any, Any]]:
    """The tool name and arguments of each call of a stored review request."""
    plain = isinstance(value, dict)
    return [(a.get("name"), a.get("args")) if isinstance(a, dict)
            else (getattr(a, "name", ""), getattr(a, "args", {}))
            for a in (value.get("action_requests") if plain
                      else getattr(value, "action_requests", None)) or []]
