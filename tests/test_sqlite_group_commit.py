"""SQLite group commit: changes committed at once by concurrent runs share one durable COMMIT,
each in a savepoint of its own, so a conflicting change fails alone and nothing is
acknowledged before it is durable."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from interlock import SqliteCheckpointer
from interlock.storage.base import VersionConflict
from test_storage_conformance import append, create, run


def test_concurrent_changes_share_commits_and_conflicts_fail_alone(tmp_path: Path) -> None:
    store = SqliteCheckpointer(tmp_path / "g.db")
    recs = [run(create(store, f"t{i}")) for i in range(40)]
    statements: list[str] = []
    store._connect().set_trace_callback(statements.append)  # white box: count COMMITs

    async def go() -> list[BaseException | None]:
        async def one(i: int) -> None:
            rec = recs[i]
            if i % 4 == 0:  # a stale version: must conflict without touching the others
                rec = rec.model_copy(update={"version": rec.version - 1})
            await append(store, rec, status="interrupted")

        out = await asyncio.gather(*(one(i) for i in range(40)), return_exceptions=True)
        return list(out)

    results = run(go())
    writes = statements.count("BEGIN IMMEDIATE")
    for i, res in enumerate(results):
        if i % 4 == 0:
            assert isinstance(res, VersionConflict), (i, res)
        else:
            assert res is None, (i, res)
    for i in range(40):
        snap = run(store.load(f"t{i}"))
        assert snap is not None
        assert (snap.thread.version, snap.thread.status) == (
            (1, "idle") if i % 4 == 0 else (2, "interrupted"))
    # 40 changes arrived at once: far fewer write transactions than changes
    assert 1 <= writes < 20, writes
    run(store.close())


def test_a_failing_batch_reports_every_change_and_stores_none(tmp_path: Path) -> None:
    store = SqliteCheckpointer(tmp_path / "g.db")
    recs = [run(create(store, f"t{i}")) for i in range(5)]
    conn = store._connect()
    conn.execute("PRAGMA query_only=ON")  # every write of the batch now fails

    async def go() -> list[BaseException | None]:
        return list(await asyncio.gather(*(append(store, r) for r in recs),
                                         return_exceptions=True))

    results = run(go())
    assert all(isinstance(r, Exception) for r in results), results
    conn.execute("PRAGMA query_only=OFF")
    for i in range(5):
        snap = run(store.load(f"t{i}"))
        assert snap is not None and snap.thread.version == 1
    run(append(store, recs[0]))  # the store is usable again
    snap = run(store.load("t0"))
    assert snap is not None and snap.thread.version == 2
    run(store.close())


@pytest.mark.parametrize("n", [1, 3])
def test_blocking_callers_in_threads_share_the_store(tmp_path: Path, n: int) -> None:
    """Callers of the blocking API commit from their own threads (inline, no worker): their
    changes are stored once each."""
    import threading

    store = SqliteCheckpointer(tmp_path / "g.db")
    recs = [run(create(store, f"t{i}")) for i in range(8)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            rec = recs[i]
            for _ in range(n):
                rec = run(append(store, rec))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(8):
        snap = run(store.load(f"t{i}"))
        assert snap is not None and snap.thread.version == 1 + n
    run(store.close())
