"""Snapshots of recently used threads, so that continuing a thread reads only what is new.

Messages are append-only (a stored message is never rewritten), so the messages of a thread
this process has already loaded or stored are a valid prefix of the thread forever. A process
that continues such a thread asks the store for the thread row, the open turn's journal and
only the messages after that prefix, and checks that they join up (same thread creation time,
the row's message count equal to prefix + new). Anything else — a thread recreated under the
same id, a prefix longer than the stored thread — falls back to a full load. The cache is
bounded (least recently used threads are dropped), per process, and never trusted for anything
but the message prefix: the row and the journal always come from the store.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime

from .messages import Message
from .storage.base import Checkpointer, ThreadRecord, ThreadSnapshot

DEFAULT_THREADS = 256
"""Threads whose message prefix a process keeps by default."""


class SnapshotCache:
    """Message prefixes of the threads this process used most recently."""

    def __init__(self, max_threads: int = DEFAULT_THREADS) -> None:
        self.max_threads = max_threads
        self._prefixes: OrderedDict[str, tuple[datetime, tuple[Message, ...]]] = OrderedDict()
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
        created_at, prefix = cached
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
            self._prefixes[thread.thread_id] = (thread.created_at, tuple(messages))
            self._prefixes.move_to_end(thread.thread_id)
            while len(self._prefixes) > self.max_threads:
                self._prefixes.popitem(last=False)

    def forget(self, thread_id: str) -> None:
        with self._lock:
            self._prefixes.pop(thread_id, None)
