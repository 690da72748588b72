"""A claimed run whose first write fails (issue 31, finding 1): the queued run is never
orphaned. The fault is Postgres's own: a trigger in the test schema refuses the first update of
the thread row while it is still owned by the run queue, as a connection cut or a failover
would. The claim goes back to the queue, the next claim runs the approved call once, and
``recover`` can move a thread that is queued but held by nobody."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PG_DSN, StoreFactory, require_postgres
from interlock.worker import STORE_RETRIES, Worker
from server.server_agents import EXECUTED, make_agent

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg(tmp_path: Path) -> Iterator[StoreFactory]:
    require_postgres()
    factory = StoreFactory("postgres", tmp_path)
    asyncio.run(factory().list_threads(limit=1))  # the schema exists
    try:
        yield factory
    finally:
        factory.cleanup()


def fail_claimed_writes(pg: StoreFactory, times: int) -> None:
    """The next ``times`` updates of a thread row still owned by the run queue fail (counted
    by a sequence: its steps survive the failed transaction)."""
    import psycopg

    s = pg.pg_schema
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"DROP SEQUENCE IF EXISTS {s}.fault_seq")
        conn.execute(f"CREATE SEQUENCE {s}.fault_seq")
        conn.execute(f"""
            CREATE OR REPLACE FUNCTION {s}.fail_claimed() RETURNS trigger AS $$
            BEGIN
              IF OLD.data LIKE '%"lease_owner":"queued"%'
                 AND nextval('{s}.fault_seq') <= {times} THEN
                RAISE EXCEPTION 'injected fault: the write of a claimed run failed';
              END IF;
              RETURN NEW;
            END $$ LANGUAGE plpgsql""")
        conn.execute(f"DROP TRIGGER IF EXISTS fail_claimed ON {s}.interlock_threads")
        conn.execute(f"CREATE TRIGGER fail_claimed BEFORE UPDATE ON {s}.interlock_threads "
                     f"FOR EACH ROW EXECUTE FUNCTION {s}.fail_claimed()")
    faults[s] = times


faults: dict[str, int] = {}


def faults_left(pg: StoreFactory) -> int:
    import psycopg

    s = pg.pg_schema
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        row = conn.execute(f"SELECT last_value, is_called FROM {s}.fault_seq").fetchone()
    assert row is not None
    used = int(row[0]) if row[1] else 0
    return max(faults[s] - used, 0)


async def approved_and_queued(api: object, worker: Worker, thread_id: str) -> None:
    from interlock import Agent

    assert isinstance(api, Agent)
    await api.ainvoke("sql DELETE FROM carts", thread_id=thread_id, handoff=True)
    assert await worker.run_once() == 1
    paused = await api.aget_thread(thread_id)
    assert paused.status == "interrupted"
    queued = await api.aresume(thread_id, [{"type": "approve"}],
                               interrupt_id=paused.interrupts[0].id, handoff=True)
    assert queued.status == "queued"


async def drain(worker: Worker, api: object, thread_id: str) -> str:
    """Let the worker claim until the thread settles (bounded); its final status."""
    from interlock import Agent

    assert isinstance(api, Agent)
    for _ in range(200):
        await worker.run_once()
        state = await api.aget_thread(thread_id)
        if state.status in ("completed", "interrupted"):
            return state.status
        await asyncio.sleep(0.05)
    return (await api.aget_thread(thread_id)).status


def test_a_claim_whose_first_write_fails_goes_back_to_the_queue(pg: StoreFactory) -> None:
    api, runner = make_agent(pg()), make_agent(pg())
    worker = Worker(runner, poll_interval=0.05)

    async def main() -> None:
        EXECUTED.clear()
        await approved_and_queued(api, worker, "c1")
        # every try of the claimed run fails: its first write and the write of its failure
        fail_claimed_writes(pg, 2 * STORE_RETRIES)
        assert await worker.run_once() == 1  # claimed; tried STORE_RETRIES times
        assert faults_left(pg) == 0
        assert EXECUTED == []
        # the entry is still there for the next claim (before: deleted, the thread stuck
        # "running" for the queue with nobody to run it)
        entries = await runner.checkpointer.queue_list()  # type: ignore[attr-defined]
        assert [e.thread_id for e in entries] == ["c1"]
        assert await drain(worker, api, "c1") == "completed"
        assert EXECUTED == [("execute_sql", {"query": "DELETE FROM carts"})]
        assert await runner.checkpointer.queue_list() == []  # type: ignore[attr-defined]

    asyncio.run(main())


def test_a_run_that_fails_before_recording_its_claim_is_not_stuck(pg: StoreFactory) -> None:
    """Both the first write and the write of the failure fail: the entry goes back."""
    api, runner = make_agent(pg()), make_agent(pg())
    worker = Worker(runner, poll_interval=0.05)

    async def main() -> None:
        EXECUTED.clear()
        await approved_and_queued(api, worker, "c2")
        fail_claimed_writes(pg, 3 * STORE_RETRIES)
        for _ in range(50):
            await worker.run_once()
            if faults_left(pg) == 0:
                break
            await asyncio.sleep(0.05)
        assert faults_left(pg) == 0
        assert await drain(worker, api, "c2") == "completed"
        assert EXECUTED == [("execute_sql", {"query": "DELETE FROM carts"})]

    asyncio.run(main())


def test_recover_moves_a_queued_thread_nobody_holds(pg: StoreFactory) -> None:
    """A thread left queued without a queue entry (as the old worker left it after a failed
    write) is continued by ``recover`` (it used to refuse: the thread is busy)."""
    import psycopg

    api, runner = make_agent(pg()), make_agent(pg())
    worker = Worker(runner, poll_interval=0.05)

    async def main() -> None:
        EXECUTED.clear()
        await approved_and_queued(api, worker, "c3")
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DELETE FROM {pg.pg_schema}.interlock_queue")
        result = await runner.arecover("c3")
        assert result.status == "completed"
        assert EXECUTED == [("execute_sql", {"query": "DELETE FROM carts"})]

    asyncio.run(main())


@pytest.mark.parametrize("how", ["claim-ran-out", "queued-again"])
def test_a_claim_taken_again_while_its_run_goes_on_leaves_no_run_behind(
        pg: StoreFactory, how: str) -> None:
    """While a claimed run keeps failing on the store, its entry is claimed again by the same
    worker: its claim ran out (the renewals failed too), or the thread was queued again (a new
    ticket). The worker keeps one run per thread going: the newer entry waits for the run
    going on. When it stops, no run of it is left going (the store is closed only after); a
    later worker finishes the thread and the approved call runs once (invariant 2: the entry
    always has a mover)."""
    import psycopg

    api, runner = make_agent(pg()), make_agent(pg())
    worker = Worker(runner, poll_interval=0.2, shutdown_grace=0.5)
    s = pg.pg_schema

    def entry() -> tuple[int, int] | None:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            row = conn.execute(f"SELECT ticket, attempts FROM {s}.interlock_queue "
                               "WHERE thread_id = 'c4'").fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    def runs() -> list[str]:
        return [t.get_name() for t in asyncio.all_tasks()
                if t.get_name().startswith("interlock-worker-run:")]

    async def until(check: object, what: str) -> None:
        for _ in range(200):
            if callable(check) and check():
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"timed out waiting until {what}")

    async def main() -> None:
        EXECUTED.clear()
        await approved_and_queued(api, worker, "c4")
        fail_claimed_writes(pg, 10 * STORE_RETRIES)  # the run keeps failing past the stop
        stop = asyncio.Event()
        working = asyncio.create_task(worker.run(stop))
        await until(lambda: faults_left(pg) < 10 * STORE_RETRIES,
                    "the run's first write failed")
        first = entry()
        assert first is not None and first[1] == 1
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            if how == "claim-ran-out":  # while the run waits to try again
                conn.execute(f"UPDATE {s}.interlock_queue SET lease_until = now() - "
                             "interval '1 s' WHERE thread_id = 'c4'")
            else:  # as a commit with enqueue=True does: a new ticket, the claim dropped
                conn.execute(f"UPDATE {s}.interlock_queue SET ticket = "
                             f"nextval('{s}.interlock_queue_ticket_seq'), attempts = 0, "
                             "lease_owner = NULL, lease_until = NULL WHERE thread_id = 'c4'")
        await until(lambda: (e := entry()) is not None and e[1] == 1 + (how == "claim-ran-out")
                    and (e[0] == first[0]) == (how == "claim-ran-out"),
                    "the worker claimed the entry again")
        if how == "claim-ran-out":
            assert runs() == ["interlock-worker-run:c4"]  # still one run of the thread
        stop.set()
        await asyncio.wait_for(working, 60)
        assert runs() == []
        # a later worker finishes the run: the call runs once
        assert await drain(Worker(runner, poll_interval=0.05), api, "c4") == "completed"
        assert EXECUTED == [("execute_sql", {"query": "DELETE FROM carts"})]

    asyncio.run(main())
