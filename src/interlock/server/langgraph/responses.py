"""``command.resume`` from LangGraph clients, mapped onto interlock's decisions.

What a client sends is translated into the core's own inputs (decisions keyed by
``tool_call_id``, an answer, or a cancel); the core then validates them exactly as it validates
every other surface's input, so a wrong resume is refused with the core's message and changes
nothing. Accepted shapes:

* ``{interrupt_id: response, ...}``: one entry per pending call or question, any subset (the
  rest stay pending). ``interrupt_id`` is a LangGraph interrupt id from the thread state. The
  response for one call may be wrapped as ``{"decisions": [decision]}`` (what a LangChain
  client sends per interrupt); the id of interlock's whole review request (the interrupt id of
  the ``per-turn`` format) takes ``{"decisions": [...]}`` for its first calls, in order.
* a list of Agent Inbox ``HumanResponse`` objects: the first pending calls, in order (Agent
  Inbox sends one response for the first pending call).
* ``{"decisions": [...]}`` or a list of decisions: LangChain's resume, one decision per call
  in the order shown. As many as there are pending calls: passed to the core unchanged; fewer
  (a client that built them from ``interrupts[0].value.action_requests``, which lists one call
  per interrupt here): the first pending calls, in order; the rest stay pending.
* one decision: passed to the core unchanged.
* one ``HumanResponse``: the first pending call (or question).
* anything else: the answer to the pending ``interrupt(...)`` question.

Decisions sent without an id are bound to the review request pending when the resume is read:
if another reviewer's answer and the agent's next turn put a new request there before the core
stores them, they are refused (409), never applied to the new one.

A response is either a LangChain/interlock decision (``approve``, ``edit`` with
``edited_action``, ``reject``, ``respond``) or an Agent Inbox ``HumanResponse``:

* ``accept`` -> approve (``args``, if sent, must be the pending call unchanged);
* ``edit`` with ``args: {action, args}`` -> edit; argument values sent as strings (Agent
  Inbox's text fields) are parsed as JSON where the tool's schema does not take a string;
* ``response`` with text -> ``respond`` when the call allows it, else ``reject`` with the text
  as the reason; for a question, the text is the answer;
* ``ignore`` -> cancel: every pending call of the thread is closed as cancelled by the reviewer
  and the thread goes idle (interlock cannot cancel part of a turn), so ``ignore`` cannot be
  mixed with other responses.

An edit gives the edited call a new interrupt id; a response keyed by an interrupt id is a
decision for the revision of the call that id was shown for (an older one: 409). A response
or decision sent without an id is accepted only for a call that was never edited.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ...agent import Agent, ThreadState
from ...authz import same_reviewer
from ...decisions import check_shown, named_calls
from ...errors import InvalidDecision, NoPendingInterrupt, PositionTaken, StaleInterrupt
from ...storage.base import CallState
from ...subagent_tree import tool_at
from ...tools import Tool
from .shapes import Pending, pending_entries

HUMAN_RESPONSE_TYPES = ("accept", "edit", "response", "ignore")


@dataclass
class Plan:
    """What to do: ``decide`` (decisions for one review request), ``answer`` (a question) or
    ``cancel`` (every pending call)."""

    kind: Literal["decide", "answer", "cancel"]
    interrupt_id: str | None = None
    decisions: Any = None
    value: Any = None
    answered: list[str] = field(default_factory=list)
    """LangGraph interrupt ids this plan answers (for the run's metadata)."""
    reason: str | None = None
    """Why the calls are cancelled (``cancel``)."""
    positional: list[str] = field(default_factory=list)
    """The calls a response sent without an interrupt id decides, by their position among the
    pending calls (``tool_call_id``s; empty: the response named what it decides)."""
    keyed: bool = False
    """The response was keyed by interrupt ids (of calls or of whole review requests)."""


def is_human_response(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    kind = value.get("type")
    if kind == "edit":
        return "args" in value and not ({"edited_action", "editedAction"} & set(value))
    return kind in HUMAN_RESPONSE_TYPES


def plan_resume(agent: Agent, state: ThreadState, resume: Any, who: str | None = None,
                shown: frozenset[str] | None = None) -> Plan:
    """What ``resume`` from the reviewer ``who`` does on the thread as ``state`` shows it.

    A response sent without an interrupt id answers the first pending call(s) in order; it is
    refused (:class:`~interlock.PositionTaken`) when another reviewer decided a call before
    that one in the turn: it was shown something else first (invariant 1: an approval counts
    only for what its sender was shown). ``shown``: the calls the latest response to ``who``
    that showed this thread's pending requests listed (``None``: not known); a call pending
    now that is not among them (the thread moved on to a new request since) is refused
    (:class:`~interlock.UnseenRequest`, :func:`interlock.decisions.check_shown`)."""
    plan = _plan_resume(agent, state, resume)
    if plan.positional and who is not None:
        _check_position(state, plan, who)
    if plan.positional and not plan.keyed:
        named = named_calls(resume)
        check_shown(state.thread_id, state.interrupts,
                    [c for c in plan.positional if c not in named], shown)
    return plan


def _check_position(state: ThreadState, plan: Plan, who: str) -> None:
    """Refuse a positional plan whose first call became first through another reviewer's
    decision of an earlier call of the turn."""
    journal = {e.tool_call_id: e for e in state.journal}
    decided = [e for e in state.journal if e.review is not None
               and e.state != CallState.PENDING_REVIEW and e.decided_by is not None
               and not same_reviewer(e.decided_by, who)]
    targets = [journal[c] for c in plan.positional if c in journal]
    if targets:
        first = min(targets, key=lambda e: e.position)
        call_id, name = first.tool_call_id, first.effective.name
        others = [e for e in decided if e.position < first.position]
    else:
        # a call of a sub-agent shown here: where it was shown among this thread's own calls
        # is not known, so any of them decided by another reviewer may have come first
        entry = next((p for p in pending_entries(state) if p.action is not None
                      and p.action.tool_call_id in plan.positional), None)
        if entry is None or entry.action is None:
            return
        call_id, name, others = entry.action.tool_call_id, entry.action.name, decided
    if others:
        lg_id = next((p.lg_id for p in pending_entries(state) if p.action is not None
                      and p.action.tool_call_id == call_id), "")
        raise PositionTaken(state.thread_id, call_id, name,
                            [(e.tool_call_id, e.effective.name, e.decided_by or "")
                             for e in others], lg_id)


def _plan_resume(agent: Agent, state: ThreadState, resume: Any) -> Plan:
    tid = state.thread_id
    entries = pending_entries(state)
    if not entries:
        named = _named_interrupt(resume)
        if named is not None:
            # the call it answers was decided (by another reviewer, a double submit) or its
            # thread moved on: say so, rather than that nothing was ever waiting
            raise StaleInterrupt(tid, named, [])
        raise NoPendingInterrupt(tid)
    by_id = {p.lg_id: p for p in entries}
    requests = {p.interrupt.id: p.interrupt for p in entries if p.action is not None}
    if isinstance(resume, Mapping) and resume and not ({"type", "decisions"} & set(resume)):
        unknown = [k for k in resume if k not in by_id and k not in requests]
        if len(unknown) < len(resume) or all(_looks_like_id(k) for k in unknown):
            if unknown:
                raise StaleInterrupt(tid, str(unknown[0]), list(by_id))
            keyed = _keyed(agent, tid, entries, by_id, requests, resume)
            keyed.keyed = True
            return keyed
    if isinstance(resume, list) and resume and all(is_human_response(r) for r in resume):
        reviews = [p for p in entries if p.action is not None]
        if entries[0].action is None and len(resume) == 1:
            return _answer(tid, entries[0], resume[0])
        if len(resume) > len(reviews):
            raise InvalidDecision(
                tid, f"got {len(resume)} responses for {len(reviews)} pending call(s) "
                f"({_listing(reviews)}); send at most one response per pending call, in order, "
                f"or key them by interrupt id.")
        return _positional(_decide(agent, tid, list(zip(reviews, resume, strict=False)),
                                   keyed=False))
    if is_human_response(resume):
        first = entries[0]
        if first.action is None:
            return _answer(tid, first, resume)
        return _positional(_decide(agent, tid, [(first, resume)], keyed=False))
    items = decision_list(resume)
    reviews = [p for p in entries if p.action is not None]
    if not reviews:  # only a question waits: any value is its answer, as in LangGraph
        return Plan("answer", value=resume)
    if items is not None and 0 < len(items) < len(reviews):
        return _positional(_decide(agent, tid, _in_order(tid, reviews, items), keyed=False))
    if (isinstance(resume, Mapping) and ("decisions" in resume or "type" in resume)) or \
            isinstance(resume, list):
        # the core pairs them with the pending calls in order (a decision naming its
        # tool_call_id is checked there), of the request pending as this read shows it: a
        # request raised before the core stores them (another reviewer answered this one and
        # the agent asked again) is not theirs to decide (409)
        count = len(items) if items is not None else 1
        asked = {p.interrupt.id for p in reviews}
        return Plan("decide", decisions=resume,
                    interrupt_id=asked.pop() if len(asked) == 1 else None,
                    positional=[p.action.tool_call_id for p in reviews[:count]
                                if p.action is not None])
    return Plan("answer", value=resume)


def _named_interrupt(resume: Any) -> str | None:
    """The first interrupt id a resume keyed by interrupt ids names (None: it names none)."""
    if isinstance(resume, Mapping) and resume and not ({"type", "decisions"} & set(resume)):
        return next((str(k) for k in resume if _looks_like_id(k)), None)
    return None


def _positional(plan: Plan) -> Plan:
    """``plan`` (decisions keyed by ``tool_call_id``) marked as made by position."""
    if isinstance(plan.decisions, Mapping):
        plan.positional = list(plan.decisions)
    return plan


def decision_list(value: Any) -> list[Any] | None:
    """The decisions of LangChain's ``{"decisions": [...]}`` or of a plain list (None for
    anything else)."""
    if isinstance(value, Mapping) and set(value) == {"decisions"}:
        value = value["decisions"]
    return list(value) if isinstance(value, list) else None


def _in_order(tid: str, calls: list[Pending], items: list[Any]) -> list[tuple[Pending, Any]]:
    """Decisions for the first of ``calls``, in order (a decision naming its ``tool_call_id``
    must name the call at its position)."""
    if len(items) > len(calls):
        raise InvalidDecision(
            tid, f"got {len(items)} decision(s) for {len(calls)} pending call(s) "
            f"({_listing(calls)}); send at most one decision per pending call, in order.")
    pairs = list(zip(calls, items, strict=False))
    for i, (p, item) in enumerate(pairs):
        assert p.action is not None
        named = item.get("tool_call_id") if isinstance(item, Mapping) else None
        if named is not None and named != p.action.tool_call_id:
            raise InvalidDecision(
                tid, f"decision {i + 1} of {len(items)} names tool_call_id {named!r} but "
                f"position {i + 1} is call {p.action.tool_call_id!r}; list decisions in the "
                f"order of the pending calls ({_listing(calls)}).")
    return pairs


def _looks_like_id(key: Any) -> bool:
    return isinstance(key, str) and len(key) >= 16 and all(
        c in "0123456789abcdef-" for c in key.lower())


def _listing(entries: list[Pending]) -> str:
    return ", ".join(f"{p.lg_id} ({p.action.name if p.action else 'question'})"
                     for p in entries) or "none"


def _keyed(agent: Agent, tid: str, entries: list[Pending], by_id: dict[str, Pending],
           requests: dict[str, Any], resume: Mapping[str, Any]) -> Plan:
    calls: list[tuple[Pending, Any]] = []
    questions: list[tuple[Pending, Any]] = []
    positional: list[str] = []
    whole = False
    for key, value in resume.items():
        if key in requests and key not in by_id:  # a whole review request
            # a request's id stays the same when one of its calls is edited: its answers
            # name no revision of the calls
            whole = True
            items = decision_list(value)
            if items is None:
                if len(resume) > 1:
                    raise InvalidDecision(
                        tid, f"the response to review request {key} is not "
                        f"{{'decisions': [...]}}; answer a whole request with one decision "
                        f"per call, in order, or key each call by its own interrupt id.")
                first = next((p.action.tool_call_id for p in entries
                              if p.action is not None and p.interrupt.id == key), None)
                return Plan("decide", interrupt_id=key, decisions=value, answered=[key],
                            positional=[first] if first is not None else [])
            ordered = _in_order(tid, [p for p in entries
                                      if p.action is not None and p.interrupt.id == key], items)
            positional += [p.action.tool_call_id for p, _ in ordered if p.action is not None]
            calls += ordered
            continue
        p = by_id[key]
        if p.action is None:
            questions.append((p, value))
            continue
        items = decision_list(value)
        if items is not None:
            if len(items) != 1:
                raise InvalidDecision(
                    tid, f"interrupt {key} is one call ({p.action.name}) but its response "
                    f"has {len(items)} decisions; send one decision for it, or key each "
                    f"pending call by its own interrupt id. Pending: {_listing(entries)}.")
            value = items[0]
        calls.append((p, value))
    twice = {p.lg_id for p, _ in calls if sum(q is p for q, _ in calls) > 1}
    if twice:
        raise InvalidDecision(
            tid, f"this resume decides call(s) {', '.join(sorted(twice))} more than once; "
            f"decide each call once. Pending: {_listing(entries)}.")
    if (calls and questions) or len(questions) > 1:
        raise InvalidDecision(
            tid, f"this resume answers {len(resume)} interrupts of different kinds "
            f"({', '.join(resume)}); answer pending calls together, and each question in a "
            f"run of its own. Pending: {_listing(entries)}.")
    if questions:
        return _answer(tid, *questions[0])
    plan = _decide(agent, tid, calls, keyed=not whole)
    plan.positional = positional
    return plan


def _answer(tid: str, p: Pending, value: Any) -> Plan:
    if is_human_response(value):
        if value.get("type") != "response" or not isinstance(value.get("args"), str):
            raise InvalidDecision(
                tid, f"interrupt {p.lg_id} is a question from the agent; answer it with a "
                f"'response' whose args is the answer text, or with the answer value itself.")
        value = value["args"]
    return Plan("answer", interrupt_id=p.interrupt.id, value=value, answered=[p.lg_id])


def _decide(agent: Agent, tid: str, pairs: list[tuple[Pending, Any]], *, keyed: bool,
            ) -> Plan:
    """``keyed``: each response was sent under the interrupt id of one revision of its call
    (:func:`~.shapes.pending_entries`), so it is a decision for that revision; a response
    sent without an id names no revision and counts only for a call never edited."""
    ignored = [p for p, r in pairs if is_human_response(r) and r.get("type") == "ignore"]
    if ignored:
        if len(ignored) != len(pairs):
            raise InvalidDecision(
                tid, "'ignore' cancels every pending call of the thread, so it cannot be sent "
                "together with other responses; send the other responses first, or ignore "
                "alone.")
        return Plan("cancel", answered=[p.lg_id for p in ignored])
    decisions: dict[str, Any] = {}
    for p, response in pairs:
        assert p.action is not None
        decision = to_decision(agent, tid, p, response)
        if keyed and p.config is not None and isinstance(decision, Mapping) and \
                "revision" not in decision:
            decision = {**decision, "revision": p.config.revision}
        decisions[p.action.tool_call_id] = decision
    requests = {p.interrupt.id for p, _ in pairs}
    # calls of several review requests (``interrupt_mode="per_call"``): the core finds each
    # call's request from its tool_call_id
    return Plan("decide", interrupt_id=requests.pop() if len(requests) == 1 else None,
                decisions=decisions, answered=[p.lg_id for p, _ in pairs])


def to_decision(agent: Agent, tid: str, p: Pending, response: Any) -> Any:
    """One response for one pending call, as an interlock decision (a dict the core validates).
    LangChain/interlock decisions pass through unchanged."""
    if not is_human_response(response):
        return response
    assert p.action is not None and p.config is not None
    a = p.action
    where = f"the response to interrupt {p.lg_id} (call {a.tool_call_id!r}, tool {a.name!r})"
    kind, args = response["type"], response.get("args")
    if kind == "accept":
        if isinstance(args, Mapping) and ("action" in args or "args" in args):
            same_name = args.get("action", a.name) == a.name
            sent = args.get("args", a.args)
            if not same_name or not isinstance(sent, Mapping) or \
                    coerce_args(tool_at(agent, a.name, a.path), sent) != a.args:
                raise InvalidDecision(
                    tid, f"{where} is 'accept' with an action that differs from the pending "
                    f"call; 'accept' runs the call as proposed. Send the changed call as an "
                    f"'edit' instead.")
        return {"type": "approve", "tool_call_id": a.tool_call_id}
    if kind == "edit":
        if not isinstance(args, Mapping) or not isinstance(args.get("action"), str) or \
                not isinstance(args.get("args"), Mapping):
            raise InvalidDecision(
                tid, f"{where} is 'edit' without a valid action; 'edit' needs "
                f"args = {{'action': TOOL_NAME, 'args': {{...}}}}.")
        name = args["action"]
        return {"type": "edit", "tool_call_id": a.tool_call_id, "edited_action": {
            "name": name, "args": coerce_args(tool_at(agent, name, a.path), args["args"])}}
    # response
    if not isinstance(args, str) or not args.strip():
        raise InvalidDecision(
            tid, f"{where} is 'response' without text; 'response' needs args = the text to "
            f"send back.")
    allowed = p.config.allowed_decisions
    if "respond" not in allowed and "reject" in allowed:
        return {"type": "reject", "message": args, "tool_call_id": a.tool_call_id}
    return {"type": "respond", "message": args, "tool_call_id": a.tool_call_id}


def _takes_string(schema: Mapping[str, Any]) -> bool:
    """Whether a JSON-schema property accepts a string as it is (unknown: yes)."""
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list):
        return any(isinstance(b, Mapping) and _takes_string(b) for b in branches)
    kind = schema.get("type")
    if kind is None:
        return "$ref" not in schema and "items" not in schema and "properties" not in schema
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def coerce_args(tool: Tool | None, args: Mapping[str, Any]) -> dict[str, Any]:
    """Agent Inbox edits every argument in a text field and sends strings: a string is parsed
    as JSON where the tool's schema does not take a string (``"42"`` for an integer, ``"[1]"``
    for a list). Anything that does not parse is left as it is, for the core's validation to
    refuse with its message."""
    out = dict(args)
    if tool is None:
        return out
    props = tool.args_schema.get("properties", {})
    for key, value in args.items():
        prop = props.get(key)
        if isinstance(value, str) and isinstance(prop, Mapping) and not _takes_string(prop):
            with contextlib.suppress(ValueError):
                out[key] = json.loads(value)
    return out
