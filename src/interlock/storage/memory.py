"""In-process checkpointer: for tests and prototypes. Nothing survives the process."""

from __future__ import annotations

import heapq
import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic_core import to_jsonable_python

from ..messages import message_to_json, messages_from_json
from ..outbox import OutboxEvent, outbox_json
from .base import (
    AuditRecord,
    ChangeCursor,
    ChangePage,
    Commit,
    JournalEntry,
    ThreadRecord,
    ThreadSnapshot,
    VersionConflict,
    audit_rows,
    journal_json,
    metadata_contains,
    posted_a_message,
    refuse_enqueue,
    review_deadline,
    search_key,
    search_text,
    thread_json,
)


class _Stored:
    """One thread as a database would hold it: serialised rows, one object per thread."""

    __slots__ = ("child", "journal", "key", "messages", "metadata", "readers", "row", "search",
                 "status", "version")

    def __init__(self, row: str, version: int) -> None:
        self.row = row
        self.version = version
        self.status = ""
        self.key: tuple[datetime, str] = (datetime.min, "")
        """``(updated_at, thread_id)``: the listing order, as a database index would hold it."""
        self.search = ""
        self.child = False
        """A sub-agent's thread (``ThreadRecord.parent`` set)."""
        self.readers: frozenset[str] = frozenset()
        """Who may read the thread (``Commit.readers``)."""
        self.metadata: Any = None
        """``ThreadRecord.metadata`` as JSON values (``None``: none), for the metadata filter."""
        self.messages: list[str] = []
        self.journal: list[tuple[str, int, str]] = []
        """(tool call id, turn, row), in insertion order; the turn is the index a database
        would use. A list, not a dict: most threads have a few rows, and 10,000 paused threads
        should cost little more than their rows."""


class MemoryCheckpointer:
    """Keeps threads in this process's memory, serialised exactly as a database would store
    them (so what you load is always a fresh copy). Not durable: use
    :class:`SqliteCheckpointer` or :class:`PostgresCheckpointer` for anything real."""

    durable = False

    def __init__(self) -> None:
        self._threads: dict[str, _Stored] = {}
        self._audit: list[str] = []
        """Audit rows without their id, which is the position in this list plus one."""
        self._outbox: dict[str, tuple[str, str | None, datetime | None]] = {}
        """Event id -> (row, lease owner, lease until), in insertion order."""
        self._lock = threading.Lock()
        self._feed: OrderedDict[str, int] = OrderedDict()
        """Thread id -> position of its latest change, in change order (the change feed)."""
        self._change = 0
        self._deadlines: dict[str, datetime] = {}
        """Thread id -> earliest deadline of its pending review calls (only threads with one)."""

    def __repr__(self) -> str:
        return f"MemoryCheckpointer(threads={len(self._threads)}, not durable)"

    async def load(self, thread_id: str, *, after_seq: int = 0) -> ThreadSnapshot | None:
        stored = self._threads.get(thread_id)
        if stored is None:
            return None
        with self._lock:
            row, messages_raw = stored.row, stored.messages[after_seq:]
            journal_raw = list(stored.journal)
        thread = ThreadRecord.model_validate_json(row)
        messages = messages_from_json(messages_raw)
        journal: dict[str, JournalEntry] = {}
        if thread.turn is not None:
            for _, turn, data in journal_raw:
                if turn == thread.turn:
                    entry = JournalEntry.model_validate_json(data)
                    journal[entry.tool_call_id] = entry
        return ThreadSnapshot(thread=thread, messages=messages, journal=journal)

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        refuse_enqueue(self, change)
        tid = change.thread.thread_id
        row = thread_json(change.thread)
        messages = [message_to_json(m) for m in change.messages]
        journal = [(e.tool_call_id, e.turn, journal_json(e)) for e in change.journal]
        outbox = list(change.outbox)
        audit = audit_rows(change)
        search = search_text(change.thread)
        readers = frozenset(change.readers)
        metadata = (to_jsonable_python(change.thread.metadata, fallback=str)
                    if change.thread.metadata else None)
        with self._lock:
            stored = self._threads.get(tid)
            if expected_version is None:
                if stored is not None:
                    raise VersionConflict(tid, None)
                stored = self._threads[tid] = _Stored(row, change.thread.version)
            elif stored is None or stored.version != expected_version:
                raise VersionConflict(tid, expected_version)
            stored.row = row
            stored.version = change.thread.version
            stored.status = change.thread.status
            stored.key = (change.thread.updated_at, tid)
            stored.search = search
            stored.child = change.thread.parent is not None
            stored.readers = readers
            stored.metadata = metadata
            stored.messages.extend(messages)
            rows = stored.journal
            for item in journal:
                at = next((i for i in range(len(rows) - 1, -1, -1) if rows[i][0] == item[0]),
                          None)
                if at is None:
                    rows.append(item)
                else:
                    rows[at] = item
            self._audit.extend(audit)
            self._change += 1
            self._feed[tid] = self._change
            self._feed.move_to_end(tid)
            if (deadline := review_deadline(change.thread)) is not None:
                self._deadlines[tid] = deadline
            else:
                self._deadlines.pop(tid, None)
            for ev in outbox:
                self._outbox.setdefault(ev.id, (outbox_json(ev), None, None))

    async def list_threads(
        self, *, status: str | None = None, limit: int = 50, before: datetime | None = None,
        before_id: str | None = None, search: str | None = None,
        readers: Sequence[str] | None = None, top_level: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> list[ThreadRecord]:
        rows = self._matching(status, search, top_level)
        if readers is not None:
            rows = [r for r in rows if not r.readers.isdisjoint(readers)]
        if metadata:
            want = to_jsonable_python(metadata, fallback=str)
            rows = [r for r in rows if metadata_contains(r.metadata or {}, want)]
        if before is not None and before_id is not None:
            rows = [r for r in rows if r.key < (before, before_id)]
        elif before is not None:
            rows = [r for r in rows if r.key[0] < before]
        page = heapq.nlargest(limit, rows, key=lambda r: r.key)
        return [ThreadRecord.model_validate_json(r.row) for r in page]

    async def count_threads(self, *, status: str | None = None, search: str | None = None,
                            top_level: bool = False) -> int:
        return len(self._matching(status, search, top_level))

    def _matching(self, status: str | None, search: str | None,
                  top_level: bool = False) -> list[_Stored]:
        rows = list(self._threads.values())
        if top_level:
            rows = [r for r in rows if not r.child]
        if status is not None:
            rows = [r for r in rows if r.status == status]
        if search:
            needle = search_key(search)
            rows = [r for r in rows if needle in r.search]
        return rows

    async def changes(self, *, after: ChangeCursor | None, limit: int = 500) -> ChangePage:
        with self._lock:
            if after is None:
                return ChangePage(threads=[], cursor=(self._change, ""))
            newer: list[tuple[int, str, str]] = []
            for tid in reversed(self._feed):  # newest change first; stop at the cursor
                pos = self._feed[tid]
                if pos <= after[0]:  # positions are unique here
                    break
                newer.append((pos, tid, self._threads[tid].row))
        newer.reverse()
        page = newer[:limit]
        cursor = (page[-1][0], page[-1][1]) if page else after
        return ChangePage(threads=[ThreadRecord.model_validate_json(r) for _, _, r in page],
                          cursor=cursor)

    async def due(self, *, now: datetime, limit: int = 200) -> list[str]:
        with self._lock:
            due = sorted((at, tid) for tid, at in self._deadlines.items() if at <= now)
        return [tid for _, tid in due[:limit]]

    async def journal(self, thread_id: str) -> list[JournalEntry]:
        stored = self._threads.get(thread_id)
        raw = list(stored.journal) if stored is not None else []
        rows = [JournalEntry.model_validate_json(d) for _, _, d in raw]
        rows.sort(key=lambda e: (e.turn, e.position))
        return rows

    async def audit(
        self, *, thread_id: str | None = None, after_id: int = 0, limit: int = 1000
    ) -> list[AuditRecord]:
        out: list[AuditRecord] = []
        for i, raw in enumerate(self._audit[after_id:], start=after_id + 1):
            rec = AuditRecord.model_validate_json(raw)
            if thread_id is None or rec.thread_id == thread_id:
                rec.id = i
                out.append(rec)
                if len(out) >= limit:
                    break
        return out

    # -- outbox ---------------------------------------------------------------------------

    @staticmethod
    def _event(row: tuple[str, str | None, datetime | None]) -> OutboxEvent:
        return OutboxEvent.model_validate_json(row[0]).model_copy(
            update={"lease_owner": row[1], "lease_until": row[2]})

    async def outbox_claim(
        self, owner: str, *, now: datetime, until: datetime, limit: int = 20
    ) -> list[OutboxEvent]:
        with self._lock:
            due = [e for e in map(self._event, self._outbox.values())
                   if e.status == "pending" and e.next_at <= now
                   and (e.lease_until is None or e.lease_until < now)]
            due.sort(key=lambda e: (e.next_at, e.created_at, e.id))
            out = []
            for e in due[:limit]:
                self._outbox[e.id] = (self._outbox[e.id][0], owner, until)
                out.append(e.model_copy(update={"lease_owner": owner, "lease_until": until}))
            return out

    async def outbox_update(self, event: OutboxEvent, *, leased_by: str | None) -> bool:
        row = outbox_json(event)
        with self._lock:
            stored = self._outbox.get(event.id)
            if stored is None or stored[1] != leased_by:
                return False
            self._outbox[event.id] = (row, event.lease_owner, event.lease_until)
            return True

    async def outbox_get(self, event_id: str) -> OutboxEvent | None:
        row = self._outbox.get(event_id)
        return None if row is None else self._event(row)

    async def outbox_prune(self, *, before: datetime,
                           statuses: Sequence[str] = ("delivered",)) -> int:
        def waiting(thread_id: str) -> bool:
            stored = self._threads.get(thread_id)
            return stored is not None and stored.status == "interrupted"

        with self._lock:
            gone = [eid for eid, row in self._outbox.items()
                    if (e := self._event(row)).created_at < before and e.status in statuses
                    and not (posted_a_message(eid) and waiting(e.thread_id))]
            for eid in gone:
                del self._outbox[eid]
        return len(gone)

    async def outbox_list(
        self, *, status: str | None = None, thread_id: str | None = None, limit: int = 100,
        id_prefix: str | None = None,
    ) -> list[OutboxEvent]:
        with self._lock:
            rows = [row for eid, row in self._outbox.items()
                    if id_prefix is None or eid.startswith(id_prefix)]
        events = [e for e in map(self._event, rows)
                  if (status is None or e.status == status)
                  and (thread_id is None or e.thread_id == thread_id)]
        events.sort(key=lambda e: (e.created_at, e.id))
        return events[:limit]

    def stored_bytes(self) -> int:
        """Bytes of serialised state held (for storage-growth measurements)."""
        total = sum(len(a) for a in self._audit)
        for t in self._threads.values():
            total += len(t.row) + sum(len(m) for m in t.messages)
            total += sum(len(d) for _, _, d in t.journal)
        return total

    async def close(self) -> None:
        return None
