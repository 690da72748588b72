"""A store wrapper for the two halves of one fault: a commit that writes a ``running`` call
fails, either before the write reaches the database (it does not land) or after the database
took it (it lands, and the answer is lost)."""

from __future__ import annotations

from typing import Any

from interlock import CallState, StorageError


class RunningWriteFails:
    """Wraps a store; its commits that write a ``running`` call raise ``StorageError``.
    ``lands``: the write is stored first (a connection cut after the server took it);
    otherwise it never reaches the store (a connection cut before the write was sent)."""

    durable = True

    def __init__(self, inner: Any, *, lands: bool) -> None:
        self.inner = inner
        self.lands = lands

    async def commit(self, change: Any, *, expected_version: int | None) -> None:
        running = any(e.state == CallState.RUNNING for e in change.journal)
        if running and not self.lands:
            raise StorageError("injected: the connection broke before the write was sent")
        await self.inner.commit(change, expected_version=expected_version)
        if running:
            raise StorageError("injected: the answer to this write was lost")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
