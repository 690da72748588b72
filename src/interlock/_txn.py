"""The run transaction: the one object through which a run reads and changes its thread.

A :class:`ThreadTxn` loads the thread, stages changes in memory and stores them with one
compare-and-set commit (holding or releasing the lease), turns a lost compare-and-set into the
error the caller should see, and raises the two kinds of pause: a review request for tool calls
(:meth:`ThreadTxn.raise_review`) and a question from ``interrupt()``
(:meth:`ThreadTxn.raise_question`). Nothing else in the engine talks to the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from ._models import replaced
from ._notices import outbox_events
from ._snapshots import SnapshotCache
from ._summary import summary_updates
from ._texts import SYSTEM, digest, public_interrupt
from .audit import GENESIS, AuditKind, make_record
from .audit_key import AuditKey, load_key
from .decisions import PendingCall
from .errors import ConcurrencyError, StorageError, ThreadBusy, ThreadNotFound
from .events import Event, InterruptRaised
from .hitl import HITLRequest, read_request
from .interrupts import Interrupt
from .leases import QUEUED, is_this_process, owner_alive
from .messages import AssistantMessage, Message, tool_call_ids
from .result import RunResult
from .storage.base import (
    ROW_ONLY,
    Checkpointer,
    Commit,
    JournalEntry,
    ThreadRecord,
    ThreadSnapshot,
    VersionConflict,
)
from .storage.memory import MemoryCheckpointer
from .text import check_thread_id, escaped, text_problem

Sink = Callable[[Event], Awaitable[None]]
log = logging.getLogger("interlock")


class AuditItem(NamedTuple):
    kind: AuditKind
    actor: str
    tool_call_id: str | None
    data: dict[str, Any]


@dataclass(frozen=True)
class Savepoint:
    thread: ThreadRecord
    journal: dict[str, JournalEntry]
    messages: int
    staged_messages: int
    staged_journal: dict[str, JournalEntry]
    audit: int
    events: int


@dataclass(frozen=True)
class Lease:
    owner: str
    length: timedelta
    clock: Callable[[], datetime]


class ThreadTxn:
    """One run's view of one thread: the loaded snapshot plus changes not stored yet."""

    def __init__(
        self, store: Checkpointer, thread_id: str, lease: Lease, *, sink: Sink | None = None,
        on_stored: Callable[[], None] | None = None,
        snapshots: SnapshotCache | None = None,
        handoff: bool = False,
        claimed: bool = False,
        agent_name: str = "agent",
    ) -> None:
        self.store = store
        self.agent_name = agent_name
        """The agent running this thread (named in the paths of its notifications)."""
        self.handoff = handoff
        """Store the input and queue the run for a worker instead of running it here."""
        self.claimed = claimed
        """This run was claimed from the run queue: a thread owned by ``QUEUED`` is its own."""
        self.handed_off = False
        self.input_stored = False
        self.snapshots = snapshots
        self.thread_id = thread_id
        self.lease = lease
        self.sink = sink
        self.on_stored = on_stored
        """Called once, when the run's input (message, decisions, answer) is durably stored."""
        self.snap: ThreadSnapshot | None = None
        self.version: int | None = None
        self._stored: ThreadRecord | None = None
        """The thread row as stored (what the next commit replaces)."""
        """Version of the thread row in the store (None: not created yet)."""
        self.holding = False
        """Whether the last commit of this run holds the lease."""
        self.conflict: Callable[[], ConcurrencyError] = self._busy
        """The error a lost compare-and-set becomes (see :meth:`expect`)."""
        self._messages: list[Message] = []
        self._journal: dict[str, JournalEntry] = {}
        self._audit: list[AuditItem] = []
        self._events: list[Event] = []
        self._lock = asyncio.Lock()
        self._key: AuditKey | None = None
        self._stored_told = False
        self.children_busy = False
        """A sub-agent thread this run waits for is advanced by another process right now:
        the thread is left ``running`` without a lease (see :mod:`interlock._subagents`)."""

    def reset(self) -> None:
        """Forget the loaded thread and everything staged (to load it afresh)."""
        self.snap = None
        self.version = None
        self._stored = None
        self.holding = False
        self._messages, self._journal, self._audit, self._events = [], {}, [], []

    # ------------------------------------------------------------------ reading

    @property
    def s(self) -> ThreadSnapshot:
        assert self.snap is not None, "load() first"
        return self.snap

    @property
    def t(self) -> ThreadRecord:
        return self.s.thread

    def now(self) -> datetime:
        return self.lease.clock()

    @property
    def has_staged_input(self) -> bool:
        return bool(self._messages)

    def turn_message(self) -> AssistantMessage:
        assert self.t.turn is not None
        msg = self.s.messages[self.t.turn]
        assert isinstance(msg, AssistantMessage)
        return msg

    def call_ids(self) -> AbstractSet[str]:
        """The ids of every tool call proposed in the thread's messages so far. Read from the
        snapshot cache for the messages it holds, so a long thread costs only its new ones."""
        messages = self.s.messages
        known, n = (self.snapshots.call_ids(self.t, messages) if self.snapshots is not None
                    else (frozenset(), 0))
        rest = tool_call_ids(messages[n:]) if n < len(messages) else set()
        return known | rest if rest else known

    def result(self) -> RunResult:
        t = self.t
        messages = list(self.s.messages)
        if t.pending or (t.turn is not None and t.status == "running" and not t.lease_owner):
            # (an open turn without requests: its sub-agents are being advanced elsewhere)
            return RunResult(self.thread_id, "interrupted", messages,
                             [public_interrupt(i) for i in t.pending])
        last = messages[-1] if messages else None
        output = last.content if isinstance(last, AssistantMessage) and not last.tool_calls \
            else None
        return RunResult(self.thread_id, "completed", messages, [], output)

    # ------------------------------------------------------------------ loading

    async def load(self, *, create: bool = False) -> bool:
        """Load the thread. Returns True when it needs recovery: its run stopped mid-way
        (the owner is gone) or failed in the middle of a turn. A live owner: ``ThreadBusy``."""
        if text_problem(self.thread_id) is not None:  # no store can hold such a thread
            if create:
                check_thread_id(self.thread_id)
            raise ThreadNotFound(self.thread_id)
        if self.snapshots is not None:
            snap = await self.snapshots.load(self.store, self.thread_id)
        else:
            snap = await self.store.load(self.thread_id)
        if snap is None:
            if not create:
                raise ThreadNotFound(self.thread_id,
                                     in_memory=isinstance(self.store, MemoryCheckpointer))
            check_thread_id(self.thread_id)
            now = self.now()
            self.snap = ThreadSnapshot(
                thread=ThreadRecord(thread_id=self.thread_id, created_at=now, updated_at=now,
                                    version=0),
                messages=[], journal={},
            )
            return False
        self.snap = snap
        self.version = snap.thread.version
        self._stored = snap.thread
        if self.snapshots is not None:
            self.snapshots.remember(snap.thread, snap.messages)
        t = snap.thread
        if t.status == "running":
            owner = t.lease_owner
            if owner == QUEUED and self.claimed:
                return False
            if owner and owner_alive(owner, t.lease_until, self.now(), self.thread_id,
                                     asking_run=True):
                raise ThreadBusy(self.thread_id, owner, here=is_this_process(owner))
            return True
        return t.status == "failed" and t.turn is not None

    async def busy_elsewhere(self, thread_id: str) -> ThreadBusy | None:
        """Whether another run advances the thread ``thread_id`` (e.g. a sub-agent's) right
        now: the error to raise, or None. Reads the thread row only."""
        snap = await self.store.load(thread_id, after_seq=ROW_ONLY)
        t = snap.thread if snap is not None else None
        if t is None or t.status != "running" or not t.lease_owner:
            return None
        if not owner_alive(t.lease_owner, t.lease_until, self.now(), thread_id):
            return None
        return ThreadBusy(thread_id, t.lease_owner, here=is_this_process(t.lease_owner))

    # ------------------------------------------------------------------ staging and storing

    def stage(
        self,
        *,
        messages: Sequence[Message] = (),
        journal: Sequence[JournalEntry] = (),
        audit: Sequence[AuditItem] = (),
        **updates: Any,
    ) -> None:
        """Apply a change to the in-memory thread; the next :meth:`flush` stores it.

        Only steps that nobody has been told about yet are staged without a flush (the
        model's reply before its calls are classified, a new message before the run
        answers): a crash loses them and the next run redoes them."""
        s = self.s
        t = s.thread
        new = replaced(t, {**updates, "message_count": t.message_count + len(messages)})
        s.thread = new
        s.messages.extend(messages)
        self._messages.extend(messages)
        if new.turn != t.turn:
            s.journal = {}
        for e in journal:
            self._journal[e.tool_call_id] = e
            if e.turn == new.turn:
                s.journal[e.tool_call_id] = e
        self._audit.extend(audit)

    async def flush(self, *, hold_lease: bool = True, queue: bool = False) -> None:
        """Store everything staged in one atomic compare-and-set commit, then publish the
        events that waited for it. ``queue``: the thread goes on the run queue in the same
        commit, owned by ``QUEUED`` until a worker claims it."""
        async with self._lock:
            await self._flush(hold_lease, queue)
        events, self._events = self._events, []
        for event in events:
            await self.emit(event)

    async def _flush(self, hold_lease: bool, queue: bool = False) -> None:
        t = self.t
        now = self.now()
        seq, prev = t.audit_seq, t.audit_hash or GENESIS
        records = []
        if self._audit and self._key is None:
            self._key = load_key(create=True)  # once per run, not at every commit
        key = self._key if self._audit else None
        for kind, actor, call_id, data in self._audit:
            seq += 1
            rec = make_record(thread_id=t.thread_id, seq=seq, prev_hash=prev, ts=now,
                              kind=kind.value, actor=actor, tool_call_id=call_id, data=data,
                              key=key)
            prev = rec.hash
            records.append(rec)
        lease = (
            {"lease_owner": QUEUED, "lease_until": None} if queue
            else {"lease_owner": self.lease.owner, "lease_until": now + self.lease.length}
            if hold_lease else {"lease_owner": None, "lease_until": None}
        )
        expected = self.version
        summary = summary_updates(
            last_decision=t.last_decision, outcome=t.outcome, status=t.status, error=t.error,
            messages=self._messages, audit=self._audit)
        new = replaced(t, {
            **lease, **summary, "version": (expected or 0) + 1, "updated_at": now,
            "audit_seq": seq, "audit_hash": prev,
        })
        # notifications of this change are stored with it (the transactional outbox)
        outbox = outbox_events(self._stored, new, self.s.journal, records,
                               agent=self.agent_name)
        try:
            await self.store.commit(
                Commit(thread=new, messages=self._messages, journal=list(self._journal.values()),
                       audit=records, outbox=outbox, enqueue=queue),
                expected_version=expected,
            )
        except VersionConflict:
            raise self.conflict() from None
        except StorageError:
            raise
        except (ValueError, TypeError, UnicodeError) as exc:
            # a value the store cannot encode (e.g. a lone surrogate in a tool's text)
            raise StorageError(
                f"Thread {self.thread_id!r}: the change could not be stored because it holds a "
                f"value the checkpointer cannot encode ({type(exc).__name__}: {exc}). Nothing "
                f"was stored."
            ) from exc
        self.s.thread = new
        self.version = new.version
        self._stored = new
        self.holding = hold_lease and not queue
        if self.snapshots is not None:
            self.snapshots.remember(new, self.s.messages)
        self._messages = []
        self._journal = {}
        self._audit = []

    async def commit(
        self,
        *,
        messages: Sequence[Message] = (),
        journal: Sequence[JournalEntry] = (),
        audit: Sequence[AuditItem] = (),
        hold_lease: bool = True,
        **updates: Any,
    ) -> None:
        """Stage a change and store it (with anything staged before) in one commit."""
        self.stage(messages=messages, journal=journal, audit=audit, **updates)
        await self.flush(hold_lease=hold_lease)

    def savepoint(self) -> Savepoint:
        """The in-memory state now, to return to when a commit fails (see :meth:`rollback`)."""
        s = self.s
        return Savepoint(s.thread, dict(s.journal), len(s.messages), len(self._messages),
                         dict(self._journal), len(self._audit), len(self._events))

    def rollback(self, sp: Savepoint) -> None:
        """Forget what was staged after ``sp`` (a step whose commit failed did not happen)."""
        s = self.s
        s.thread, s.journal = sp.thread, sp.journal
        del s.messages[sp.messages:]
        del self._messages[sp.staged_messages:]
        self._journal = sp.staged_journal
        del self._audit[sp.audit:]
        del self._events[sp.events:]

    # ------------------------------------------------------------------ conflicts

    def _busy(self) -> ConcurrencyError:
        return ThreadBusy(self.thread_id, "another writer")

    @contextlib.contextmanager
    def expect(self, conflict: Callable[[], ConcurrencyError]) -> Any:
        """Within the block a lost compare-and-set raises ``conflict()`` (e.g. a resume that
        lost the race raises ``InterruptConflict``); outside it, ``ThreadBusy``."""
        self.conflict = conflict
        try:
            yield
        finally:
            self.conflict = self._busy

    async def store_input(self, **changes: Any) -> None:
        """Stage ``changes`` (the run's input: a message, decisions, answers) and store them,
        then tell whoever waits. A hand-off run stores them with the thread put on the run
        queue, in the same commit, and goes no further (see :meth:`hand_off`)."""
        self.stage(**changes)
        if self.handoff:
            await self.flush(hold_lease=False, queue=True)
            self.handed_off = True
        else:
            await self.flush()
        self.input_stored = True
        self.stored()

    async def hand_off(self) -> RunResult:
        """Where a hand-off run would go on running: queue the thread for a worker (unless the
        input's commit did) and return ``queued``. Reached before the input was stored (the
        thread first needed recovery, or its requests expired and its run goes on), the run
        is queued all the same and this call is refused with ``ThreadBusy``: its input is not
        stored, and the caller tries again once the worker is done."""
        if not self.handed_off:
            await self.flush(hold_lease=False, queue=True)
            self.handed_off = True
        if not self.input_stored:
            raise ThreadBusy(self.thread_id, QUEUED)
        return RunResult(self.thread_id, "queued", list(self.s.messages),
                         [public_interrupt(i) for i in self.t.pending], version=self.version)

    def stored(self) -> None:
        """The run's input is durably stored: tell whoever waits for that (once)."""
        if not self._stored_told and self.on_stored is not None:
            self._stored_told = True
            self.on_stored()

    # ------------------------------------------------------------------ leases

    @contextlib.asynccontextmanager
    async def keep_lease(self) -> AsyncIterator[None]:
        """Renew the lease every third of its length while the block runs (a tool call).

        A timer, not a task: most blocks end long before the first renewal is due, and then
        nothing but the timer was made (a task costs a few event-loop iterations to start,
        cancel and settle)."""
        keeper = _LeaseKeeper(self, max(self.lease.length.total_seconds() / 3, 0.05))
        try:
            yield
        finally:
            await keeper.stop()

    async def renew_lease(self) -> None:
        """Store the thread row again with the lease extended (while a tool runs); a failure
        is logged and the next renewal (or the result commit) retries."""
        try:
            async with self._lock:
                if self.holding:
                    await self._flush(hold_lease=True)
        except Exception as exc:
            log.warning("thread %r: renewing the lease failed: %s", self.thread_id, exc)

    # ------------------------------------------------------------------ pauses

    def review_calls(self, review: Interrupt) -> list[PendingCall]:
        """The calls of a stored review interrupt, with their review settings."""
        req = read_request(review.value)
        return [PendingCall(a, c) for a, c in
                zip(req.action_requests, req.review_configs, strict=True)]

    def replace_review(self, review: Interrupt, left: Sequence[PendingCall]) -> list[Interrupt]:
        """The pending list with ``review`` narrowed to ``left`` (dropped when empty)."""
        others = [i for i in self.t.pending if i.id != review.id]
        if not left:
            return others
        return [*others, replaced(review, {"value": _request(left)})]

    def raise_review(
        self, calls: Sequence[PendingCall], *, reason: str | None = None, per_call: bool = False
    ) -> Interrupt | None:
        """Stage a review request for ``calls``: one review interrupt per turn, so they join
        any that is pending (as a new interrupt, calls in the model's order). Returns it.
        ``per_call``: one interrupt for each call instead (``origin="per_call"``), which
        never merges with another; returns the last."""
        if not calls:
            return None
        if per_call:
            last: Interrupt | None = None
            for call in calls:
                last = self._stage_review([call], [call], reason, "per_call",
                                          list(self.t.pending))
            return last
        existing = next((i for i in self.t.pending if i.kind == "review"
                         and i.origin != "per_call" and i.path is None), None)
        merged = [*(self.review_calls(existing) if existing else []), *calls]
        order = {c.id: n for n, c in enumerate(self.turn_message().tool_calls)}
        merged.sort(key=lambda p: order.get(p.request.tool_call_id, 0))
        keep = [i for i in self.t.pending if i is not existing]
        return self._stage_review(merged, calls, reason, None, keep)

    def _stage_review(self, request: Sequence[PendingCall], new: Sequence[PendingCall],
                      reason: str | None, origin: str | None, keep: list[Interrupt],
                      ) -> Interrupt:
        intr = Interrupt(id=uuid.uuid4().hex, kind="review", value=_request(request),
                         created_at=self.now(), origin=origin)
        data: dict[str, Any] = {"interrupt_id": intr.id, "calls": [
            {"tool_call_id": c.request.tool_call_id, "name": c.request.name,
             "args_sha256": digest(c.request.args),
             "allowed_decisions": c.config.allowed_decisions} for c in new]}
        if reason is not None:
            data["reason"] = reason
        self.stage(pending=[*keep, intr],
                   audit=[AuditItem(AuditKind.REQUEST_RAISED, SYSTEM, None, data)])
        self._events.append(InterruptRaised(self.thread_id, public_interrupt(intr)))
        return intr

    def show(self, pending: list[Interrupt]) -> None:
        """Stage ``pending`` as the thread's pending list (a sub-agent's requests shown here);
        the ones new here are announced once the change is stored."""
        known = {i.id for i in self.t.pending}
        self.stage(pending=pending)
        self._events += [InterruptRaised(self.thread_id, public_interrupt(i))
                         for i in pending if i.id not in known]

    def raise_question(self, value: Any, *, origin: str, tool_call_id: str | None = None,
                       ) -> Interrupt:
        """Stage a question from ``interrupt(value)`` in a tool or an ``after_model`` hook
        (text that cannot be stored is escaped)."""
        value = escaped(value)[0]
        intr = Interrupt(id=uuid.uuid4().hex, kind="input", value=value, created_at=self.now(),
                         tool_call_id=tool_call_id, origin=origin)
        self.stage(pending=[*self.t.pending, intr], audit=[AuditItem(
            AuditKind.INPUT_REQUESTED, SYSTEM, tool_call_id,
            {"interrupt_id": intr.id, "origin": origin, "value": value})])
        self._events.append(InterruptRaised(self.thread_id, public_interrupt(intr)))
        return intr

    async def emit(self, event: Event) -> None:
        if self.sink is not None:
            await self.sink(event)


class _LeaseKeeper:
    """Calls :meth:`ThreadTxn.renew_lease` every ``period`` seconds (counted from the end of
    the previous renewal) until :meth:`stop`."""

    def __init__(self, txn: ThreadTxn, period: float) -> None:
        self.txn, self.period = txn, period
        self.loop = asyncio.get_running_loop()
        self.renewal: asyncio.Task[None] | None = None
        self.stopped = False
        self.timer: asyncio.TimerHandle | None = self.loop.call_later(period, self._due)

    def _due(self) -> None:
        self.timer = None
        self.renewal = self.loop.create_task(self.txn.renew_lease(),
                                             name=f"interlock-lease:{self.txn.thread_id}")
        self.renewal.add_done_callback(self._renewed)

    def _renewed(self, task: asyncio.Task[None]) -> None:
        if task is self.renewal and not self.stopped:
            self.renewal = None
            self.timer = self.loop.call_later(self.period, self._due)

    async def stop(self) -> None:
        """No more renewals; a renewal under way is cancelled and waited for."""
        self.stopped = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        task = self.renewal
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.shield(_settled(task))


def _request(calls: Sequence[PendingCall]) -> dict[str, Any]:
    return HITLRequest(action_requests=[c.request for c in calls],
                       review_configs=[c.config for c in calls]).to_json()


async def _settled(task: asyncio.Task[Any]) -> None:
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: never reported as unhandled
