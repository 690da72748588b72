"""The engine side of sub-agents (:mod:`interlock.subagents`): what a parent thread stores
about the sub-agent threads its calls wait for, and which resumes go to them.

A call whose child waits is ``waiting`` (``JournalEntry.child_thread`` names the child) and
the parent's pending list holds the child's pending interrupts, *mirrored*: same id, kind and
value, with a :class:`~interlock.interrupts.PathStep` path in front (on the interrupt and on
each action request). The mirror is refreshed from the child whenever the parent settles its
sub-agents (:mod:`interlock._delegate`); the child's thread stays the truth.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..audit.records import AuditKind
from ..decisions import is_decision
from ..errors import InvalidDecision
from ..interrupts import Interrupt, PathStep
from ..result import final_output
from ..review_request import PendingCall, read_request, request_value
from ..storage.base import CallState, JournalEntry, ThreadSnapshot
from ..subagents import ChildState, ChildStatus, SubAgentTool
from .deps import RunDeps
from .pauses import review_calls, show
from .reads import turn_message
from .resume import ResumeSpec, by_interrupt, interpret_command, target
from .texts import SYSTEM
from .txn import AuditItem, ThreadTxn


def has_waiting(txn: ThreadTxn) -> bool:
    """Whether a call of the open turn waits for a sub-agent's thread."""
    return any(e.state == CallState.WAITING for e in txn.snapshot.journal.values())


def sub_tool(deps: RunDeps, e: JournalEntry) -> SubAgentTool | None:
    tool = deps.tools_by_name.get(e.effective.name)
    return tool if isinstance(tool, SubAgentTool) else None


def child_state(txn: ThreadTxn, agent: str) -> ChildState:
    """The state of a sub-agent's thread at the end of a run on it."""
    return state_of(txn.snapshot, agent, busy=bool(txn.children_busy))


def state_of(snap: ThreadSnapshot, agent: str, *, busy: bool = False) -> ChildState:
    t = snap.thread
    names = {e.tool_call_id: e.effective.name for e in snap.journal.values()}
    status: ChildStatus
    if busy or (t.status == "running" and t.turn is not None):
        status = "busy"
    elif t.pending:
        status = "waiting"
    elif (output := final_output(snap.messages, completed=t.status == "completed")) \
            is not None:
        return ChildState(t.thread_id, agent, "completed", output=output)
    elif t.status == "idle":
        status = "cancelled"
    else:
        status = "busy"
    return ChildState(t.thread_id, agent, status, pending=list(t.pending), names=names)


def step_of(txn: ThreadTxn, deps: RunDeps, e: JournalEntry) -> PathStep:
    """The first step of the path of a request mirrored from call ``e``'s sub-agent."""
    return PathStep(thread_id=txn.thread_id, agent=deps.agent_name,
                    tool_call_id=e.tool_call_id, tool_name=e.effective.name)


def mirror(intr: Interrupt, step: PathStep, state: ChildState) -> Interrupt:
    """A child's pending interrupt as its parent shows it: the path grows by ``step``."""
    leaf = PathStep(thread_id=state.thread_id, agent=state.agent,
                    tool_call_id=intr.tool_call_id,
                    tool_name=state.names.get(intr.tool_call_id) if intr.tool_call_id else None)
    value = intr.value
    if intr.kind == "review":
        value = request_value([PendingCall(a.model_copy(update={"path": [step, *(
            a.path or [PathStep(thread_id=state.thread_id, agent=state.agent,
                                tool_call_id=a.tool_call_id, tool_name=a.name)])]}), c)
            for a, c in read_request(value).pairs()])
    return intr.model_copy(update={"path": [step, *(intr.path or [leaf])], "value": value})


def with_mirror(txn: ThreadTxn, deps: RunDeps, e: JournalEntry,
                state: ChildState | None) -> list[Interrupt]:
    """The thread's pending list with call ``e``'s mirrored requests replaced by ``state``'s
    (removed for ``None``): own requests first, then mirrored ones in the model's call order."""
    mine = [i for i in txn.thread.pending if i.path is None]
    others = [i for i in txn.thread.pending
              if i.path is not None and i.path[0].tool_call_id != e.tool_call_id]
    if state is not None:
        step = step_of(txn, deps, e)
        others += [mirror(i, step, state) for i in state.pending]
    order = {c.id: n for n, c in enumerate(turn_message(txn.snapshot).tool_calls)} \
        if txn.thread.turn is not None else {}
    others.sort(key=lambda i: order.get(i.path[0].tool_call_id or "", 0) if i.path else 0)
    return [*mine, *others]


async def wait_for_child(txn: ThreadTxn, deps: RunDeps, running: JournalEntry,
                         state: ChildState) -> None:
    """Store that call ``running`` waits for its sub-agent, with the child's requests shown
    here."""
    entry = running.model_copy(update={"state": CallState.WAITING, "updated_at": txn.now(),
                                       "child_thread": state.thread_id})
    show(txn, with_mirror(txn, deps, entry, state))
    txn.stage(journal=[entry],
              audit=[AuditItem(AuditKind.SUBAGENT_WAITING, SYSTEM, entry.tool_call_id, {
                  "child_thread_id": state.thread_id, "name": entry.effective.name,
                  "interrupts": [i.id for i in state.pending]})])
    if state.status == "busy":
        txn.children_busy |= {state.thread_id}
    await txn.flush()


def _check_unambiguous(txn: ThreadTxn, pending: list[Interrupt], decisions: Any) -> None:
    """Sub-agents number their calls on their own: a mapping ``{tool_call_id: decision}``
    without ``interrupt_id`` must not name a call id that two pending requests have."""
    if not isinstance(decisions, Mapping) or is_decision(decisions) or "decisions" in decisions:
        return
    seen = Counter(c.request.tool_call_id for i in pending if i.kind == "review"
                   for c in review_calls(i))
    twice = sorted(k for k in decisions if seen[k] > 1)
    # an id of a sub-agent's call may also be the id of a call another sub-agent of this turn
    # made and that was decided since: the reviewer may have meant that one
    children = {e.child_thread for e in txn.snapshot.journal.values() if e.child_thread}
    theirs = {c.request.tool_call_id for i in pending if i.kind == "review" and i.path
              for c in review_calls(i)}
    if len(children) > 1:
        twice = sorted({*twice, *(k for k in decisions if k in theirs)})
    if twice:
        raise InvalidDecision(
            txn.thread_id, f"call id(s) {twice} may name more than one call: each sub-agent "
            f"numbers its calls on its own, and {len(children) or 'several'} sub-agents were "
            f"called in this turn; pass interrupt_id=... (the request shown) to say which "
            f"request the decisions are for.")


@dataclass(frozen=True)
class Route:
    """The part of a resume that goes to the sub-agent of call ``call_id``."""

    call_id: str
    spec: ResumeSpec
    ids: list[str]


def plan(txn: ThreadTxn, spec: ResumeSpec) -> list[Route] | None:
    """Which sub-agent threads a resume on this thread goes to (None: it answers this
    thread's own requests). A resume may not mix both."""
    pending = list(txn.thread.pending)
    mirrored = {i.id: i for i in pending if i.path}
    if not mirrored:
        return None
    if spec.has_command:
        interpret_command(spec, pending)
    kinds: dict[str, str] = {}
    payload: dict[str, Any] = {}
    for iid, value in (spec.reviews or {}).items():
        kinds[iid], payload[iid] = "review", value
    for iid, value in (spec.values or {}).items():
        kinds[iid], payload[iid] = "input", value
    if spec.decisions is not None:
        if spec.interrupt_id is None:
            _check_unambiguous(txn, pending, spec.decisions)
        several = None if spec.interrupt_id else by_interrupt(pending, spec)
        if several:
            for iid, value in several.items():
                kinds[iid], payload[iid] = "review", value
        else:
            iid = spec.interrupt_id or target(txn.thread_id, pending, "review", None).id
            kinds[iid], payload[iid] = "review", spec.decisions
    elif spec.has_value:
        iid = spec.interrupt_id or target(txn.thread_id, pending, "input", None).id
        kinds[iid], payload[iid] = "input", spec.value
    routed = [i for i in kinds if i in mirrored]
    if not routed:
        return None
    if len(routed) < len(kinds):
        own = [i for i in kinds if i not in mirrored]
        raise InvalidDecision(
            txn.thread_id, f"this resume answers request(s) {own} of this thread together with "
            f"request(s) {routed} of its sub-agents; answer each with its own resume "
            f"(interrupt_id=...)."
        )
    groups: dict[str, list[str]] = {}
    for iid in routed:
        path = mirrored[iid].path
        assert path is not None and path[0].tool_call_id is not None
        groups.setdefault(path[0].tool_call_id, []).append(iid)
    out: list[Route] = []
    for call_id, ids in groups.items():
        common: dict[str, Any] = {"reviewer": spec.reviewer, "actor": spec.actor,
                                  "routed_from": txn.thread_id}
        if len(ids) == 1 and kinds[ids[0]] == "review":
            child = ResumeSpec(decisions=payload[ids[0]], interrupt_id=ids[0], **common)
        elif len(ids) == 1:
            child = ResumeSpec(value=payload[ids[0]], has_value=True, interrupt_id=ids[0],
                               **common)
        else:
            child = ResumeSpec(
                reviews={i: payload[i] for i in ids if kinds[i] == "review"} or None,
                values={i: payload[i] for i in ids if kinds[i] == "input"} or None, **common)
        out.append(Route(call_id, child, ids))
    return out
