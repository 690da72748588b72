"""Running tool calls under the journal: ``running`` is stored before the call, the result
with ``succeeded`` / ``failed``; calls whose outcome is unknown after a crash are retried
(idempotent tools) or put to a reviewer.

While a tool runs, the run's lease is renewed. A cancelled run (``asyncio.wait_for`` timeout,
Ctrl-C, server shutdown) does not abandon a running tool: it waits for it up to the agent's
``tool_grace`` and stores its real outcome before the cancellation goes on. A tool still
running after that keeps the thread (and its lease) until it ends, and its outcome is stored
then, as long as the event loop runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from datetime import timedelta
from inspect import isawaitable
from typing import Any

from ..audit.records import AuditKind, digest
from ..authz import starter_of
from ..decisions import PendingCall
from ..errors import InterlockError, StorageError
from ..events import ToolFinished, ToolStarted
from ..hitl import InterruptOn
from ..interrupts import Interrupt, PauseRun, enter_scope, exit_scope
from ..leases import local_run
from ..messages import AssistantMessage, ToolMessage
from ..middleware import BoundMiddleware, Middleware, ToolCallHandler, ToolCallRequest, bind
from ..review_request import ActionRequest, ReviewConfig
from ..storage.base import FINAL_STATES, CallState, JournalEntry, ParentLink, ReviewSettings
from ..subagents import CALLER, Caller, ChildWaiting
from ..text import storable_result
from ..tools import ArgumentError, ToolContext, ToolError, result_to_text
from . import spill
from .children import wait_for_child
from .deps import RunDeps
from .pauses import raise_question, raise_review, replace_review, review_calls
from .policy import settings_with, stored_rules, tightened
from .reads import turn_message
from .records import entry_with, replaced
from .texts import (
    RESULT_PREVIEW,
    SYSTEM,
    UNKNOWN_OUTCOME,
    edit_notice,
    idempotency_key,
    unstorable_text,
)
from .txn import AuditItem, ThreadTxn

log = logging.getLogger("interlock")


class ToolStillRunning(BaseException):
    """Internal: the run was cancelled and a tool outlived ``tool_grace``; the thread stays
    owned by this process until the tool ends (see :func:`execute`)."""


def runnable_state(e: JournalEntry) -> CallState:
    """The approved state a call returns to (after an ``interrupt()`` or a crash)."""
    if e.decision is not None and e.decision.type == "edit":
        return CallState.EDITED
    if e.decided_by and e.decided_by.startswith("rule:"):
        return CallState.AUTO_APPROVED
    return CallState.APPROVED


async def handle_unknown(txn: ThreadTxn, deps: RunDeps, message: AssistantMessage) -> None:
    """Calls whose outcome is unknown after a crash: retry idempotent tools, ask otherwise."""
    unknown = [txn.snapshot.journal[c.id] for c in message.tool_calls
               if txn.snapshot.journal[c.id].state == CallState.UNKNOWN]
    if not unknown:
        return
    now = txn.now()
    entries: list[JournalEntry] = []
    audit: list[AuditItem] = []
    ask: list[PendingCall] = []
    allowed: list[Any] = ["approve", "reject", "respond"]
    for e in unknown:
        call = e.effective
        tool = deps.tools_by_name.get(call.name)
        if tool is not None and tool.idempotent:
            entries.append(entry_with(
                e, state=e.paused_from or runnable_state(e), updated_at=now))
            audit.append(AuditItem(AuditKind.RETRY_IDEMPOTENT, SYSTEM, e.tool_call_id,
                                   {"name": tool.name, "attempts": e.attempts}))
            continue
        # who may decide whether it runs again: whoever could approve it (the roles,
        # approvals and separation of duties of its review, and of its tool's policy now)
        config = ReviewConfig(action_name=call.name, allowed_decisions=allowed,
                              args_schema=deps.schema(call.name),
                              requested_by=txn.thread.started_by)
        if e.review is not None:
            config = tightened(config, stored_rules(e.review, call.name, now), decisions=False)
        marked_by = e.review.by if e.review is not None else None
        if (policy := deps.declared_policy(call.name, marked_by)) is not None:
            config = tightened(config, policy, decisions=False)
        entries.append(entry_with(
            e, state=CallState.PENDING_REVIEW, updated_at=now,
            review=ReviewSettings(allowed_decisions=allowed, description=UNKNOWN_OUTCOME,
                                  reason="outcome_unknown", reviewers=config.reviewers,
                                  approvals=config.approvals,
                                  self_approval=config.self_approval)))
        # the reviewer decides on what actually ran (the edited call, if it was edited)
        ask.append(PendingCall(
            ActionRequest(tool_call_id=e.tool_call_id, name=call.name, args=call.args,
                          description=f"{UNKNOWN_OUTCOME}. Tool: {call.name}\nArgs: "
                          f"{json.dumps(call.args, ensure_ascii=False)}\napprove = run it again, "
                          f"reject = do not run it again, respond = give the result you know.",
                          reason="outcome_unknown"),
            config,
        ))
    txn.stage(journal=entries, audit=audit)
    raise_review(txn, ask, reason="outcome_unknown")
    await txn.flush()


def _may_ask_more(e: JournalEntry, policy: InterruptOn | None,
                  edits: InterruptOn | None) -> bool:
    """False where the policies plainly ask nothing beyond the stored rules of ``e`` (read
    off the stored fields, before any rules are built: the usual case, on every run)."""
    r = e.review
    assert r is not None and e.decision is not None
    if edits is not None and "edit" not in edits.allowed_decisions:
        return True
    if policy is None:
        return False
    if e.decision.type == "approve" and r.reason != "outcome_unknown" and (
            "approve" not in policy.allowed_decisions or "approve" not in r.allowed_decisions):
        return True
    if policy.reviewers is not None and (r.reviewers is None or not set(r.reviewers) <= {
            *policy.reviewers, *(policy.escalate_to or ())}):
        return True
    return policy.approvals > (r.approvals or 1) or (
        not policy.self_approval and r.self_approval is not False)


def _asks_more(e: JournalEntry, judged: ReviewConfig, now: ReviewConfig,
               edits: InterruptOn | None) -> str | None:
    """What the rules ``now`` ask beyond ``judged`` (those the decision of ``e`` was judged
    under), in words; ``None``: nothing. An approval must be allowed by the rules of the
    revision that runs; an edit (its editor's approval of the revision it made) by the policy
    of the tool it edited (``edits``)."""
    assert e.decision is not None and e.review is not None
    why: list[str] = []
    retry = e.review.reason == "outcome_unknown"  # "run it again": its own decisions
    if e.decision.type == "approve" and "approve" not in now.allowed_decisions and not retry:
        why.append("it may no longer be approved")
    if e.decision.type == "edit" and edits is not None and (
            "edit" not in edits.allowed_decisions):
        why.append(f"{e.name} calls may no longer be edited")
    if set(now.reviewers or ()) != set(judged.reviewers or ()):
        why.append(f"it needs one of the roles {', '.join(now.reviewers or ())}")
    if now.approvals_required > judged.approvals_required:
        why.append(f"it needs {now.approvals_required} approvals")
    if now.self_approval is False and judged.self_approval is not False:
        why.append("whoever started the run may not approve it")
    return "; ".join(why) or None


async def ask_again_if_stricter(txn: ThreadTxn, deps: RunDeps,
                                message: AssistantMessage) -> None:
    """Approved calls whose tool's policy in this process asks more than the rules they were
    approved under (a worker on a newer policy than the API process that took the decision,
    or a redeploy between the decision and the run): asked again under the stricter of the
    two (:func:`.policy.tightened`), from no approvals, instead of run."""
    batched: list[PendingCall] = []
    own: list[PendingCall] = []
    entries: list[JournalEntry] = []
    for c in message.tool_calls:
        e = txn.snapshot.journal[c.id]
        if e.state not in (CallState.APPROVED, CallState.EDITED) or e.review is None or (
                e.decision is None or e.decision.type not in ("approve", "edit")):
            continue
        call = e.effective
        edits = deps.declared_policy(e.name, e.review.by) if e.decision.type == "edit" \
            else None
        policy = deps.declared_policy(call.name, e.review.by)
        if not _may_ask_more(e, policy, edits):
            continue
        now = txn.now()
        judged = stored_rules(e.review, call.name, now)
        rules = tightened(judged, policy, decisions=e.review.reason != "outcome_unknown") \
            if policy is not None else judged
        why = _asks_more(e, judged, rules, edits)
        if why is None:
            continue
        policy = policy or edits
        assert policy is not None
        expires = [x for x in (e.review.expires_after, policy.expires_after.total_seconds()
                               if policy.expires_after else None) if x is not None]
        escalate = e.review.escalate_after if e.review.escalate_to else (
            policy.escalate_after.total_seconds() if policy.escalate_after else None)
        config = rules.model_copy(update={
            "args_schema": deps.schema(call.name), "requested_by": txn.thread.started_by,
            "escalated_at": None, "approved_by": None,
            "escalate_to": judged.escalate_to or (
                list(policy.escalate_to) if policy.escalate_to else None),
            "expires_at": now + timedelta(seconds=min(expires)) if expires else None,
            "escalate_at": now + timedelta(seconds=escalate) if escalate else None})
        text = (f"The policy of {call.name} changed after this call was approved by "
                f"{e.decided_by}: {why}. It was not run; decide it again under the new rules.")
        entries.append(entry_with(
            e, state=CallState.PENDING_REVIEW, updated_at=now, decision=None, decided_by=None,
            review=settings_with(e.review, config).model_copy(update={
                "reason": "policy_changed",
                "expires_at": config.expires_at})))
        (own if e.review.per_call else batched).append(PendingCall(
            ActionRequest(tool_call_id=e.tool_call_id, name=call.name, args=call.args,
                          description=f"{text}\n\nTool: {call.name}\nArgs: "
                          f"{json.dumps(call.args, ensure_ascii=False)}",
                          reason="policy_changed"),
            config))
    if not entries:
        return
    txn.stage(journal=entries)
    raise_review(txn, batched, reason="policy_changed")
    raise_review(txn, own, reason="policy_changed", per_call=True)
    await txn.flush()


async def execute(txn: ThreadTxn, deps: RunDeps, e: JournalEntry) -> None:
    """Run one approved call: ``running`` (stored), the tool, its result (stored; when it is the
    turn's last open call, with the tool messages that close the turn)."""
    call = e.effective
    if e.exec_name is None and e.exec_args is None:
        # arguments the model sent unusable stay refused unless a reviewer's edit replaced them
        proposed = next((c for c in turn_message(txn.snapshot).tool_calls
                         if c.id == e.tool_call_id), None)
        if proposed is not None and proposed.args_error is not None:
            call = replaced(call, {"args_error": proposed.args_error})
    attempt = e.attempts + 1
    running = entry_with(e, state=CallState.RUNNING, attempts=attempt,
                         paused_from=e.state, updated_at=txn.now(), run_owner=txn.lease.owner)
    key = (txn.thread_id, e.tool_call_id, attempt, txn.lease.owner)
    if txn.options.obs is not None:
        txn.options.obs.tool_starting(e, running.updated_at)
    before = txn.savepoint()
    version = txn.version
    try:
        await txn.commit(journal=[running], audit=[AuditItem(
            AuditKind.TOOL_STARTED, SYSTEM, e.tool_call_id,
            {"name": call.name, "args_sha256": digest(call.args), "attempt": attempt})])
    except StorageError as exc:
        txn.rollback(before)  # the tool did not start: nothing stored later may say it did
        # (if the write landed all the same, this process's recovery puts the call back)
        spill.not_started(txn.store, key, may_have_landed=exc.maybe_stored)
        raise
    except asyncio.CancelledError:
        # cancelled (a timeout) while ``running`` was written: the tool does not start, and
        # the call stays approved, never "unknown" (the run's failure is stored with it)
        if txn.version == version:
            txn.rollback(before)
        else:
            _not_started(txn, e, running)
        raise
    spill.starting(txn.store, key)
    try:
        await txn.emit(ToolStarted(txn.thread_id, call))
    except BaseException:
        # the run's event sink raised, or the run was cancelled while it took the event: the
        # tool was never called, so the call is not left as one whose outcome is unknown
        _not_started(txn, e, running)
        raise
    request = ToolCallRequest(
        thread_id=txn.thread_id, call=call,
        original=e.proposed,
        tool=deps.tools_by_name.get(call.name),
        context=ToolContext(thread_id=txn.thread_id, tool_call_id=e.tool_call_id,
                            idempotency_key=idempotency_key(txn.thread_id, e.tool_call_id),
                            attempt=attempt,
                            decision_metadata=e.decision.metadata
                            if e.decision is not None else None),
    )
    token = enter_scope(e.answers)
    caller = CALLER.set(Caller(
        ParentLink(thread_id=txn.thread_id, tool_call_id=e.tool_call_id, tool_name=call.name,
                   agent=deps.agent_name,
                   above=txn.thread.parent.steps() if txn.thread.parent is not None else None),
        starter_of(txn.thread), txn.thread.created_by))
    try:
        tool_task = asyncio.ensure_future(deps.tool_handler(request))
    finally:
        CALLER.reset(caller)
        exit_scope(token)
    try:
        async with txn.keep_lease():
            msg = await _outcome(txn, deps, tool_task)
    except PauseRun as pause:
        _stage_question(txn, running, pause)
        await txn.flush()
        return
    except ChildWaiting as child:
        child.__traceback__ = None  # a signal too (see above)
        await wait_for_child(txn, deps, entry_with(running, paused_from=e.state),
                             child.state)
        return
    except asyncio.CancelledError:
        if tool_task.done() and not tool_task.cancelled():
            # the tool finished within the grace period: its real outcome is stored first
            await _store_ended(txn, running, tool_task)
        raise
    await store_outcome(txn, running, msg)


def _stage_question(txn: ThreadTxn, running: JournalEntry, pause: PauseRun) -> None:
    """The tool of ``running`` asked ``interrupt(value)``: the call waits for the answer (in
    the state it ran from), the question is pending."""
    # a signal, not an error: its traceback (the frame whose ``tool_task`` holds the
    # exception) would make the run's objects a reference cycle
    pause.__traceback__ = None
    waiting = entry_with(running, state=CallState.INTERRUPTED, paused_from=running.paused_from,
                         updated_at=txn.now())
    txn.stage(journal=[waiting])
    raise_question(txn, pause.value, origin="tool", tool_call_id=running.tool_call_id)


async def _store_ended(txn: ThreadTxn, running: JournalEntry,
                       tool_task: asyncio.Future[ToolMessage]) -> None:
    """Store how the tool of a run that is being cancelled ended: its result, or, when it
    asked a question, the question, with the thread waiting for its answer (released: the
    run goes no further). A question is never turned into an error the model is told of:
    nobody would be asked, and the approved call would never run."""
    exc = tool_task.exception()
    if isinstance(exc, PauseRun):
        _stage_question(txn, running, exc)
        await txn.commit(status="interrupted", hold_lease=False)
        return
    await store_outcome(txn, running, _settle(tool_task, running))


def _not_started(txn: ThreadTxn, e: JournalEntry, running: JournalEntry) -> None:
    """The run ends after ``running`` was stored but before the tool was called (cancelled, or
    its event sink raised): the call goes back to its approved state (staged; the run's
    failure stores it), and this process remembers that the attempt never started, in case
    that write fails too."""
    spill.not_started(txn.store, (txn.thread_id, e.tool_call_id, running.attempts,
                                  txn.lease.owner))
    txn.stage(journal=[entry_with(running, state=e.state, paused_from=e.paused_from,
                                  updated_at=txn.now(), run_owner=None)])


async def _outcome(txn: ThreadTxn, deps: RunDeps, tool_task: asyncio.Future[ToolMessage],
                   ) -> ToolMessage:
    """The tool's result. When the run is cancelled meanwhile, wait (bounded) for the tool
    before the cancellation goes on; a tool that outlives the bound keeps the thread."""
    try:
        return await asyncio.shield(tool_task)
    except asyncio.CancelledError:
        # an async tool is cancelled at its next await; a sync tool in its worker thread
        # cannot be, and its call returns when the function does (see Tool.run)
        tool_task.cancel()
        try:
            if not tool_task.done():
                await asyncio.wait({tool_task}, timeout=deps.tool_grace.total_seconds())
        except asyncio.CancelledError:
            # cancelled again while waiting (a second Ctrl-C, a stream left and then its
            # agent closed): the run goes, but the tool's outcome is still stored when it ends
            if not tool_task.done():
                _finish_later(txn, tool_task)
            raise
        if not tool_task.done():
            _finish_later(txn, tool_task)
            raise ToolStillRunning() from None
        raise


def _settle(task: asyncio.Future[ToolMessage], running: JournalEntry) -> ToolMessage:
    """A finished tool task's message (a handler that raised becomes an error result; a
    question is not settled here, see :func:`_store_ended`)."""
    exc = task.exception()
    if exc is None:
        return task.result()
    name = running.effective.name
    return ToolMessage(tool_call_id=running.tool_call_id, name=name, status="error",
                       content=f"Tool {name!r} failed: {type(exc).__name__}: {exc} while its "
                               f"run was being cancelled.")


def _finish_later(txn: ThreadTxn, tool_task: asyncio.Future[ToolMessage]) -> None:
    """The run is going away but its tool still runs: keep the thread owned by this process
    (and the lease renewed) until the tool ends, then store its outcome and release it."""
    thread_id = txn.thread_id
    entry = next((x for x in txn.snapshot.journal.values() if x.state == CallState.RUNNING), None)
    if entry is None:  # pragma: no cover - execute stored it just before
        return
    hold = local_run(thread_id)
    hold.__enter__()

    stored = False

    async def finish() -> None:
        nonlocal stored
        try:
            async with txn.keep_lease():
                await asyncio.wait({tool_task})
            if tool_task.cancelled():
                return
            if isinstance(tool_task.exception(), PauseRun):
                await _store_ended(txn, entry, tool_task)  # the question waits for a person
                return
            await store_outcome(txn, entry, _settle(tool_task, entry))
            stored = True
            await txn.commit(status="failed", error="The run was cancelled while a tool ran; "
                             "the tool's result is stored. Recover the thread to continue.",
                             hold_lease=False)
        except BaseException as exc:  # logged; recovery takes over
            # stopped itself (the process exits, the store closed) after the tool returned:
            # its result is kept where recovery finds it, not lost to "outcome unknown"
            if not stored and tool_task.done() and not tool_task.cancelled() and \
                    not isinstance(tool_task.exception(), PauseRun):
                with contextlib.suppress(Exception):
                    spill.keep(txn.store, (thread_id, entry.tool_call_id, entry.attempts),
                               _settle(tool_task, entry))
            log.warning("thread %r: storing the result of a tool that outlived its cancelled "
                        "run failed: %s", thread_id, exc)
        finally:
            hold.__exit__(None, None, None)

    task = asyncio.get_running_loop().create_task(finish(), name=f"interlock-finish:{thread_id}")
    _FINISHING.add(task)
    task.add_done_callback(_FINISHING.discard)


_FINISHING: set[asyncio.Task[None]] = set()
"""Tasks storing the outcome of tools whose run was cancelled (kept referenced)."""


async def finish_pending(within: float) -> int:
    """Let the tools that outlived their cancelled runs on this event loop end and their
    outcomes be stored, for up to ``within`` seconds (before a store is closed). Returns
    how many are still running."""
    loop = asyncio.get_running_loop()
    mine = [t for t in _FINISHING if t.get_loop() is loop and not t.done()]
    if not mine:
        return 0
    _, pending = await asyncio.wait(mine, timeout=within)
    return len(pending)


def not_started(txn: ThreadTxn, e: JournalEntry) -> bool:
    """Whether the ``running`` call ``e`` is one whose tool this process never called (its
    ``running`` write failed here, yet landed: the entry names this process's run as its
    owner; an entry of another owner, or of none, is not known here)."""
    return e.run_owner is not None and spill.never_started(
        txn.store, (txn.thread_id, e.tool_call_id, e.attempts, e.run_owner))


def put_back(txn: ThreadTxn, e: JournalEntry) -> None:
    """The call ``e``, whose tool this process never called (:func:`not_started`), is stored
    back in its approved state."""
    if e.run_owner is not None:
        spill.put_back(txn.store, (txn.thread_id, e.tool_call_id, e.attempts, e.run_owner))


def known_outcome(txn: ThreadTxn, e: JournalEntry) -> ToolMessage | None:
    """The result of the ``running`` call ``e`` if a process ran it and could not store its
    result yet (see :mod:`interlock._engine.spill`): whoever continues the thread stores it
    instead of declaring the outcome unknown."""
    return spill.kept(txn.store, (txn.thread_id, e.tool_call_id, e.attempts))


async def store_outcome(txn: ThreadTxn, running: JournalEntry, msg: ToolMessage) -> None:
    """Store the result of a ``running`` call. Until that worked it is kept, however many
    attempts fail meanwhile (see :func:`known_outcome`)."""
    key = (txn.thread_id, running.tool_call_id, running.attempts)
    version = txn.version
    try:
        await _store_result_once(txn, running, msg)
    except BaseException:
        if txn.version == version:  # not stored
            spill.keep(txn.store, key, msg)
        raise
    spill.drop(txn.store, key)


async def _store_result_once(txn: ThreadTxn, running: JournalEntry, msg: ToolMessage) -> None:
    call = running.effective
    edited = running.paused_from == CallState.EDITED
    msg = storable_result(msg)  # lone surrogates and NUL: escaped, with a note
    content = msg.content
    if edited:
        custom = running.review.edit_notice if running.review is not None else None
        content = edit_notice(call.name, call.args, custom) + content
    msg = ToolMessage(tool_call_id=running.tool_call_id, name=call.name, content=content,
                      status=msg.status, decision="edit" if edited else msg.decision)
    state = CallState.SUCCEEDED if msg.status == "success" else CallState.FAILED
    done = entry_with(running, state=state, result=msg, paused_from=None,
                      updated_at=txn.now())
    # When this was the last open call of the turn, the tool messages are appended and the
    # turn is closed in the same commit as the result (advance_turn would do it next).
    calls = turn_message(txn.snapshot).tool_calls
    entries = [done if c.id == running.tool_call_id else txn.snapshot.journal[c.id] for c in calls]
    close: dict[str, Any] = {}
    if all(x.state in FINAL_STATES and x.result is not None for x in entries):
        close = {"messages": [x.result for x in entries], "turn": None, "hooks": None}
    child = {"child_thread_id": running.child_thread} if running.child_thread else {}
    await txn.commit(journal=[done], audit=[AuditItem(
        AuditKind.TOOL_FINISHED, SYSTEM, running.tool_call_id,
        {"name": call.name, "status": msg.status, "result": msg.content[:RESULT_PREVIEW],
         "result_chars": len(msg.content), "result_sha256": digest(msg.content), **child})],
        **close)
    await txn.emit(ToolFinished(txn.thread_id, msg))


def _unstorable_value(name: str, call_id: str, exc: Exception) -> ToolMessage:
    return ToolMessage(tool_call_id=call_id, name=name, status="error",
                       content=unstorable_text(name, f"{type(exc).__name__}: {exc}"))


async def invoke_tool(request: ToolCallRequest) -> ToolMessage:
    """The innermost tool handler: validate the arguments and call the tool."""
    call = request.call
    tool = request.tool
    if tool is None:
        return ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                           content=f"Tool {call.name!r} does not exist.")
    if call.args_error is not None:
        return ToolMessage(
            tool_call_id=call.id, name=call.name, status="error",
            content=f"The arguments for tool {call.name!r} could not be parsed "
            f"({call.args_error}). The tool was not run; call it again with a JSON object.")
    try:
        value = await tool.run(call.args, request.context)
    except ArgumentError as exc:
        return ToolMessage(
            tool_call_id=call.id, name=call.name, status="error",
            content=f"Invalid arguments for tool {call.name!r}: {'; '.join(exc.errors)}. "
            f"The tool was not run; fix the arguments and call it again.")
    except ToolError as exc:
        return ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                           content=exc.message)
    except Exception as exc:
        return ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                           content=f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}")
    try:
        text = result_to_text(value)
    except Exception as exc:  # the tool finished; its value cannot be shown or stored
        return _unstorable_value(call.name, call.id, exc)
    return ToolMessage(tool_call_id=call.id, name=call.name, content=text)


def build_tool_handler(middleware: Sequence[BoundMiddleware | object]) -> ToolCallHandler:
    """Compose ``wrap_tool_call`` hooks, the first middleware outermost."""
    handler: ToolCallHandler = invoke_tool
    for mw in reversed(middleware):
        bound = mw if isinstance(mw, BoundMiddleware) else bind(mw, None)
        wrap = bound.wrap_tool_call
        if wrap is None or getattr(type(bound.obj), "wrap_tool_call", None) is \
                Middleware.wrap_tool_call:
            continue  # no hook, or the protocol's pass-through

        def make(w: Any, nxt: ToolCallHandler, owner: object = bound.obj) -> ToolCallHandler:
            async def h(req: ToolCallRequest) -> ToolMessage:
                out = w(req, nxt)
                result = await out if isawaitable(out) else out
                if not isinstance(result, ToolMessage):
                    raise InterlockError(
                        f"{type(owner).__name__}.wrap_tool_call returned {type(result).__name__}; "
                        f"it must return the ToolMessage from call_next(request) (or its own).")
                return result
            return h

        handler = make(wrap, handler)
    return handler


async def store_late_results(txn: ThreadTxn, *, tidy: bool = True) -> bool:
    """Calls asked about as "outcome unknown" whose result was kept: a process ran them and
    could not store the result before another process took the thread over (its writes
    failed for longer than its lease); this one, or one that died, through the spill
    directory. The result is stored now and the question withdrawn: a known outcome does not
    stay "unknown". Kept results that can no longer be stored (the call got an outcome
    otherwise, or was run again) are forgotten: always with ``tidy``, otherwise (a reviewer's
    resume, which must not read the spill directory on every decision) only while the thread
    asks about an outcome; the recovery sweep visits the threads named there and tidies them.
    Returns whether anything was stored."""
    if not tidy:
        tidy = any(c.request.reason == "outcome_unknown" for review in txn.thread.pending
                   if review.kind == "review" and review.path is None
                   for c in review_calls(review))
    stored = False
    while (found := _late_result(txn)) is not None:
        review, e, msg = found
        left = [c for c in review_calls(review) if c.request.tool_call_id != e.tool_call_id]
        txn.stage(pending=replace_review(txn, review, left), audit=[AuditItem(
            AuditKind.RECOVERED, SYSTEM, e.tool_call_id,
            {"result_stored_late": True, "attempt": e.attempts})])
        await store_outcome(txn, entry_with(e, state=CallState.RUNNING), msg)
        stored = True
    journal = txn.snapshot.journal

    def outdated(call_id: str, attempt: int) -> bool:
        e = journal.get(call_id)  # the open turn's calls: one of a closed turn has its outcome
        return e is None or e.attempts > attempt or e.state in FINAL_STATES

    if tidy:
        spill.drop_moot(txn.store, txn.thread_id, outdated)
    return stored


def _late_result(txn: ThreadTxn) -> tuple[Interrupt, JournalEntry, ToolMessage] | None:
    for review in txn.thread.pending:
        if review.kind != "review" or review.path is not None:
            continue
        for c in review_calls(review):
            e = txn.snapshot.journal.get(c.request.tool_call_id)
            if c.request.reason != "outcome_unknown" or e is None or \
                    e.state != CallState.PENDING_REVIEW:
                continue
            if (msg := known_outcome(txn, e)) is not None:
                return review, e, msg
    return None


async def settle_stopped_run(txn: ThreadTxn) -> None:
    """Take over a loaded thread whose run stopped: of its ``running`` calls, a result this
    process kept is stored, one whose tool this process never called goes back to its
    approved state, and every other becomes ``unknown`` (it may have taken effect). Nothing
    runs here; the thread is left ``running`` under this run's lease."""
    running = [e for e in txn.snapshot.journal.values() if e.state == CallState.RUNNING]
    # results this process got but could not store are stored now, not declared unknown
    known = [(e, msg) for e in running if (msg := known_outcome(txn, e)) is not None]
    rest = [e for e in running if all(e is not k for k, _ in known)]
    # calls whose tool this process knows it never called go back to their approved state
    unstarted = [e for e in rest if not_started(txn, e)]
    unknown = [e for e in rest if all(e is not u for u in unstarted)]
    now = txn.now()
    await txn.commit(
        journal=[entry_with(e, state=CallState.UNKNOWN, updated_at=now)
                 for e in unknown]
        + [entry_with(e, state=e.paused_from or runnable_state(e), paused_from=None,
                      updated_at=now, run_owner=None) for e in unstarted],
        status="running", error=None,
        audit=[AuditItem(AuditKind.OUTCOME_UNKNOWN, SYSTEM, e.tool_call_id,
                         {"name": e.effective.name, "attempts": e.attempts}) for e in unknown]
        + [AuditItem(AuditKind.RECOVERED, SYSTEM, None,
                     {"previous_owner": txn.thread.lease_owner})],
    )
    for e in unstarted:  # stored back: nothing of them is left to know here
        put_back(txn, e)
    for e, msg in known:
        await store_outcome(txn, e, msg)
