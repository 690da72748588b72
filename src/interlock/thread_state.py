"""``ThreadState``: a thread as :meth:`interlock.Agent.get_thread` returns it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .interrupts import Interrupt
from .messages import Message
from .storage.base import JournalEntry, ParentLink, RememberedApproval


@dataclass(frozen=True)
class ThreadState:
    """A thread as stored: status, messages, pending interrupts, the open turn's journal."""

    thread_id: str
    status: str
    version: int
    messages: list[Message]
    interrupts: list[Interrupt]
    remembered: list[RememberedApproval]
    journal: list[JournalEntry]
    created_at: datetime
    updated_at: datetime
    error: str | None = None
    preview: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    created_by: str | None = None
    """Who created the thread (``None``: the application); see :mod:`interlock.authz`."""
    parent: ParentLink | None = None
    """For a sub-agent's thread (``Agent.as_tool``): the parent call it runs for."""
