"""A store wrapper for the two halves of one fault: a commit fails, either before the write
reaches the database (it does not land) or after the database took it (it lands, and the
answer is lost)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from interlock import CallState, StorageError


class CommitFails:
    """Wraps a store; its commits for which ``hit(change)`` holds raise ``StorageError``
    while ``armed`` (``once``: only the first of them). ``lands``: the write is stored first
    (a connection cut after the server took it); otherwise it never reaches the store (a
    connection cut before the write was sent)."""

    durable = True

    def __init__(self, inner: Any, hit: Callable[[Any], bool], *, lands: bool,
                 once: bool = False) -> None:
        self.inner = inner
        self.hit = hit
        self.lands = lands
        self.once = once
        self.armed = True

    async def commit(self, change: Any, *, expected_version: int | None) -> None:
        hit = self.armed and self.hit(change)
        if hit and self.once:
            self.armed = False
        if hit and not self.lands:
            raise StorageError("injected: the connection broke before the write was sent")
        await self.inner.commit(change, expected_version=expected_version)
        if hit:
            raise StorageError("injected: the answer to this write was lost")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class RunningWriteFails(CommitFails):
    """The commits that write a ``running`` call fail (see :class:`CommitFails`)."""

    def __init__(self, inner: Any, *, lands: bool) -> None:
        super().__init__(inner, lambda change: any(e.state == CallState.RUNNING
                                                   for e in change.journal), lands=lands)
