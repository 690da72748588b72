"""A run that fails after its input was stored (the model raises), as the real
``langgraph-sdk`` client sees it: ``runs.wait`` gets the thread's values with ``__error__``
(and raises it, or returns it with ``raise_error=False``), as LangGraph answers; the same
client's next request works (a 500 used to close the connection under it); ``runs.join``
says the same; a refused run is still its HTTP error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError

from interlock import tool
from interlock.messages import Message, UserMessage

from .live import gated_langgraph


@tool
def delete_rows(table: str) -> str:
    """Delete every row of a table."""
    return f"deleted {table}"


def _model(messages: list[Message]) -> Any:
    last = messages[-1]
    if isinstance(last, UserMessage) and last.content == "boom":
        raise RuntimeError("the model provider exploded")
    if isinstance(last, UserMessage):
        return {"name": "delete_rows", "args": {"table": last.content}}
    return "done"


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with gated_langgraph(_model, delete_rows, tmp_path / "db.sqlite") as found:
        yield found


def test_a_failed_run_is_answered_as_langgraph_answers_it(url: str) -> None:
    client = get_sync_client(url=url)
    thread = client.threads.create()
    tid = thread["thread_id"]
    boom = {"messages": [{"role": "user", "content": "boom"}]}
    with pytest.raises(Exception, match="RuntimeError: the model provider exploded"):
        client.runs.wait(tid, "agent", input=boom)
    got = client.runs.wait(tid, "agent", input=boom, raise_error=False)
    assert isinstance(got, dict)
    assert got["__error__"] == {"error": "RuntimeError",
                                "message": "the model provider exploded"}
    assert [m["content"] for m in got["messages"] if m["type"] == "human"][-1] == "boom"
    # the same client goes on (its connection was not closed under it)
    assert client.threads.get(tid)["thread_id"] == tid
    run = client.runs.create(tid, "agent", input=boom)
    joined = client.runs.join(tid, run["run_id"])
    assert joined["__error__"]["error"] == "RuntimeError"
    # a refused run keeps its HTTP error: the thread waits for a decision
    paused = client.runs.wait(tid, "agent", input={"messages": [
        {"role": "user", "content": "orders"}]})
    assert isinstance(paused, dict) and paused["__interrupt__"]
    with pytest.raises((ConflictError, httpx.HTTPStatusError), match="409"):
        client.runs.wait(tid, "agent", input=boom)
