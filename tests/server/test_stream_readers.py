"""Live streams tell a reviewer only what they may read, at the moment they may read it.

bob (role ``ops``) may read a thread only while a call he may decide is pending in it. He
follows the inbox stream and the thread's own stream; alice (``ops`` too) approves the call,
the tool runs and the agent answers with the tool's secret result. From the moment the call is
approved bob may not read the thread: neither stream may give him its outcome, the tool's
result or the agent's answer. Run several times, as the run and the watcher race."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest

from interlock import Agent, HumanInTheLoop, InterruptOn, MemoryCheckpointer, ScriptedModel, tool

from .conftest import ADMIN, ALICE, BOB, TOKENS, bearer, running, sse

pytestmark = pytest.mark.anyio

SECRET = "SALARIES-7f3a"


def ops_agent() -> Agent:
    @tool
    def ops_report(name: str) -> str:
        """Produce an ops report."""
        return f"report {name}: {SECRET}"

    def model(messages: list[Any]) -> Any:
        last = messages[-1]
        if getattr(last, "role", "") == "tool":
            return f"Here it is: {last.content}"
        return ("Running it.", [{"name": "ops_report", "args": {"name": "payroll"}}])

    return Agent(model=ScriptedModel(model), tools=[ops_report],
                 middleware=[HumanInTheLoop(interrupt_on={
                     "ops_report": InterruptOn(reviewers=["ops"])})],
                 checkpointer=MemoryCheckpointer())


@pytest.mark.parametrize("attempt", range(4))
async def test_a_reviewer_who_lost_read_access_hears_nothing_of_what_followed(
        attempt: int) -> None:
    agent = ops_agent()
    async with running(agent, tokens=TOKENS, poll_interval=0.01) as s:
        c = s.client
        tid = f"t{attempt}"
        r = await c.post("/api/threads", headers=bearer(ADMIN), params={"wait": "true"},
                         json={"thread_id": tid, "message": "the payroll report"})
        assert r.status_code == 200 and r.json()["status"] == "interrupted", r.text
        assert (await c.get(f"/api/threads/{tid}", headers=bearer(BOB))).status_code == 200
        async with sse(s.app, "/api/inbox/events", bearer(BOB)) as inbox, \
                sse(s.app, f"/api/threads/{tid}/events", bearer(BOB)) as own, \
                sse(s.app, f"/api/threads/{tid}/events", bearer(ADMIN)) as admin:
            r = await c.post(f"/api/threads/{tid}/decisions", headers=bearer(ALICE),
                             json={"decisions": [{"type": "approve"}]})
            assert r.status_code in (200, 202), r.text
            # the thread's reader sees the run to its end, with the secret
            done = await admin.until(lambda e: e["event"] == "run_completed")
            assert SECRET in json.dumps(done["data"])
            # bob's inbox is told the thread left it, and nothing else
            with contextlib.suppress(TimeoutError):
                await inbox.until(lambda e: e["event"] == "thread_hidden", within=3)
            await asyncio.sleep(0.3)
            heard = [*inbox.seen, *own.seen]
            while not inbox.events.empty():
                heard.append(inbox.events.get_nowait())
            while not own.events.empty():
                heard.append(own.events.get_nowait())
        assert (await c.get(f"/api/threads/{tid}", headers=bearer(BOB))).status_code == 403
        text = json.dumps(heard)
        assert SECRET not in text and "Here it is" not in text, text
        assert not [e for e in heard if e["event"] in (
            "tool_finished", "run_completed", "model_text_delta", "tool_started")], text
        assert [e["event"] for e in heard].count("thread_hidden") == 1, text
        for e in heard:
            if e["event"] in ("request_resolved", "thread_hidden"):
                assert e["data"]["thread"] == {"thread_id": tid, "readable": False}, e
            if e["event"] == "thread_updated":  # only states bob could read
                assert e["data"]["thread"]["status"] == "interrupted", e
