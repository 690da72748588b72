"""Snapshots of recently used threads, so that continuing a thread reads only what is new.

Messages are append-only (a stored message is never rewritten), so the messages of a thread
this process has already loaded or stored are a valid prefix of the thread forever. A process
that continues such a thread asks the store for the thread row, the open turn's journal and
only the messages after that prefix, and checks that they join up (same thread creation time,
the row's message count equal to prefix + new). Anything else — a thread recreated under the
same id, a prefix longer than the stored thread — falls back to a full load. The cache is
bounded (least recently used threads are dropped), per process, and never trusted for anything
but the message prefix: the row and the journal always come from the store.

With the prefix it keeps the ids of the tool calls proposed in it, counted when first asked
for and carried over as the prefix grows, so that checking a new call's id against the
thread's (see ``ThreadTxn.call_ids``) reads only the messages added since the last check.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime

from ..messages import Message, tool_call_ids
from ..storage.base import Checkpointer, ThreadRecord, ThreadSnapshot

DEFAULT_THREADS = 256
"""Threads whose message prefix a process keeps by default."""


class _Prefix:
    """One thread's cached messages, and the ids of the tool calls proposed in the first
    ``counted`` of them (counted when asked for, see :meth:`SnapshotCache.call_ids`)."""

    __slots__ = ("call_ids", "counted", "created_at", "messages")

    def __init__(self, created_at: datetime, messages: tuple[Message, ...],
                 call_ids: frozenset[str] = frozenset(), counted: int = 0) -> None:
        self.created_at = created_at
        self.messages = messages
        self.call_ids = call_ids
        self.counted = counted

    def starts(self, created_at: datetime, messages: Sequence[Message]) -> bool:
        """Whether ``messages`` (of a thread created at ``created_at``) continue this prefix:
        built from it, so its last message is the very object at the same place."""
        n = len(self.messages)
        return created_at == self.created_at and n <= len(messages) and (
            n == 0 or messages[n - 1] is self.messages[n - 1])


class SnapshotCache:
    """Message prefixes of the threads this process used most recently."""

    def __init__(self, max_threads: int = DEFAULT_THREADS) -> None:
        self.max_threads = max_threads
        self._prefixes: OrderedDict[str, _Prefix] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._prefixes)

    async def load(self, store: Checkpointer, thread_id: str) -> ThreadSnapshot | None:
        """The thread as ``store.load`` would return it, reading only the messages after the
        cached prefix when there is one."""
        with self._lock:
            cached = self._prefixes.get(thread_id)
        if cached is None or self.max_threads <= 0:
            return await store.load(thread_id)
        created_at, prefix = cached.created_at, cached.messages
        snap = await store.load(thread_id, after_seq=len(prefix))
        if snap is None:
            self.forget(thread_id)
            return None
        t = snap.thread
        if t.created_at == created_at and t.message_count == len(prefix) + len(snap.messages):
            snap.messages = [*prefix, *snap.messages]
            return snap
        self.forget(thread_id)
        return await store.load(thread_id)

    def remember(self, thread: ThreadRecord, messages: Sequence[Message]) -> None:
        """Keep ``messages`` (all of the thread's stored messages, in order) as its prefix."""
        if self.max_threads <= 0 or len(messages) != thread.message_count:
            return
        with self._lock:
            old = self._prefixes.get(thread.thread_id)
            new = _Prefix(thread.created_at, tuple(messages))
            if old is not None and old.starts(thread.created_at, messages):
                new.call_ids, new.counted = old.call_ids, old.counted  # counted stay counted
            self._prefixes[thread.thread_id] = new
            self._prefixes.move_to_end(thread.thread_id)
            while len(self._prefixes) > self.max_threads:
                self._prefixes.popitem(last=False)

    def call_ids(self, thread: ThreadRecord, messages: Sequence[Message],
                 ) -> tuple[frozenset[str], int]:
        """The ids of the tool calls proposed in the first ``n`` of ``messages``, and ``n``:
        the length of the cached prefix that ``messages`` continue (``(frozenset(), 0)`` when
        there is none). Only messages not counted before are read."""
        with self._lock:
            cached = self._prefixes.get(thread.thread_id)
            if cached is None or not cached.starts(thread.created_at, messages):
                return frozenset(), 0
            if cached.counted < len(cached.messages):
                added = tool_call_ids(cached.messages[cached.counted:])
                if added:
                    cached.call_ids = cached.call_ids | added
                cached.counted = len(cached.messages)
            return cached.call_ids, cached.counted

    def forget(self, thread_id: str) -> None:
        with self._lock:
            self._prefixes.pop(thread_id, None)
