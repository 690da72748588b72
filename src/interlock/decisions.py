"""Reviewer decisions: plain JSON-serialisable types and their validation.

Validation happens entirely here, before anything is stored: a resume either applies in full
or raises :class:`~interlock.InvalidDecision` and changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from .authz import CallPolicy, ToolPolicy, check_decision, check_remember
from .authz import Reviewer as Reviewer  # re-exported: where it always was
from .errors import InvalidDecision, StaleRevision, UnseenRequest
from .interrupts import Interrupt
from .review_request import PendingCall as PendingCall  # where it was always imported from
from .review_request import read_request
from .tools import ArgumentError, Tool

FORMAT_VERSION = 1
"""Version of the decision / request JSON shapes."""

METADATA_MAX_BYTES = 8192
"""The largest ``metadata`` a decision may carry, in bytes of its JSON (UTF-8)."""


class _Decision(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    tool_call_id: str | None = Field(
        default=None, validation_alias=AliasChoices("tool_call_id", "toolCallId")
    )
    revision: int | None = Field(default=None, ge=1)
    """The revision of the call this decision was made for (as shown to the reviewer). A
    decision for another revision is refused (:class:`~interlock.StaleRevision`); without
    one, it is accepted only while the call was never edited (revision 1)."""
    metadata: dict[str, Any] | None = None
    """Data the reviewer gives the tool with the decision (a ticket number, a limit, a note):
    a JSON object of at most :data:`METADATA_MAX_BYTES` encoded. It is stored with the
    decision and audited, and a call that runs on an ``approve`` or ``edit`` sees it as
    :attr:`ToolContext.decision_metadata <interlock.ToolContext.decision_metadata>`."""

    @field_validator("metadata")
    @classmethod
    def _json_object(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        try:
            size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode())
        except (TypeError, ValueError) as exc:
            raise ValueError(f"must be a JSON object (strings, numbers, true/false, null, "
                             f"lists and objects): {exc}") from None
        if size > METADATA_MAX_BYTES:
            raise ValueError(f"is {size:,} bytes as JSON; at most {METADATA_MAX_BYTES:,} are "
                             f"allowed (keep large data elsewhere and pass its id)")
        return value


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
    if "type" not in raw:
        # {"action": "approve"}, {"decision": "reject"}: the type under another key
        for key, value in raw.items():
            if key in _DECISION_FIELDS or not isinstance(value, str):
                continue
            named = _SYNONYMS.get(value.lower(), value.lower())
            if named in _MODELS:
                raise InvalidDecision(
                    thread_id,
                    f"{where} has no 'type' key; write {{'type': {named!r}}} instead of "
                    f"{{{key!r}: {value!r}}}. Allowed types here: {allowed_txt}.",
                )
        raise InvalidDecision(
            thread_id,
            f"{where} has no 'type' key (it has {sorted(map(str, raw))}); a decision is an "
            f"object like {{'type': 'approve'}}. Allowed types here: {allowed_txt}.",
        )
    if dtype not in _MODELS:
        hint = _SYNONYMS.get(str(dtype).lower()) if isinstance(dtype, str) else None
        raise InvalidDecision(
            thread_id,
            f"{where} has type {dtype!r}, which is not a decision type."
            + (f" Did you mean {{'type': {hint!r}}}?" if hint in allowed else "")
            + f" Allowed types here: {allowed_txt}.",
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
        extra = ""
        if "remember" in raw:  # the one value approve takes, or the types that take none
            extra = (" ('remember' takes one value: \"thread\", for this thread)"
                     if dtype == "approve" else " ('remember' is only allowed with 'approve')")
        for word, field in _FIELD_SYNONYMS.items():
            if word in raw and field in _MODELS[dtype].model_fields:
                extra += f" (did you mean {field!r} instead of {word!r}?)"
        raise InvalidDecision(
            thread_id, f"{where} is not a valid {dtype!r} decision: {problems}{extra}."
        ) from None


# other systems' words for a decision type (Agent Inbox's "accept", ...) and for its fields
_SYNONYMS = {"accept": "approve", "approved": "approve", "allow": "approve", "yes": "approve",
             "deny": "reject", "decline": "reject", "rejected": "reject", "no": "reject",
             "response": "respond", "answer": "respond", "edited": "edit", "modify": "edit"}
_DECISION_FIELDS = frozenset({"message", "edited_action", "remember", "metadata", "tool_call_id",
                              "revision"})
"""The fields a decision has besides ``type``: their values are never the type."""
_FIELD_SYNONYMS = {"reason": "message", "comment": "message", "args": "edited_action",
                   "action": "edited_action"}


def is_decision(raw: Any) -> bool:
    """Whether ``raw`` is one decision (``{"type": "approve"}``, ``Approve()``, ...)."""
    return isinstance(raw, _Decision) or (isinstance(raw, Mapping) and raw.get("type") in _MODELS)


def _normalise(raw: Any) -> Any:
    if isinstance(raw, Mapping) and set(raw) == {"decisions"}:
        return raw["decisions"]
    return raw


def decision_items(raw: Any) -> list[tuple[str, Any]]:
    """Every decision in ``raw`` whatever shape it came in (the shapes
    :func:`resolve_decisions` takes: a list, a mapping ``tool_call_id -> decision``, a single
    decision, any of them in LangChain's ``{"decisions": ...}``), each with where it is
    (``decisions.0``, ``decisions.<call id>``, ``decision``). For checks that must see each
    decision before it is resolved, such as the server's size limits."""
    raw = _normalise(raw)
    if is_decision(raw):
        one = raw.model_dump(exclude_none=True) if isinstance(raw, _Decision) else raw
        return [("decision", one)]
    if isinstance(raw, Mapping):
        return [(f"decisions.{k}", v) for k, v in raw.items()]
    if isinstance(raw, Sequence) and not isinstance(raw, str | bytes):
        return [(f"decisions.{n}", v) for n, v in enumerate(raw)]
    return []


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
    """Validate ``raw`` against the undecided calls ``pending`` (in request order): each
    decision is paired with its call (:func:`pair_decisions`), then checked on its own
    (:func:`validate_decision`). ``policies(name)``: the review policies of tool ``name`` (for
    edits into another tool). Who may decide what is :mod:`interlock.authz`'s rule."""
    pairs = pair_decisions(thread_id, pending, raw, decided=decided)
    return [validate_decision(thread_id, p, len(pairs), tools=tools, policies=policies,
                              reviewer=reviewer) for p in pairs]


def _named_call(item: Any) -> Any:
    """The ``tool_call_id`` a raw decision names itself (``None``: none)."""
    if isinstance(item, Mapping):  # both spellings a decision accepts
        named = item.get("tool_call_id")
        return named if named is not None else item.get("toolCallId")
    return getattr(item, "tool_call_id", None)


class PairedDecision(NamedTuple):
    """One raw decision and the pending call it is for (not validated yet)."""

    position: int | None
    """Its place in a list of decisions (``None``: given in a mapping by call id)."""
    call: PendingCall
    raw: Any


def pair_decisions(thread_id: str, pending: Sequence[PendingCall], raw: Any, *,
                   decided: Mapping[str, str]) -> list[PairedDecision]:
    """Which raw decision is for which of the undecided calls ``pending`` (in request order).

    ``raw`` is a list (one decision per undecided call, in order), a mapping
    ``tool_call_id -> decision`` (any subset), a single decision when one call is pending, or
    LangChain's ``{"decisions": [...]}``. ``decided`` maps already-decided call ids to their state.
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
    pairs: list[PairedDecision] = []
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
            named = _named_call(item)
            if named is not None and named != cid:
                raise InvalidDecision(
                    thread_id, f"the decision given for call {cid!r} names tool_call_id "
                    f"{named!r}: a decision is for the call it is given under. Give it under "
                    f"{named!r}, or leave its tool_call_id out. Pending calls: {listing}."
                )
            pairs.append(PairedDecision(None, by_id[cid], item))
    elif isinstance(raw, Sequence) and not isinstance(raw, str | bytes):
        items = list(raw)
        if len(items) != len(pending):
            raise InvalidDecision(
                thread_id,
                f"got {len(items)} decision(s) for {len(pending)} pending call(s) ({listing}); "
                f"give one decision per pending call in this order, or a mapping "
                f"{{tool_call_id: decision}} to decide only some of them.",
            )
        for i, (call, item) in enumerate(zip(pending, items, strict=True)):
            cid = _named_call(item)
            if cid is not None and cid != call.request.tool_call_id:
                hint = (
                    f"call {cid!r} was already decided ({decided[cid]})" if cid in decided
                    else f"position {i + 1} is call {call.request.tool_call_id!r}"
                )
                raise InvalidDecision(
                    thread_id, f"decision {i + 1} of {len(items)} names tool_call_id {cid!r} but "
                    f"{hint}; list decisions in the order of the pending calls ({listing})."
                )
            pairs.append(PairedDecision(i, call, item))
    else:
        raise InvalidDecision(
            thread_id, f"decisions must be a list (one per pending call, in order) or a mapping "
            f"{{tool_call_id: decision}}, got {type(raw).__name__}. Pending calls: {listing}."
        )
    return pairs


def validate_decision(thread_id: str, paired: PairedDecision, total: int, *,
                      tools: Mapping[str, Tool], policies: Callable[[str], Sequence[ToolPolicy]],
                      reviewer: Reviewer | None) -> ResolvedDecision:
    """One decision checked against its call: its shape and type, the revision it names, who
    may give it, ``remember``, and for an edit the tool and arguments it would run (and who may
    decide calls of that tool). ``total``: how many decisions were given (for the messages)."""
    call = paired.call
    where = _where(paired.position, total, call)
    decision = _parse_one(thread_id, paired.raw, where, list(call.config.allowed_decisions))
    _check_revision(thread_id, call, decision)
    policy = CallPolicy(call.request.tool_call_id, call.request.name,
                        call.config.reviewer_roles)
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
        if decision.remember is not None and call.request.reason == "outcome_unknown":
            raise InvalidDecision(
                thread_id, f"{where} asks to remember the approval of a call whose outcome "
                f"is unknown (it may have run before a crash); remembering it would let "
                f"later {call.request.name!r} calls run unseen. Approve without 'remember'."
            )
        if decision.remember is not None:
            check_remember(thread_id, reviewer, policy, policies(call.request.name))
        exec_name, exec_args = call.request.name, call.request.args
    elif isinstance(decision, Edit):
        exec_name, exec_args = _check_edit(thread_id, where, call, decision, tools)
        for target in policies(exec_name):
            check_decision(thread_id, reviewer, policy, target)
    return ResolvedDecision(call, decision, exec_name, exec_args)


def _check_revision(thread_id: str, call: PendingCall,
                    decision: Approve | Edit | Reject | Respond) -> None:
    """A decision counts only for the revision of the call it was made for: the one it names,
    or revision 1 (a call never edited) when it names none."""
    current = call.config.revision
    if (decision.revision or 1) == current:
        return
    # the call's text comes from a model and a reviewer: shown one line, hidden chars escaped
    # (imported here: the display module loads the regex package, needed only on refusal)
    from .display import one_line

    args = json.dumps(call.request.args, ensure_ascii=False, sort_keys=True)
    raise StaleRevision(thread_id, call.request.tool_call_id, given=decision.revision,
                        current=current, edited_by=call.config.edited_by,
                        now_runs=one_line(f"{call.request.name} with arguments {args}", 300))


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


# -- what a response sent without an interrupt id may decide ----------------------------------


def shown_key(interrupt_id: str, tool_call_id: str) -> str:
    """A pending call as a record of what a reviewer was shown names it: its review request
    and its ``tool_call_id`` (the next turn's calls are a new request, so new names)."""
    return f"{interrupt_id}\x00{tool_call_id}"


def shown_keys(interrupts: Iterable[Interrupt]) -> frozenset[str]:
    """The pending calls that a response showing ``interrupts`` shows (:func:`shown_key`)."""
    return frozenset(shown_key(i.id, a.tool_call_id) for i in interrupts if i.kind == "review"
                     for a in read_request(i.value).action_requests)


def named_calls(raw: Any) -> set[str]:
    """The ``tool_call_id``\\ s that decisions in any shape :func:`resolve_decisions` takes name
    themselves: the keys of ``{tool_call_id: decision}``, and the ``tool_call_id`` of a
    decision that carries one."""
    raw = _normalise(raw)
    if is_decision(raw) or (isinstance(raw, Mapping) and "type" in raw):
        named = _named_call(raw)
        return {str(named)} if named is not None else set()
    if isinstance(raw, Mapping):
        return {str(k) for k in raw}
    if isinstance(raw, Sequence) and not isinstance(raw, str | bytes):
        return {str(n) for item in raw if (n := _named_call(item)) is not None}
    return set()


def unkeyed_calls(interrupts: Sequence[Interrupt], raw: Any,
                  interrupt_id: str | None) -> list[str]:
    """The pending calls that decisions sent with ``interrupt_id`` (``None``: none) would
    decide only by their position: with no interrupt id, a list (or one decision) is paired
    in order with the calls of the one pending review request. Calls a decision names by
    ``tool_call_id`` are not counted (nor are any when an interrupt id is given)."""
    if interrupt_id is not None:
        return []
    flat = _normalise(raw)
    if isinstance(flat, Mapping) and "type" not in flat:
        return []  # {tool_call_id: decision}
    reviews = [i for i in interrupts if i.kind == "review"]
    if len(reviews) != 1:
        return []  # none or several pending: the core refuses a resume without an id
    named = named_calls(raw)
    return [a.tool_call_id for a in read_request(reviews[0].value).action_requests
            if a.tool_call_id not in named]


def check_shown(thread_id: str, interrupts: Sequence[Interrupt], deciding: Iterable[str],
                shown: frozenset[str] | None) -> None:
    """Invariant 1 for a response that names no interrupt id: it decides the pending calls
    ``deciding`` (``tool_call_id``\\ s) by their position among the calls pending *now*, so
    each must be a call its sender was shown. ``shown``: the calls listed by the latest
    response to the sender that showed this thread's pending requests (:func:`shown_keys`);
    ``None`` when that is not known (the sender never read the thread there; a script), and
    then nothing is checked. A call of a request raised after that response (the thread moved
    on to a new turn in between) is refused with :class:`~interlock.UnseenRequest`; nothing
    is stored."""
    if shown is None:
        return
    wanted = set(deciding)
    for i in interrupts:
        if i.kind != "review":
            continue
        for a in read_request(i.value).action_requests:
            if a.tool_call_id in wanted and shown_key(i.id, a.tool_call_id) not in shown:
                raise UnseenRequest(thread_id, a.tool_call_id, a.name, i.id)
