"""The hooks the run engine calls, and the process's observer.

The engine holds an :class:`Observer` (``None`` unless :func:`install` was called) and per
operation a :class:`RunObserver`; each hook in the engine is one ``is None`` check when
nothing is installed. This module imports neither OpenTelemetry nor ``prometheus_client``:
:class:`~interlock.observe.tracing.Tracing` and :class:`~interlock.observe.metrics.Metrics`
do, and exist only when someone built them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import StorageError

if TYPE_CHECKING:
    from ..middleware import ToolCallHandler
    from ..models.base import Model
    from ..storage.base import AuditRecord, JournalEntry, ThreadRecord
    from .metrics import Metrics
    from .tracing import RunTrace, Tracing

log = logging.getLogger("interlock.observe")
events_log = logging.getLogger("interlock.events")
"""One record per stored event (audit row) when :class:`Observer` ``events=True``: ids only,
never arguments, results or tokens (see :mod:`interlock.observe.logs`)."""

EVENT_IDS = ("thread_id", "run_id", "tool_call_id", "interrupt_id", "trace_id")
"""The ids an event's log line carries (``extra`` fields of its log record)."""


class Observer:
    """What this process reports: traces (``tracing``), metrics (``metrics``) and one log
    record per stored event (``events``). Install it with :func:`install`."""

    def __init__(self, *, tracing: Tracing | None = None, metrics: Metrics | None = None,
                 events: bool = False) -> None:
        self.tracing = tracing
        self.metrics = metrics
        self.events = events

    def run(self, thread_id: str, agent: str) -> RunObserver:
        """The observer of one engine operation on ``thread_id``."""
        return RunObserver(self, thread_id, agent)

    def model(self, model: Model) -> Model:
        """``model`` with a ``chat`` span around each call (itself when not tracing)."""
        return self.tracing.model(model) if self.tracing is not None else model

    def tool_handler(self, handler: ToolCallHandler) -> ToolCallHandler:
        """``handler`` with an ``execute_tool`` span around each call."""
        return self.tracing.tool_handler(handler) if self.tracing is not None else handler

    # events from outside the engine (worker, dispatcher)

    def worker_claimed(self, n: int) -> None:
        if self.metrics is not None:
            self.metrics.worker_claimed(n)

    def storage_error(self, where: str) -> None:
        if self.metrics is not None:
            self.metrics.storage_errors.labels(where=where).inc()

    def delivery_failed(self, channel: str, dead: bool) -> None:
        if self.metrics is not None:
            self.metrics.delivery_failed(channel, dead)


class RunObserver:
    """One engine operation (start, resume, recover, expire, ...) on one thread."""

    __slots__ = ("agent", "metrics", "observer", "run_id", "thread_id", "trace")

    def __init__(self, observer: Observer, thread_id: str, agent: str) -> None:
        self.observer = observer
        self.thread_id = thread_id
        self.agent = agent
        self.metrics = observer.metrics
        self.trace: RunTrace | None = (observer.tracing.run(thread_id, agent)
                                       if observer.tracing is not None else None)
        self.run_id = uuid.uuid4().hex[:16]

    def loaded(self, thread: ThreadRecord, new_run: bool) -> str | None:
        """The thread was loaded (``new_run``: for new input). Returns the ``traceparent`` to
        store with it when this operation starts a trace, else None."""
        if self.trace is None:
            return None
        try:
            return self.trace.loaded(thread, new_run)
        except Exception as exc:
            _failed("starting the run's span", exc)
            return None

    def committed(self, before: ThreadRecord | None, records: Sequence[AuditRecord]) -> None:
        """A change was stored: ``before`` is the thread as it was, ``records`` its events."""
        if records:
            try:
                self._committed(before, records)
            except Exception as exc:  # the change is stored: the run must go on
                _failed("recording stored events", exc)

    def _committed(self, before: ThreadRecord | None, records: Sequence[AuditRecord]) -> None:
        if self.trace is not None:
            self.trace.committed(before, records)
        if self.metrics is not None:
            self.metrics.committed(before, records)
        if self.observer.events:
            trace_id = self.trace.trace_id if self.trace is not None else None
            for r in records:
                iid = r.data.get("interrupt_id")
                events_log.info("%s", r.kind, extra={
                    "event": r.kind, "thread_id": r.thread_id, "run_id": self.run_id,
                    "tool_call_id": r.tool_call_id,
                    "interrupt_id": iid if isinstance(iid, str) else None,
                    "actor": r.actor, "seq": r.seq, "trace_id": trace_id})

    def tool_starting(self, entry: JournalEntry, now: datetime) -> None:
        """An approved call is about to run (``entry``: as decided, before ``running``)."""
        if self.metrics is not None:
            try:
                self.metrics.tool_starting(entry, now)
            except Exception as exc:
                _failed("recording a tool start", exc)

    def ended(self, exc: BaseException | None) -> None:
        """The operation returned (``exc`` None) or raised ``exc``."""
        try:
            if self.trace is not None:
                self.trace.ended(exc)
            if isinstance(exc, StorageError) and self.metrics is not None:
                self.metrics.storage_errors.labels(where="run").inc()
        except Exception as again:
            _failed("ending the run's span", again)


def _failed(what: str, exc: Exception) -> None:
    """Observing never stops a run: a failure of a tracer or a metric is logged, not raised."""
    log.warning("observability: %s failed (%s: %s); the run goes on.", what,
                type(exc).__name__, exc)


_current: Observer | None = None


def install(observer: Observer) -> Observer:
    """Make ``observer`` this process's (agents pick it up at their next operation)."""
    global _current
    _current = observer
    return observer


def uninstall() -> None:
    global _current
    _current = None


def current() -> Observer | None:
    """The installed observer, or None (the default: nothing is observed)."""
    return _current
