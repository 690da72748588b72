"""What the steps read off a thread's loaded snapshot (``txn.snapshot``): the open turn's
message, the call ids proposed so far, and the run's result as it stands. Functions over
the snapshot, so that :class:`~interlock._engine.txn.ThreadTxn` itself only loads, stages,
commits, holds the lease and maps conflicts."""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from ..messages import AssistantMessage, tool_call_ids
from ..result import RunResult, result_of
from ..storage.base import ThreadSnapshot
from .snapshots import SnapshotCache
from .texts import public_interrupt


def turn_message(snap: ThreadSnapshot) -> AssistantMessage:
    """The model's message whose calls the open turn runs."""
    assert snap.thread.turn is not None
    msg = snap.messages[snap.thread.turn]
    assert isinstance(msg, AssistantMessage)
    return msg


def call_ids(snap: ThreadSnapshot, cache: SnapshotCache | None) -> AbstractSet[str]:
    """The ids of every tool call proposed in the thread's messages so far. Read from the
    snapshot cache for the messages it holds, so a long thread costs only its new ones."""
    messages = snap.messages
    known, n = (cache.call_ids(snap.thread, messages) if cache is not None
                else (frozenset(), 0))
    rest = tool_call_ids(messages[n:]) if n < len(messages) else set()
    return known | rest if rest else known


def run_result(snap: ThreadSnapshot) -> RunResult:
    """How the run stands after its last commit (:func:`interlock.result.result_of`)."""
    t = snap.thread
    # an open turn without requests: its sub-agents are being advanced elsewhere
    return result_of(t.thread_id, snap.messages, [public_interrupt(i) for i in t.pending],
                     waiting=t.turn is not None and t.status == "running"
                     and not t.lease_owner, completed=t.status == "completed")
