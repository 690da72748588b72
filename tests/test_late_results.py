"""A result this process holds but could not store before another process took the thread
over (its writes failed for longer than its lease) is stored when this process gets to the
thread again: the "outcome unknown" question the takeover asked is withdrawn, and the run
goes on with the real result.

Invariant 2: a known outcome is never left as "unknown" while the process that knows it can
still store it. Postgres, two stores (two processes' views: no spill directory is shared)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import PG_DSN, require_postgres
from interlock import (
    Agent,
    CallState,
    HumanInTheLoop,
    PostgresCheckpointer,
    ScriptedModel,
    StorageError,
    ToolMessage,
    tool,
)
from store_faults import CommitFails

pytestmark = pytest.mark.postgres


@pytest.fixture
def schema() -> Iterator[str]:
    require_postgres()
    import psycopg

    name = f"late_{uuid.uuid4().hex[:10]}"
    try:
        yield name
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.mark.parametrize("then", ["recover", "worker", "sweep"])
def test_a_result_kept_through_a_takeover_replaces_the_unknown(schema: str, then: str) -> None:
    ran: list[str] = []

    @tool
    def transfer(amount: int) -> str:
        """Move money."""
        ran.append(f"transfer {amount}")
        return f"moved {amount}"

    def reply(messages: Any) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"done: {messages[-1].content}"
        return {"name": "transfer", "args": {"amount": 5}, "id": "c1"}

    def agent(store: Any) -> Agent:
        return Agent(model=ScriptedModel(reply), tools=[transfer],
                     middleware=[HumanInTheLoop(interrupt_on={"transfer": True})],
                     checkpointer=store)

    # the commits storing a call's result fail before they reach the database while armed
    cut_off = CommitFails(PostgresCheckpointer(PG_DSN, schema=schema), lambda change: any(
        e.state in (CallState.SUCCEEDED, CallState.FAILED) for e in change.journal),
        lands=False)
    first = agent(cut_off)
    other = agent(PostgresCheckpointer(PG_DSN, schema=schema))
    try:
        first.invoke("pay", thread_id="t")
        with pytest.raises(StorageError):
            first.resume("t", [{"type": "approve"}])
        assert ran == ["transfer 5"] and first.keeps_unstored("t")
        # the other process takes the thread over: it cannot know the result
        other.recover_stale()
        (request,) = other.get_thread("t").interrupts
        assert request.value.action_requests[0].reason == "outcome_unknown"
        cut_off.armed = False  # the first process reaches the database again
        # its own recovery of the thread, the worker's path (its claimed run is tried
        # again), or its periodic recovery sweep (a server's)
        if then == "sweep":
            [result] = first.recover_stale()
        else:
            result = (first.recover("t") if then == "recover"
                      else asyncio.run(first.arun_queued("t")))
        assert result.status == "completed", result
        assert result.output == "done: moved 5" and result.interrupts == []
        assert ran == ["transfer 5"] and not first.keeps_unstored("t")
        [entry] = first.journal("t")
        assert entry.state == CallState.SUCCEEDED and entry.result is not None
        assert entry.result.content == "moved 5"
        late = [r for r in first.audit("t") if r.kind == "recovered" and r.tool_call_id == "c1"]
        assert [r.data.get("result_stored_late") for r in late] == [True]
        assert first.verify_audit("t").ok
    finally:
        first.close()
        other.close()
