"""Delivers outbox events to the configured channels: at least once, with retries and backoff.

Several dispatchers (one per ``interlock serve`` process, or ``interlock dispatch``) may share
one database: an event is leased to one of them at a time, and a dispatcher that dies leaves
its lease to expire, after which another takes the event over. A delivery that was attempted but
whose success was not recorded is attempted again (at least once); the event id stays the same,
so the receiver can drop the repeat.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from .. import observe
from .._failures import FailureLog, stop_if_cancelled
from ..outbox import Delivery, OutboxEvent
from ..storage.base import Checkpointer
from .config import DispatchSettings

log = logging.getLogger("interlock.notify")

PRUNE_EVERY = timedelta(hours=1)
"""How often a running dispatcher deletes delivered events past their retention."""


class DeliveryFailed(Exception):
    """A delivery attempt failed; ``retry=False`` marks it dead at once (e.g. refused for
    good)."""

    def __init__(self, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


class Channel(Protocol):
    """Somewhere events go: a webhook endpoint, Slack, e-mail."""

    name: str

    def wants(self, event: OutboxEvent) -> bool:
        """Whether this channel takes the event at all (event filters, roles)."""
        ...

    async def deliver(self, event: OutboxEvent, delivery: Delivery) -> dict[str, str] | None:
        """Deliver once; return data later events need (stored in ``delivery.ref``).
        Raise :class:`DeliveryFailed` (or any exception) when it did not work."""
        ...


@dataclass
class DispatchStats:
    attempts: int = 0
    delivered: int = 0
    failed: int = 0
    dead: int = 0


class Dispatcher:
    """Claims due outbox events and delivers them to ``channels``."""

    def __init__(
        self,
        store: Checkpointer,
        channels: Sequence[Channel],
        *,
        settings: DispatchSettings | None = None,
        clock: Callable[[], datetime] | None = None,
        owner: str | None = None,
    ) -> None:
        self.store = store
        self.channels = list(channels)
        self.by_name = {c.name: c for c in self.channels}
        if len(self.by_name) != len(self.channels):
            raise ValueError("every notification channel needs a distinct name")
        self.settings = settings or DispatchSettings()
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now(UTC))
        self.owner = owner or f"dispatch-{uuid.uuid4().hex[:12]}"
        self.stats = DispatchStats()
        self._wake = asyncio.Event()
        self._pruned_at: datetime | None = None

    def poke(self) -> None:
        """Look for new events now instead of at the next poll."""
        self._wake.set()

    def backoff(self, attempts: int) -> timedelta:
        s = self.settings
        return timedelta(seconds=min(s.backoff_max, s.backoff * 2 ** max(0, attempts - 1)))

    async def run_once(self) -> int:
        """Handle every due event once. Returns how many events were handled."""
        handled = 0
        while True:
            now = self.clock()
            batch = await self.store.outbox_claim(
                self.owner, now=now, until=now + timedelta(seconds=self.settings.lease),
                limit=self.settings.batch)
            if not batch:
                return handled
            for event in batch:
                await self._handle(event)
                handled += 1

    async def prune_delivered(self) -> int:
        """Delete delivered events older than ``settings.retention_days`` if the last pass
        was an hour or more ago (or never ran). Returns how many were deleted."""
        days = self.settings.retention_days
        now = self.clock()
        if days is None or (self._pruned_at is not None
                            and now - self._pruned_at < PRUNE_EVERY):
            return 0
        gone = await self.store.outbox_prune(before=now - timedelta(days=days),
                                             statuses=("delivered",))
        self._pruned_at = now
        if gone:
            log.info("outbox: deleted %d delivered event(s) older than %g days", gone, days)
        return gone

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Dispatch until ``stop`` is set (or the task is cancelled)."""
        stop = stop or asyncio.Event()
        failures = FailureLog(log, "outbox dispatch")
        while not stop.is_set():
            try:
                await self.run_once()
                await self.prune_delivered()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures.failed(exc, f"retrying every {self.settings.poll_interval:g} s")
            else:
                failures.worked()
            stop_if_cancelled()
            self._wake.clear()
            waits = [asyncio.ensure_future(self._wake.wait()),
                     asyncio.ensure_future(stop.wait())]
            try:
                await asyncio.wait(waits, timeout=self.settings.poll_interval,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()

    async def _handle(self, event: OutboxEvent) -> None:
        deliveries = dict(event.deliveries) if event.deliveries is not None else {
            c.name: Delivery() if c.wants(event) else Delivery(status="skipped")
            for c in self.channels}
        for name, d in deliveries.items():
            now = self.clock()
            if d.status != "pending" or (d.next_at is not None and d.next_at > now):
                continue
            channel = self.by_name.get(name)
            if channel is None:
                deliveries[name] = d.model_copy(update={
                    "status": "dead", "last_error": f"channel {name!r} is not configured in "
                    f"this dispatcher; add it back and retry the event"})
                self.stats.dead += 1
                continue
            deliveries[name] = await self._attempt(channel, event, d)
        pending = [d for d in deliveries.values() if d.status == "pending"]
        if pending:
            status, next_at = "pending", min(d.next_at or self.clock() for d in pending)
        elif any(d.status == "dead" for d in deliveries.values()):
            status, next_at = "dead", event.next_at
        else:
            status, next_at = "delivered", event.next_at
        done = event.model_copy(update={
            "deliveries": deliveries, "status": status, "next_at": next_at,
            "lease_owner": None, "lease_until": None})
        if not await self.store.outbox_update(done, leased_by=self.owner):
            log.warning("outbox event %s was taken over by another dispatcher (lease expired "
                        "while delivering); it may be delivered again", event.id)

    async def _attempt(self, channel: Channel, event: OutboxEvent, d: Delivery) -> Delivery:
        attempts = d.attempts + 1
        self.stats.attempts += 1
        try:
            ref = await channel.deliver(event, d)
        except Exception as exc:
            retry = not isinstance(exc, DeliveryFailed) or exc.retry
            error = (str(exc) if isinstance(exc, DeliveryFailed)
                     else f"{type(exc).__name__}: {exc}")[:500]
            self.stats.failed += 1
            dead = not retry or attempts >= self.settings.max_attempts
            if (obs := observe.current()) is not None:
                obs.delivery_failed(channel.name, dead)
            if dead:
                self.stats.dead += 1
                log.error("delivery of %s to %s is dead after %d attempt(s): %s",
                          event.id, channel.name, attempts, error)
                return d.model_copy(update={"status": "dead", "attempts": attempts,
                                            "last_error": error, "next_at": None})
            log.warning("delivery of %s to %s failed (attempt %d): %s", event.id, channel.name,
                        attempts, error)
            return d.model_copy(update={"attempts": attempts, "last_error": error,
                                        "next_at": self.clock() + self.backoff(attempts)})
        self.stats.delivered += 1
        return d.model_copy(update={"status": "delivered", "attempts": attempts,
                                    "delivered_at": self.clock(), "next_at": None,
                                    "ref": {**d.ref, **(ref or {})}})


async def retry_event(store: Checkpointer, event_id: str, *,
                      now: datetime | None = None) -> OutboxEvent | None:
    """Make a dead event's dead deliveries due again. Returns the updated event, or None if
    there is no such dead event."""
    event = await store.outbox_get(event_id)
    if event is None or event.status != "dead":
        return None
    at = now or datetime.now(UTC)
    deliveries = {n: (d.model_copy(update={"status": "pending", "attempts": 0, "next_at": at})
                      if d.status == "dead" else d)
                  for n, d in (event.deliveries or {}).items()}
    again = event.model_copy(update={"status": "pending", "next_at": at,
                                     "deliveries": deliveries})
    return again if await store.outbox_update(again, leased_by=None) else None
