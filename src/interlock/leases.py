"""Who is advancing a thread right now, and whether that process is still alive.

While a run advances a thread, the thread row carries ``lease_owner`` ("host|pid|nonce") and
``lease_until``. The lease is renewed at every commit and, while a tool runs or the model
answers, every third of its length. Another process may take the thread over (and recover
it) once the lease has expired or, on the same host, as soon as the owning process is gone.
A process knows its own runs exactly (:func:`local_run`): a thread it owns on paper but no
longer advances (the run failed and even its "failed" commit could not be stored) is
recovered by it at once.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

QUEUED = "queued"
"""``lease_owner`` of a thread whose run waits on the run queue for a worker process (``interlock
worker``): busy for everyone but the worker that claims it from the queue."""

HOST = socket.gethostname()
_NONCE = uuid.uuid4().hex[:12]
_local: dict[str, int] = {}
"""Thread id -> number of runs (or tools still finishing) of this process on it."""
_lock = threading.Lock()


def process_owner() -> str:
    return f"{HOST}|{os.getpid()}|{_NONCE}"


@contextmanager
def local_run(thread_id: str) -> Iterator[None]:
    """Mark ``thread_id`` as advanced by this process for the duration of the block."""
    with _lock:
        _local[thread_id] = _local.get(thread_id, 0) + 1
    try:
        yield
    finally:
        with _lock:
            left = _local[thread_id] - 1
            if left:
                _local[thread_id] = left
            else:
                del _local[thread_id]


def running_here(thread_id: str, *, besides: int = 0) -> bool:
    """Whether a run of this process advances ``thread_id`` — other than the ``besides`` runs
    asking (a run that loads its thread is registered itself)."""
    return _local.get(thread_id, 0) > besides


def is_this_process(owner: str) -> bool:
    return owner == process_owner()


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs. A process that exited but that its parent
    has not reaped yet (a zombie: a container whose first process reaps nothing) still
    answers a signal; on Linux its state says it is gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:  # not Linux, or gone meanwhile: the signal's answer stands
        return True
    state = stat[stat.rfind(b")") + 2:][:1]  # the field after "(command)"
    return state not in (b"Z", b"X")


def owner_alive(owner: str, lease_until: datetime | None, now: datetime, thread_id: str, *,
                asking_run: bool = False) -> bool:
    """True when ``owner`` may still be working on the thread. ``asking_run``: the caller is
    itself a run of this process registered on the thread (it does not count)."""
    if owner == QUEUED:
        return True
    host, _, rest = owner.partition("|")
    pid_s, _, nonce = rest.partition("|")
    if host == HOST and pid_s.isdigit():
        pid = int(pid_s)
        if pid == os.getpid():
            # this very process: alive only while a run here advances the thread (the lease
            # left behind by a run that ended without storing its end is stale)
            return nonce == _NONCE and running_here(thread_id, besides=int(asking_run))
        if not _pid_alive(pid):
            return False
    return lease_until is not None and lease_until > now
