"""How one reviewed call was settled: who decided, what, and when.

A reviewer who could decide a call may read this even when the thread itself is no longer
readable to them (:func:`interlock.authz.check_outcome`): someone who lost a race learns who
won it and what runs, instead of an access error."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from .storage.base import JournalEntry


class CallOutcome(BaseModel):
    thread_id: str
    tool_call_id: str
    name: str
    """The tool the model proposed."""
    state: str
    """The call's state now (``pending``, ``approved``, ``rejected``, ``done``, ...)."""
    decision: str | None = None
    """``approve``, ``edit``, ``reject`` or ``respond``; ``None`` while nobody decided."""
    message: str | None = None
    """The reject reason or the response, if any."""
    decided_by: str | None = None
    decided_at: datetime | None = None
    runs: dict[str, Any] | None = None
    """``{"name": ..., "args": ...}`` of what runs, when an edit changed the call."""

    @classmethod
    def of(cls, thread_id: str, e: JournalEntry) -> CallOutcome:
        d = e.decision
        edited = e.exec_name is not None or e.exec_args is not None
        return cls(
            thread_id=thread_id, tool_call_id=e.tool_call_id, name=e.name, state=str(e.state),
            decision=d.type if d else None, message=d.message if d else None,
            decided_by=e.decided_by if d else None, decided_at=e.updated_at if d else None,
            runs={"name": e.exec_name or e.name,
                  "args": e.exec_args if e.exec_args is not None else e.args}
            if edited else None)
