"""Reviewer decisions: plain JSON-serialisable types and their validation.

Validation happens entirely here, before anything is stored: a resume either applies in full
or raises :class:`~interlock.InvalidDecision` and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from .authz import CallPolicy, ToolPolicy, check_decision
from .authz import Reviewer as Reviewer  # re-exported: where it always was
from .errors import InvalidDecision
from .hitl import ActionRequest, ReviewConfig
from .tools import ArgumentError, Tool

FORMAT_VERSION = 1
"""Version of the decision / request JSON shapes."""


class _Decision(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    tool_call_id: str | None = Field(
        default=None, validation_alias=AliasChoices("tool_call_id", "toolCallId")
    )


class Approve(_Decision):
    """Run the call with the model's arguments. ``remember="thread"`` also approves every later
    call of the same tool in this thread without pausing."""

    type: Literal["approve"] = "approve"
    remember: Literal["thread"] | None = None


class EditedAction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    args: dict[str, Any]


class Edit(_Decision):
    """Run the reviewer's version of the call instead."""

    type: Literal["edit"] = "edit"
    edited_action: EditedAction = Field(
        validation_alias=AliasChoices("edited_action", "editedAction")
    )


class Reject(_Decision):
    """Do not run the call; the model gets an error result (with ``message`` as the reason)."""

    type: Literal["reject"] = "reject"
    message: str | None = None


class Respond(_Decision):
    """Do not run the call; ``message`` is returned to the model as its successful result."""

    type: Literal["respond"] = "respond"
    message: str


Decision = Annotated[Approve | Edit | Reject | Respond, Field(discriminator="type")]
_MODELS: dict[str, type[_Decision]] = {
    "approve": Approve, "edit": Edit, "reject": Reject, "respond": Respond
}


@dataclass(frozen=True)
class PendingCall:
    request: ActionRequest
    config: ReviewConfig


@dataclass(frozen=True)
class ResolvedDecision:
    call: PendingCall
    decision: Approve | Edit | Reject | Respond
    exec_name: str | None
    exec_args: dict[str, Any] | None


def _where(i: int | None, total: int, call: PendingCall) -> str:
    pos = f"decision {i + 1} of {total} " if i is not None else "the decision "
    return f"{pos}(for call {call.request.tool_call_id!r}, tool {call.request.name!r})"


def _parse_one(
    thread_id: str, raw: Any, where: str, allowed: Sequence[str]
) -> Approve | Edit | Reject | Respond:
    allowed_txt = ", ".join(allowed)
    if isinstance(raw, _Decision):
        raw = raw.model_dump(exclude_none=True)
    if not isinstance(raw, Mapping):
        raise InvalidDecision(
            thread_id,
            f"{where} is {raw!r}; a decision must be an object like {{'type': 'approve'}}. "
            f"Allowed types here: {allowed_txt}.",
        )
    dtype = raw.get("type")
    if dtype not in _MODELS:
        raise InvalidDecision(
            thread_id,
            f"{where} has type {dtype!r}, which is not a decision type. Allowed types here: "
            f"{allowed_txt}.",
        )
    if dtype not in allowed:
        raise InvalidDecision(
            thread_id,
            f"{where} has type {dtype!r}, which this call does not allow. Allowed types "
            f"here: {allowed_txt}.",
        )
    if dtype == "respond" and not str(raw.get("message") or "").strip():
        raise InvalidDecision(
            thread_id, f"{where} is 'respond' without a message; 'respond' needs a non-empty "
            f"'message', which is returned to the model as the tool's result."
        )
    try:
        return _MODELS[dtype].model_validate(dict(raw))  # type: ignore[return-value]
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'decision'}: {e['msg']}" for e in exc.errors()
        )
        extra = " ('remember' is only allowed with 'approve')" if "remember" in raw else ""
        raise InvalidDecision(
            thread_id, f"{where} is not a valid {dtype!r} decision: {problems}{extra}."
        ) from None


def is_decision(raw: Any) -> bool:
    """Whether ``raw`` is one decision (``{"type": "approve"}``, ``Approve()``, ...)."""
    return isinstance(raw, _Decision) or (isinstance(raw, Mapping) and raw.get("type") in _MODELS)


def _normalise(raw: Any) -> Any:
    if isinstance(raw, Mapping) and set(raw) == {"decisions"}:
        return raw["decisions"]
    return raw


def resolve_decisions(
    thread_id: str,
    pending: Sequence[PendingCall],
    raw: Any,
    *,
    tools: Mapping[str, Tool],
    policies: Callable[[str], Sequence[ToolPolicy]],
    reviewer: Reviewer | None,
    decided: Mapping[str, str],
) -> list[ResolvedDecision]:
    """Validate ``raw`` against the undecided calls ``pending`` (in request order).

    ``raw`` is a list (one decision per undecided call, in order), a mapping
    ``tool_call_id -> decision`` (any subset), a single decision when one call is pending, or
    LangChain's ``{"decisions": [...]}``. ``decided`` maps already-decided call ids to their state.
    ``policies(name)``: the review policies of tool ``name`` (for edits into another tool).
    Who may decide what is :mod:`interlock.authz`'s rule.
    """
    if isinstance(raw, Mapping) and "decisions" in raw and len(raw) > 1:
        extra = ", ".join(repr(k) for k in raw if k != "decisions")
        raise InvalidDecision(
            thread_id, f"next to 'decisions' there is also {extra}, which is not part of a "
            f"decision set. Pass {{'decisions': [...]}} alone; the interrupt id goes in "
            f"interrupt_id=..., the reviewer in reviewer=...; a message belongs inside a "
            f"decision ({{'type': 'reject', 'message': ...}})."
        )
    raw = _normalise(raw)
    by_id = {p.request.tool_call_id: p for p in pending}
    listing = ", ".join(f"{p.request.tool_call_id} ({p.request.name})" for p in pending)
    pairs: list[tuple[int | None, PendingCall, Any]] = []
    if isinstance(raw, Mapping) and "type" in raw and len(pending) == 1:
        raw = [raw]
    if isinstance(raw, _Decision):
        raw = [raw]
    if isinstance(raw, Mapping):
        if not raw:
            raise InvalidDecision(thread_id, f"no decisions were given; pending calls: {listing}.")
        for cid, item in raw.items():
            if cid in decided:
                raise InvalidDecision(
                    thread_id, f"call {cid!r} was already decided ({decided[cid]}); each tool "
                    f"call is decided once. Still pending: {listing or 'none'}."
                )
            if cid not in by_id:
                raise InvalidDecision(
                    thread_id, f"there is no pending call with tool_call_id {cid!r}. Pending "
                    f"calls: {listing}."
                )
            pairs.append((None, by_id[cid], item))
    elif isinstance(raw, Sequence) and not isinstance(raw, str | bytes):
        items = list(raw)
        if len(items) != len(pending):
            raise InvalidDecision(
                thread_id,
                f"got {len(items)} decision(s) for {len(pending)} pending call(s) ({listing}); "
                f"give one decision per pending call in this order, or a mapping "
                f"{{tool_call_id: decision}} to decide only some of them.",
            )
        seen: set[str] = set()
        for i, (call, item) in enumerate(zip(pending, items, strict=True)):
            cid = item.get("tool_call_id") if isinstance(item, Mapping) else getattr(
                item, "tool_call_id", None
            )
            if cid is not None and cid != call.request.tool_call_id:
                hint = (
                    f"call {cid!r} was already decided ({decided[cid]})" if cid in decided
                    else f"position {i + 1} is call {call.request.tool_call_id!r}"
                )
                raise InvalidDecision(
                    thread_id, f"decision {i + 1} of {len(items)} names tool_call_id {cid!r} but "
                    f"{hint}; list decisions in the order of the pending calls ({listing})."
                )
            seen.add(call.request.tool_call_id)
            pairs.append((i, call, item))
    else:
        raise InvalidDecision(
            thread_id, f"decisions must be a list (one per pending call, in order) or a mapping "
            f"{{tool_call_id: decision}}, got {type(raw).__name__}. Pending calls: {listing}."
        )

    out: list[ResolvedDecision] = []
    total = len(pairs)
    for pos, call, item in pairs:
        where = _where(pos, total, call)
        allowed = list(call.config.allowed_decisions)
        decision = _parse_one(thread_id, item, where, allowed)
        policy = CallPolicy(call.request.tool_call_id, call.request.name,
                            tuple(call.config.reviewers)
                            if call.config.reviewers is not None else None)
        check_decision(thread_id, reviewer, policy)
        exec_name: str | None = None
        exec_args: dict[str, Any] | None = None
        if isinstance(decision, Approve):
            if decision.remember is not None and not call.config.allow_remember:
                raise InvalidDecision(
                    thread_id, f"{where} asks to remember the approval, but the policy of "
                    f"{call.request.name!r} does not allow remembered approvals "
                    f"(allow_remember=False); approve without 'remember'."
                )
            exec_name, exec_args = call.request.name, call.request.args
        elif isinstance(decision, Edit):
            exec_name, exec_args = _check_edit(thread_id, where, call, decision, tools)
            for target in policies(exec_name):
                check_decision(thread_id, reviewer, policy, target)
        out.append(ResolvedDecision(call, decision, exec_name, exec_args))
    return out


def _check_edit(
    thread_id: str,
    where: str,
    call: PendingCall,
    decision: Edit,
    tools: Mapping[str, Tool],
) -> tuple[str, dict[str, Any]]:
    name = decision.edited_action.name
    args = decision.edited_action.args
    target = tools.get(name)
    if target is None:
        raise InvalidDecision(
            thread_id, f"{where} edits the call to tool {name!r}, which the agent does not "
            f"have. Available tools: {', '.join(sorted(tools))}."
        )
    try:
        target.validate_args(args)
    except ArgumentError as exc:
        raise InvalidDecision(
            thread_id, f"{where} has edited arguments that do not match the schema of tool "
            f"{name!r}: {'; '.join(exc.errors)}. Expected arguments: "
            f"{sorted(target.args_schema.get('properties', {}))}."
        ) from None
    return name, dict(args)

