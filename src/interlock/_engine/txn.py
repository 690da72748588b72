"""The run transaction: the one object through which a run reads and changes its thread.

A :class:`ThreadTxn` loads the thread, stages changes in memory and stores them with one
compare-and-set commit (holding or releasing the lease), and turns a lost compare-and-set into
the error the caller should see. Nothing else in the engine talks to the store. What one
operation asks of it is fixed in its :class:`TxnOptions`; the pauses it stages are built in
:mod:`.pauses`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple, Unpack

from ..audit.key import AuditKey, load_key
from ..audit.records import GENESIS, AuditKind, signed_row
from ..authz import read_keys
from ..errors import ConcurrencyError, StorageError, ThreadBusy, ThreadNotFound
from ..events import Event
from ..leases import QUEUED, is_this_process, owner_alive
from ..messages import Message
from ..observe.hooks import RunObserver
from ..storage.base import (
    ROW_ONLY,
    Checkpointer,
    Commit,
    JournalEntry,
    ThreadRecord,
    ThreadSnapshot,
    VersionConflict,
)
from ..storage.memory import MemoryCheckpointer
from ..text import check_thread_id
from .notices import outbox_events
from .records import ThreadChanges, replaced
from .snapshots import SnapshotCache
from .summary import summary_updates

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


class TxnOptions(NamedTuple):
    """What one operation (:func:`~interlock._engine.perform.perform`) asks of its
    transaction, fixed for its length (a tuple: made at every operation, read often)."""

    sink: Sink | None = None
    """Receives the run's events."""
    on_stored: Callable[[], None] | None = None
    """Called once, when the run's input (message, decisions, answer) is durably stored."""
    snapshots: SnapshotCache | None = None
    """The agent's cache of loaded threads (``None``: every load reads the store)."""
    handoff: bool = False
    """Store the input and queue the run for a worker instead of running it here."""
    claimed: bool = False
    """This run was claimed from the run queue: a thread owned by ``QUEUED`` is its own."""
    agent_name: str = "agent"
    """The agent running this thread (named in the paths of its notifications)."""
    obs: RunObserver | None = None
    """Traces and metrics of this operation (:mod:`interlock.observe`); None: off."""


DEFAULTS = TxnOptions()


class ThreadTxn:
    """One run's view of one thread: the loaded snapshot plus changes not stored yet."""

    def __init__(self, store: Checkpointer, thread_id: str, lease: Lease,
                 options: TxnOptions = DEFAULTS) -> None:
        self.store = store
        self.options = options
        self.handed_off = False
        self.input_stored = False
        self.thread_id = thread_id
        self.lease = lease
        self.snap: ThreadSnapshot | None = None
        self.version: int | None = None
        """Version of the thread row in the store (None: not created yet)."""
        self._stored: ThreadRecord | None = None
        """The thread row as stored (what the next commit replaces)."""
        self.holding = False
        """Whether the last commit of this run holds the lease."""
        self.conflict: Callable[[], ConcurrencyError] | None = None
        """The error a lost compare-and-set becomes (see :meth:`expect`; None: ``ThreadBusy``).
        Not the bound ``self._busy``: that would make every run's transaction a reference
        cycle, its snapshot freed only by the garbage collector instead of when it ends."""
        self._messages: list[Message] = []
        self._journal: dict[str, JournalEntry] = {}
        self._audit: list[AuditItem] = []
        self._events: list[Event] = []
        self._lock = asyncio.Lock()
        self._key: AuditKey | None = None
        self._stored_told = False
        self._renewal_unsure = False
        """A lease renewal failed in a way that may have stored it (see :meth:`renew_lease`)."""
        self.children_busy: frozenset[str] = frozenset()
        """The sub-agent threads this run waits for that another run advances right now: the
        thread is left ``running`` without a lease (see :mod:`interlock._engine.delegate`)."""

    def reset(self) -> None:
        """Forget the loaded thread and everything staged (to load it afresh)."""
        self.snap = None
        self.__dict__.pop("snapshot", None)
        self.version = None
        self._stored = None
        self.holding = False
        self._messages, self._journal, self._audit, self._events = [], {}, [], []

    # ------------------------------------------------------------------ reading

    snapshot: ThreadSnapshot
    """The loaded thread with what is staged (set by :meth:`load`; ``snap`` tells whether it
    is). A plain attribute, not a property: the steps read it many times per cycle."""

    @property
    def thread(self) -> ThreadRecord:
        return self.snapshot.thread

    def now(self) -> datetime:
        return self.lease.clock()

    @property
    def has_staged_input(self) -> bool:
        return bool(self._messages)

    # ------------------------------------------------------------------ loading

    async def load(self, *, create: bool = False) -> bool:
        """Load the thread. Returns True when it needs recovery: its run stopped mid-way
        (the owner is gone) or failed in the middle of a turn. A live owner: ``ThreadBusy``."""
        if self.options.snapshots is not None:
            snap = await self.options.snapshots.load(self.store, self.thread_id)
        else:
            snap = await self.store.load(self.thread_id)
        if snap is None:
            if not create:
                raise ThreadNotFound(self.thread_id,
                                     in_memory=isinstance(self.store, MemoryCheckpointer))
            check_thread_id(self.thread_id)
            now = self.now()
            self.snap = self.snapshot = ThreadSnapshot(
                thread=ThreadRecord(thread_id=self.thread_id, created_at=now, updated_at=now,
                                    version=0),
                messages=[], journal={},
            )
            if self.options.obs is not None:
                self._traced(create)
            return False
        self.snap = self.snapshot = snap
        self.version = snap.thread.version
        self._stored = snap.thread
        if self.options.obs is not None:
            self._traced(create)
        if self.options.snapshots is not None:
            self.options.snapshots.remember(snap.thread, snap.messages)
        t = snap.thread
        if t.status == "running":
            owner = t.lease_owner
            if owner == QUEUED and self.options.claimed:
                return False
            if owner and owner_alive(owner, t.lease_until, self.now(), self.thread_id,
                                     asking_run=True):
                raise ThreadBusy(self.thread_id, owner, here=is_this_process(owner))
            return True
        return t.status == "failed" and t.turn is not None

    def _traced(self, new_run: bool) -> None:
        """Tell the observer the thread is loaded; a new trace's context is stored with it."""
        assert self.options.obs is not None
        if (traceparent := self.options.obs.loaded(self.thread, new_run)) is not None:
            self.stage(trace=traceparent)

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

    async def run_ended(self, thread_id: str) -> bool:
        """Whether no run advances the thread ``thread_id`` any more (e.g. a sub-agent's): it
        is not ``running`` (it waits for someone, or is done). Reads the thread row only."""
        snap = await self.store.load(thread_id, after_seq=ROW_ONLY)
        return snap is not None and snap.thread.status != "running"

    # ------------------------------------------------------------------ staging and storing

    def stage(
        self,
        *,
        messages: Sequence[Message] = (),
        journal: Sequence[JournalEntry] = (),
        audit: Sequence[AuditItem] = (),
        **updates: Unpack[ThreadChanges],
    ) -> None:
        """Apply a change to the in-memory thread; the next :meth:`flush` stores it.

        Only steps that nobody has been told about yet are staged without a flush (the
        model's reply before its calls are classified, a new message before the run
        answers): a crash loses them and the next run redoes them."""
        s = self.snapshot
        t = s.thread
        if messages:  # the sweep's mark: tool results the model was not called with
            updates["results_unseen"] = True if messages[-1].role == "tool" else None
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
        t = self.thread
        now = self.now()
        seq, prev = t.audit_seq, t.audit_hash or GENESIS
        records, rows = [], []
        if self._audit and self._key is None:
            self._key = load_key(create=True)  # once per run, not at every commit
        key = self._key if self._audit else None
        for kind, actor, call_id, data in self._audit:
            seq += 1
            rec, row = signed_row(thread_id=t.thread_id, seq=seq, prev_hash=prev, ts=now,
                                  kind=kind.value, actor=actor, tool_call_id=call_id,
                                  data=data, key=key)
            prev = rec.hash
            records.append(rec)
            rows.append(row)
        lease = (
            {"lease_owner": QUEUED, "lease_until": None} if queue
            else {"lease_owner": self.lease.owner, "lease_until": now + self.lease.length}
            if hold_lease else {"lease_owner": None, "lease_until": None}
        )
        expected = self.version
        summary = summary_updates(
            last_decision=t.last_decision, outcome=t.outcome, status=t.status, error=t.error,
            messages=self._messages, audit=self._audit,
            last=self.snapshot.messages[-1] if self.snapshot.messages else None)
        new = replaced(t, {
            **lease, **summary, "version": (expected or 0) + 1, "updated_at": now,
            "audit_seq": seq, "audit_hash": prev,
        })
        # notifications of this change are stored with it (the transactional outbox)
        outbox = outbox_events(self._stored, new, self.snapshot.journal, records,
                               agent=self.options.agent_name)
        cancelled = False
        try:
            # A write under way is seen to its end even when the run is cancelled meanwhile
            # (a timeout, the lease renewal stopped as its tool ends): it may land, and the
            # run's next write must know the version it made.
            cancelled = await _to_the_end(self.store.commit(
                Commit(thread=new, messages=self._messages, journal=list(self._journal.values()),
                       audit=records, audit_rows=rows, outbox=outbox, readers=read_keys(new),
                       enqueue=queue),
                expected_version=expected,
            ))
        except VersionConflict:
            if self._renewal_unsure and await self._adopt_own_renewal():
                return await self._flush(hold_lease, queue)  # once: the flag is cleared
            raise (self.conflict or self._busy)() from None
        except StorageError:
            raise
        except (ValueError, TypeError, UnicodeError) as exc:
            # a value the store cannot encode (e.g. a lone surrogate in a tool's text)
            raise StorageError(
                f"Thread {self.thread_id!r}: the change could not be stored because it holds a "
                f"value the checkpointer cannot encode ({type(exc).__name__}: {exc}). Nothing "
                f"was stored."
            ) from exc
        self.snapshot.thread = new
        self.version = new.version
        stored, self._stored = self._stored, new
        self.holding = hold_lease and not queue
        if self.options.obs is not None:
            self.options.obs.committed(stored, records)
        if self.options.snapshots is not None:
            self.options.snapshots.remember(new, self.snapshot.messages)
        self._messages = []
        self._journal = {}
        self._audit = []
        if cancelled:
            raise asyncio.CancelledError()

    async def commit(
        self,
        *,
        messages: Sequence[Message] = (),
        journal: Sequence[JournalEntry] = (),
        audit: Sequence[AuditItem] = (),
        hold_lease: bool = True,
        **updates: Unpack[ThreadChanges],
    ) -> None:
        """Stage a change and store it (with anything staged before) in one commit."""
        self.stage(messages=messages, journal=journal, audit=audit, **updates)
        await self.flush(hold_lease=hold_lease)

    def savepoint(self) -> Savepoint:
        """The in-memory state now, to return to when a commit fails (see :meth:`rollback`)."""
        s = self.snapshot
        return Savepoint(s.thread, dict(s.journal), len(s.messages), len(self._messages),
                         dict(self._journal), len(self._audit), len(self._events))

    def rollback(self, sp: Savepoint) -> None:
        """Forget what was staged after ``sp`` (a step whose commit failed did not happen)."""
        s = self.snapshot
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
            self.conflict = None

    async def store_input(
        self,
        *,
        messages: Sequence[Message] = (),
        journal: Sequence[JournalEntry] = (),
        audit: Sequence[AuditItem] = (),
        **updates: Unpack[ThreadChanges],
    ) -> None:
        """Stage ``changes`` (the run's input: a message, decisions, answers) and store them,
        then tell whoever waits. A hand-off run stores them with the thread put on the run
        queue, in the same commit, and goes no further (see :meth:`hand_off`)."""
        self.stage(messages=messages, journal=journal, audit=audit, **updates)
        if self.options.handoff:
            await self.flush(hold_lease=False, queue=True)
            self.handed_off = True
        else:
            await self.flush()
        self.input_stored = True
        self.stored()

    def stored(self) -> None:
        """The run's input is durably stored: tell whoever waits for that (once)."""
        if not self._stored_told and self.options.on_stored is not None:
            self._stored_told = True
            self.options.on_stored()

    # ------------------------------------------------------------------ leases

    def keep_lease(self) -> _LeaseKeeper:
        """Renew the lease every third of its length while the ``async with`` block runs (a
        tool call, the model's answer).

        A timer, not a task: most blocks end long before the first renewal is due, and then
        nothing but the timer was made (a task costs a few event-loop iterations to start,
        cancel and settle); and a plain context manager, not a generator's."""
        return _LeaseKeeper(self, max(self.lease.length.total_seconds() / 3, 0.05))

    async def renew_lease(self) -> None:
        """Store the thread row again with the lease extended (while a tool runs); a failure
        is logged and the next renewal (or the result commit) retries."""
        try:
            async with self._lock:
                if self.holding:
                    await self._flush(hold_lease=True)
        except Exception as exc:
            # a write whose answer was lost may have been stored: the next commit's
            # compare-and-set then finds the version it made (see _adopt_own_renewal)
            self._renewal_unsure = True
            log.warning("thread %r: renewing the lease failed: %s", self.thread_id, exc)

    async def _adopt_own_renewal(self) -> bool:
        """After a renewal whose outcome is unknown, a lost compare-and-set may be that very
        renewal having landed: the stored row is then the row this run last stored, one
        version later, still under this run's lease, with no audit row, message or status
        added. Take its version (True) so the commit is tried again; anything else is
        another writer's change (False)."""
        self._renewal_unsure = False
        before = self._stored
        if before is None:
            return False
        try:
            snap = await self.store.load(self.thread_id, after_seq=ROW_ONLY)
        except Exception:
            return False
        now = snap.thread if snap is not None else None
        if now is None or now.version != before.version + 1 or \
                now.lease_owner != self.lease.owner or \
                (now.audit_seq, now.audit_hash, now.message_count, now.status, now.turn,
                 now.pending) != (before.audit_seq, before.audit_hash, before.message_count,
                                  before.status, before.turn, before.pending):
            return False
        log.info("thread %r: the lease renewal whose answer was lost had been stored; "
                 "going on from version %d", self.thread_id, now.version)
        self.version = now.version
        self._stored = now
        return True

    # ------------------------------------------------------------------ events

    def announce(self, event: Event) -> None:
        """Publish ``event`` once the next commit has stored what it tells of."""
        self._events.append(event)

    async def emit(self, event: Event) -> None:
        if self.options.sink is not None:
            await self.options.sink(event)


class _LeaseKeeper:
    """Calls :meth:`ThreadTxn.renew_lease` every ``period`` seconds (counted from the end of
    the previous renewal) until :meth:`stop`."""

    def __init__(self, txn: ThreadTxn, period: float) -> None:
        self.txn, self.period = txn, period
        self.renewal: asyncio.Task[None] | None = None
        self.stopped = False
        self.timer: asyncio.TimerHandle | None = None

    async def __aenter__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.timer = self.loop.call_later(self.period, self._due)

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

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


async def _to_the_end(write: Awaitable[None]) -> bool:
    """Await ``write`` to its end even if the caller is cancelled meanwhile; returns whether
    it was (the caller raises ``CancelledError`` once it has taken the write's outcome in).

    The write is started here, in the caller's task: most writes end without suspending (the
    memory store; SQLite on a blocking call's own loop), and then nothing can cancel them and
    nothing else is made. Only a write that suspends goes on in a task of its own, shielded
    from the caller's cancellation."""
    if isinstance(write, types.CoroutineType):
        try:
            waiting_for = write.send(None)
        except StopIteration:
            return False
        task = asyncio.ensure_future(_going_on(write, waiting_for))
    else:  # another kind of awaitable (a backend's commit need not be ``async def``)
        task = asyncio.ensure_future(write)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if task.cancelled():  # the write itself was cancelled (the event loop is closing)
        raise asyncio.CancelledError()
    task.result()  # its error, if it failed
    return cancelled


async def _going_on(coro: Coroutine[Any, Any, None], waiting_for: Any) -> None:
    """The rest of ``coro``, which has run up to its first suspension, waiting for
    ``waiting_for``: run by the task that awaits this as if that task had started it."""
    await _resumed(coro, waiting_for)


@types.coroutine
def _resumed(coro: Coroutine[Any, Any, None], waiting_for: Any) -> Generator[Any, Any, None]:
    while True:
        try:
            sent = yield waiting_for
        except BaseException as exc:  # thrown in by the task (e.g. the loop closing)
            try:
                waiting_for = coro.throw(exc)
            except StopIteration:
                return
        else:
            try:
                waiting_for = coro.send(sent)
            except StopIteration:
                return


async def _settled(task: asyncio.Task[Any]) -> None:
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: never reported as unhandled
