"""GET /api/threads?q=...&count=true: the server filters, pages and counts the list."""

from __future__ import annotations

import pytest

from .conftest import Server
from .test_api import SQL, start

pytestmark = pytest.mark.anyio


async def test_list_is_searched_and_counted_on_the_server(local: Server) -> None:
    await start(local, f"sql {SQL}", "needle-1")
    await start(local, "write a file please", "other-2")
    await start(local, f"sql {SQL} AND id = 7", "needle-3")
    r = await local.client.get("/api/threads", params={
        "status": "interrupted", "q": "DELETE FROM records", "count": "true", "limit": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["total"] == 2
    assert [t["thread_id"] for t in body["threads"]] == ["needle-3"]
    nxt = await local.client.get("/api/threads", params={
        "status": "interrupted", "q": "delete from records", "limit": 1,
        "before": body["next_before"], "before_id": body["next_before_id"]})
    assert [t["thread_id"] for t in nxt.json()["threads"]] == ["needle-1"]
    assert nxt.json()["total"] is None  # only counted when asked
    everything = await local.client.get("/api/threads", params={"count": "true"})
    assert everything.json()["total"] == 3
    none = await local.client.get("/api/threads", params={"q": "no such text", "count": "true"})
    assert none.json() == {"threads": [], "next_before": None, "next_before_id": None,
                           "total": 0}
    too_long = await local.client.get("/api/threads", params={"q": "x" * 201})
    assert too_long.status_code == 422
