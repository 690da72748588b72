"""``messages-tuple`` and ``messages`` streams with the real ``langgraph-sdk`` client: a run
that gets ahead of its stream (its next model message is stored before that message's text
deltas reach the stream) sends that message once, whole, not whole and then again as chunks
(LangGraph's ``useStream`` joins chunks with the same id onto the message: the user saw
"Done.Done."), and ``messages/complete`` is not followed by partials of the same message."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from interlock import tool
from interlock.messages import Message, UserMessage

from .live import gated_langgraph

ANSWER = "Done: the report is written."


@tool
def write_report(name: str) -> str:
    """Write a report."""
    return f"wrote {name}"


def _model(messages: list[Message]) -> Any:
    if isinstance(messages[-1], UserMessage):
        return ("Writing it.", [{"name": "write_report", "args": {"name": "q3"}}])
    return ANSWER


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with gated_langgraph(_model, write_report, tmp_path / "db.sqlite") as found:
        yield found


def _joined(parts: list[Any]) -> dict[str, str]:
    """What a client that joins ``messages-tuple`` parts by id shows per AI message."""
    shown: dict[str, str] = {}
    for part in parts:
        message = part.data[0]
        if message.get("type") in ("ai", "AIMessageChunk"):
            shown[message["id"]] = shown.get(message["id"], "") + str(message["content"])
    return shown


@pytest.mark.parametrize("attempt", range(3))
def test_each_model_message_reaches_the_client_once(url: str, attempt: int) -> None:
    client = get_sync_client(url=url)
    tid = client.threads.create()["thread_id"]
    start = {"messages": [{"role": "user", "content": "write the q3 report"}]}
    paused = client.runs.wait(tid, "agent", input=start)
    assert isinstance(paused, dict) and paused["__interrupt__"]
    parts = list(client.runs.stream(tid, "agent", command={"resume": {"decisions": [
        {"type": "approve"}]}}, stream_mode=["messages-tuple", "messages"]))
    tuples = [p for p in parts if p.event == "messages"]
    shown = _joined(tuples)
    assert list(shown.values()).count(ANSWER) == 1, shown
    assert all(text in (ANSWER, "") or not text.endswith(ANSWER) for text in shown.values())
    complete: set[str] = set()
    for p in parts:
        if p.event == "messages/complete":
            complete |= {m["id"] for m in p.data}
        if p.event == "messages/partial":
            assert not {m["id"] for m in p.data} & complete, p
