"""Store watcher: turns thread changes made by *any* process into inbox events.

It follows the store's change feed (:meth:`~interlock.Checkpointer.changes`): every
``interval`` seconds (or at once when poked by a local run, or — on a store that sends change
signals, Postgres ``LISTEN/NOTIFY`` — when any process commits; polls are then only a fallback,
at least ``signal_interval`` apart) it reads the threads whose rows were committed since its
cursor — work proportional to what changed, never to how many threads
exist or wait — and publishes

* ``request_raised``   a thread has a new pending request (``interrupt_id``);
* ``request_resolved`` a pending request went away (decided, cancelled, expired);
* ``thread_updated``   any change of the thread (also published on ``thread:<id>``);

(a sub-agent's thread only on ``thread:<id>``: its requests are its parent's);

each with the thread's current summary. Several changes of one thread between two polls arrive
as one (its latest state). To tell which requests are new or gone it remembers the pending ids
of the threads it saw change most recently (at most ``remember`` of them, so its memory does
not grow with the number of waiting requests); for a thread it has not seen change since it
started, a pending request counts as new when it was created after the watcher started, and
the requests the thread lists as recently answered (``ThreadRecord.resolved``) count as gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .._failures import FailureLog, stop_if_cancelled
from ..agent import Agent
from ..authz import CallPolicy, ThreadFacts, facts_of
from ..errors import InterlockError
from ..storage.base import ChangeCursor, ChangeSignals, EventRelay, ThreadRecord
from .hub import INBOX, Hub, readers_now, thread_topic
from .summaries import thread_summary

log = logging.getLogger("interlock.server")

CLOCK_MARGIN = timedelta(seconds=2)
"""Requests created this long before the watcher started still count as new (another
process's clock may lag a little)."""


HELD_MAX = 0.25
"""Seconds at most between reads while committed changes wait behind an open transaction (it
may not send a signal when it ends)."""


@dataclass(frozen=True)
class _Seen:
    """A thread as the watcher last read it."""

    pending: frozenset[str]
    """Its pending interrupt ids."""
    resolved: frozenset[str]
    """The interrupt ids it listed as recently answered."""
    facts: ThreadFacts
    """Who could read it."""


class InboxWatcher:
    def __init__(
        self,
        agent: Agent,
        hub: Hub,
        *,
        interval: float = 0.5,
        page: int = 500,
        max_rows: int = 5000,
        remember: int = 10_000,
        signal_interval: float = 5.0,
        min_gap: float = 0.02,
    ) -> None:
        if interval <= 0:
            raise ValueError("poll interval must be positive")
        self.agent = agent
        self.hub = hub
        self.interval = interval
        self.page = page
        self.max_rows = max_rows
        self.remember = remember
        self._cursor: ChangeCursor | None = None
        self._started = agent.clock()
        self._recent: OrderedDict[str, _Seen] = OrderedDict()
        """What was last seen of the threads seen changing most recently (bounded)."""
        self._wake = asyncio.Event()
        self.signal_interval = signal_interval
        """Seconds between fallback polls while the store's change signals wake the watcher."""
        self.min_gap = min_gap
        """Seconds at least between two polls (signals arriving meanwhile make one poll)."""
        self._listening = False
        self._held = False
        self.failures = FailureLog(log, "inbox watcher: reading the change feed")
        """Failures of the feed reads (one warning per outage)."""
        self._last_poll = 0.0
        self.polls = 0

    def poke(self) -> None:
        """Poll now instead of at the next tick (a local run changed something)."""
        self._wake.set()

    async def prime(self) -> None:
        """Start following the feed from now, without publishing anything."""
        self._started = self.agent.clock()
        self._cursor = (await self.agent.checkpointer.changes(after=None)).cursor

    async def poll(self) -> int:
        """One pass; returns the number of thread changes published."""
        if self._cursor is None:
            await self.prime()
        assert self._cursor is not None
        rows: list[ThreadRecord] = []
        capped = False
        self.polls += 1
        while True:
            page = await self.agent.checkpointer.changes(after=self._cursor, limit=self.page)
            self._cursor = page.cursor
            self._held = page.held
            if capped:  # too many to announce one by one: only learn their state
                for r in page.threads:
                    self._remember(r)
            else:
                rows.extend(page.threads)
                if len(rows) > self.max_rows:
                    capped = True
                    for r in rows:
                        self._remember(r)
            if len(page.threads) < self.page:
                break
        if capped:
            self.hub.publish(INBOX, "resync", {"reason": "too many changes; reload the inbox"})
            return 0
        for r in rows:
            facts = facts_of(r)  # who may read it now: for the events and to remember
            self._publish(r, facts, await self._facts_before(r))
            self._remember(r, facts)
        return len(rows)

    async def _facts_before(self, r: ThreadRecord) -> ThreadFacts | None:
        """Who could read the requests a thread not seen changing since start lists as
        answered: the reviewers of the calls of its latest reviewed turn (read from its
        journal). Without this, a reviewer who may no longer read the decided thread would
        never be told that the request left their inbox."""
        if r.thread_id in self._recent:
            return None
        pending = {i.id for i in r.pending}
        if not any(iid not in pending for iid in r.resolved):
            return None
        try:
            journal = await self.agent.checkpointer.journal(r.thread_id)
        except InterlockError as exc:  # still announced, to those who may read it now
            log.warning("inbox watcher: reading the journal of %r failed: %s", r.thread_id, exc)
            return None
        except Exception:
            log.exception("inbox watcher: reading the journal of %r failed", r.thread_id)
            return None
        reviewed = [e for e in journal if e.review is not None]
        if not reviewed:
            return None
        last = max(e.turn for e in reviewed)
        calls = tuple(CallPolicy(e.tool_call_id, e.name, None if e.review.reviewers is None
                                 else tuple(e.review.reviewers))
                      for e in reviewed if e.turn == last and e.review is not None)
        return ThreadFacts(thread_id=r.thread_id, created_by=r.created_by, pending=calls,
                           deciders=frozenset(r.deciders))

    def _remember(self, r: ThreadRecord, facts: ThreadFacts | None = None) -> None:
        self._recent[r.thread_id] = _Seen(frozenset(i.id for i in r.pending),
                                          frozenset(r.resolved),
                                          facts if facts is not None else facts_of(r))
        self._recent.move_to_end(r.thread_id)
        while len(self._recent) > self.remember:
            self._recent.popitem(last=False)

    def _publish(self, r: ThreadRecord, facts: ThreadFacts,
                 before: ThreadFacts | None = None) -> None:
        """Announce the change of ``r``, whose readers are ``facts`` (:func:`facts_of`)."""
        summary = thread_summary(r).model_dump(mode="json")
        if r.parent is not None:
            # a sub-agent's thread: its requests reach the inbox through its parent's row
            self.hub.publish(thread_topic(r.thread_id), "thread_updated", {"thread": summary},
                             (facts,))
            return
        seen = self._recent.get(r.thread_id)
        new = list(r.pending)
        new_ids = {i.id for i in new}
        # an event is shown to the readers of the thread; those who could read it while a
        # request was pending and may not now are told only that the request and the thread
        # left their inbox (nothing of what happened since)
        now = (facts,)
        former = tuple(f for f in ((seen.facts if seen is not None else None), before)
                       if f is not None and f != facts)
        gone = {"thread_id": r.thread_id, "readable": False}
        if seen is None:
            # not seen changing since start: a request is new if created since then, and the
            # ones gone are those the thread lists as recently answered
            floor = self._started - CLOCK_MARGIN
            raised = [i.id for i in new if i.created_at >= floor]
            resolved = [iid for iid in r.resolved if iid not in new_ids]
        else:
            raised = [i.id for i in new if i.id not in seen.pending]
            # gone since last seen; and those raised and answered between two reads (the
            # thread went on before this watcher read its paused state), which the thread
            # lists as answered since then
            resolved = sorted((seen.pending | (set(r.resolved) - seen.resolved)) - new_ids)
        for iid in resolved:
            self.hub.publish(INBOX, "request_resolved", {"interrupt_id": iid, "thread": summary},
                             now)
            if former:
                self.hub.publish(INBOX, "request_resolved", {"interrupt_id": iid, "thread": gone},
                                 former, unless=now)
        for iid in raised:
            self.hub.publish(INBOX, "request_raised", {"interrupt_id": iid, "thread": summary},
                             now)
        self.hub.publish(INBOX, "thread_updated", {"thread": summary}, now)
        if former:
            self.hub.publish(INBOX, "thread_hidden", {"thread": gone}, former, unless=now)
        self.hub.publish(thread_topic(r.thread_id), "thread_updated", {"thread": summary}, now)

    def live_updates(self) -> str:
        """How other processes' changes reach this watcher (for ``/api/health``)."""
        if self._listening:
            return (f"change signals (LISTEN/NOTIFY), and a poll every "
                    f"{max(self.interval, self.signal_interval):g} s")
        return f"polling every {self.interval:g} s"

    async def run(self) -> None:
        """Poll until cancelled; errors are logged and retried. On a store with change signals
        every commit of any process wakes it."""
        stop_listening = None
        store = self.agent.checkpointer
        if isinstance(store, ChangeSignals):
            loop = asyncio.get_running_loop()

            def signalled() -> None:  # called from the store's listening thread
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(self.poke)

            try:  # opening the listening connection blocks: not on the event loop
                stop_listening = await asyncio.to_thread(store.on_signal, "changes", signalled)
                self._listening = True
            except Exception as exc:
                FailureLog(log, "inbox watcher: listening for change signals").failed(
                    exc, f"polling every {self.interval:g} s instead")
        stop_relay = await self._follow_relayed(store)
        try:
            held_wait = self.min_gap
            while True:
                self._last_poll = time.monotonic()
                try:
                    await self.poll()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.failures.failed(exc)
                else:
                    self.failures.worked()
                stop_if_cancelled()
                # changes held back by an older open transaction (on Postgres, of any database
                # of the server): look again soon, backing off to HELD_MAX while it stays open
                held_wait = min(held_wait * 2, self.interval, HELD_MAX) if self._held \
                    else self.min_gap
                await self._nap(held_wait if self._held else None)
        finally:
            if stop_listening is not None:
                stop_listening()
            if stop_relay is not None:
                stop_relay()

    async def _follow_relayed(self, store: object) -> Callable[[], None] | None:
        """On a store that relays the events of runs made elsewhere (a worker's, on Postgres),
        publish each on its thread's topic, as this server publishes those of its own runs."""
        if not isinstance(store, EventRelay):
            return None
        loop = asyncio.get_running_loop()
        readers: dict[str, tuple[ThreadFacts, ...]] = {}
        """Who may see a relayed run's events, per thread: read when its first event comes
        and when it raises a request, as for this server's own runs (Runner)."""
        chains: dict[str, asyncio.Task[None]] = {}

        async def publish(thread_id: str, event: dict[str, Any],
                          before: asyncio.Task[None] | None) -> None:
            if before is not None:  # a thread's events in the order they came
                await asyncio.wait({before})
            kind = str(event.get("type", ""))
            if thread_id not in readers or kind == "interrupt_raised":
                facts = await readers_now(self.agent.checkpointer, thread_id)
                if facts is not None:
                    if len(readers) >= self.remember:
                        readers.clear()
                    readers[thread_id] = facts
            if thread_id in readers:  # not known who may see it: not published
                self.hub.publish(thread_topic(thread_id), kind, event, readers[thread_id])
            if kind in ("run_completed", "run_failed"):
                readers.pop(thread_id, None)

        def schedule(thread_id: str, event: dict[str, Any]) -> None:
            task = loop.create_task(publish(thread_id, event, chains.get(thread_id)))
            chains[thread_id] = task
            task.add_done_callback(
                lambda t: chains.pop(thread_id, None) if chains.get(thread_id) is t else None)

        def relayed(thread_id: str, event: dict[str, Any]) -> None:  # the listening thread
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(schedule, thread_id, event)

        try:
            return await asyncio.to_thread(store.on_relayed_event, relayed)
        except Exception as exc:
            FailureLog(log, "inbox watcher: following relayed run events").failed(
                exc, "streams of runs made by workers carry their start and end only")
            return None

    async def _nap(self, seconds: float | None = None) -> None:
        """Sleep until poked or for ``seconds`` (default: the poll interval, the fallback
        interval while signals wake it), and at least ``min_gap`` after the last poll. (Not
        ``wait_for``: on Python 3.11 it can lose a cancellation that arrives as the wait ends,
        and the server would never stop.)"""
        if seconds is None:
            seconds = max(self.interval, self.signal_interval) if self._listening \
                else self.interval
        waiter = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({waiter}, timeout=seconds)
        finally:
            waiter.cancel()
        gap = self._last_poll + self.min_gap - time.monotonic()
        if gap > 0:
            await asyncio.sleep(gap)
        self._wake.clear()
