"""``select`` and ``extract`` through the real ``langgraph-sdk`` client (``/langgraph``): a
client that asks for some fields gets those fields and no others, ``values.<key>`` keeps one
key of a state's values, ``extract`` reads values from each thread by path, ``runs.list``
pages and filters; a field or path that cannot be answered is a 422 that names it, and
nothing is read or changed by it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import UnprocessableEntityError

from .conftest import ALICE
from .live import LiveServer
from .server_agents import EXECUTED


@pytest.fixture(scope="module")
def server(langgraph_local: LiveServer) -> LiveServer:
    return langgraph_local


@pytest.fixture
def client(langgraph_alice: SyncLangGraphClient) -> SyncLangGraphClient:
    return langgraph_alice


def _thread(client: SyncLangGraphClient, text: str) -> str:
    tid: str = client.threads.create()["thread_id"]
    client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": text}]})
    return tid


def test_threads_search_returns_the_fields_selected_and_the_values_extracted(
        client: SyncLangGraphClient) -> None:
    waiting = _thread(client, "sql SELECT 'picked'")
    done = _thread(client, "hello there")
    found = client.threads.search(ids=[waiting, done], select=["thread_id", "status"],
                                  extract={"last": "values.messages[-1].content",
                                           "first": "values.messages[0].content",
                                           "call": "values.__interrupt__[0].value"
                                                   ".action_requests[0].args.query",
                                           "nowhere": "values.messages[99].content",
                                           "not_a_list": "status[0]"})
    by_id = {t["thread_id"]: t for t in found}
    assert set(by_id) == {waiting, done}
    for t in found:
        assert set(t) == {"thread_id", "status", "extracted"}, t
    assert by_id[waiting]["status"] == "interrupted"
    assert by_id[waiting]["extracted"] == {
        "last": "Working on it.", "first": "sql SELECT 'picked'", "call": "SELECT 'picked'",
        "nowhere": None, "not_a_list": None}
    assert by_id[done]["status"] == "idle"
    assert by_id[done]["extracted"]["last"] == "You said: hello there"
    assert by_id[done]["extracted"]["call"] is None
    # without select and extract, the whole thread and no extracted object, as before
    [whole] = client.threads.search(ids=[waiting])
    assert {"thread_id", "status", "values", "interrupts", "metadata"} <= set(whole)
    assert "extracted" not in whole
    # a search without ids lists with the same projection
    listed = client.threads.search(status="interrupted", select=["thread_id"], limit=100)
    assert {"thread_id": waiting} in listed and all(set(t) == {"thread_id"} for t in listed)


def test_a_state_keeps_the_fields_and_values_keys_selected(
        client: SyncLangGraphClient) -> None:
    tid = _thread(client, "sql SELECT 'state'")
    full = client.threads.get_state(tid)
    assert "__interrupt__" in full["values"]
    only_messages = client.threads.get_state(tid, select=["values.messages"])
    assert only_messages == {"values": {"messages": full["values"]["messages"]}}
    head = client.threads.get_state(tid, select=["checkpoint", "next"])
    assert head == {"checkpoint": full["checkpoint"], "next": full["next"]}
    # values itself and one of its keys: all of the values
    both = client.threads.get_state(tid, select=["values", "values.messages"])
    assert both == {"values": full["values"]}
    # at a checkpoint, by id (GET) and by checkpoint (POST)
    cid = full["checkpoint"]["checkpoint_id"]
    assert client.threads.get_state(tid, checkpoint_id=cid, select=["created_at"]) == {
        "created_at": full["created_at"]}
    assert client.threads.get_state(tid, checkpoint=full["checkpoint"],
                                    select=["metadata"]) == {"metadata": full["metadata"]}
    [h] = client.threads.get_history(tid, select=["values.__interrupt__", "checkpoint"])
    assert h == {"values": {"__interrupt__": full["values"]["__interrupt__"]},
                 "checkpoint": full["checkpoint"]}


def test_runs_list_pages_filters_and_selects(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    runs = [client.runs.create(tid, "agent", input={"messages": [
        {"role": "user", "content": f"hello {i}"}]}) for i in range(3)]
    for r in runs:
        client.runs.join(tid, r["run_id"])
    newest_first = [r["run_id"] for r in reversed(runs)]
    assert [r["run_id"] for r in client.runs.list(tid)] == newest_first
    assert [r["run_id"] for r in client.runs.list(tid, limit=1)] == newest_first[:1]
    assert [r["run_id"] for r in client.runs.list(tid, limit=2, offset=1)] == newest_first[1:]
    assert [r["run_id"] for r in client.runs.list(tid, status="success")] == newest_first
    assert client.runs.list(tid, status="interrupted") == []
    picked = client.runs.list(tid, select=["run_id", "status"])
    assert picked == [{"run_id": rid, "status": "success"} for rid in newest_first]


def test_assistants_search_selects(client: SyncLangGraphClient) -> None:
    [a] = client.assistants.search(select=["assistant_id", "graph_id"])
    assert set(a) == {"assistant_id", "graph_id"} and a["graph_id"] == "agent"


@pytest.mark.parametrize(("call", "named"), [
    (lambda c, t: c.threads.search(select=["thread_id", "statuss"]), "statuss"),
    (lambda c, t: c.threads.search(extract={"x": "values..messages"}), "values..messages"),
    (lambda c, t: c.threads.search(extract={"x": "values.messages[one]"}), "messages[one]"),
    (lambda c, t: c.threads.search(extract={f"a{i}": "status" for i in range(11)}), "10"),
    (lambda c, t: c.threads.get_state(t, select=["value"]), "value"),
    (lambda c, t: c.threads.get_state(t, select=["values."]), "values."),
    (lambda c, t: c.threads.get_history(t, select=["checkpoints"]), "checkpoints"),
    (lambda c, t: c.runs.list(t, select=["run"]), "run"),
    (lambda c, t: c.assistants.search(select=["assistant"]), "assistant"),
], ids=["search-select", "empty-key", "bad-index", "too-many-paths", "state", "values-dot",
        "history", "runs", "assistants"])
def test_what_cannot_be_answered_is_refused_by_name_and_changes_nothing(
        server: LiveServer, client: SyncLangGraphClient, call: Any, named: str) -> None:
    tid = _thread(client, "sql SELECT 'refused'")
    before = client.threads.get_state(tid)
    executed = list(EXECUTED)
    with pytest.raises(UnprocessableEntityError) as refused:
        call(client, tid)
    body = refused.value.body
    assert isinstance(body, dict) and named in body["message"], body
    assert "Nothing was read" in body["message"]
    assert client.threads.get_state(tid) == before
    assert executed == EXECUTED


def test_select_is_checked_before_the_thread_is_read(server: LiveServer) -> None:
    """An unknown field is refused the same way for a thread the caller may not read or that
    does not exist: the refusal says nothing about the thread."""
    for tid in ("no-such-thread", "x" * 10):
        r = httpx.get(f"{server.url}/langgraph/threads/{tid}/state",
                      params={"select": "nope"}, headers={"X-Api-Key": ALICE}, timeout=30)
        assert r.status_code == 422 and r.json()["error"] == "InvalidSelect", r.text


def test_a_new_thread_without_runs_is_selected_too(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    assert client.threads.search(ids=[tid], select=["status"],
                                 extract={"m": "values.messages"}) == [
        {"status": "idle", "extracted": {"m": None}}]
    assert client.threads.get_state(tid, select=["values.messages"]) == {"values": {}}


def test_a_path_through_every_shape_follows_keys_and_positions(tmp_path: Path) -> None:
    """The path reader itself, on values of every shape (not through the server)."""
    from interlock.server.langgraph.select import check_extract, extracted

    obj = {"a": [{"b": [1, 2, {"c": "deep"}]}], "n": None, "0": "zero"}
    paths = check_extract({"deep": "a[0].b[-1].c", "neg": "a[-1].b[-3]", "out": "a[1]",
                           "under": "a[-2]", "key0": "0", "none": "n.x", "str": "a[0].b[2].c[0]",
                           "multi": "a[0][0]"})
    assert paths is not None
    assert extracted(obj, paths) == {"deep": "deep", "neg": 1, "out": None, "under": None,
                                     "key0": "zero", "none": None, "str": None, "multi": None}
