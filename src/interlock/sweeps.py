"""Which threads the recovery sweep (``Agent.recover_stale``) takes: ``running`` ones whose
owner is gone, and ``failed`` ones whose run failed part-way with work left (an open turn, or
tool results the model was not called with). See docs/durability.md, "The thread's states and
who moves them on".

A store with a :class:`~interlock.storage.base.SweepIndex` hands over exactly the threads
:func:`~interlock.storage.base.needs_sweep` marks, through an index of those rows alone, so a
sweep costs what is to be swept, however many threads the store holds. Other stores are read
by status, and a failed thread's last message is loaded to tell whether work is left.
"""

from __future__ import annotations

from datetime import datetime

from .leases import owner_alive
from .paging import iter_threads
from .storage.base import Checkpointer, SweepIndex, ThreadRecord, needs_sweep

PAGE = 200
"""Threads read per query."""


async def stale_threads(store: Checkpointer, now: datetime) -> list[str]:
    """The ids of the threads the sweep takes now (threads a live process advances are
    left out)."""
    if isinstance(store, SweepIndex):
        found: list[str] = []
        after: str | None = None
        while True:
            rows = await store.sweep_candidates(limit=PAGE, after=after)
            found += [r.thread_id for r in rows if needs_sweep(r) and _stale(r, now)]
            if len(rows) < PAGE:
                return found
            after = rows[-1].thread_id
    stale = [r.thread_id async for r in iter_threads(store.list_threads, status="running")
             if _stale(r, now)]
    stale += [r.thread_id async for r in iter_threads(store.list_threads, status="failed")
              if await _work_left(store, r)]
    return stale


def _stale(t: ThreadRecord, now: datetime) -> bool:
    """A failed thread, or a running one whose owner is gone."""
    if t.status != "running":
        return True
    return not (t.lease_owner and owner_alive(t.lease_owner, t.lease_until, now, t.thread_id))


async def _work_left(store: Checkpointer, t: ThreadRecord) -> bool:
    """Whether a ``failed`` thread has work its run left undone: an open turn (calls not run
    or results not handed on), or tool results the model was never called with."""
    if t.turn is not None or t.results_unseen:
        return True
    if not t.message_count:
        return False
    snap = await store.load(t.thread_id, after_seq=t.message_count - 1)
    return snap is not None and bool(snap.messages) and snap.messages[-1].role == "tool"
