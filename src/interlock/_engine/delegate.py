"""A parent thread and the sub-agent threads its calls wait for (see :mod:`interlock.subagents`).

Settling (:func:`settle_waiting`, part of every turn of the loop): each ``waiting`` call's
child is brought forward — recovered if its run stopped, its deadlines applied, its own
sub-agents settled — and then read: a finished child's answer is stored as the call's result
(the turn closes when it was the last), a waiting child's requests are mirrored here.

Routing (:func:`route`): a resume given here for a mirrored request goes to the child that
raised it, which validates and stores it by its own rules. Right after the child stored it,
this thread is taken (``running``, leased, the answered request recorded in ``resolved``), so
that a crash from then on leaves it to recovery; the child then runs on, and the caller
continues this thread's loop, which reads the child's outcome. When another process holds this
thread meanwhile, the child still runs; whoever holds this thread reads it when it settles —
a child still advanced then leaves this thread ``running`` without a lease, for the next
settle or recovery. The run that leaves it so looks at that child once more after letting
go, and settles this thread again if the child's run ended meanwhile (that run, turned away
from this thread while it was held, did not). A resume refused because another run's
decision reached the child first does not touch this thread while that run advances the
child: that run takes this thread up.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from ..audit.records import AuditKind
from ..errors import ConcurrencyError, InterlockError, StaleInterrupt, StorageError
from ..messages import ToolMessage
from ..storage.base import RESOLVED_KEPT, CallState, JournalEntry
from ..subagents import ChildState
from .children import Route, child_state, step_of, sub_tool, with_mirror
from .deps import RunDeps
from .execute import store_outcome
from .pauses import show
from .reads import turn_message
from .resume import ResumeSpec
from .txn import AuditItem, ThreadTxn

log = logging.getLogger("interlock")


async def settle_waiting(txn: ThreadTxn, deps: RunDeps) -> None:
    """Bring every ``waiting`` call of the open turn up to date with its sub-agent."""
    for call in turn_message(txn.snapshot).tool_calls:
        if txn.thread.turn is None:
            return
        e = txn.snapshot.journal.get(call.id)
        if e is None or e.state != CallState.WAITING:
            continue
        tool = sub_tool(deps, e)
        if tool is None or e.child_thread is None:
            await _finish(txn, deps, e, f"Tool {e.effective.name!r} is no longer a sub-agent "
                          f"of this agent; its thread {e.child_thread!r} was left as it is.")
            continue
        try:
            state = await tool.runner.settle_child(e.child_thread)
        except ConcurrencyError:
            txn.children_busy |= {e.child_thread}
            continue
        except InterlockError as exc:
            await _finish(txn, deps, e, f"Sub-agent {tool.name!r} failed: "
                          f"{type(exc).__name__}: {exc}")
            continue
        if state.status == "completed":
            await _finish(txn, deps, e, state.output or "", error=False)
        elif state.status == "cancelled":
            await _finish(txn, deps, e, f"The run of sub-agent {tool.name!r} was cancelled.")
        else:
            pending = with_mirror(txn, deps, e, state)
            if pending != txn.thread.pending:
                show(txn, pending)
                await txn.flush()
            if state.status == "busy":
                txn.children_busy |= {e.child_thread}


async def _finish(txn: ThreadTxn, deps: RunDeps, e: JournalEntry, text: str, *,
                  error: bool = True) -> None:
    """Store the result of a sub-agent call (its mirrored requests go with it)."""
    txn.stage(pending=with_mirror(txn, deps, e, None))
    msg = ToolMessage(tool_call_id=e.tool_call_id, name=e.effective.name, content=text,
                      status="error" if error else "success")
    await store_outcome(txn, e, msg)


async def route(txn: ThreadTxn, deps: RunDeps, spec: ResumeSpec, routes: list[Route], *,
                claim: bool) -> bool:
    """Pass a resume to the sub-agent threads it answers. ``claim``: take this thread once a
    child stored it. Returns whether this run holds the thread afterwards."""
    targets: list[tuple[Route, JournalEntry, str]] = []
    for r in routes:
        e = txn.snapshot.journal.get(r.call_id)
        tool = sub_tool(deps, e) if e is not None else None
        if e is None or tool is None or e.child_thread is None or e.state != CallState.WAITING:
            raise StaleInterrupt(txn.thread_id, r.ids[0], [i.id for i in txn.thread.pending])
        targets.append((r, e, e.child_thread))
    claimed = False
    allowed = claim
    for r, e, child in targets:
        tool = sub_tool(deps, e)
        assert tool is not None

        async def stored(state: ChildState | None, r: Route = r, e: JournalEntry = e) -> None:
            nonlocal claimed, allowed
            mine: ChildState | None = None
            if state is not None and allowed:
                try:
                    await _take(txn, deps, spec, r, e, state)
                    claimed = True
                    mine = child_state(txn, deps.agent_name)
                except (ConcurrencyError, StorageError) as exc:
                    # someone else changed this thread first: it reads the child later
                    log.info("thread %r: not taken after a routed decision (%s)",
                             txn.thread_id, exc)
                    allowed = False
                    txn.reset()
            if spec.claim is not None:
                await spec.claim(mine)
            txn.stored()

        async with txn.keep_lease():
            await tool.runner.resume_child(child, replace(r.spec, claim=stored))
    return claimed


async def _take(txn: ThreadTxn, deps: RunDeps, spec: ResumeSpec, r: Route, e: JournalEntry,
                state: ChildState) -> None:
    """Take this thread after the child stored a routed decision: the request is answered
    here too, and a crash from now on leaves the thread to recovery."""
    left = {i.id for i in state.pending}
    answered = [i for i in r.ids if i not in left]
    step = step_of(txn, deps, e).model_dump(mode="json", exclude_none=True)
    audit = [AuditItem(AuditKind.DECISION_ROUTED, spec.actor, e.tool_call_id, {
        "interrupt_id": iid, "child_thread_id": state.thread_id, "step": step})
        for iid in r.ids]
    updates: dict[str, Any] = {}
    if spec.reviewer is not None and spec.reviewer.id not in txn.thread.deciders:
        updates["deciders"] = [*txn.thread.deciders, spec.reviewer.id]  # they may read it now
    show(txn, with_mirror(txn, deps, e, state))
    await txn.commit(status="running", error=None,
                     resolved=[*txn.thread.resolved, *answered][-RESOLVED_KEPT:], audit=audit,
                     **updates)
