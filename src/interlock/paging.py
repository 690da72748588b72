"""Keyset paging over threads: newest first by ``(updated_at, thread_id)``.

Threads are listed with a cursor made of both columns, so threads that share an
``updated_at`` (a bulk import, a coarse clock, one commit stamping many rows) are never skipped
or repeated at a page boundary. Every listing that walks more than one page — recovery of
stale threads, audit verification, the CLI and the HTTP API — goes through here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from .storage.base import ThreadRecord


@dataclass(frozen=True)
class Cursor:
    """Where the next (older) page starts: strictly after this thread in listing order."""

    updated_at: datetime
    thread_id: str

    @classmethod
    def after(cls, row: ThreadRecord) -> Cursor:
        return cls(row.updated_at, row.thread_id)


Lister = Callable[..., Awaitable[list[ThreadRecord]]]
"""``list_threads(status=..., limit=..., before=..., before_id=...)`` of a checkpointer."""


async def thread_page(
    list_threads: Lister, *, status: str | None, limit: int, cursor: Cursor | None,
    search: str | None = None,
) -> tuple[list[ThreadRecord], Cursor | None]:
    """One page of at most ``limit`` threads and the cursor of the next page (None: last)."""
    rows = await list_threads(
        status=status, limit=limit + 1,
        before=cursor.updated_at if cursor else None,
        before_id=cursor.thread_id if cursor else None,
        **({"search": search} if search else {}),
    )
    page = rows[:limit]
    return page, (Cursor.after(page[-1]) if len(rows) > limit and page else None)


async def iter_threads(
    list_threads: Lister, *, status: str | None = None, page: int = 200,
    stop: Callable[[ThreadRecord], bool] | None = None,
) -> AsyncIterator[ThreadRecord]:
    """Every thread (with ``status``), newest first, ``page`` rows per query; ends early at
    the first row for which ``stop`` is true."""
    cursor: Cursor | None = None
    while True:
        rows, cursor = await thread_page(list_threads, status=status, limit=page, cursor=cursor)
        for row in rows:
            if stop is not None and stop(row):
                return
            yield row
        if cursor is None:
            return
