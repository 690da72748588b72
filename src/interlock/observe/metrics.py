"""Prometheus metrics (``prometheus_client``, the ``[metrics]`` extra).

Counters and histograms are updated when events are stored (decisions, expiries,
escalations, recoveries, tool starts) or happen (deliveries, claims, storage errors); the
gauges of what waits now (pending calls by tool and role, the oldest request, the outbox
backlog) are read from the store when ``/metrics`` is scraped (:meth:`Metrics.refresh`):
interrupted threads through the store's status index, pending outbox events through its status
filter, never every thread.

Labels are bounded: tool names by the agent's tools, roles by the configured roles, channels
by the configured channels; anything else is ``other`` (with nothing configured, the first
``max_values`` distinct values are kept). No label holds a thread, call or request id.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import exposition as _exposition

from ..audit.records import AuditKind
from ..authz import is_reserved
from ..interrupts import Interrupt
from ..review_request import read_request
from ..storage.base import AuditRecord, CallState, Checkpointer, JournalEntry, ThreadRecord

OTHER = "other"
_WAIT_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 12 * 3600, 86400,
                 3 * 86400, 7 * 86400)
_START_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
_HUMAN = {CallState.APPROVED, CallState.EDITED}
CONTENT_TYPE = _exposition.CONTENT_TYPE_LATEST


class Labels:
    """One bounded label: the known values, or the first ``max_values`` seen; else ``other``."""

    def __init__(self, known: Iterable[str] | None, max_values: int) -> None:
        self.known = frozenset(known) if known is not None else None
        self.max_values = max_values
        self.seen: set[str] = set()

    def __call__(self, value: str | None) -> str:
        if value is None or value == "":
            return OTHER
        if self.known is not None:
            return value if value in self.known else OTHER
        if value in self.seen:
            return value
        if len(self.seen) < self.max_values:
            self.seen.add(value)
            return value
        return OTHER


class Metrics:
    """The metrics of one process, in their own registry (:meth:`exposition`)."""

    def __init__(self, *, tools: Iterable[str] | None = None,
                 roles: Iterable[str] | None = None, channels: Iterable[str] | None = None,
                 max_values: int = 50, registry: CollectorRegistry | None = None,
                 clock: Callable[[], datetime] | None = None, worker: bool = False) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.tool = Labels(tools, max_values)
        self.role = Labels(None if roles is None else [*roles, "any"], max_values)
        self.channel = Labels(None if channels is None else [*channels, "undispatched"],
                              max_values)
        self._clock = clock or (lambda: datetime.now(UTC))
        """What "now" is for the age of the oldest request (the agent's clock, in tests)."""
        self._lock = asyncio.Lock()
        r = self.registry
        self.pending_calls = Gauge(
            "interlock_pending_calls", "Tool calls waiting for a review decision, by tool.",
            ["tool"], registry=r)
        self.pending_by_role = Gauge(
            "interlock_pending_calls_by_role",
            "Tool calls waiting for a review decision, by reviewer role that may decide them "
            "('any': no role required).", ["role"], registry=r)
        self.pending_questions = Gauge(
            "interlock_pending_questions", "Questions (interrupt()) waiting for an answer.",
            registry=r)
        self.oldest_pending = Gauge(
            "interlock_oldest_pending_seconds",
            "Age of the oldest request still waiting for a person (0: none).", registry=r)
        self.outbox_backlog = Gauge(
            "interlock_outbox_backlog", "Notification deliveries not done yet, by channel "
            "('undispatched': events no dispatcher has handled yet).", ["channel"], registry=r)
        self.outbox_dead = Gauge(
            "interlock_outbox_dead_events", "Notification events that gave up (dead).",
            registry=r)
        self.time_to_decision = Histogram(
            "interlock_time_to_decision_seconds",
            "From a request's creation to the decision (or answer, or expiry), by decision.",
            ["decision"], buckets=_WAIT_BUCKETS, registry=r)
        self.decision_to_start = Histogram(
            "interlock_decision_to_tool_start_seconds",
            "From a reviewer's approval (or edit) to the tool's start.", buckets=_START_BUCKETS,
            registry=r)
        self.decisions = Counter(
            "interlock_decisions", "Review decisions stored, by type and tool.",
            ["decision", "tool"], registry=r)
        self.expiries = Counter(
            "interlock_expiries", "Review calls that expired without a decision, by tool.",
            ["tool"], registry=r)
        self.escalations = Counter(
            "interlock_escalations", "Review requests escalated to more roles.", registry=r)
        self.delivery_failures = Counter(
            "interlock_outbox_delivery_failures",
            "Failed notification delivery attempts, by channel (final: gave up).",
            ["channel", "final"], registry=r)
        self.claims = Counter(
            "interlock_worker_claims", "Queued runs claimed by this worker.", registry=r)
        # a worker's only (``worker=True``): a server that exported it would show a worker
        # that never polled, and the "no worker alive" alert would fire on every server
        self.worker_heartbeat = Gauge(
            "interlock_worker_last_poll_timestamp_seconds",
            "When this worker last read the run queue, or found every run slot busy (Unix "
            "time).", registry=r) if worker else None
        self.takeovers = Counter(
            "interlock_lease_takeovers",
            "Runs taken over after their owner's lease ran out (the owner stopped).",
            registry=r)
        self.recoveries = Counter(
            "interlock_recoveries", "Stopped or failed runs recovered (takeovers included).",
            registry=r)
        self.storage_errors = Counter(
            "interlock_storage_errors", "Operations that failed on a storage error, by where "
            "(run, worker, scrape).", ["where"], registry=r)
        self.refresh_seconds = Gauge(
            "interlock_metrics_refresh_seconds",
            "How long the last scrape took to read the gauges from the store.", registry=r)

    # ------------------------------------------------------------------ events

    def committed(self, before: ThreadRecord | None, records: Sequence[AuditRecord]) -> None:
        pending = {i.id: i for i in before.pending} if before is not None else {}
        for r in records:
            kind = r.kind
            if kind == AuditKind.DECISION:
                decision = str(r.data.get("type", OTHER))
                self.decisions.labels(decision=decision,
                                      tool=self.tool(str(r.data.get("name", "")))).inc()
                self._waited(pending, r, decision)
            elif kind == AuditKind.EXPIRED:
                self.expiries.labels(tool=self.tool(str(r.data.get("name", "")))).inc()
                self._waited(pending, r, "expire")
            elif kind == AuditKind.INPUT_ANSWERED:
                self._waited(pending, r, "answer")
            elif kind == AuditKind.ESCALATED:
                self.escalations.inc()
            elif kind == AuditKind.RECOVERED:
                self.recoveries.inc()
                if r.data.get("previous_owner"):
                    self.takeovers.inc()

    def _waited(self, pending: dict[str, Interrupt], r: AuditRecord, decision: str) -> None:
        intr = pending.get(str(r.data.get("interrupt_id")))
        if intr is not None:
            self.time_to_decision.labels(decision=decision).observe(
                max(0.0, (r.ts - intr.created_at).total_seconds()))

    def tool_starting(self, entry: JournalEntry, now: datetime) -> None:
        # a reviewer's decision: not a standing rule's, the middleware's or the system's
        # (reserved actor names; a reviewer id may hold ':', as "okta:alice" does)
        if entry.state in _HUMAN and entry.decision is not None \
                and not is_reserved(entry.decided_by or ""):
            self.decision_to_start.observe(max(0.0, (now - entry.updated_at).total_seconds()))

    def worker_claimed(self, n: int) -> None:
        if self.worker_heartbeat is not None:
            self.worker_heartbeat.set(time.time())
        if n:
            self.claims.inc(n)

    def delivery_failed(self, channel: str, dead: bool) -> None:
        self.delivery_failures.labels(channel=self.channel(channel),
                                      final="true" if dead else "false").inc()

    # ------------------------------------------------------------------ scrape time

    async def refresh(self, store: Checkpointer, *, page: int = 500) -> None:
        """Read the gauges of what waits now from ``store``."""
        async with self._lock:
            started = time.perf_counter()
            try:
                await self._refresh(store, page)
            except Exception:
                self.storage_errors.labels(where="scrape").inc()
                raise
            finally:
                self.refresh_seconds.set(time.perf_counter() - started)

    async def _refresh(self, store: Checkpointer, page: int) -> None:
        now = self._clock()
        tools: Tally[str] = Tally()
        roles: Tally[str] = Tally()
        questions = 0
        oldest: datetime | None = None
        before: datetime | None = None
        before_id: str | None = None
        while True:
            threads = await store.list_threads(status="interrupted", limit=page, before=before,
                                               before_id=before_id, top_level=True)
            for t in threads:
                for intr in t.pending:
                    if oldest is None or intr.created_at < oldest:
                        oldest = intr.created_at
                    if intr.kind != "review":
                        questions += 1
                        continue
                    request = read_request(intr.value)
                    for call in request.action_requests:
                        tools[self.tool(call.name)] += 1
                    for cfg in request.review_configs:
                        for role in cfg.reviewers or ["any"]:
                            roles[self.role(role)] += 1
            if len(threads) < page:
                break
            before, before_id = threads[-1].updated_at, threads[-1].thread_id
        backlog: Tally[str] = Tally()
        for event in await store.outbox_list(status="pending", limit=100_000):
            if event.deliveries is None:
                backlog["undispatched"] += 1
                continue
            for name, d in event.deliveries.items():
                if d.status == "pending":
                    backlog[self.channel(name)] += 1
        dead = len(await store.outbox_list(status="dead", limit=100_000))
        _set(self.pending_calls, "tool", tools)
        _set(self.pending_by_role, "role", roles)
        _set(self.outbox_backlog, "channel", backlog)
        self.pending_questions.set(questions)
        self.outbox_dead.set(dead)
        self.oldest_pending.set(0 if oldest is None else max(0.0, (now - oldest).total_seconds()))

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format."""
        return generate_latest(self.registry)


def _set(gauge: Gauge, label: str, values: Tally[str]) -> None:
    """Replace every labelled value of ``gauge`` (values gone since the last scrape go)."""
    gauge.clear()
    for value, n in values.items():
        gauge.labels(**{label: value}).set(n)
