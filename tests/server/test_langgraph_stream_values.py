"""A streamed run's ``values`` events, through the real ``langgraph-sdk`` client: one per state
the run passes through, never the same state twice in a row (a UI re-renders the thread at
each, and a client counting steps counts each once), the last one the thread's state at the
end; with the modes Agent Chat UI asks for, a run that pauses, its resume, a plain answer
and a run with several tools."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph_sdk.client import SyncLangGraphClient

from .server_agents import EXECUTED

MODES = [["values"], ["values", "messages-tuple", "custom"], ["values", "updates", "events"]]


@pytest.fixture
def client(langgraph_alice: SyncLangGraphClient) -> SyncLangGraphClient:
    return langgraph_alice


def _values(client: SyncLangGraphClient, tid: str, modes: list[str],
            **run: Any) -> list[dict[str, Any]]:
    return [part.data for part in client.runs.stream(tid, "agent", stream_mode=modes, **run)
            if part.event == "values"]


def _check(sent: list[dict[str, Any]], end: dict[str, Any]) -> None:
    texts = [json.dumps(v, sort_keys=True) for v in sent]
    repeated = [i for i in range(1, len(texts)) if texts[i] == texts[i - 1]]
    assert not repeated, f"values events {repeated} of {len(texts)} repeat the one before"
    assert sent[-1] == end  # the last is the thread's state when the run ended


@pytest.mark.parametrize("modes", MODES, ids=["values", "chat-ui", "updates-events"])
def test_a_paused_and_resumed_run_streams_each_state_once(
        client: SyncLangGraphClient, modes: list[str]) -> None:
    tid = client.threads.create()["thread_id"]
    paused = _values(client, tid, modes,
                     input={"messages": [{"role": "user", "content": "multi"}]})
    state = client.threads.get_state(tid)
    _check(paused, state["values"])
    assert len(state["values"]["__interrupt__"]) == 2
    runs_before = len(EXECUTED)
    resumed = _values(client, tid, modes, command={
        "resume": {i["id"]: {"decisions": [{"type": "approve"}]}
                   for i in state["values"]["__interrupt__"]}})
    end = client.threads.get_state(tid)
    _check(resumed, end["values"])
    assert "__interrupt__" not in end["values"]
    assert len(EXECUTED) == runs_before + 2  # both calls ran, once each
    # at least the state the resume starts from (the decisions stored) and the answer
    assert len(resumed) >= 2 and "__interrupt__" not in resumed[0]


@pytest.mark.parametrize("modes", MODES, ids=["values", "chat-ui", "updates-events"])
def test_a_plain_answer_streams_each_state_once(client: SyncLangGraphClient,
                                                modes: list[str]) -> None:
    tid = client.threads.create()["thread_id"]
    sent = _values(client, tid, modes,
                   input={"messages": [{"role": "user", "content": "hello"}]})
    _check(sent, client.threads.get_state(tid)["values"])
    assert sent[-1]["messages"][-1]["content"] == "You said: hello"
