"""What each reviewer was last shown of each thread's pending requests, per server process.

A response sent without an interrupt id (the Agent Inbox and Agent Chat UI cannot send one;
``POST /api/threads/{id}/decisions`` without ``interrupt_id``) decides the calls pending *now*
by their position. If the thread moved on to a new request after its sender read it, that
would approve a call the sender never saw. Every response that shows a thread's pending
requests (thread reads, lists and searches, run results, stream events) records here which
calls it showed to whom; :func:`interlock.decisions.check_shown` then refuses an unkeyed
response that would decide a call missing from its sender's latest record.

The record is kept in memory, bounded (least recently used first out). A sender with no entry
(never read the thread through this process, or the process restarted) is not checked, so a
client that never reads works as before. With several server processes the record is per
process: clients behind a load balancer should key their answers by interrupt id.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from ..authz import reviewer_key
from ..decisions import shown_key, shown_keys
from ..interrupts import Interrupt
from ..review_request import read_request

KEEP_SHOWN = 100_000
"""How many (reviewer, thread) entries a process keeps."""


class ShownRecord:
    """(reviewer, thread) -> the pending calls (:func:`~interlock.decisions.shown_key`) of
    the latest response to that reviewer that showed any of the thread's pending calls."""

    def __init__(self, keep: int = KEEP_SHOWN) -> None:
        self.keep = keep
        self._seen: OrderedDict[tuple[str, str], frozenset[str]] = OrderedDict()

    def get(self, who: str, thread_id: str) -> frozenset[str] | None:
        """What ``who`` was last shown of ``thread_id``'s pending calls (None: not known)."""
        return self._seen.get((reviewer_key(who), thread_id))

    def note(self, who: str, thread_id: str, interrupts: Iterable[Interrupt]) -> None:
        """A response to ``who`` shows ``interrupts`` as ``thread_id``'s pending requests."""
        self.note_keys(who, thread_id, shown_keys(interrupts))

    def note_keys(self, who: str, thread_id: str, keys: frozenset[str], *,
                  add: bool = False) -> None:
        """A response to ``who`` shows the calls ``keys`` of ``thread_id`` (``add``: besides
        those shown before, e.g. an event announcing one new request). A response that shows
        no pending call changes nothing."""
        if not keys:
            return
        key = (reviewer_key(who), thread_id)
        if add:
            keys = keys | self._seen.get(key, frozenset())
        self._seen[key] = keys
        self._seen.move_to_end(key)
        while len(self._seen) > self.keep:
            self._seen.popitem(last=False)

    def note_event(self, who: str, data: Mapping[str, Any]) -> None:
        """An SSE event of ``/api`` sent to ``who``: ``interrupt_raised`` shows one new request
        of its thread; the events carrying a thread's summary show all its pending ones."""
        intr = data.get("interrupt")
        if isinstance(intr, Mapping) and isinstance(data.get("thread_id"), str):
            self.note_keys(who, data["thread_id"], _keys_of_interrupt(intr), add=True)
            return
        thread = data.get("thread")
        if isinstance(thread, Mapping) and isinstance(thread.get("thread_id"), str):
            keys = frozenset(
                shown_key(str(p.get("interrupt_id")), str(c.get("tool_call_id")))
                for p in thread.get("pending") or [] if isinstance(p, Mapping)
                for c in p.get("calls") or [] if isinstance(c, Mapping))
            self.note_keys(who, thread["thread_id"], keys)


def _keys_of_interrupt(intr: Mapping[str, Any]) -> frozenset[str]:
    """The calls of one interrupt in its JSON form (a review request's ``action_requests``)."""
    if intr.get("kind") != "review" or not isinstance(intr.get("value"), Mapping):
        return frozenset()
    try:
        calls = read_request(intr["value"]).action_requests
    except ValueError:  # not a review request this version can read: it shows no call
        return frozenset()
    return frozenset(shown_key(str(intr.get("id")), a.tool_call_id) for a in calls)
