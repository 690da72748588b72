"""SQLite group commit: changes committed at once by concurrent runs share one durable COMMIT,
each in a savepoint of its own, so a conflicting change fails alone and nothing is
acknowledged before it is durable. A change committed alone is a transaction of its own
(no savepoint: its failure rolls the transaction back)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from interlock import SqliteCheckpointer, UserMessage
from interlock._sync import run_blocking
from interlock.errors import StorageError
from interlock.storage.base import ThreadRecord, VersionConflict
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


@pytest.mark.parametrize("caller", ["async", "blocking"])
def test_a_change_alone_that_fails_half_way_stores_nothing(tmp_path: Path, caller: str) -> None:
    """A change committed alone is its own transaction: one that fails after its thread row
    was written (its message's seq is taken) is rolled back whole, and reported; the store
    goes on."""
    store = SqliteCheckpointer(tmp_path / "g.db")
    rec = run(create(store, "t", messages=[UserMessage(content="first")]))
    # the change claims the message count of a thread with no messages: its message goes to
    # seq 0, which is taken, after the thread row's UPDATE succeeded
    stale = rec.model_copy(update={"message_count": 0})
    clash = append(store, stale, messages=[UserMessage(content="second")], status="running")
    with pytest.raises(StorageError):
        if caller == "async":
            run(clash)
        else:
            run_blocking(clash, "commit")
    snap = run(store.load("t"))
    assert snap is not None
    assert (snap.thread.version, snap.thread.status) == (1, rec.status)
    assert [m.content for m in snap.messages] == ["first"]
    assert run(store.audit(thread_id="t")) == []
    run(append(store, rec, messages=[UserMessage(content="second")]))
    snap = run(store.load("t"))
    assert snap is not None and snap.thread.version == 2
    assert [m.content for m in snap.messages] == ["first", "second"]
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


def test_changes_queued_while_a_batch_is_written_need_no_job_of_their_own(
        tmp_path: Path) -> None:
    """The worker thread stores queued changes until none is left: 60 changes made at once
    cost a few jobs of the worker (one per idle period), not one job each."""
    store = SqliteCheckpointer(tmp_path / "g.db")
    recs = [run(create(store, f"t{i}")) for i in range(60)]
    submit = store._executor.submit
    jobs: list[object] = []

    def counted(fn: object, *args: object) -> object:  # white box: count the worker's jobs
        jobs.append(fn)
        return submit(fn, *args)  # type: ignore[arg-type]

    store._executor.submit = counted  # type: ignore[method-assign]

    async def go() -> None:
        async def one(i: int) -> None:
            rec = recs[i]
            for _ in range(3):
                rec = await append(store, rec)

        await asyncio.gather(*(one(i) for i in range(60)))

    run(go())
    commits = [j for j in jobs if getattr(j, "__name__", "") == "_drain"]
    assert 1 <= len(commits) < 60, len(commits)
    for i in range(60):
        snap = run(store.load(f"t{i}"))
        assert snap is not None and snap.thread.version == 4
    run(store.close())


def test_a_cancelled_commit_is_stored_whole_or_not_at_all_and_the_store_goes_on(
        tmp_path: Path) -> None:
    store = SqliteCheckpointer(tmp_path / "g.db")
    recs = [run(create(store, f"t{i}")) for i in range(20)]

    async def go() -> None:
        tasks = [asyncio.ensure_future(append(store, r)) for r in recs]
        await asyncio.sleep(0)
        for t in tasks[::2]:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    run(go())
    for i in range(20):
        snap = run(store.load(f"t{i}"))
        assert snap is not None and snap.thread.version in (1, 2)
        if i % 2:
            assert snap.thread.version == 2
    # later commits are stored as usual (no drain left stuck by the cancellations)
    for i in range(20):
        snap = run(store.load(f"t{i}"))
        assert snap is not None
        run(asyncio.wait_for(append(store, snap.thread), 10))
        again = run(store.load(f"t{i}"))
        assert again is not None and again.thread.version == snap.thread.version + 1
    run(store.close())


def test_a_commit_to_a_closed_store_fails_at_once(tmp_path: Path) -> None:
    store = SqliteCheckpointer(tmp_path / "g.db")
    rec = run(create(store, "t0"))
    run(store.close())
    with pytest.raises(StorageError, match="closed"):
        run(asyncio.wait_for(append(store, rec), 10))


def test_a_blocking_callers_commit_returns_only_once_it_is_stored(tmp_path: Path) -> None:
    """Blocking callers store their changes in their own threads while the worker thread
    stores the async callers' changes: a blocking commit that returns is stored (the next
    load sees it), whichever of them took it from the queue."""
    store = SqliteCheckpointer(tmp_path / "g.db")
    blocking_recs = [run(create(store, f"b{i}")) for i in range(4)]
    async_recs = [run(create(store, f"a{i}")) for i in range(8)]
    errors: list[BaseException] = []

    def blocking(i: int) -> None:
        try:
            rec = blocking_recs[i]
            for _ in range(40):
                rec = run_blocking(append(store, rec), "test")
                snap = run_blocking(store.load(rec.thread_id), "test")
                assert snap is not None and snap.thread.version == rec.version
        except BaseException as exc:  # reported below
            errors.append(exc)

    async def async_side() -> None:
        async def one(rec: ThreadRecord) -> None:
            for _ in range(40):
                rec = await append(store, rec)

        await asyncio.gather(*(one(r) for r in async_recs))

    threads = [threading.Thread(target=blocking, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    run(async_side())
    for t in threads:
        t.join(60)
    assert errors == []
    for i in range(4):
        snap = run(store.load(f"b{i}"))
        assert snap is not None and snap.thread.version == 41
    run(store.close())
