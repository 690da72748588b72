"""Checkpointers and the storage Protocol they share.

A third-party backend imports what it needs from here: the :class:`Checkpointer` Protocol,
the records it stores and the :class:`Commit` it applies, the conflict it raises, the
optional capabilities (:class:`RunQueue`, :class:`ChangeSignals`, :class:`SweepIndex`,
:class:`EventRelay`) and the helpers that derive a row's stored columns
(:func:`search_text`, :func:`review_deadline`, :func:`needs_sweep`, :func:`metadata_index`)
and the metadata filter's rule (:func:`metadata_contains`). The
conformance suite (``tests/test_storage_conformance.py``) says what it must do.
"""

from ..errors import VersionConflict
from .base import (
    CHANGE_SIGNALS,
    EVENT_RELAY,
    ROW_ONLY,
    RUN_QUEUE,
    SWEEP_INDEX,
    AuditRecord,
    CallState,
    ChangeCursor,
    ChangePage,
    ChangeSignals,
    Checkpointer,
    Commit,
    EventRelay,
    JournalEntry,
    ParentLink,
    QueuedRun,
    ReadKeys,
    RunQueue,
    SignalTopic,
    SweepIndex,
    ThreadRecord,
    ThreadSnapshot,
    capabilities,
    metadata_contains,
    metadata_index,
    needs_sweep,
    readers_of,
    refuse_enqueue,
    review_deadline,
    search_text,
)
from .memory import MemoryCheckpointer
from .sqlite import SqliteCheckpointer
from .urls import LISTEN_ENV, from_url

__all__ = [
    "CHANGE_SIGNALS",
    "EVENT_RELAY",
    "LISTEN_ENV",
    "ROW_ONLY",
    "RUN_QUEUE",
    "SWEEP_INDEX",
    "AuditRecord",
    "CallState",
    "ChangeCursor",
    "ChangePage",
    "ChangeSignals",
    "Checkpointer",
    "Commit",
    "EventRelay",
    "JournalEntry",
    "MemoryCheckpointer",
    "ParentLink",
    "QueuedRun",
    "ReadKeys",
    "RunQueue",
    "SignalTopic",
    "SqliteCheckpointer",
    "SweepIndex",
    "ThreadRecord",
    "ThreadSnapshot",
    "VersionConflict",
    "capabilities",
    "from_url",
    "metadata_contains",
    "metadata_index",
    "needs_sweep",
    "readers_of",
    "refuse_enqueue",
    "review_deadline",
    "search_text",
]
