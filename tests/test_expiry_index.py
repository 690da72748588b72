"""Expiry reads only what is due: the store's deadline index, not every paused thread."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from conftest import StoreFactory
from interlock import Agent, Checkpointer, HumanInTheLoop, InterruptOn, ScriptedModel, tool
from interlock.storage.base import ThreadSnapshot
from test_expiry import DEADLINE, Clock, _model_reply


def reply(messages: Any) -> Any:
    """``archive-...`` tasks call only ``archive`` (no deadline); others as in test_expiry."""
    first = _model_reply(messages)
    if isinstance(first, dict) and first["args"]["table"].startswith("archive"):
        return {"name": "archive", "args": first["args"]}
    return first


class CountingStore:
    """A real checkpointer that counts thread loads and listings."""

    def __init__(self, inner: Checkpointer) -> None:
        self.inner = inner
        self.loaded: list[str] = []
        self.listings = 0

    async def load(self, thread_id: str, *, after_seq: int = 0) -> ThreadSnapshot | None:
        self.loaded.append(thread_id)
        return await self.inner.load(thread_id, after_seq=after_seq)

    async def list_threads(self, **kw: Any) -> Any:
        self.listings += 1
        return await self.inner.list_threads(**kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_expire_due_loads_only_the_due_threads(stores: StoreFactory) -> None:
    ran: list[str] = []

    @tool
    def purge(table: str) -> str:
        """Delete every row of a table."""
        ran.append(table)
        return f"purged {table}"

    @tool
    def archive(table: str) -> str:
        """Archive a table."""
        ran.append(table)
        return f"archived {table}"

    clock = Clock()
    store = CountingStore(stores())
    agent = Agent(model=ScriptedModel(reply), tools=[purge, archive], clock=clock,
                  middleware=[HumanInTheLoop(interrupt_on={
                      "purge": InterruptOn(allowed_decisions=["approve", "reject"],
                                           expires_after=DEADLINE),
                      "archive": True})],
                  checkpointer=store)  # type: ignore[arg-type]

    async def go() -> None:
        for i in range(60):  # no deadline: never loaded by expiry
            await agent.ainvoke(f"archive-{i}", thread_id=f"nodl-{i}")
        for i in range(3):
            await agent.ainvoke(f"t{i}", thread_id=f"dl-{i}")
        clock.advance(DEADLINE / 2)
        for i in range(2):  # deadline later than the sweep
            await agent.ainvoke(f"u{i}", thread_id=f"later-{i}")
        clock.advance(DEADLINE / 2 + timedelta(seconds=1))
        store.loaded.clear()
        results = await agent.aexpire_due()
        assert sorted(r.thread_id for r in results) == ["dl-0", "dl-1", "dl-2"]
        assert sorted(set(store.loaded)) == ["dl-0", "dl-1", "dl-2"]
        assert store.listings == 0
        store.loaded.clear()
        assert await agent.aexpire_due() == []  # nothing due any more: nothing loaded
        assert store.loaded == []
        # the threads without a deadline still wait
        assert (await agent.aget_thread("nodl-0")).status == "interrupted"

    asyncio.run(go())
    assert ran == []
