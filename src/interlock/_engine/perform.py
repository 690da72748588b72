"""The one entry to the run engine: every operation on a thread — new input, resume, recover,
cancel, expire, revoke — from every surface (``Agent``, the review server, the CLI, the expiry
sweeper) runs through :func:`perform`.

``perform`` marks the thread as advanced by this process, gives the step a fresh run
transaction, and settles how a run that raised ends: a run that holds the thread is stored as
``failed`` (lease released) so that the next call recovers it — unless a tool of it is still
running, in which case the thread stays owned until the tool's outcome is stored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..errors import ConcurrencyError, ConfigurationError
from ..leases import QUEUED, local_run
from ..storage.base import Checkpointer, RunQueue, no_run_queue
from ..text import escaped
from . import spill
from .deps import RunDeps
from .execute import ToolStillRunning
from .txn import Lease, Sink, ThreadTxn, TxnOptions

log = logging.getLogger("interlock")

T = TypeVar("T")
Step = Callable[[ThreadTxn], Awaitable[T]]


async def perform(
    store: Checkpointer,
    deps: RunDeps,
    thread_id: str,
    step: Step[T],
    *,
    sink: Sink | None = None,
    on_stored: Callable[[], None] | None = None,
    handoff: bool = False,
    claimed: bool = False,
) -> T:
    """Run ``step`` on a new transaction of ``thread_id``.

    ``on_stored`` is called once the operation's input (new message, decisions, answers) is
    durably stored, before the run goes on; ``sink`` receives the run's events. ``handoff``:
    store the input with the thread put on the store's run queue instead of running it (an
    API-only server); ``claimed``: the run was claimed from that queue (a worker)."""
    if not isinstance(thread_id, str) or not thread_id:
        raise ConfigurationError("thread_id must be a non-empty string.")
    if handoff and not isinstance(store, RunQueue):
        raise no_run_queue(store)
    obs = deps.observer.run(thread_id, deps.agent_name) if deps.observer is not None else None
    txn = ThreadTxn(store, thread_id, Lease(deps.owner, deps.lease, deps.clock), TxnOptions(
        sink=sink, on_stored=on_stored, snapshots=deps.snapshots, handoff=handoff,
        claimed=claimed, agent_name=deps.agent_name, obs=obs))
    with local_run(thread_id):
        try:
            result = await step(txn)
        except ToolStillRunning:
            # cancelled while a tool outlived tool_grace: the tool's outcome is stored when it
            # ends (the thread stays owned by this process until then)
            if obs is not None:
                obs.ended(asyncio.CancelledError())
            raise asyncio.CancelledError() from None
        except BaseException as exc:
            if not isinstance(exc, ConcurrencyError):
                await _mark_failed(txn, exc)
            if obs is not None:
                obs.ended(exc)
            if _cancel_taken_in(exc) and not spill.unsettled(store, thread_id):
                raise asyncio.CancelledError() from exc
            raise
        if obs is not None:
            obs.ended(None)
        return result


def _cancel_taken_in(exc: BaseException) -> bool:
    """Whether the run ends with an error although its task was cancelled meanwhile: a write
    under way is seen to its end when the run is cancelled (it may land), and when it then
    fails, its error comes up in the cancellation's place, after the handlers of a failed
    write ran. The run ends cancelled all the same: a caller that cancelled gets
    ``CancelledError`` (``wait_for`` its ``TimeoutError``), and a sweep that logs store errors
    and goes on is not kept going by a stop it never saw.

    Except while this process knows what the store may not hold of the thread (:mod:`.spill`:
    a tool's result the store did not take, or a call whose tool never started although its
    ``running`` write may have landed): then the store's error goes up, so that a caller that
    tries again on it (a stopping worker, holding its claim) settles it, instead of leaving
    the call to be declared "outcome unknown" once the process is gone. A known outcome
    outranks a prompt stop; the background loops stop after such a job all the same."""
    task = asyncio.current_task()
    return isinstance(exc, Exception) and task is not None and task.cancelling() > 0


async def _mark_failed(txn: ThreadTxn, exc: BaseException) -> None:
    """Store the run as failed and release the thread, when this run holds it (or has input
    staged that the failure would otherwise lose, or took it from the run queue without
    recording that yet)."""
    if txn.snap is None or not (txn.holding or txn.has_staged_input or (
            txn.options.claimed and txn.version is not None and txn.thread.lease_owner == QUEUED)):
        return
    try:
        error = escaped(f"{type(exc).__name__}: {exc}"[:2000])[0]
        await txn.commit(status="failed", error=error, hold_lease=False)
    except Exception as again:  # the original error matters more; recovery handles the rest
        log.warning("thread %r: storing the failure (%s) failed too: %s. This process "
                    "recovers the thread on its next call.", txn.thread_id,
                    type(exc).__name__, again)
