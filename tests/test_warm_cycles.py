"""A process that continues a thread it already used reads only the new messages: warm cycles
stay flat however long the thread gets, and what the model sees is unchanged."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import StoreFactory
from interlock import Agent, Checkpointer, HumanInTheLoop, ScriptedModel, UserMessage, tool
from interlock.storage.base import ThreadSnapshot
from test_storage_conformance import CONVERSATION, create, run


class CountingStore:
    """A real checkpointer that counts the messages its loads return."""

    def __init__(self, inner: Checkpointer) -> None:
        self.inner = inner
        self.messages_read: list[int] = []

    async def load(self, thread_id: str, *, after_seq: int = 0) -> ThreadSnapshot | None:
        snap = await self.inner.load(thread_id, after_seq=after_seq)
        self.messages_read.append(len(snap.messages) if snap else 0)
        return snap

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_load_after_seq_returns_only_later_messages(stores: StoreFactory) -> None:
    store = stores()
    run(create(store, "t", messages=list(CONVERSATION)))
    full = run(store.load("t"))
    assert full is not None and full.messages == CONVERSATION
    for k in range(len(CONVERSATION) + 1):
        part = run(store.load("t", after_seq=k))
        assert part is not None
        assert part.messages == CONVERSATION[k:]
        assert part.thread == full.thread


def make_agent(store: Any, ran: list[str], cached: int = 256) -> Agent:
    @tool
    def write_file(path: str) -> str:
        """Write a file."""
        ran.append(path)
        return f"wrote {path}"

    def reply(messages: Any) -> Any:
        if isinstance(messages[-1], UserMessage):
            return {"name": "write_file", "args": {"path": f"f{len(messages)}"}}
        return f"done after {len(messages)} messages"

    return Agent(model=ScriptedModel(reply), tools=[write_file], checkpointer=store,
                 middleware=[HumanInTheLoop(interrupt_on={"write_file": True})],
                 cached_threads=cached)


def test_warm_cycles_read_only_new_messages(stores: StoreFactory) -> None:
    store = CountingStore(stores())
    ran: list[str] = []
    agent = make_agent(store, ran)

    async def go() -> None:
        for i in range(30):
            r = await agent.ainvoke(f"task {i}", thread_id="long")
            assert r.interrupted
            r = await agent.aresume("long", decisions=[{"type": "approve"}])
            assert r.output == f"done after {4 * i + 3} messages"
            assert len(r.messages) == 4 * (i + 1)

    run(go())
    assert len(ran) == 30
    # the first load found nothing; every later one at most the messages of one cycle
    assert max(store.messages_read[1:]) <= 4, store.messages_read


def test_two_processes_appending_to_one_thread_keep_one_transcript(
        stores: StoreFactory) -> None:
    """Agent A caches the thread, agent B (another process on the same store) advances it,
    then A continues: A reads B's messages and the transcript is the same as without a
    cache."""
    if not stores.durable:
        import pytest
        pytest.skip("two processes need a durable store")
    ran: list[str] = []
    a, b = make_agent(stores(), ran), make_agent(stores(), ran)
    plain = make_agent(stores(), [], cached=0)

    async def cycle(agent: Agent, i: int) -> None:
        assert (await agent.ainvoke(f"task {i}", thread_id="shared")).interrupted
        await agent.aresume("shared", decisions=[{"type": "approve"}])

    async def go() -> None:
        for i, agent in enumerate([a, a, b, a, b, b, a]):
            await cycle(agent, i)
        via_a = await a.aget_thread("shared")
        via_plain = await plain.aget_thread("shared")
        assert via_a.messages == via_plain.messages
        assert len(via_a.messages) == 28

    asyncio.run(go())
    assert ran == [f"f{4 * i + 1}" for i in range(7)]


def test_stored_messages_are_parsed_in_one_call_but_each_row_stays_one_message() -> None:
    """Loads parse a thread's message rows as one JSON array; a row that is not exactly one
    JSON value (two values, nothing) is an error, as it would be parsed on its own, and never
    turns into more or fewer messages."""
    import pydantic

    from interlock.messages import message_to_json, messages_from_json

    rows = [message_to_json(m) for m in CONVERSATION]
    assert messages_from_json(rows) == CONVERSATION
    assert messages_from_json([]) == []
    two_in_one = rows[1] + "," + rows[2]
    for bad in ([rows[0], two_in_one], [rows[0], ""], [rows[0], "[" + rows[1]]):
        try:
            got = messages_from_json(bad)
        except pydantic.ValidationError:
            continue
        raise AssertionError(f"{bad!r} was read as {got!r}")
