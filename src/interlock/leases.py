"""Who is advancing a thread right now, and whether that process is still alive.

While a run advances a thread, the thread row carries ``lease_owner`` ("host|pid|nonce") and
``lease_until``. Another process may take the thread over (and recover it) once the lease has
expired or, on the same host, as soon as the owning process is gone.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime

HOST = socket.gethostname()
_NONCE = uuid.uuid4().hex[:12]
ACTIVE: set[str] = set()
"""Thread ids this process is advancing right now."""


def process_owner() -> str:
    return f"{HOST}|{os.getpid()}|{_NONCE}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_alive(owner: str, lease_until: datetime | None, now: datetime, thread_id: str) -> bool:
    """True when ``owner`` may still be working on the thread."""
    host, _, rest = owner.partition("|")
    pid_s, _, nonce = rest.partition("|")
    if host == HOST and pid_s.isdigit():
        pid = int(pid_s)
        if pid == os.getpid():
            # this very process: alive only if a run is active here (a failed run's leftover
            # lease is stale)
            return nonce == _NONCE and thread_id in ACTIVE
        if not _pid_alive(pid):
            return False
    return lease_until is not None and lease_until > now

