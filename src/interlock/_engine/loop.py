"""The agent loop, driven by the stored journal.

Every step is committed before the next one starts (compare-and-set on the thread version):

1. model turn: the assistant message, one ``proposed`` journal row per tool call;
2. ``after_model`` hooks: each call becomes ``pending_review`` / ``approved`` /
   ``auto_approved`` / ``rejected``; gated calls form one review interrupt;
3. each runnable call: ``running`` is committed *before* the tool is called, the result is
   committed *with* ``succeeded`` / ``failed`` (see :mod:`interlock._execute`);
4. when every call of the turn has a result, the tool messages are appended in call order.

Starting, resuming, recovering and streaming all enter the same loop; finished steps are never
redone. Each function here takes the run transaction and the agent's dependencies.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from inspect import isawaitable
from typing import Any

from ..audit.records import AuditKind, digest
from ..authz import (
    Reviewer,
    actor_of,
    check_post,
    facts_of,
    remember_applies,
    starter_fields,
    starter_of,
)
from ..decisions import PendingCall
from ..errors import (
    InterlockError,
    InterruptConflict,
    NoPendingInterrupt,
    RunLimitExceeded,
    StaleInterrupt,
    SubAgentThread,
    ThreadBusy,
    ThreadInterrupted,
)
from ..events import ModelTextDelta, ToolCallProposed
from ..interrupts import PauseRun, enter_scope, exit_scope
from ..leases import QUEUED
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from ..middleware import (
    AutoApproveMark,
    Mark,
    ModelTurn,
    RejectMark,
    ReviewMark,
    mark_from_record,
    mark_record,
)
from ..result import RunResult
from ..review_request import ActionRequest, review_config
from ..storage.base import (
    FINAL_STATES,
    RUNNABLE_STATES,
    CallState,
    DecisionRecord,
    HookProgress,
    JournalEntry,
    ReviewSettings,
)
from ..subagents import Caller
from ..text import escaped, storable_reply
from ..tools import Tool
from .children import Route, child_state, has_waiting, plan
from .decide import (
    apply_resume,
    expire_due,
    pending_calls,
    raise_if_answered,
    refuse_if_shifted,
)
from .delegate import route, settle_waiting
from .deps import RunDeps
from .execute import (
    ask_again_if_stricter,
    execute,
    handle_unknown,
    settle_stopped_run,
    store_late_results,
)
from .pauses import raise_question, raise_review
from .reads import call_ids, run_result, turn_message
from .records import entry_with, replaced
from .resume import ResumeSpec
from .texts import SYSTEM, public_interrupt
from .txn import AuditItem, ThreadTxn

# ---------------------------------------------------------------------- entry steps


async def start(txn: ThreadTxn, deps: RunDeps, new_messages: list[Message],
                by: Reviewer | None = None,
                metadata: Mapping[str, Any] | None = None) -> RunResult:
    """New input on a thread (created if needed), sent by ``by`` (``None``: the application).
    A new thread records ``by`` as its creator and ``metadata``; an existing one takes input
    only from those who may post to it (:mod:`interlock.authz`)."""
    needs_recovery = await txn.load(create=True)
    preview = next(
        (m.content[:200] for m in reversed(new_messages) if isinstance(m, UserMessage)), ""
    )
    actor = actor_of(by)
    if txn.version is None:
        txn.stage(created_by=None if by is None else actor, metadata=dict(metadata or {}))
    else:
        _not_a_child(txn, "send messages to the parent thread instead")
        check_post(by, facts_of(txn.thread))
        if needs_recovery:
            await take_over(txn, deps)
            if txn.thread.pending:
                raise ThreadInterrupted(txn.thread_id, [i.id for i in txn.thread.pending])
        await expire_and_continue(txn, deps)
        if txn.thread.pending:
            raise ThreadInterrupted(txn.thread_id, [i.id for i in txn.thread.pending])
        preview = preview or txn.thread.preview
    # The input is stored before anyone is told it was accepted: right away when a caller
    # waits for that (``on_stored``, the review server), otherwise together with the model's
    # first reply (one commit less; if the process dies in between, the caller never got an
    # answer and simply sends the message again).
    first = txn.thread.message_count
    posted = [AuditItem(AuditKind.MESSAGE_POSTED, actor, None,
                        {"seq": first + n, "role": m.role,
                         "sha256": digest(m.model_dump(mode="json"))})
              for n, m in enumerate(new_messages)]
    txn.stage(messages=new_messages, status="running", error=None, preview=preview,
              **starter_fields(by),
              audit=[*posted, AuditItem(AuditKind.RUN_STARTED, actor, None,
                                        {"trigger": "message"})])
    if txn.options.on_stored is not None or txn.options.handoff:
        await txn.store_input()
    return await loop(txn, deps)


async def start_child(txn: ThreadTxn, deps: RunDeps, new_messages: list[Message],
                      caller: Caller) -> RunResult:
    """Start the thread of a sub-agent for the parent call ``caller``; a thread started for
    that call before (the call runs again after a crash) is continued, never started over."""
    await txn.load(create=True)
    if txn.version is not None:
        if txn.thread.parent is None or not txn.thread.parent.same_call(caller.link):
            raise SubAgentThread(
                txn.thread_id, caller.link.thread_id, caller.link.tool_call_id,
                "a thread with this id exists and was not started by that call; rename the "
                "thread it collides with.")
        txn.reset()
        return await recover(txn, deps)
    link = caller.link
    first = txn.thread.message_count
    posted = [AuditItem(AuditKind.MESSAGE_POSTED, SYSTEM, None,
                        {"seq": first + n, "role": m.role,
                         "sha256": digest(m.model_dump(mode="json"))})
              for n, m in enumerate(new_messages)]
    txn.stage(messages=new_messages, status="running", created_by=caller.created_by,
              parent=link, preview=next((m.content[:200] for m in new_messages
                                         if isinstance(m, UserMessage)), ""),
              **starter_fields(caller.starter),
              audit=[*posted, AuditItem(AuditKind.SUBAGENT_STARTED, SYSTEM, None, {
                  "parent_thread_id": link.thread_id, "parent_tool_call_id": link.tool_call_id,
                  "tool_name": link.tool_name, "parent_agent": link.agent}),
                  AuditItem(AuditKind.RUN_STARTED, actor_of(caller.starter), None,
                            {"trigger": "subagent"})])
    return await loop(txn, deps)


_DECIDE_ON_PARENT = ("decide its requests on the parent thread, where they are shown with the "
                     "same interrupt ids: agent.resume(<parent thread>, ..., interrupt_id=...)")


def _not_a_child(txn: ThreadTxn, what: str, spec: ResumeSpec | None = None) -> None:
    """A sub-agent's thread is driven only through its parent."""
    link = txn.thread.parent
    if link is not None and (spec is None or spec.routed_from != link.thread_id):
        raise SubAgentThread(txn.thread_id, link.thread_id, link.tool_call_id, what + ".")


async def recover(txn: ThreadTxn, deps: RunDeps) -> RunResult:
    """Continue a thread that stopped mid-run (crash, failed model call, ...). A thread
    waiting for sub-agents settles them (see :mod:`interlock._delegate`)."""
    if await txn.load():
        return await take_over(txn, deps)
    if txn.thread.status == "running" and txn.thread.lease_owner == QUEUED:
        # queued for a worker, but taken here (``recover THREAD``): the compare-and-set of the
        # first write decides against a worker that claimed it meanwhile
        return await loop(txn, deps)
    if (continued := await expire_and_continue(txn, deps)) is not None:
        return continued
    if await _stored_late(txn):
        await txn.commit(status="running", error=None)
        return await loop(txn, deps)
    if has_waiting(txn):
        await txn.commit(status="running", error=None)
        return await loop(txn, deps)
    if txn.thread.pending:
        return await finish_interrupted(txn)
    if txn.thread.status == "failed":
        await txn.commit(status="running", error=None)
        return await loop(txn, deps)
    return run_result(txn.snapshot)


async def claimed(txn: ThreadTxn, deps: RunDeps) -> RunResult:
    """Continue a run that a worker claimed from the run queue: the queued run goes on; a run
    whose worker stopped (it died, or was cancelled and stored ``failed``) is recovered."""
    if await txn.load():
        return await take_over(txn, deps)
    if txn.thread.status == "running":
        return await loop(txn, deps)
    if txn.thread.status == "failed" or await _stored_late(txn):
        await txn.commit(status="running", error=None)
        return await loop(txn, deps)
    return run_result(txn.snapshot)  # nothing left to run (already done by an earlier claim)


async def _stored_late(txn: ThreadTxn) -> bool:
    """Whether a result this process kept was stored for a call another process, taking the
    thread over, asked about as unknown, and nothing else waits for a person now."""
    return await store_late_results(txn) and not txn.thread.pending


async def take_over(txn: ThreadTxn, deps: RunDeps) -> RunResult:
    """Recover a loaded thread whose run stopped: calls that were ``running`` become
    ``unknown`` (and are retried or put to a reviewer), then the loop goes on."""
    await settle_stopped_run(txn)
    return await loop(txn, deps)


async def resume(txn: ThreadTxn, deps: RunDeps, spec: ResumeSpec) -> RunResult:
    """Answer the pending request(s) and continue. A thread whose run stopped is recovered
    first; the resume is then judged against what is pending after that."""
    try:
        needs = await txn.load()
    except ThreadBusy:
        raise_if_answered(txn, spec)  # the winner is still running: the id tells us
        if txn.snap is None:
            raise
        _not_a_child(txn, _DECIDE_ON_PARENT, spec)
        if (routes := plan(txn, spec)) is not None:
            # a request of a sub-agent: its thread is not the one busy here
            await _route_or_settle(txn, deps, spec, routes, claim=False)
            return await settle_after(txn, deps)
        raise
    _not_a_child(txn, _DECIDE_ON_PARENT, spec)
    if needs:
        before = {i.id for i in txn.thread.pending}
        await take_over(txn, deps)
        raise_if_answered(txn, spec)
        still = [i for i in txn.thread.pending if i.id in before]
        if not still and txn.thread.pending:
            # recovery replaced the request this resume answers (e.g. it now also asks about
            # a call whose outcome is unknown): the caller must look at it again
            raise StaleInterrupt(txn.thread_id, spec.interrupt_id or next(iter(before), ""),
                                 [i.id for i in txn.thread.pending])
    raise_if_answered(txn, spec)
    shown = txn.thread.pending
    if await store_late_results(txn, tidy=False):
        # a result kept for a call asked about as "outcome unknown" (by this process, or left
        # in the spill directory by one that died) is stored and that question withdrawn: no
        # decision on it may overrule the known outcome (a retry would run the tool again)
        if not txn.thread.pending:
            await txn.commit(status="running", error=None)
            await loop(txn, deps)
            raise StaleInterrupt(txn.thread_id,
                                 spec.interrupt_id or (shown[0].id if shown else ""),
                                 [i.id for i in txn.thread.pending])
        await txn.commit(hold_lease=False)  # the rest waits for a person, as before
        refuse_if_shifted(txn, spec, pending_calls(shown))
        shown = txn.thread.pending
    if await expire_and_continue(txn, deps) is not None:
        # every pending call expired and the run went on: this answer came too late
        raise StaleInterrupt(txn.thread_id, spec.interrupt_id or (shown[0].id if shown else ""),
                             [i.id for i in txn.thread.pending])
    if txn.thread.pending is not shown:  # deadlines were applied as this resume touched it
        refuse_if_shifted(txn, spec, pending_calls(shown))
    if (routes := plan(txn, spec)) is not None:
        if await _route_or_settle(txn, deps, spec, routes, claim=True):
            return await loop(txn, deps)
        return await settle_after(txn, deps)
    await apply_resume(txn, deps, spec)
    if spec.claim is not None:
        await spec.claim(child_state(txn, deps.agent_name))
    return await loop(txn, deps)


async def _route_or_settle(txn: ThreadTxn, deps: RunDeps, spec: ResumeSpec,
                           routes: list[Route], *, claim: bool) -> bool:
    """:func:`route`; when the sub-agent no longer waits for what this thread shows (an
    earlier resume's decision was stored there, its reply lost), this thread is brought up
    to date with it before the refusal is raised: it does not keep showing a request that
    every resume is refused."""
    try:
        return await route(txn, deps, spec, routes, claim=claim)
    except (InterruptConflict, StaleInterrupt, NoPendingInterrupt):
        if not await _routed_busy(txn, routes):
            with contextlib.suppress(InterlockError):
                await settle_after(txn, deps)
        raise


async def _routed_busy(txn: ThreadTxn, routes: list[Route]) -> bool:
    """Whether a sub-agent a refused resume was routed to is advanced by another run right
    now: that run stored the decision that won and takes this thread up after it; settling
    the thread here meanwhile would take it from under that run (its record of the decision,
    and its continuation, would be lost to a compare-and-set)."""
    for r in routes:
        e = txn.snapshot.journal.get(r.call_id) if txn.snap is not None else None
        if e is not None and e.child_thread is not None \
                and await txn.busy_elsewhere(e.child_thread) is not None:
            return True
    return False


async def settle_after(txn: ThreadTxn, deps: RunDeps) -> RunResult:
    """After a routed resume that could not take this thread: settle it if nobody holds it
    now (whoever does reads the child when it settles)."""
    txn.reset()
    try:
        return await recover(txn, deps)
    except ThreadBusy:
        return run_result(txn.snapshot)


async def expire(txn: ThreadTxn, deps: RunDeps) -> RunResult | None:
    """Apply deadlines to one interrupted thread; the run continues when nothing is left to
    decide. None: nothing expired."""
    await txn.load()
    expired = await expire_due(txn)
    if has_waiting(txn):  # its sub-agents apply their own deadlines
        await txn.commit(status="running")
        return await loop(txn, deps)
    if not expired:
        return None
    if txn.thread.pending:
        return run_result(txn.snapshot)
    await txn.commit(status="running")
    return await loop(txn, deps)


async def expire_and_continue(txn: ThreadTxn, deps: RunDeps) -> RunResult | None:
    """Apply deadlines when the thread is touched. If that resolved every pending call, the
    run continues first (the model gets the expiry results, the turn is closed in order);
    returns that run's result, else None."""
    if not await expire_due(txn) or txn.thread.pending:
        return None
    await txn.commit(status="running")
    return await loop(txn, deps)


async def finish_interrupted(txn: ThreadTxn) -> RunResult:
    if txn.children_busy:
        # a sub-agent is advanced elsewhere: "running" without a lease, so that the next
        # settle or recovery reads its outcome even if its process stops
        if txn.thread.status != "running" or txn.thread.lease_owner is not None:
            await txn.commit(status="running", hold_lease=False)
        return run_result(txn.snapshot)
    if txn.thread.status != "interrupted" or txn.thread.lease_owner is not None:
        await txn.commit(status="interrupted", hold_lease=False)
    return run_result(txn.snapshot)


async def _stop_here(txn: ThreadTxn, deps: RunDeps) -> RunResult:
    """:func:`finish_interrupted`; then, when it left the thread to a sub-agent another run
    advances, look at that sub-agent once more: a run that ended in between tried to settle
    this thread while this run held it and was turned away (``ThreadBusy``), so nobody else
    would read its outcome until a sweep. Such a thread is taken again and settled. Only a
    run that ended counts: a sub-agent still ``running`` (advanced, or itself waiting for a
    busy sub-agent of its own) is read by whoever moves it on, and taking this thread again
    for it would only find it busy again, over and over."""
    result = await finish_interrupted(txn)
    for child in txn.children_busy:
        if await txn.run_ended(child):
            break
    else:
        return result  # each of them still runs: what moves it on settles this thread
    txn.reset()
    txn.children_busy = frozenset()
    try:
        return await recover(txn, deps)
    except ThreadBusy:
        return result  # another run took it: that run settles the sub-agents


# ---------------------------------------------------------------------- the loop


async def loop(txn: ThreadTxn, deps: RunDeps) -> RunResult:
    """Continue the run until it completes or must wait for someone (a hand-off run: queue
    it for a worker instead)."""
    if txn.options.handoff:
        return await _hand_off(txn)
    model_calls = 0
    while True:
        t = txn.thread
        if t.turn is not None:
            if await advance_turn(txn, deps):
                return await _stop_here(txn, deps)
            continue
        last = txn.snapshot.messages[-1] if txn.snapshot.messages else None
        direct = isinstance(last, ToolMessage) and returns_direct(txn.snapshot.messages,
                                                                  deps.tools_by_name)
        if (isinstance(last, AssistantMessage) and not last.tool_calls) or direct:
            if t.status != "completed" or t.lease_owner is not None:
                await txn.commit(status="completed", hold_lease=False)
            return run_result(txn.snapshot)  # (a return_direct tool's result is the answer)
        if model_calls >= deps.max_turns:
            raise RunLimitExceeded(
                f"Thread {txn.thread_id!r}: the model was called {model_calls} times "
                f"in one run without a final answer (max_turns={deps.max_turns}). "
                f"Raise Agent(max_turns=...) or check the model's tool use."
            )
        model_calls += 1
        await call_model(txn, deps)


async def _hand_off(txn: ThreadTxn) -> RunResult:
    """Where a hand-off run would go on running: queue the thread for a worker (unless the
    input's commit did) and return ``queued``. Reached before the input was stored (the
    thread first needed recovery, or its requests expired and its run goes on), the run is
    queued all the same and this call is refused with ``ThreadBusy``: its input is not
    stored, and the caller tries again once the worker is done."""
    if not txn.handed_off:
        await txn.flush(hold_lease=False, queue=True)
        txn.handed_off = True
    if not txn.input_stored:
        raise ThreadBusy(txn.thread_id, QUEUED)
    return RunResult(txn.thread_id, "queued", list(txn.snapshot.messages),
                     [public_interrupt(i) for i in txn.thread.pending], version=txn.version)


def returns_direct(messages: Sequence[Message], tools: Mapping[str, Tool]) -> bool:
    """Whether the run ends with the results that close ``messages``: every call of the
    model's last turn is of a ``return_direct`` tool (as LangChain decides it: whatever
    became of each call, the results are the answer and the model is not called again).
    Read from the stored messages, so a run resumed or recovered decides the same."""
    i = len(messages) - 1
    while i >= 0 and isinstance(messages[i], ToolMessage):
        i -= 1
    turn = messages[i] if i >= 0 else None
    if not isinstance(turn, AssistantMessage) or not turn.tool_calls:
        return False
    return all((tool := tools.get(c.name)) is not None and tool.return_direct
               for c in turn.tool_calls)


async def call_model(txn: ThreadTxn, deps: RunDeps) -> None:
    history: list[Message] = list(txn.snapshot.messages)
    if deps.system_prompt:
        history.insert(0, SystemMessage(content=deps.system_prompt))
    # a run that holds the thread keeps its lease while the model answers, as while a tool
    # runs: a slow answer is not taken over (and asked for again) by another process's
    # recovery. Input staged for the model's first reply waits for it (stored with it), so
    # no renewal writes it earlier.
    keep: contextlib.AbstractAsyncContextManager[None] = (
        txn.keep_lease() if txn.holding and not txn.has_staged_input
        else contextlib.nullcontext())
    async with keep:
        message = await _answer(txn, deps, history)
    message = _unique_ids(txn, storable_reply(message))
    seq = txn.thread.message_count
    now = txn.now()
    if not message.tool_calls:
        await txn.commit(messages=[message], status="completed", hold_lease=False)
        return
    entries = [
        JournalEntry(tool_call_id=c.id, turn=seq, position=i, name=c.name, args=c.args,
                     state=CallState.PROPOSED, updated_at=now)
        for i, c in enumerate(message.tool_calls)
    ]
    # stored together with the hooks' classification (one commit): until then nobody has
    # seen this reply, and a crash just means the model is asked again
    txn.stage(messages=[message], journal=entries, turn=seq, hooks=HookProgress())
    for c in message.tool_calls:
        await txn.emit(ToolCallProposed(txn.thread_id, c))


async def _answer(txn: ThreadTxn, deps: RunDeps, history: list[Message]) -> AssistantMessage:
    """The model's reply to ``history`` (streamed to the run's event sink when it has one)."""
    if txn.options.sink is None:
        return await deps.model.generate(history, list(deps.tools))
    message: AssistantMessage | None = None
    async for piece in deps.model.stream(history, deps.tools):
        if isinstance(piece, str):
            if piece:
                await txn.emit(ModelTextDelta(txn.thread_id, escaped(piece)[0]))
        else:
            message = piece
    if message is None:
        raise InterlockError(
            f"The model's stream ended without an assistant message (thread "
            f"{txn.thread_id!r}); a Model.stream() must end with an AssistantMessage."
        )
    return message


def _unique_ids(txn: ThreadTxn, message: AssistantMessage) -> AssistantMessage:
    """Every call of the reply with an id unique in the thread. A call repeated in the reply
    (the same id, tool and arguments) is one call: asked about once, run at most once. Another
    call that reuses an id (of this reply or an earlier turn) gets a new one."""
    if not message.tool_calls:
        return message
    known = call_ids(txn.snapshot, txn.options.snapshots)
    seen: set[str] = set()
    given: dict[str, ToolCall] = {}

    def taken(cid: str) -> bool:
        return cid in known or cid in seen

    calls = []
    changed = False
    for i, c in enumerate(message.tool_calls):
        first = given.get(c.id) if c.id else None
        if first is not None and (first.name, first.args, first.args_error) == (
                c.name, c.args, c.args_error):
            changed = True  # the same call again: dropped
            continue
        if c.id:
            given.setdefault(c.id, c)
        cid = c.id or f"call_{txn.thread.message_count}_{i}"
        if taken(cid):
            n = 2
            while taken(f"{cid}_{n}"):
                n += 1
            cid = f"{cid}_{n}"
        if cid != c.id:
            changed = True
            c = replaced(c, {"id": cid})
        seen.add(cid)
        calls.append(c)
    return replaced(message, {"tool_calls": calls}) if changed else message


async def advance_turn(txn: ThreadTxn, deps: RunDeps) -> bool:
    """Move the open turn forward. Returns True when it must wait for someone."""
    message = turn_message(txn.snapshot)
    hooks = txn.thread.hooks
    if hooks is not None and not hooks.done and await run_hooks(txn, deps, message, hooks):
        return True
    txn.children_busy = frozenset()
    waiting = has_waiting(txn)
    await handle_unknown(txn, deps, message)
    await ask_again_if_stricter(txn, deps, message)
    for call in message.tool_calls:
        e = txn.snapshot.journal.get(call.id)
        if e is not None and e.state in RUNNABLE_STATES:
            await execute(txn, deps, e)
    if txn.thread.turn is None:  # the last call's result closed the turn (see execute)
        return False
    if waiting:
        await settle_waiting(txn, deps)
        if txn.thread.turn is None:
            return False
    entries = [txn.snapshot.journal[c.id] for c in message.tool_calls]
    if any(e.state not in FINAL_STATES for e in entries):
        return True
    results = [e.result for e in entries if e.result is not None]
    await txn.commit(messages=results, turn=None, hooks=None)
    return False


async def run_hooks(txn: ThreadTxn, deps: RunDeps, message: AssistantMessage,
                    hooks: HookProgress) -> bool:
    """The ``after_model`` hooks, from where they stopped. True: one paused (interrupt())."""
    index = hooks.index
    answers = list(hooks.answers)
    marks: dict[str, Mark] = {k: mark_from_record(v) for k, v in hooks.marks.items()}
    turn = ModelTurn(thread_id=txn.thread_id, message=message, messages=txn.snapshot.messages,
                     tools=deps.tools_by_name, marks=marks,
                     # remembered approvals apply only to runs started by someone who may post
                     remembered_rules=txn.thread.remembered
                     if remember_applies(starter_of(txn.thread), facts_of(txn.thread)) else (),
                     started_by=txn.thread.started_by)
    middleware = deps.middleware
    while index < len(middleware):
        mw = middleware[index]
        if mw.after_model is None:
            index += 1
            answers = []
            continue
        before = dict(turn.marks)
        turn.current_middleware = mw.name
        token = enter_scope(answers)
        try:
            out = mw.after_model(turn)
            if isawaitable(out):
                await out
        except PauseRun as pause:
            txn.stage(status="interrupted", hooks=HookProgress(
                index=index, answers=answers,
                marks={k: mark_record(m) for k, m in before.items()}))
            raise_question(txn, pause.value, origin=f"after_model:{mw.name}")
            await txn.flush(hold_lease=False)
            return True
        finally:
            exit_scope(token)
        index += 1
        answers = []
    await classify(txn, deps, message, turn.marks)
    return False


async def classify(txn: ThreadTxn, deps: RunDeps, message: AssistantMessage,
                   marks: dict[str, Mark]) -> None:
    """Apply the hooks' marks to the journal: rejected, pending review, auto-approved or
    approved; gated calls raise the turn's review request."""
    now = txn.now()
    entries: list[JournalEntry] = []
    audit: list[AuditItem] = []
    reviews: list[PendingCall] = []
    per_call: list[PendingCall] = []
    for call in message.tool_calls:
        e = txn.snapshot.journal[call.id]
        mark = marks.get(call.id)
        if isinstance(mark, RejectMark):
            msg = ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                              content=mark.message, decision="reject")
            entries.append(entry_with(
                e, updated_at=now, state=CallState.REJECTED, result=msg,
                decided_by=f"middleware:{mark.by}",
                decision=DecisionRecord(type="reject", message=mark.message)))
            audit.append(AuditItem(AuditKind.REJECTED_BY_POLICY, f"middleware:{mark.by}",
                                   call.id, {"name": call.name, "args": call.args,
                                             "message": mark.message}))
        elif isinstance(mark, ReviewMark):
            expires_at = now + mark.expires_after if mark.expires_after else None
            # the description is kept in the request (it often repeats the args)
            settings = ReviewSettings.model_validate(
                {**mark.to_json(), "description": None, "expires_at": expires_at,
                 "allow_remember": None if mark.allow_remember else False})
            entries.append(entry_with(e, updated_at=now, state=CallState.PENDING_REVIEW,
                                      review=settings))
            (per_call if mark.per_call else reviews).append(PendingCall(
                ActionRequest(tool_call_id=call.id, name=call.name, args=call.args,
                              description=mark.description, reason=mark.reason),
                review_config(call.name, mark, now=now, args_schema=deps.schema(call.name),
                              requested_by=txn.thread.started_by),
            ))
        elif call.name not in deps.tools_by_name:
            msg = ToolMessage(
                tool_call_id=call.id, name=call.name, status="error",
                content=f"Tool {call.name!r} does not exist. Available tools: "
                f"{', '.join(sorted(deps.tools_by_name))}.")
            entries.append(entry_with(e, updated_at=now, state=CallState.FAILED, result=msg))
        elif isinstance(mark, AutoApproveMark):
            entries.append(entry_with(e, updated_at=now, state=CallState.AUTO_APPROVED,
                                      decided_by=f"rule:{mark.rule}"))
            audit.append(AuditItem(AuditKind.AUTO_APPROVED, f"rule:{mark.rule}", call.id,
                                   {"name": call.name, "args": call.args, "rule": mark.rule,
                                    "middleware": mark.by,
                                    "caused_by": actor_of(starter_of(txn.thread))}))
        else:
            entries.append(entry_with(e, updated_at=now, state=CallState.APPROVED,
                                      decided_by="policy"))
    txn.stage(journal=entries, audit=audit, hooks=HookProgress(done=True))
    raised = raise_review(txn, reviews)
    raised = raise_review(txn, per_call, per_call=True) or raised
    # When nothing of the turn can run before someone answers, the pause is stored in this
    # same commit (finish_interrupted then has nothing left to write).
    pause = raised is not None and not any(
        e.state in RUNNABLE_STATES or e.state == CallState.UNKNOWN
        for e in txn.snapshot.journal.values()
    )
    if pause:
        txn.stage(status="interrupted")
    await txn.flush(hold_lease=not pause)
