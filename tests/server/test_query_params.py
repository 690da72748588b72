"""A malformed query parameter or path segment is a 422 that says what is wrong, on every
store, never a 5xx: ``after_id`` beyond the largest row id was a 500 on SQLite (the driver's
OverflowError); a NUL in ``before_id``, in the outbox's ``thread_id`` or in an outbox event id
reached Postgres, which refused the statement (503 StorageError)."""

from __future__ import annotations

import pytest

from interlock import Agent

from .conftest import ADMIN, ALICE, TOKENS, bearer, running

pytestmark = pytest.mark.anyio

BEYOND = "99999999999999999999999"
MAX = str(2**63 - 1)


async def test_malformed_parameters_are_422_naming_the_parameter(agent: Agent) -> None:
    async with running(agent, tokens=TOKENS) as s:
        c = s.client
        r = await c.post("/api/threads", params={"wait": "true"}, headers=bearer(ALICE),
                         json={"message": "sql SELECT 1", "thread_id": "t1"})
        assert r.json()["status"] == "interrupted", r.text
        refused = [
            ("GET", f"/api/audit?after_id={BEYOND}", "after_id", "less than or equal to"),
            ("GET", f"/api/audit?after_id={2**63}", "after_id", "less than or equal to"),
            ("GET", f"/api/threads/t1/audit?after_id={BEYOND}", "after_id",
             "less than or equal to"),
            ("GET", "/api/threads?before=2020-01-01T00:00:00Z&before_id=a%00b", "before_id",
             "NUL character"),
            ("GET", "/api/threads/t1/calls/a%00b", "tool_call_id", "NUL character"),
            ("GET", "/api/outbox?thread_id=a%00b", "thread_id", "NUL character"),
            ("POST", "/api/outbox/a%00b/retry", "event_id", "NUL character"),
        ]
        for method, url, name, what in refused:
            r = await c.request(method, url, headers=bearer(ADMIN))
            assert r.status_code == 422, (url, r.text)
            message = r.json()["message"]
            assert name in message and what in message, (url, message)
        # the largest id and well-formed values still answer
        for url in (f"/api/audit?after_id={MAX}", f"/api/threads/t1/audit?after_id={MAX}"):
            r = await c.get(url, headers=bearer(ADMIN))
            assert r.status_code == 200 and r.json()["records"] == [], (url, r.text)
        r = await c.get("/api/threads", headers=bearer(ADMIN),
                        params={"before": "2999-01-01T00:00:00Z", "before_id": "zzz"})
        assert r.status_code == 200 and [t["thread_id"] for t in r.json()["threads"]] == ["t1"]
        r = await c.get("/api/outbox", params={"thread_id": "t1"}, headers=bearer(ADMIN))
        assert r.status_code == 200, r.text
        r = await c.post("/api/outbox/evt_nope/retry", headers=bearer(ADMIN))
        assert r.status_code == 404, r.text
