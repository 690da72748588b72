"""``Worker``: the run tier of a deployment with separate API and worker processes.

An API-only server (``interlock serve --api-only``) stores input and decisions and puts the run
on the store's run queue in the same commit (:class:`~interlock.storage.base.RunQueue`,
Postgres ``interlock_queue``); ``interlock worker`` processes claim queued runs (``SELECT ...
FOR UPDATE SKIP LOCKED``: concurrent workers skip each other's entries) and run them with the
same agent. A claim is a lease on the queue entry, renewed while the run goes on; a worker
that dies (``kill -9``) stops renewing it, and once it has run out another worker claims the
entry and continues the thread by the journal's recovery rules: calls that finished are never
run again, and a call that was running when the worker died is retried only when its tool is
idempotent, otherwise it becomes an "outcome unknown" request (docs/durability.md).

Workers wake at once when a run is queued (Postgres ``LISTEN/NOTIFY``) and also poll every
``poll_interval`` seconds; they also run the recovery sweep and the expiry of review deadlines,
which the API-only server leaves to them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from . import observe
from ._failures import FailureLog, stop_if_cancelled
from .agent import Agent
from .errors import (
    ConfigurationError,
    InterlockError,
    StorageError,
    ThreadBusy,
    ThreadNotFound,
)
from .events import Event, ModelTextDelta, RunCompleted, event_to_json
from .leases import QUEUED
from .result import RunResult
from .storage.base import (
    ROW_ONLY,
    ChangeSignals,
    EventRelay,
    QueuedRun,
    RunQueue,
    no_run_queue,
)

log = logging.getLogger("interlock.worker")

STORE_RETRIES = 4
"""Runs of a claimed entry that failed on the store before the entry is given back."""

UNSTORED_RETRY_SECONDS = 300.0
"""How long a claimed run is tried again, holding its claim, while this process knows what the
store may not hold of it: a tool's result it did not take, or a call whose tool never started
although its ``running`` write may have landed (:meth:`Worker._run_claimed`)."""


RELAY_TEXT_CHARS = 400
RELAY_TEXT_SECONDS = 0.1
"""The model's text is relayed in pieces of up to this many characters or seconds."""


class RunRelay:
    """The events of one run made by a worker, sent to the API servers (their stream clients
    see model, tool and request events). In order; the model's text pieces are joined (a
    piece every :data:`RELAY_TEXT_SECONDS` or :data:`RELAY_TEXT_CHARS`), so a model that
    streams token by token costs a few ``NOTIFY`` round trips per answer, not one per token.
    Best effort: a failure is logged and the run goes on. The run's end is not sent: the
    server that queued the run reports it from the stored thread."""

    def __init__(self, relay: EventRelay, thread_id: str) -> None:
        self.relay = relay
        self.thread_id = thread_id
        self.text: list[str] = []
        self.size = 0
        self.since = 0.0

    async def __call__(self, event: Event) -> None:
        if isinstance(event, ModelTextDelta):
            if not self.text:
                self.since = time.monotonic()
            self.text.append(event.text)
            self.size += len(event.text)
            if self.size >= RELAY_TEXT_CHARS or \
                    time.monotonic() - self.since >= RELAY_TEXT_SECONDS:
                await self.flush()
            return
        await self.flush()
        if not isinstance(event, RunCompleted):
            await self._send(event.thread_id, event_to_json(event))

    async def flush(self) -> None:
        """Send the text held back (before any other event, and when the run returns)."""
        if self.text:
            joined = ModelTextDelta(self.thread_id, "".join(self.text))
            self.text, self.size = [], 0
            await self._send(self.thread_id, event_to_json(joined))

    async def _send(self, thread_id: str, data: dict[str, Any]) -> None:
        try:
            await self.relay.relay_event(thread_id, data)
        except Exception as exc:
            log.debug("worker: relaying a %s event of %r failed: %s", data.get("type"),
                      thread_id, exc)


@dataclass
class WorkerStats:
    claimed: int = 0
    """Queue entries claimed."""
    finished: int = 0
    """Runs that paused or completed."""
    failed: int = 0
    """Runs that ended with an error (stored as ``failed``)."""
    busy: int = 0
    """Entries given back because another live process still advanced the thread."""


class Worker:
    """Claims queued runs of ``agent``'s store and runs them, ``concurrency`` at a time.

    ``claim_lease``: how long a claim lasts without renewal (renewed every third of it while
    the run goes on); after a worker died, its runs are taken over this long after its last
    renewal. ``poll_interval``: seconds between queue reads when no signal arrives.
    ``recovery_interval`` / ``expiry_interval``: the recovery sweep (threads whose process
    stopped mid-run) and review deadlines (``None`` disables either). ``shutdown_grace``:
    seconds that runs still going get to finish when the worker stops, before they are
    cancelled and their entries given back to the queue (a cancelled run's tool is still
    waited for up to the agent's ``tool_grace`` and its outcome stored)."""

    def __init__(
        self,
        agent: Agent,
        *,
        concurrency: int = 8,
        claim_lease: timedelta = timedelta(seconds=30),
        poll_interval: float = 5.0,
        recovery_interval: timedelta | None = timedelta(seconds=30),
        expiry_interval: timedelta | None = timedelta(seconds=30),
        shutdown_grace: float = 5.0,
    ) -> None:
        store = agent.checkpointer
        if not isinstance(store, RunQueue):
            raise no_run_queue(store)
        if concurrency < 1:
            raise ConfigurationError("Worker(concurrency=...) must be at least 1.")
        if claim_lease <= timedelta(0) or poll_interval <= 0:
            raise ConfigurationError("Worker claim_lease and poll_interval must be positive.")
        self.agent = agent
        self.queue: RunQueue = store
        self.concurrency = concurrency
        self.claim_lease = claim_lease
        self.poll_interval = poll_interval
        self.recovery_interval = recovery_interval
        self.expiry_interval = expiry_interval
        self.shutdown_grace = shutdown_grace
        self.relay: EventRelay | None = store if isinstance(store, EventRelay) else None
        """Where the events of the runs are sent for API servers to stream (Postgres)."""
        self.owner = agent.owner
        self.stats = WorkerStats()
        self._running: dict[str, tuple[QueuedRun, asyncio.Task[None]]] = {}
        self._claim_failures = FailureLog(log, "worker: claiming queued runs")
        self._abandoned = False
        """Set when a stop's bound ran out with runs still going: from then on a run that
        holds a result the store did not take stops trying too (the process is ending)."""

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Work until ``stop`` is set (or the task is cancelled); then let the runs still going
        finish for ``shutdown_grace`` seconds and give back the entries of those cancelled."""
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        store = self.agent.checkpointer
        stop_listening: Callable[[], None] | None = None
        if isinstance(store, ChangeSignals):
            def signalled() -> None:  # from the store's listening thread
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(wake.set)

            try:  # opening the listening connection blocks: not on the event loop
                stop_listening = await asyncio.to_thread(store.on_signal, "queue", signalled)
            except InterlockError as exc:
                log.warning("worker: listening for queued runs failed (%s); polling every "
                            "%g s", exc, self.poll_interval)
        background = [asyncio.create_task(self._renew(), name="interlock-worker-renew")]
        if self.recovery_interval is not None:
            background.append(asyncio.create_task(self._every(
                "recovery sweep", self.agent.arecover_stale, self.recovery_interval),
                name="interlock-worker-recovery"))
        if self.expiry_interval is not None:
            background.append(asyncio.create_task(self._every(
                "expiry sweep", self.agent.aexpire_due, self.expiry_interval),
                name="interlock-worker-expiry"))
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                wake.clear()
                got = await self._claim()
                if got and len(self._running) < self.concurrency:
                    continue  # there may be more
                woken = asyncio.ensure_future(wake.wait())
                waiters: set[asyncio.Future[Any]] = {stopping, woken}
                waiters |= {t for _, t in self._running.values()}
                try:
                    await asyncio.wait(waiters, timeout=self.poll_interval,
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    woken.cancel()
        finally:
            stopping.cancel()
            if stop_listening is not None:
                stop_listening()
            await self._drain()
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)

    async def run_once(self) -> int:
        """Claim what is queued now (up to ``concurrency``), run it, and return how many
        entries were claimed (for scripts and tests)."""
        got = await self._claim()
        if self._running:
            await asyncio.wait([t for _, t in self._running.values()])
        return got

    # -- machinery ---------------------------------------------------------------------------

    async def _claim(self) -> int:
        free = self.concurrency - len(self._running)
        if free <= 0:  # alive, and busy: its heartbeat goes on (a long run is no dead worker)
            if (obs := observe.current()) is not None:
                obs.worker_claimed(0)
            return 0
        now = self.agent.clock()
        try:
            entries = await self.queue.queue_claim(self.owner, now=now,
                                                   until=now + self.claim_lease, limit=free)
        except InterlockError as exc:
            self._claim_failures.failed(exc, f"retrying every {self.poll_interval:g} s")
            if (obs := observe.current()) is not None:
                obs.storage_error("worker")
            return 0
        self._claim_failures.worked()
        if (obs := observe.current()) is not None:
            obs.worker_claimed(len(entries))
        for entry in entries:
            # one run per thread here: an entry of a thread this worker runs already was
            # claimed again because its claim ran out (the renewals failed while the store
            # did), which the run going on holds; or the thread was queued again (a new
            # ticket), whose run starts when that one ended
            going = self._running.get(entry.thread_id)
            if going is not None and going[0].ticket == entry.ticket:
                continue
            self.stats.claimed += 1
            task = asyncio.create_task(self._process(entry, None if going is None else going[1]),
                                       name=f"interlock-worker-run:{entry.thread_id}")
            self._running[entry.thread_id] = (entry, task)
            task.add_done_callback(functools.partial(self._ended, entry.thread_id))
        return len(entries)

    def _ended(self, thread_id: str, task: asyncio.Task[None]) -> None:
        if self._running.get(thread_id, (None, None))[1] is task:
            del self._running[thread_id]

    async def _process(self, entry: QueuedRun, before: asyncio.Task[None] | None) -> None:
        try:
            if before is not None:
                await _after(before)
            result: RunResult = await self._run_claimed(entry)
        except ThreadBusy:
            # another live process still advances it (another host, lease not run out): try
            # again once this claim would have run out
            self.stats.busy += 1
            await self._give_back(entry, self.claim_lease)
            return
        except asyncio.CancelledError:
            await asyncio.shield(self._give_back(entry, timedelta(0)))
            raise
        except ThreadNotFound:
            pass
        except Exception as exc:
            self.stats.failed += 1
            log.warning("worker: the run of thread %r failed: %s: %s", entry.thread_id,
                        type(exc).__name__, exc)
            if isinstance(exc, StorageError) or not await self._recorded(entry):
                # the store failed, or the run could not record that it took the thread: the
                # entry goes back to the queue (never deleted with nothing on the thread)
                await self._give_back(entry, self._backoff(entry))
                return
        else:
            self.stats.finished += 1
            log.debug("worker: thread %r %s", entry.thread_id, result.status)
        try:
            await self.queue.queue_done(entry, self.owner)
        except InterlockError as exc:  # the claim runs out and the next claim finds it done
            log.warning("worker: removing the queue entry of %r failed: %s", entry.thread_id,
                        exc)

    async def _run_claimed(self, entry: QueuedRun) -> RunResult:
        """Run a claimed entry. A run that failed on the store is tried again here, holding
        the claim (renewed meanwhile), ``STORE_RETRIES`` times; after that the failure goes to
        :meth:`_process`, which gives the entry back.

        While this process knows what the store may not hold of the thread, a tool's result
        it did not take or a call whose tool never started (:meth:`Agent.keeps_unstored`), the
        run is tried for up to
        :data:`UNSTORED_RETRY_SECONDS` instead, and a stop does not cut the pause between two
        tries short until the stop's bound (see :meth:`_drain`) ran out: given back, the
        entry would be run by another process, which can only ask the call's outcome as
        unknown (invariant 2: a known outcome is never made "unknown" while it can still be
        stored)."""
        attempt = 0
        first_failure: float | None = None
        while True:
            relay = RunRelay(self.relay, entry.thread_id) if self.relay is not None else None
            try:
                return await self.agent.arun_queued(entry.thread_id, on_event=relay)
            except StorageError as exc:
                attempt += 1
                now = time.monotonic()
                first_failure = now if first_failure is None else first_failure
                keeps = self.agent.keeps_unstored(entry.thread_id)
                if not keeps and attempt >= STORE_RETRIES:
                    raise
                if keeps and (self._abandoned or now - first_failure >= UNSTORED_RETRY_SECONDS):
                    why = ("the worker's stop ran out of time" if self._abandoned else
                           f"it could not be stored for {UNSTORED_RETRY_SECONDS:g} s")
                    log.error("worker: thread %r: giving back a run of which only this process "
                              "knows a call's outcome (its result, or that its tool never "
                              "started), as %s (%s); unless this process stores it before it "
                              "ends, the call's outcome will be asked as unknown. Check the "
                              "database the worker writes to.", entry.thread_id, why, exc)
                    raise
                log.warning("worker: the run of thread %r failed on the store (%s); trying "
                            "again%s", entry.thread_id, exc,
                            " (this process knows a call's outcome the store does not have yet)"
                            if keeps else "")
                await self._pause(min(self.poll_interval * 2 ** (attempt - 1), 5.0),
                                  keeps)
            finally:
                if relay is not None:  # the end of the model's text
                    await relay.flush()

    async def _pause(self, seconds: float, keeps: bool) -> None:
        """Wait before the next try. A stop (the drain cancels the runs that outlive the
        grace) ends the wait of a run that ``keeps`` a result the store did not take by trying
        again at once, not by giving up; once the drain's bound ran out, a cancellation ends
        it (the process is ending)."""
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            if not keeps or self._abandoned:
                raise

    async def _recorded(self, entry: QueuedRun) -> bool:
        """Whether the thread of a run that failed no longer waits on the queue (the run
        recorded that it took it, or its failure). A read that fails counts as no."""
        try:
            snap = await self.agent.checkpointer.load(entry.thread_id, after_seq=ROW_ONLY)
        except InterlockError:
            return False
        return snap is None or snap.thread.lease_owner != QUEUED

    def _backoff(self, entry: QueuedRun) -> timedelta:
        """How long a failed claim waits before it is claimed again: the poll interval,
        doubled at each attempt, at most a minute."""
        seconds = self.poll_interval * 2 ** min(max(entry.attempts - 1, 0), 10)
        return timedelta(seconds=min(seconds, 60.0))

    async def _give_back(self, entry: QueuedRun, after: timedelta) -> None:
        try:
            await self.queue.queue_release(entry, self.owner, at=self.agent.clock() + after)
        except InterlockError as exc:  # its claim runs out instead
            log.warning("worker: giving back the queue entry of %r failed: %s",
                        entry.thread_id, exc)

    async def _renew(self) -> None:
        """Extend the claims of the runs going on, every third of the claim lease."""
        period = self.claim_lease.total_seconds() / 3
        renew_failures = FailureLog(log, "worker: renewing claims")
        while True:
            await asyncio.sleep(period)
            ids = list(self._running)
            if not ids:
                continue
            try:
                await self.queue.queue_extend(self.owner, ids,
                                              until=self.agent.clock() + self.claim_lease)
            except InterlockError as exc:  # the next renewal retries
                renew_failures.failed(exc, f"retrying every {period:g} s")
            else:
                renew_failures.worked()
            stop_if_cancelled()

    async def _every(self, what: str, job: Callable[[], Awaitable[object]],
                     interval: timedelta) -> None:
        failures = FailureLog(log, f"worker: {what}")
        seconds = interval.total_seconds()
        while True:
            try:
                await job()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures.failed(exc, f"retrying every {seconds:g} s")
            else:
                failures.worked()
            stop_if_cancelled()
            await asyncio.sleep(seconds)

    async def _drain(self) -> None:
        """Stopping: the runs still going get ``shutdown_grace`` seconds to finish; the rest
        are cancelled. A cancelled run waits for its tool (a sync tool cannot be stopped) up to
        the agent's ``tool_grace``, stores its outcome and the run's end, and gives its entry
        back; this waits for that, so the store is closed only after."""
        tasks = [t for _, t in self._running.values()]
        if not tasks:
            return
        _, still = await asyncio.wait(tasks, timeout=self.shutdown_grace)
        if not still:
            return
        for t in still:
            t.cancel()
        bound = self.agent.tool_grace.total_seconds() + max(self.shutdown_grace, 5.0)
        _, left = await asyncio.wait(still, timeout=bound)
        if left:
            self._abandoned = True
        for t in left:
            log.warning("worker: %s still runs %g s after the stop; its outcome is stored "
                        "only if it ends before the process exits", t.get_name(), bound)


async def _after(previous: asyncio.Task[None]) -> None:
    """Wait until ``previous`` (the run of the same thread going on) ended. Cancelled (a stop),
    cancel it too and wait for it to end as a cancelled run does, so that no run is left going
    once the worker's drain returned."""
    try:
        await asyncio.wait([previous])
    except asyncio.CancelledError:
        previous.cancel()
        await asyncio.wait([previous])
        raise
