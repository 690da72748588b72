"""Numbers JSON has no value for (NaN, Infinity, -Infinity, and 1e400, which Python's parser
reads as infinity) never run a tool. A store writes them as ``null`` and the signed audit row
as ``NaN``: a reviewer's edit holding one ran the tool with ``nan`` while the inbox and the
record said ``null``, and the audit check then reported the row as tampered with.

From people (HTTP or Python) they are refused with ``InvalidText`` / 422, nothing stored; from
a model they are stored as the strings "NaN" / "Infinity" with ``args_error``, so the call
never runs with them; from a tool's question they are stored as those strings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import StoreFactory, require_postgres
from interlock import (
    Agent,
    AssistantMessage,
    HumanInTheLoop,
    InterlockError,
    InvalidText,
    Message,
    ScriptedModel,
    ToolMessage,
    UserMessage,
    interrupt,
    tool,
)
from server.conftest import ALICE, TOKENS, bearer, running

from .test_text_hygiene import snapshot

pytestmark = pytest.mark.anyio

RAN: list[Any] = []
LITERALS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e999"]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    if request.param == "postgres":
        require_postgres()
    factory = StoreFactory(str(request.param), tmp_path)
    RAN.clear()
    yield factory
    factory.cleanup()


@tool
def write(data: dict[str, Any]) -> str:
    """Write a document."""
    RAN.append(data)
    return "written"


@tool
def tune() -> str:
    """Ask the operator for a limit (not gated); the question holds a NaN."""
    answer = interrupt({"question": "limit?", "current": float("nan"), "max": float("inf")})
    return f"limit {answer}"


def script(messages: list[Message]) -> Any:
    user = [m for m in messages if isinstance(m, UserMessage)][-1].content
    since = messages[max(i for i, m in enumerate(messages) if isinstance(m, UserMessage)) + 1:]
    if any(isinstance(m, ToolMessage) for m in since):
        return "done"
    if user == "model-nan":  # a provider's arguments read with json.loads: NaN is a float
        return [{"name": "write", "args": json.loads('{"data": {"limit": Infinity, '
                                                     '"ratio": NaN, "ok": 1.5}}')}]
    if user == "ungated-nan":
        return [{"name": "tune_write", "args": {"data": {"n": float("-inf")}}}]
    if user == "ask":
        return [{"name": "tune", "args": {}}]
    return [{"name": "write", "args": {"data": {"k": 1}}}]


@tool
def tune_write(data: dict[str, Any]) -> str:
    """Write a document (not gated)."""
    RAN.append(data)
    return "written"


def make_agent(store: StoreFactory) -> Agent:
    return Agent(model=ScriptedModel(script), tools=[write, tune, tune_write],
                 middleware=[HumanInTheLoop(interrupt_on={"write": True})],
                 checkpointer=store())


async def test_api_refuses_nonfinite_numbers_with_422_and_stores_nothing(
        store: StoreFactory) -> None:
    agent = make_agent(store)
    async with running(agent, tokens=TOKENS) as s:
        r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(ALICE),
                                json={"message": "write", "thread_id": "p"})
        assert r.json()["status"] == "interrupted"
        before = snapshot(store, agent)
        headers = {**bearer(ALICE), "Content-Type": "application/json"}
        for lit in LITERALS:
            bodies = [
                ('{"decisions":[{"type":"edit","edited_action":{"name":"write",'
                 '"args":{"data":{"n":LIT}}}}]}', "edited_action.args.data.n"),
                ('{"decisions":[{"type":"edit","revision":1,"edited_action":{"name":"write",'
                 '"args":{"data":{"list":[1,LIT]}}}}]}', "data.list[1]"),
                ('{"decisions":[{"type":"approve","metadata":{"limit":LIT}}]}',
                 "metadata.limit"),
            ]
            for template, where in bodies:
                body = template.replace("LIT", lit)
                r = await s.client.post("/api/threads/p/decisions", params={"wait": "true"},
                                        headers=headers, content=body.encode())
                assert r.status_code == 422, (body, r.text)
                assert r.json()["error"] == "InvalidText", r.text
                message = r.json()["message"]
                assert where in message, message
                assert "JSON has no value for" in message and "Nothing was stored" in message
                assert snapshot(store, agent) == before, body
        r = await s.client.post("/api/threads/p/answer", params={"wait": "true"},
                                headers=headers, content=b'{"value": {"x": NaN}}')
        assert r.status_code == 422 and r.json()["error"] == "InvalidText", r.text
        assert snapshot(store, agent) == before
        assert RAN == []
        # the request still waits, and a finite edit runs as sent
        r = await s.client.post("/api/threads/p/decisions", params={"wait": "true"},
                                headers=bearer(ALICE), json={"decisions": [{
                                    "type": "edit", "edited_action": {
                                        "name": "write", "args": {"data": {"n": 1e300}}}}]})
        assert r.json()["status"] == "completed", r.text
        assert RAN == [{"n": 1e300}]
        r = await s.client.get("/api/audit/verify", params={"thread_id": "p"},
                               headers=bearer(ALICE))
        assert r.status_code == 200 and r.json()["ok"] is True, r.text


async def test_library_refuses_nonfinite_numbers_and_stores_nothing(
        store: StoreFactory) -> None:
    agent = make_agent(store)
    assert (await agent.ainvoke("write", thread_id="p")).status == "interrupted"
    before = snapshot(store, agent)
    for number in (float("nan"), float("inf"), float("-inf")):
        attempts = [
            agent.aresume("p", [{"type": "edit", "edited_action": {
                "name": "write", "args": {"data": {"n": number}}}}]),
            agent.aresume("p", [{"type": "approve", "metadata": {"n": [number]}}]),
        ]
        for attempt in attempts:
            with pytest.raises(InvalidText) as err:
                await attempt
            assert isinstance(err.value, InterlockError)
            assert "JSON has no value for" in str(err.value)
            assert str(err.value).endswith("Nothing was stored.")
            assert snapshot(store, agent) == before
    assert RAN == []
    assert (await agent.aresume("p", [{"type": "approve"}])).status == "completed"
    assert RAN == [{"k": 1}]
    assert await agent.averify_audit() == []


async def test_a_models_nonfinite_number_never_runs_and_the_audit_stays_intact(
        store: StoreFactory) -> None:
    agent = make_agent(store)
    async with running(agent, tokens=TOKENS) as s:
        r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(ALICE),
                                json={"message": "model-nan", "thread_id": "m"})
        assert r.status_code == 200 and r.json()["status"] == "interrupted", r.text
        action = r.json()["interrupts"][0]["value"]["action_requests"][0]
        # the reviewer is shown what the model sent, not null
        assert action["args"] == {"data": {"limit": "Infinity", "ratio": "NaN", "ok": 1.5}}
        assert "NaN or Infinity" in action["reason"]
        # approving does not run the call: the model did not send those arguments
        r = await s.client.post("/api/threads/m/decisions", params={"wait": "true"},
                                headers=bearer(ALICE), json={"decisions": [{"type": "approve"}]})
        assert r.json()["status"] == "completed", r.text
        assert RAN == []
        # an ungated call fails closed the same way
        r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(ALICE),
                                json={"message": "ungated-nan", "thread_id": "u"})
        assert r.json()["status"] == "completed", r.text
        assert RAN == []
        # a tool's question holding NaN is stored as the names, and can be answered
        r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(ALICE),
                                json={"message": "ask", "thread_id": "q"})
        assert r.json()["interrupts"][0]["value"] == {
            "question": "limit?", "current": "NaN", "max": "Infinity"}
        r = await s.client.post("/api/threads/q/answer", params={"wait": "true"},
                                headers=bearer(ALICE), json={"value": 5})
        assert r.json()["status"] == "completed"
        r = await s.client.get("/api/audit/verify", headers=bearer(ALICE))
        assert r.status_code == 200 and r.json()["ok"] is True, r.text
    again = make_agent(store) if store.durable else agent
    thread = await again.aget_thread("m")
    (call,) = next(m for m in thread.messages if isinstance(m, AssistantMessage)).tool_calls
    assert call.args == {"data": {"limit": "Infinity", "ratio": "NaN", "ok": 1.5}}
    assert call.args_error and "NaN or Infinity" in call.args_error
    assert await again.averify_audit() == []


@tool
def set_limit(value: float) -> str:
    """Set a limit (runs without review)."""
    RAN.append(("set_limit", value))
    return "ok"


@tool
def pay(amount: float) -> str:
    """Pay an amount."""
    RAN.append(("pay", amount))
    return "ok"


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e400", "nan", "inf"])
def test_a_number_written_as_a_string_never_becomes_nan_or_infinity(text: str) -> None:
    """A float parameter does not read "NaN", "Infinity" or "1e400" as a number: from a model,
    an ungated call fails with the tool's argument error; a reviewer's edit is refused."""
    RAN.clear()
    agent = Agent(model=ScriptedModel([[{"name": "set_limit", "args": {"value": text}},
                                        {"name": "pay", "args": {"amount": 10}}], "done"]),
                  tools=[set_limit, pay],
                  middleware=[HumanInTheLoop(interrupt_on={"pay": True})])
    r = agent.invoke("go", thread_id="t")
    assert r.status == "interrupted" and RAN == []
    with pytest.raises(InterlockError, match="finite"):
        agent.resume("t", [{"type": "edit", "edited_action": {"name": "pay",
                                                              "args": {"amount": text}}}])
    assert RAN == []
    r = agent.resume("t", [{"type": "approve"}])
    assert r.status == "completed" and RAN == [("pay", 10)]
    failed = [m for m in r.messages if isinstance(m, ToolMessage) and m.name == "set_limit"]
    assert failed and failed[0].status == "error"
