"""Thread and run metadata that cannot be stored is refused on the LangGraph API, and nothing
is kept. ``POST /langgraph/threads`` with a lone surrogate in its metadata used to keep the
thread in the server's memory: from then on thread search answered 500 for its creator and
every admin (the Agent Inbox of all admins broke) until a restart, and the thread's runs 503.

Every metadata a LangGraph route keeps (a thread's at creation, a run's) holds no NUL, lone
surrogate, NaN or infinity: 422 ``InvalidText`` naming the field, nothing kept; the same for
``Agent.invoke(metadata=...)``. (The real ``langgraph-sdk`` client cannot send a lone
surrogate or NaN, its JSON encoder refuses or nulls them; ``test_langgraph_clients.py`` sends
NUL with it.)"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import StoreFactory
from interlock import InvalidText

from .conftest import ADMIN, ALICE, TOKENS, bearer, running
from .server_agents import EXECUTED, make_agent

pytestmark = pytest.mark.anyio

RUN = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}


def _raw(body: dict[str, Any]) -> bytes:
    """The body as JSON with \\u escapes, as any JSON client may send it."""
    return json.dumps(body).encode()


BAD_METADATA = [
    (_raw({"x": "\ud800"}), "metadata.x", "lone surrogate"),
    (_raw({"\udfff": 1}), "a key of metadata", "lone surrogate"),
    (_raw({"x": {"y": ["a\x00b"]}}), "metadata.x.y[0]", "NUL character"),
    (b'{"x": NaN}', "metadata.x", "NaN"),
    (b'{"x": [1e400]}', "metadata.x[0]", "Infinity"),
]


async def test_unstorable_metadata_is_refused_and_nothing_is_kept(
        store_factory: StoreFactory) -> None:
    agent = make_agent(store_factory())
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c = s.client
        headers = {**bearer(ALICE), "Content-Type": "application/json"}
        r = await c.post("/langgraph/threads", headers=headers, json={"thread_id": "kept"})
        assert r.status_code == 200, r.text
        r = await c.post("/langgraph/threads/kept/runs/wait", headers=headers, json=RUN)
        assert r.status_code == 200, r.text
        runs_before = (await c.get("/langgraph/threads/kept/runs", headers=headers)).json()
        for metadata, where, what in BAD_METADATA:
            for tid in ("fresh", None):
                body = b'{"metadata": %s%s}' % (
                    metadata, b', "thread_id": "fresh"' if tid else b"")
                r = await c.post("/langgraph/threads", headers=headers, content=body)
                assert r.status_code == 422, (body, r.text)
                assert r.json()["error"] == "InvalidText", r.text
                assert where in r.json()["message"] and what in r.json()["message"], r.text
            assert (await c.get("/langgraph/threads/fresh", headers=headers)).status_code == 404
            # a run's metadata: on a thread that exists, on a new one, stateless
            for url in ("/langgraph/threads/kept/runs/wait", "/langgraph/threads/kept/runs",
                        "/langgraph/threads/new1/runs/wait", "/langgraph/runs/wait"):
                run = json.dumps({**RUN, "if_not_exists": "create"}).encode()[:-1]
                r = await c.post(url, headers=headers,
                                 content=run + b', "metadata": %s}' % metadata)
                assert r.status_code == 422, (url, r.text)
                assert r.json()["error"] == "InvalidText", r.text
                assert where in r.json()["message"], r.text
            assert (await c.get("/langgraph/threads/new1", headers=headers)).status_code == 404
        assert (await c.get("/langgraph/threads/kept/runs", headers=headers)).json() \
            == runs_before
        # search works for the creator and for an admin; only the good thread is there
        for token in (ALICE, ADMIN):
            r = await c.post("/langgraph/threads/search", headers=bearer(token), json={})
            assert r.status_code == 200, r.text
            assert [t["thread_id"] for t in r.json()] == ["kept"]
            r = await c.post("/langgraph/threads/search", headers=bearer(token),
                             json={"status": "idle"})
            assert r.status_code == 200, r.text
        assert [e["name"] for e in EXECUTED] == []
        stored = await agent.alist_threads()
        assert [t.thread_id for t in stored] == ["kept"]


async def test_the_library_refuses_unstorable_thread_metadata(
        store_factory: StoreFactory) -> None:
    agent = make_agent(store_factory())
    for metadata in ({"x": "\ud800"}, {"x": "a\x00b"}, {"n": float("nan")},
                     {"n": [float("-inf")]}):
        with pytest.raises(InvalidText) as err:
            await agent.ainvoke("hi", thread_id="t", metadata=metadata)
        assert "the thread metadata" in str(err.value)
        assert str(err.value).endswith("Nothing was stored.")
        assert await agent.alist_threads() == []
    assert (await agent.ainvoke("hi", thread_id="t", metadata={"n": 1.5})).status \
        == "completed"
