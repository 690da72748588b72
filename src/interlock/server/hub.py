"""In-process publish/subscribe for the SSE streams, with a short replay buffer per topic.

Topics are ``inbox`` (requests raised / resolved, threads changed) and ``thread:<id>`` (the
events of one thread's runs). Event ids are ``<epoch>-<n>``: ``epoch`` is random per process,
so a client reconnecting with ``Last-Event-ID`` to a different process gets no wrong replay
(it refetches the state instead).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from ..authz import Reviewer, ThreadFacts, facts_of, may_read
from ..storage.base import ROW_ONLY, Checkpointer

log = logging.getLogger("interlock.server")

INBOX = "inbox"

_EVENT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def thread_topic(thread_id: str) -> str:
    return f"thread:{thread_id}"


async def readers_now(store: Checkpointer, thread_id: str) -> tuple[ThreadFacts, ...] | None:
    """Who may read the thread as stored now, as the ``facts`` of events about it (None: it
    could not be read; such an event is not published)."""
    try:
        snap = await store.load(thread_id, after_seq=ROW_ONLY)
    except Exception as exc:
        log.debug("thread %r: reading who may see its events failed: %s", thread_id, exc)
        return None
    return (facts_of(snap.thread),) if snap is not None else None


@dataclass(frozen=True)
class StreamEvent:
    id: str
    event: str
    data: dict[str, Any]
    facts: tuple[ThreadFacts, ...] = field(default=(), compare=False, repr=False)
    """Who may see the event: a reader of the thread in any of these states (empty: anyone
    the stream was opened for)."""
    unless: tuple[ThreadFacts, ...] = field(default=(), compare=False, repr=False)
    """...except a reader of the thread in any of these states (who is sent another event)."""

    def visible_to(self, reviewer: Reviewer | None) -> bool:
        if self.unless and any(may_read(reviewer, f) for f in self.unless):
            return False
        return not self.facts or any(may_read(reviewer, f) for f in self.facts)

    @functools.cached_property
    def encoded(self) -> bytes:
        """The event in ``text/event-stream`` framing, encoded once for every subscriber."""
        payload = _EVENT_JSON.encode(self.data)
        return f"id: {self.id}\nevent: {self.event}\ndata: {payload}\n\n".encode()

    def encode(self) -> bytes:
        """The event in ``text/event-stream`` framing."""
        return self.encoded


@dataclass(eq=False)
class Subscription:
    topic: str
    queue: asyncio.Queue[StreamEvent | None]
    overflowed: bool = False
    closed: bool = field(default=False)


class Hub:
    """Fan-out of events to SSE subscribers. Not thread-safe: use it from the server's loop."""

    def __init__(self, *, buffer: int = 64, max_topics: int = 256, queue_size: int = 1000):
        self.epoch = uuid.uuid4().hex[:8]
        self._buffer = buffer
        self._max_topics = max_topics
        self._queue_size = queue_size
        self._seq = 0
        self._buffers: OrderedDict[str, deque[StreamEvent]] = OrderedDict()
        self._subs: dict[str, set[Subscription]] = {}
        self._closed = False

    def last_id(self) -> str:
        """Id of the last event published (on any topic); replay starts after it."""
        return f"{self.epoch}-{self._seq}"

    def publish(self, topic: str, event: str, data: dict[str, Any],
                facts: tuple[ThreadFacts, ...] = (),
                unless: tuple[ThreadFacts, ...] = ()) -> StreamEvent:
        self._seq += 1
        ev = StreamEvent(f"{self.epoch}-{self._seq}", event, data, facts, unless)
        buf = self._buffers.get(topic)
        if buf is None:
            buf = self._buffers[topic] = deque(maxlen=self._buffer)
            while len(self._buffers) > self._max_topics:
                self._buffers.popitem(last=False)
        else:
            self._buffers.move_to_end(topic)
        buf.append(ev)
        for sub in list(self._subs.get(topic, ())):
            if sub.overflowed:
                continue
            try:
                sub.queue.put_nowait(ev)
            except asyncio.QueueFull:
                # a client that cannot keep up is told to resync and disconnected
                sub.overflowed = True
        return ev

    def _seq_of(self, event_id: str | None) -> int | None:
        if not event_id:
            return None
        epoch, _, n = event_id.partition("-")
        if epoch != self.epoch or not n.isdigit():
            return None
        return int(n)

    def subscribe(self, topic: str, *, after: str | None = None) -> Subscription:
        """Subscribe; with ``after`` (an event id of this process), buffered later events of the
        topic are delivered first."""
        sub = Subscription(topic, asyncio.Queue(maxsize=self._queue_size))
        if self._closed:
            sub.queue.put_nowait(None)
            return sub
        start = self._seq_of(after)
        if start is not None:
            for ev in self._buffers.get(topic, ()):
                if int(ev.id.partition("-")[2]) > start:
                    sub.queue.put_nowait(ev)
        self._subs.setdefault(topic, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.topic)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.topic]

    def close(self) -> None:
        """End every stream (server shutdown)."""
        self._closed = True
        for subs in self._subs.values():
            for sub in subs:
                sub.closed = True
                try:
                    sub.queue.put_nowait(None)
                except asyncio.QueueFull:
                    sub.overflowed = True
        self._subs.clear()
