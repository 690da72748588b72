"""A known outcome is never turned into "outcome unknown" (issue 31).

* The lease renewal that runs while a tool runs is cancelled when the tool ends; a renewal
  whose write was already under way lands all the same, and the run's own result write must
  not then be refused as "another writer" (finding 5).
* An ``asyncio.wait_for`` timeout that cancels a run while its ``running`` step is being
  written leaves a call whose tool never started: it is still approved, never "unknown".
  So does a run that ends while its event sink takes ``ToolStarted`` (cancelled, or the sink
  raised): ``running`` is stored, but the tool was never called.

Each case is run many times with the tool ending (or the timeout firing) at a spread of
moments around the race; the side-effect counter is the tool's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from collections.abc import Callable, Coroutine
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from conftest import StoreFactory, require_postgres
from interlock import (
    Agent,
    HumanInTheLoop,
    ScriptedModel,
    ToolMessage,
    ToolStarted,
    UserMessage,
    tool,
)
from interlock.storage.base import CallState

T = TypeVar("T")

RAN: Counter[str] = Counter()
STARTED: Counter[str] = Counter()
PAUSE: dict[str, float] = {}


@tool
async def slow_write(key: str) -> str:
    """Write a record (takes a while)."""
    STARTED[key] += 1
    await asyncio.sleep(PAUSE.get(key, 0.0))
    RAN[key] += 1
    return f"wrote {key}"


def script(messages: Any) -> Any:
    user = next(m for m in messages if isinstance(m, UserMessage))
    if any(isinstance(m, ToolMessage) for m in messages):
        return "done"
    return {"name": "slow_write", "args": {"key": user.content}}


def agent_on(store: Any, *, lease: timedelta, gated: bool) -> Agent:
    return Agent(model=ScriptedModel(script), tools=[slow_write], checkpointer=store,
                 middleware=[HumanInTheLoop({"slow_write": gated})], lease=lease)


def stores(kind: str, tmp_path: Path) -> StoreFactory:
    if kind == "postgres":
        require_postgres()
    return StoreFactory(kind, tmp_path)


def run_counted(main: Callable[[], Coroutine[Any, Any, T]], pg: StoreFactory) -> T:
    """``main()`` with the tools' counters at zero; the stores are removed afterwards."""
    RAN.clear()
    STARTED.clear()
    try:
        return asyncio.run(main())
    finally:
        pg.cleanup()


async def unknown_calls(agent: Agent, thread_id: str) -> list[str]:
    return [e.tool_call_id for e in await agent.ajournal(thread_id)
            if e.state == CallState.UNKNOWN or (
                e.review is not None and e.review.reason == "outcome_unknown")]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_renewal_under_way_when_the_tool_ends_never_refuses_the_result(
        kind: str, tmp_path: Path) -> None:
    """The tool ends a few ms after a renewal started (its period is a third of the lease)."""
    pg = stores(kind, tmp_path)
    lease = timedelta(milliseconds=150)
    agent = agent_on(pg(), lease=lease, gated=False)
    period = lease.total_seconds() / 3
    rng = random.Random(31)
    runs = 40

    async def main() -> list[str]:
        bad = []
        for n in range(runs):
            key = f"r{n}"
            PAUSE[key] = period + rng.uniform(0.0, 0.012)
            result = await agent.ainvoke(key, thread_id=key)
            if result.status != "completed" or RAN[key] != 1 or \
                    await unknown_calls(agent, key):
                bad.append(f"{key}: {result.status}, ran {RAN[key]}")
        return bad

    assert run_counted(main, pg) == []


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_timeout_while_running_is_stored_never_makes_an_unstarted_tool_unknown(
        kind: str, tmp_path: Path) -> None:
    """``wait_for`` cancels the approving resume at moments spread over its first writes;
    afterwards the thread is recovered: a tool that did not start (its function was never
    entered) is run once, never asked about as "outcome unknown". A tool that was entered and
    then cancelled at its first ``await`` did start: its outcome is honestly unknown."""
    pg = stores(kind, tmp_path)
    agent = agent_on(pg(), lease=timedelta(seconds=30), gated=True)
    rng = random.Random(5)
    runs = 40

    async def main() -> list[str]:
        bad = []
        for n in range(runs):
            key = f"w{n}"
            paused = await agent.ainvoke(key, thread_id=key)
            assert paused.status == "interrupted"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(agent.aresume(
                    key, [{"type": "approve"}], interrupt_id=paused.interrupts[0].id),
                    timeout=rng.uniform(0.0, 0.008))
            unknown = await unknown_calls(agent, key)
            if unknown and STARTED[key] == 0:
                bad.append(f"{key}: outcome unknown, but the tool never started")
            result = await agent.arecover(key)
            if result.status == "interrupted":
                if await unknown_calls(agent, key):
                    if STARTED[key] == 0:
                        bad.append(f"{key}: asked about as unknown after recovery, never ran")
                    continue
                # the timeout came before the decision was stored: it is asked for again
                result = await agent.aresume(key, [{"type": "approve"}],
                                             interrupt_id=result.interrupts[0].id)
            if result.status != "completed" or RAN[key] != 1:
                bad.append(f"{key}: {result.status}, ran {RAN[key]} times")
        return bad

    assert run_counted(main, pg) == []


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.parametrize("how", ["cancelled", "raises"])
def test_a_run_that_ends_while_its_sink_takes_tool_started_leaves_the_call_approved(
        kind: str, how: str, tmp_path: Path) -> None:
    """``running`` is stored, then the run's event sink raises (or the run is cancelled while
    the sink takes ``ToolStarted``): the tool was never called, so the call is stored as
    approved, never as "outcome unknown", and recovering the thread runs it exactly once."""
    pg = stores(kind, tmp_path)
    agent = agent_on(pg(), lease=timedelta(seconds=30), gated=True)

    class SinkFailed(Exception):
        pass

    async def on_event(event: Any) -> None:
        if isinstance(event, ToolStarted):
            if how == "raises":
                raise SinkFailed("the client's event handler failed")
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            await asyncio.sleep(0)  # the cancellation lands here

    async def main() -> None:
        key = f"s-{how}"
        paused = await agent.ainvoke(key, thread_id=key)
        assert paused.status == "interrupted"
        with pytest.raises(asyncio.CancelledError if how == "cancelled" else SinkFailed):
            await asyncio.create_task(agent.aresume(
                key, [{"type": "approve"}], interrupt_id=paused.interrupts[0].id,
                on_event=on_event))
        assert STARTED[key] == 0
        states = [e.state for e in await agent.ajournal(key)]
        assert states == [CallState.APPROVED], states
        assert await unknown_calls(agent, key) == []
        result = await agent.arecover(key)
        assert result.status == "completed", result
        assert (STARTED[key], RAN[key]) == (1, 1)
        assert await unknown_calls(agent, key) == []

    run_counted(main, pg)
