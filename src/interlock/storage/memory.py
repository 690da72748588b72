"""In-process checkpointer: for tests and prototypes. Nothing survives the process."""

from __future__ import annotations

import threading
from datetime import datetime

from ..messages import MESSAGE_ADAPTER, Message, message_to_json
from .base import (
    AuditRecord,
    Commit,
    JournalEntry,
    ThreadRecord,
    ThreadSnapshot,
    VersionConflict,
)


class MemoryCheckpointer:
    """Keeps threads in this process's memory, serialised exactly as a database would store
    them (so what you load is always a fresh copy). Not durable: use
    :class:`SqliteCheckpointer` or :class:`PostgresCheckpointer` for anything real."""

    durable = False

    def __init__(self) -> None:
        self._threads: dict[str, str] = {}
        self._versions: dict[str, int] = {}
        self._messages: dict[str, list[str]] = {}
        self._journal: dict[str, dict[str, str]] = {}
        self._journal_turn: dict[str, dict[str, int]] = {}
        """thread id -> tool call id -> turn (the index a database would use)."""
        self._audit: list[str] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryCheckpointer(threads={len(self._threads)}, not durable)"

    async def load(self, thread_id: str) -> ThreadSnapshot | None:
        raw = self._threads.get(thread_id)
        if raw is None:
            return None
        thread = ThreadRecord.model_validate_json(raw)
        messages: list[Message] = [
            MESSAGE_ADAPTER.validate_json(m) for m in self._messages.get(thread_id, [])
        ]
        journal: dict[str, JournalEntry] = {}
        if thread.turn is not None:
            turns = self._journal_turn.get(thread_id, {})
            for call_id, data in self._journal.get(thread_id, {}).items():
                if turns.get(call_id) == thread.turn:
                    entry = JournalEntry.model_validate_json(data)
                    journal[entry.tool_call_id] = entry
        return ThreadSnapshot(thread=thread, messages=messages, journal=journal)

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        tid = change.thread.thread_id
        with self._lock:
            current = self._threads.get(tid)
            if expected_version is None:
                if current is not None:
                    raise VersionConflict(tid, None)
            elif current is None or self._versions[tid] != expected_version:
                raise VersionConflict(tid, expected_version)
            self._threads[tid] = change.thread.model_dump_json(exclude_none=True)
            self._versions[tid] = change.thread.version
            msgs = self._messages.setdefault(tid, [])
            msgs.extend(message_to_json(m) for m in change.messages)
            jr = self._journal.setdefault(tid, {})
            jt = self._journal_turn.setdefault(tid, {})
            for entry in change.journal:
                jr[entry.tool_call_id] = entry.model_dump_json(exclude_none=True)
                jt[entry.tool_call_id] = entry.turn
            for rec in change.audit:
                rec = rec.model_copy(update={"id": len(self._audit) + 1})
                self._audit.append(rec.model_dump_json())

    async def list_threads(
        self, *, status: str | None = None, limit: int = 50, before: datetime | None = None
    ) -> list[ThreadRecord]:
        rows = [ThreadRecord.model_validate_json(r) for r in self._threads.values()]
        if status is not None:
            rows = [r for r in rows if r.status == status]
        if before is not None:
            rows = [r for r in rows if r.updated_at < before]
        rows.sort(key=lambda r: (r.updated_at, r.thread_id), reverse=True)
        return rows[:limit]

    async def journal(self, thread_id: str) -> list[JournalEntry]:
        stored = self._journal.get(thread_id, {}).values()
        rows = [JournalEntry.model_validate_json(d) for d in stored]
        rows.sort(key=lambda e: (e.turn, e.position))
        return rows

    async def audit(
        self, *, thread_id: str | None = None, after_id: int = 0, limit: int = 1000
    ) -> list[AuditRecord]:
        out: list[AuditRecord] = []
        for raw in self._audit[after_id:]:
            rec = AuditRecord.model_validate_json(raw)
            if thread_id is None or rec.thread_id == thread_id:
                out.append(rec)
                if len(out) >= limit:
                    break
        return out

    def stored_bytes(self) -> int:
        """Bytes of serialised state held (for storage-growth measurements)."""
        total = sum(len(v) for v in self._threads.values()) + sum(len(a) for a in self._audit)
        total += sum(len(m) for ms in self._messages.values() for m in ms)
        total += sum(len(j) for js in self._journal.values() for j in js.values())
        return total

    async def close(self) -> None:
        return None
