"""The public ``Middleware`` protocol: hooks around the agent loop.

Every hook is optional. Subclass :class:`Middleware` to inherit the defaults (no-op /
pass-through / allow), or pass any object that has some of the hooks: ``Agent`` reads the hooks
of each middleware once, when it is built (:func:`bind`), and an object with neither
``after_model`` nor ``wrap_tool_call`` is refused.

Hooks
-----
``after_model(turn)``
    Runs after every model turn that proposed tool calls, before any of them runs. The hook
    inspects ``turn.calls`` and may mark calls: ``turn.review(...)`` (pause for a person),
    ``turn.reject(...)`` (deny without asking) or ``turn.auto_approve(...)``. It may also call
    :func:`interlock.interrupt` to pause with a value of its own and continue with the answer.

``wrap_tool_call(request, call_next)``
    Runs around each tool execution; ``await call_next(request)`` runs the tool (or the next
    middleware) and returns its :class:`~interlock.ToolMessage`.

``validate_tools(tool_names)``
    Called once by ``Agent`` with the names of its tools; raise
    :class:`~interlock.ConfigurationError` when the middleware names a tool the agent lacks.

``allows_approve(tool_name)``
    Whether this middleware's policy lets a reviewer *approve* calls of ``tool_name``. A
    reviewer's edit that turns a call into another tool is refused unless every middleware
    allows approving that tool.

``reviewers_for(tool_name)``
    The roles allowed to decide calls of ``tool_name`` (``None``: anyone). A reviewer's edit
    that turns a call into ``tool_name`` needs one of them too (:mod:`interlock.authz`).

``policy_for(tool_name)``
    The review policy (an :class:`~interlock.InterruptOn`) that governs calls of
    ``tool_name``, or ``None``. A reviewer's edit makes a new revision of the call, reviewed
    under the policy of the tool that will run (see docs/security.md).

Composition
-----------
Middleware run in list order: ``after_model`` hooks one after another, ``wrap_tool_call`` with
the first middleware outermost. A hook that pauses with ``interrupt()`` is called again from its
start on resume; hooks before it are not re-run (their marks are stored). Marks combine
strictly: a rejection is final, a review request beats an auto-approval. Only calls that end up
approved (by policy, a rule or a person) ever reach ``wrap_tool_call``: no hook can make a
rejected call run.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .errors import ConfigurationError, InterlockWarning
from .messages import AssistantMessage, Message, ToolCall, ToolMessage
from .review_request import DECISION_TYPES as DECISION_TYPES
from .review_request import DecisionType as DecisionType
from .storage.base import MarkRecord

if TYPE_CHECKING:
    from .storage.base import RememberedApproval
    from .tools import Tool, ToolContext



@dataclass(frozen=True, kw_only=True)
class ReviewMark:
    """Pause this call for a person."""

    allowed_decisions: tuple[DecisionType, ...]
    description: str
    reviewers: tuple[str, ...] | None = None
    expires_after: timedelta | None = None
    on_expire: Literal["reject"] = "reject"
    by: str = ""
    reason: str | None = None
    approvals: int = 1
    self_approval: bool = True
    escalate_to: tuple[str, ...] | None = None
    escalate_after: timedelta | None = None
    per_call: bool = False
    """Raise a request of its own for this call instead of joining the turn's request."""
    edit_notice: str | None = None
    """The note put before the result when a reviewer edits the call: ``None`` for the
    default text, ``""`` for no note, else the note's first sentence."""
    allow_remember: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "approvals": self.approvals if self.approvals != 1 else None,
            "self_approval": False if not self.self_approval else None,
            "escalate_to": list(self.escalate_to) if self.escalate_to is not None else None,
            "escalate_after": self.escalate_after.total_seconds() if self.escalate_after
            else None,
            "kind": "review",
            "allow_remember": self.allow_remember,
            "allowed_decisions": list(self.allowed_decisions),
            "description": self.description,
            "reviewers": list(self.reviewers) if self.reviewers is not None else None,
            "expires_after": self.expires_after.total_seconds() if self.expires_after else None,
            "on_expire": self.on_expire,
            "by": self.by,
            "reason": self.reason,
            "per_call": self.per_call or None,
            "edit_notice": self.edit_notice,
        }


@dataclass(frozen=True, kw_only=True)
class RejectMark:
    """Deny this call without asking; the model gets ``message`` as an error result."""

    message: str
    by: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": "reject", "message": self.message, "by": self.by}


@dataclass(frozen=True, kw_only=True)
class AutoApproveMark:
    """Let this call run without pausing, recorded as auto-approved by ``rule``."""

    rule: str
    by: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": "auto", "rule": self.rule, "by": self.by}


Mark = ReviewMark | RejectMark | AutoApproveMark


def mark_from_json(data: dict[str, Any]) -> Mark:
    kind = data["kind"]
    if kind == "review":
        exp = data.get("expires_after")
        reviewers = data.get("reviewers")
        return ReviewMark(
            allowed_decisions=tuple(data["allowed_decisions"]),
            description=data["description"],
            reviewers=tuple(reviewers) if reviewers is not None else None,
            expires_after=timedelta(seconds=exp) if exp else None,
            on_expire=data.get("on_expire", "reject"),
            by=data.get("by", ""),
            reason=data.get("reason"),
            approvals=int(data.get("approvals") or 1),
            self_approval=data.get("self_approval") is not False,
            escalate_to=tuple(data["escalate_to"]) if data.get("escalate_to") else None,
            escalate_after=timedelta(seconds=data["escalate_after"])
            if data.get("escalate_after") else None,
            per_call=bool(data.get("per_call")),
            edit_notice=data.get("edit_notice"),
            allow_remember=data.get("allow_remember") is not False,
        )
    if kind == "reject":
        return RejectMark(message=data["message"], by=data.get("by", ""))
    return AutoApproveMark(rule=data["rule"], by=data.get("by", ""))


def mark_record(mark: Mark) -> MarkRecord:
    """The stored form of a mark (kept while later hooks of the turn pause)."""
    return MarkRecord.model_validate(mark.to_json())


def mark_from_record(record: MarkRecord) -> Mark:
    return mark_from_json(record.model_dump(mode="json"))


def _rank(mark: Mark | None) -> int:
    if isinstance(mark, RejectMark):
        return 3
    if isinstance(mark, ReviewMark):
        return 2
    if isinstance(mark, AutoApproveMark):
        return 1
    return 0


def _stricter(first: ReviewMark, second: ReviewMark) -> ReviewMark:
    """Two hooks' reviews of one call as one, every rule of both holding: the decisions both
    allow (``reject`` only where they share none: no approval both would allow), the roles
    both name, the larger quorum, no self-approval or remembering if either forbids it, the
    earlier deadline, a request of its own if either asks for one. Where the two name roles
    with none in common, no role approves for both: the call may only be rejected (by a
    holder of either's roles) and an :class:`~interlock.InterlockWarning` says so (give the
    hooks a role in common). The first hook's description, reason and escalation stand, or
    the second's where the first has none."""
    allowed = tuple(d for d in first.allowed_decisions if d in second.allowed_decisions)
    roles = first.reviewers
    if roles is None:
        roles = second.reviewers
    elif second.reviewers is not None:
        shared = tuple(r for r in roles if r in second.reviewers)
        if not shared:
            warnings.warn(InterlockWarning(
                f"Two middleware review the same call with roles that have none in common "
                f"({first.by or 'a hook'}: {', '.join(roles)}; {second.by or 'a hook'}: "
                f"{', '.join(second.reviewers)}): no role approves for both, so the call may "
                f"only be rejected. Give both a role in common."), stacklevel=3)
            allowed = ()
        roles = shared or (*roles, *(r for r in second.reviewers if r not in roles))
    deadlines = [d for d in (first.expires_after, second.expires_after) if d is not None]
    return replace(
        first, allowed_decisions=allowed or ("reject",), reviewers=roles,
        approvals=max(first.approvals, second.approvals),
        self_approval=first.self_approval and second.self_approval,
        allow_remember=first.allow_remember and second.allow_remember,
        expires_after=min(deadlines) if deadlines else None,
        per_call=first.per_call or second.per_call,
        reason=first.reason if first.reason is not None else second.reason,
        # both hooks reviewed it (a policy judges again only the calls it paused itself)
        by=first.by if second.by in first.by.split("+") else f"{first.by}+{second.by}",
        escalate_to=first.escalate_to if first.escalate_to is not None else second.escalate_to,
        escalate_after=first.escalate_after if first.escalate_to is not None
        else second.escalate_after)


@dataclass(kw_only=True)
class ModelTurn:
    """What an ``after_model`` hook sees: the assistant message and its tool calls."""

    thread_id: str
    message: AssistantMessage
    messages: Sequence[Message]
    """The conversation so far, ending with ``message``."""
    tools: Mapping[str, Tool]
    remembered_rules: Sequence[RememberedApproval] = ()
    marks: dict[str, Mark] = field(default_factory=dict)
    current_middleware: str = ""
    started_by: str | None = None
    """Who started the run (a remembered approval its creator may not give under
    ``self_approval=False`` does not apply: :func:`interlock.authz.remembered_applies`)."""
    editing: bool = False
    """True when the hooks judge a reviewer's edit: the turn holds only the edited call, as if
    the model had proposed it, and nothing the hooks mark happens unless the edit is stored.
    A hook that counts calls or has other side effects should skip them here."""

    @property
    def calls(self) -> list[ToolCall]:
        return list(self.message.tool_calls)

    def _set(self, call: ToolCall | str, mark: Mark) -> None:
        cid = call if isinstance(call, str) else call.id
        if cid not in {c.id for c in self.message.tool_calls}:
            raise ValueError(f"Tool call {cid!r} is not part of this model turn.")
        existing = self.marks.get(cid)
        if isinstance(existing, ReviewMark) and isinstance(mark, ReviewMark):
            self.marks[cid] = _stricter(existing, mark)
        elif _rank(mark) > _rank(existing):
            self.marks[cid] = mark

    def review(
        self,
        call: ToolCall | str,
        *,
        allowed_decisions: Sequence[DecisionType] = DECISION_TYPES,
        description: str,
        reviewers: Sequence[str] | None = None,
        expires_after: timedelta | None = None,
        reason: str | None = None,
        approvals: int = 1,
        self_approval: bool = True,
        escalate_to: Sequence[str] | None = None,
        escalate_after: timedelta | None = None,
        per_call: bool = False,
        edit_notice: str | None = None,
        allow_remember: bool = True,
    ) -> None:
        """Pause ``call`` until a person decides (``approvals`` distinct people for an
        approval; see :mod:`interlock.quorum` and :class:`~interlock.InterruptOn`).
        ``per_call=True`` gives it a request (an interrupt) of its own instead of joining the
        turn's request; ``edit_notice``: see :class:`~interlock.HumanInTheLoop`.
        ``allow_remember=False``: an approval of it cannot be remembered for later calls."""
        self._set(
            call,
            ReviewMark(
                allowed_decisions=tuple(allowed_decisions),
                description=description,
                reviewers=tuple(reviewers) if reviewers is not None else None,
                expires_after=expires_after,
                by=self.current_middleware,
                reason=reason,
                approvals=approvals,
                self_approval=self_approval,
                escalate_to=tuple(escalate_to) if escalate_to is not None else None,
                escalate_after=escalate_after,
                per_call=per_call,
                edit_notice=edit_notice,
                allow_remember=allow_remember,
            ),
        )

    def reject(self, call: ToolCall | str, message: str) -> None:
        """Deny ``call`` without asking; the model receives ``message`` as an error result."""
        self._set(call, RejectMark(message=message, by=self.current_middleware))

    def auto_approve(self, call: ToolCall | str, *, rule: str) -> None:
        """Let ``call`` run without pausing; the audit log records ``rule``."""
        self._set(call, AutoApproveMark(rule=rule, by=self.current_middleware))

    def remembered(self, tool_name: str) -> RememberedApproval | None:
        """The standing approval for ``tool_name`` in this thread, if a reviewer gave one."""
        for rule in self.remembered_rules:
            if rule.tool_name == tool_name:
                return rule
        return None

    def mark_of(self, call: ToolCall | str) -> Mark | None:
        return self.marks.get(call if isinstance(call, str) else call.id)


@dataclass(frozen=True, kw_only=True)
class ToolCallRequest:
    """One tool execution, as seen by ``wrap_tool_call``."""

    thread_id: str
    call: ToolCall
    """The call to execute (the reviewer's version if it was edited)."""
    original: ToolCall
    """The call as the model proposed it."""
    tool: Tool | None
    context: ToolContext


ToolCallHandler = Callable[[ToolCallRequest], Awaitable[ToolMessage]]


class Middleware(Protocol):
    """The middleware protocol. Every hook is optional; subclass to inherit the defaults
    below and override the hooks you need (``after_model`` and ``wrap_tool_call`` may be sync
    or async)."""

    @property
    def name(self) -> str:
        """Shown in audit rows and marks (``middleware:<name>``); the class name by default."""
        return type(self).__name__

    def after_model(self, turn: ModelTurn) -> Awaitable[None] | None:
        """Classify the turn's calls (``turn.review`` / ``reject`` / ``auto_approve``) or pause
        with ``interrupt()``. Default: leave every call alone."""
        return None

    async def wrap_tool_call(
        self, request: ToolCallRequest, call_next: ToolCallHandler
    ) -> ToolMessage:
        """Around one tool execution. Default: run it."""
        return await call_next(request)

    def validate_tools(self, tool_names: Collection[str]) -> None:
        """Check the middleware's configuration against the agent's tools. Default: nothing."""
        return None

    def allows_approve(self, tool_name: str) -> bool:
        """Whether approving ``tool_name`` is allowed by this middleware. Default: yes."""
        return True

    def reviewers_for(self, tool_name: str) -> Sequence[str] | None:
        """The roles that may decide calls of ``tool_name``. Default: anyone (``None``)."""
        return None

    def policy_for(self, tool_name: str) -> object | None:
        """The review policy (``InterruptOn``) of ``tool_name``. Default: none (``None``)."""
        return None


AfterModel = Callable[[ModelTurn], "Awaitable[None] | None"]
WrapToolCall = Callable[[ToolCallRequest, ToolCallHandler], Any]


@dataclass(frozen=True)
class BoundMiddleware:
    """The hooks of one middleware, read once when the ``Agent`` is built (``None``: the
    middleware does not have that hook, or has the default one)."""

    obj: object
    name: str
    after_model: AfterModel | None
    wrap_tool_call: WrapToolCall | None
    allows_approve: Callable[[str], bool] | None
    reviewers_for: Callable[[str], Sequence[str] | None] | None = None
    policy_for: Callable[[str], object | None] | None = None


def bind(mw: object, tool_names: Collection[str] | None) -> BoundMiddleware:
    """Read the hooks of ``mw`` and run its ``validate_tools`` (unless ``tool_names`` is
    None); refuse an object with neither ``after_model`` nor ``wrap_tool_call``."""
    if isinstance(mw, type):
        raise ConfigurationError(
            f"middleware=[{mw.__name__}] lists a class: pass an instance, e.g. "
            f"{mw.__name__}(...)."
        )
    cls = type(mw)

    def hook(attr: str) -> Any:
        fn = getattr(mw, attr, None)
        if fn is None or getattr(cls, attr, None) is getattr(Middleware, attr):
            return None  # missing, or the protocol's default
        if not callable(fn):
            raise ConfigurationError(f"{mw!r}.{attr} must be a method, got {fn!r}.")
        return fn

    after, wrap = getattr(mw, "after_model", None), getattr(mw, "wrap_tool_call", None)
    if after is None and wrap is None:
        raise ConfigurationError(
            f"{mw!r} is not middleware: it needs after_model(turn) and/or "
            f"wrap_tool_call(request, call_next)."
        )
    validate = hook("validate_tools")
    if validate is not None and tool_names is not None:
        validate(list(tool_names))
    name = getattr(mw, "name", None)
    return BoundMiddleware(
        obj=mw, name=name if isinstance(name, str) else cls.__name__,
        after_model=hook("after_model"), wrap_tool_call=hook("wrap_tool_call"),
        allows_approve=hook("allows_approve"), reviewers_for=hook("reviewers_for"),
        policy_for=hook("policy_for"),
    )
