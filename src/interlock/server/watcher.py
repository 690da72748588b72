"""Store-polling watcher: turns thread changes made by *any* process into inbox events.

Every ``interval`` seconds (or at once when poked by a local run) it reads the threads changed
since the last poll, newest first, from the checkpointer and publishes

* ``request_raised``   a thread has a new pending request (``interrupt_id``);
* ``request_resolved`` a pending request went away (decided, cancelled, expired);
* ``thread_updated``   any change of the thread (also published on ``thread:<id>``);

each with the thread's current summary. Rows are re-read over a ``lookback`` window so that
commits stamped by a process whose clock lags a little are not missed; thread versions make
repeated rows harmless.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..agent import Agent
from ..storage.base import ThreadRecord
from .hub import INBOX, Hub, thread_topic
from .views import thread_summary

log = logging.getLogger("interlock.server")


@dataclass(frozen=True)
class _Seen:
    version: int
    updated_at: datetime
    pending: frozenset[str]


class InboxWatcher:
    def __init__(
        self,
        agent: Agent,
        hub: Hub,
        *,
        interval: float = 0.5,
        lookback: timedelta = timedelta(seconds=10),
        page: int = 100,
        max_rows: int = 5000,
    ) -> None:
        if interval <= 0:
            raise ValueError("poll interval must be positive")
        self.agent = agent
        self.hub = hub
        self.interval = interval
        self.lookback = lookback
        self.page = page
        self.max_rows = max_rows
        self._known: dict[str, _Seen] = {}
        self._high: datetime | None = None
        self._wake = asyncio.Event()
        self._primed = False

    def poke(self) -> None:
        """Poll now instead of at the next tick (a local run changed something)."""
        self._wake.set()

    async def prime(self) -> None:
        """Learn the current pending requests without publishing anything."""
        before: datetime | None = None
        while True:
            rows = await self.agent.alist_threads(status="interrupted", limit=500, before=before)
            for r in rows:
                self._remember(r)
            if len(rows) < 500:
                break
            before = rows[-1].updated_at
        newest = await self.agent.alist_threads(limit=1)
        self._high = newest[0].updated_at if newest else None
        self._primed = True

    def _remember(self, r: ThreadRecord) -> None:
        self._known[r.thread_id] = _Seen(r.version, r.updated_at,
                                         frozenset(i.id for i in r.pending))

    async def _changed_rows(self) -> tuple[list[ThreadRecord], bool]:
        floor = self._high - self.lookback if self._high is not None else None
        rows: list[ThreadRecord] = []
        before: datetime | None = None
        while True:
            batch = await self.agent.alist_threads(limit=self.page, before=before)
            for r in batch:
                if floor is not None and r.updated_at < floor:
                    return rows, False
                rows.append(r)
            if len(batch) < self.page:
                return rows, False
            if len(rows) >= self.max_rows:
                return rows, True
            before = batch[-1].updated_at

    async def poll(self) -> int:
        """One pass; returns the number of thread changes published."""
        if not self._primed:
            await self.prime()
        rows, capped = await self._changed_rows()
        published = 0
        for r in reversed(rows):  # oldest change first
            seen = self._known.get(r.thread_id)
            if seen is not None and seen.version >= r.version:
                continue
            published += 1
            self._publish(r, seen)
            self._remember(r)
            if self._high is None or r.updated_at > self._high:
                self._high = r.updated_at
        if capped:
            self.hub.publish(INBOX, "resync", {"reason": "too many changes; reload the inbox"})
        self._prune()
        return published

    def _publish(self, r: ThreadRecord, seen: _Seen | None) -> None:
        summary = thread_summary(r).model_dump(mode="json")
        old = seen.pending if seen is not None else frozenset()
        new = [i.id for i in r.pending]
        for iid in sorted(old - set(new)):
            self.hub.publish(INBOX, "request_resolved", {"interrupt_id": iid, "thread": summary})
        for iid in new:
            if iid not in old:
                self.hub.publish(INBOX, "request_raised", {"interrupt_id": iid,
                                                           "thread": summary})
        self.hub.publish(INBOX, "thread_updated", {"thread": summary})
        self.hub.publish(thread_topic(r.thread_id), "thread_updated", {"thread": summary})

    def _prune(self) -> None:
        if self._high is None:
            return
        floor = self._high - self.lookback * 2
        stale = [k for k, s in self._known.items() if not s.pending and s.updated_at < floor]
        for k in stale:
            del self._known[k]

    async def run(self) -> None:
        """Poll until cancelled; errors are logged and retried."""
        while True:
            try:
                await self.poll()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("inbox watcher: polling the checkpointer failed; retrying")
            await self._nap()

    async def _nap(self) -> None:
        """Sleep ``interval`` or until poked. (Not ``wait_for``: on Python 3.11 it can lose a
        cancellation that arrives as the wait ends, and the server would never stop.)"""
        waiter = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({waiter}, timeout=self.interval)
        finally:
            waiter.cancel()
        self._wake.clear()
