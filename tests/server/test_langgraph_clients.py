"""What LangChain and LangGraph clients send for a turn with several gated calls, over HTTP,
with the real ``langgraph-sdk`` client against real ``interlock serve`` processes: on SQLite,
and on Postgres with an API-only server and a worker. Every decision shape LangChain's HITL
guide and its UIs use is accepted, each call runs once, and what the reviewer saw is what runs:

* ``{"decisions": [...]}`` built from ``interrupts[0].value.action_requests`` (one call per
  interrupt on ``/langgraph``, every call of the turn on ``/langgraph/per-turn``);
* ``{interrupt_id: {"decisions": [...]}}`` for ``interrupts[0]``;
* one ``{"decisions": [d]}`` per interrupt id.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from .conftest import ALICE
from .live import langgraph_serve
from .test_multiprocess_pg import executions
from .test_workers_pg import api, tier, worker

__all__ = ["tier"]  # the Postgres pair's fixture, used by name

pytestmark = pytest.mark.slow

Deployment = tuple[str, Path]  # the /langgraph url and the execution log


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with langgraph_serve(tmp_path_factory.mktemp("lgclients")) as (proc, log):
        yield proc.url + "/langgraph", log


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def deployment(request: pytest.FixtureRequest) -> Deployment:
    if request.param == "sqlite":
        found: Deployment = request.getfixturevalue("sqlite_server")
        return found
    pair: dict[str, Any] = request.getfixturevalue("tier")
    server = api(pair, "api", "--langgraph-api")
    worker(pair, "worker")
    return server.url + "/langgraph", pair["log"]


def _ran(log: Path) -> list[tuple[str, dict[str, Any]]]:
    return [(e["name"], e["args"]) for e in executions(log)]


TURNS = {
    "multi": [("execute_sql", {"query": "SELECT 1"}),
              ("write_file", {"path": "a.txt", "content": "x"})],
    "triple": [("execute_sql", {"query": "SELECT 3"}),
               ("write_file", {"path": "c.txt", "content": "z"}),
               ("set_limit", {"n": 2})],
}
RAN = {"execute_sql": {"query"}, "write_file": {"path", "content"}, "set_limit": {"n"}}

Resume = Callable[[list[dict[str, Any]]], Any]


def _shown_calls(interrupts: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(a["name"], a["args"]) for i in interrupts for a in i["value"]["action_requests"]]


def _decisions_from_first(interrupts: list[dict[str, Any]]) -> Any:
    """LangChain's guide: one decision per action request of ``interrupts[0]``, unkeyed."""
    return {"decisions": [{"type": "approve"}
                          for _ in interrupts[0]["value"]["action_requests"]]}


def _keyed_first(interrupts: list[dict[str, Any]]) -> Any:
    first = interrupts[0]
    return {first["id"]: {"decisions": [{"type": "approve"}
                                        for _ in first["value"]["action_requests"]]}}


def _one_per_id(interrupts: list[dict[str, Any]]) -> Any:
    return {i["id"]: {"decisions": [{"type": "approve"}
                                    for _ in i["value"]["action_requests"]]}
            for i in interrupts}


SHAPES: dict[str, Resume] = {"decisions_from_first": _decisions_from_first,
                             "keyed_first": _keyed_first, "one_per_id": _one_per_id}


def _approve_all(client: SyncLangGraphClient, tid: str, first: dict[str, Any],
                 resume: Resume) -> tuple[list[int], dict[str, Any]]:
    """Resume as a client loop does until nothing is pending; how many interrupts each round
    showed, and the final values."""
    out, rounds = first, []
    while out.get("__interrupt__"):
        rounds.append(len(out["__interrupt__"]))
        assert len(rounds) <= 4, rounds
        out = client.runs.wait(tid, "agent", command={"resume": resume(out["__interrupt__"])})
    return rounds, out


def _turn(url: str, log: Path, route: str, shape: str, turn: str) -> None:
    client = get_sync_client(url=url + route, api_key=ALICE)
    tid = client.threads.create()["thread_id"]
    before = len(executions(log))
    first = client.runs.wait(tid, "agent",
                             input={"messages": [{"role": "user", "content": turn}]})
    pending = first["__interrupt__"]
    assert _shown_calls(pending) == [(n, a) for n, a in TURNS[turn]]
    # per call on /langgraph; on /langgraph/per-turn one interrupt lists every call
    assert len(pending) == (1 if route else len(TURNS[turn]))
    state = client.threads.get_state(tid)
    assert [i["id"] for i in state["interrupts"]] == [i["id"] for i in pending]

    rounds, done = _approve_all(client, tid, first, SHAPES[shape])
    calls = len(TURNS[turn])
    if route or shape == "one_per_id":
        assert rounds == [len(pending)]  # every call decided in one resume
    else:
        assert rounds == list(range(calls, 0, -1))  # the first shown call, one at a time
    assert done["messages"][-1]["content"].startswith("Done.")
    ran = _ran(log)[before:]
    assert [(n, {k: v for k, v in a.items() if k in RAN[n]}) for n, a in ran] == TURNS[turn]
    assert client.threads.get(tid)["status"] == "idle"


def test_every_decision_shape_for_a_turn_with_several_calls(deployment: Deployment) -> None:
    """2 and 3 gated calls, each shape, on ``/langgraph`` and ``/langgraph/per-turn``."""
    url, log = deployment
    for route in ("", "/per-turn"):
        for shape in sorted(SHAPES):
            for turn in sorted(TURNS):
                try:
                    _turn(url, log, route, shape, turn)
                except AssertionError as e:
                    raise AssertionError(f"route {route!r}, {shape}, {turn}: {e}") from e


def test_stream_modes_of_the_react_hook_and_fast_runs(deployment: Deployment) -> None:
    """``useStream`` asks for ``values``, ``messages-tuple`` and ``custom``; the model's
    tool-call message of a run that is over before the stream reads the thread is still sent
    as an update (the first snapshot is the one taken when the run was accepted)."""
    url, log = deployment
    client = get_sync_client(url=url, api_key=ALICE)
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(
        tid, "agent", input={"messages": [{"role": "user", "content": "sql SELECT 7"}]},
        stream_mode=["values", "messages-tuple", "custom", "updates"]))
    kinds = [p.event for p in parts]
    assert kinds[0] == "metadata" and "custom" not in kinds  # no tool emits custom events
    updates = [p.data for p in parts if p.event == "updates"]
    (proposed,) = [u["model"]["messages"][0] for u in updates if "model" in u]
    assert proposed["tool_calls"][0]["args"] == {"query": "SELECT 7"}
    assert [u for u in updates if "__interrupt__" in u]
    # the model's text came as chunks of the message that the state stores under the same id
    chunks = [p.data for p in parts if p.event == "messages"]
    streamed = "".join(c[0]["content"] for c in chunks if c[0]["id"] == proposed["id"])
    assert streamed == proposed["content"] == "Working on it."
    assert all(c[1]["langgraph_node"] == "model" and c[1]["thread_id"] == tid for c in chunks)
    last = [p.data for p in parts if p.event == "values"][-1]
    assert last["messages"][-1]["id"] == proposed["id"]

    # resume (a rejection): its tool message arrives as an update and as a whole message
    pending = last["__interrupt__"][0]["id"]
    parts = list(client.runs.stream(
        tid, "agent", command={"resume": {pending: {"type": "reject", "message": "no"}}},
        stream_mode=["updates", "messages-tuple", "messages"]))
    updates = [p.data for p in parts if p.event == "updates"]
    (rejected,) = [u["tools"]["messages"][0] for u in updates if "tools" in u]
    assert rejected["status"] == "error" and "no" in rejected["content"]
    whole = [p.data[0] for p in parts if p.event == "messages"]
    assert rejected in whole
    complete = [m for p in parts if p.event == "messages/complete" for m in p.data]
    assert rejected in complete
    assert client.threads.get(tid)["status"] == "idle"
    assert _ran(log)[-1:] != [("execute_sql", {"query": "SELECT 7"})]


def test_thread_metadata_is_stored_and_searchable(deployment: Deployment) -> None:
    """Metadata given at ``threads.create`` is kept with the thread through its runs (in the
    database: another process reads it), returned by ``threads.get`` and filtered by
    ``threads.search(metadata=...)``, as a multi-user inbox or chat UI filters by user."""
    url, _ = deployment
    client = get_sync_client(url=url, api_key=ALICE)
    tag = uuid.uuid4().hex
    mine = client.threads.create(metadata={"user": f"u-{tag}", "team": "ops"})["thread_id"]
    other = client.threads.create(metadata={"user": f"v-{tag}"})["thread_id"]
    idle = client.threads.create(metadata={"user": f"u-{tag}", "team": "ops"})["thread_id"]
    # before any run: listed from the server's memory, metadata included
    found = client.threads.search(metadata={"user": f"u-{tag}"}, limit=50)
    assert {t["thread_id"] for t in found} == {mine, idle}
    for tid in (mine, other):
        client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": "hi"}]})
    got = client.threads.get(mine)
    assert got["metadata"]["user"] == f"u-{tag}" and got["metadata"]["team"] == "ops"
    assert got["metadata"]["graph_id"] == "agent"
    found = client.threads.search(metadata={"user": f"u-{tag}", "team": "ops"}, limit=50)
    assert {t["thread_id"] for t in found} == {mine, idle}
    found = client.threads.search(metadata={"user": f"u-{tag}", "graph_id": "agent"},
                                  status="idle", limit=50)
    assert {t["thread_id"] for t in found} == {mine, idle}
    assert [t["thread_id"] for t in client.threads.search(
        metadata={"user": f"v-{tag}"}, limit=50)] == [other]
    assert client.threads.search(metadata={"user": f"u-{tag}", "team": "sales"}) == []
    assert client.threads.search(metadata={"user": f"u-{tag}", "graph_id": "other"}) == []


def test_metadata_that_cannot_be_stored_is_refused_and_not_kept(
        sqlite_server: Deployment) -> None:
    """A thread's or a run's metadata holding NUL is refused (422, the field named) and
    nothing is kept: the thread does not exist, no run is recorded, search still works."""
    url, _ = sqlite_server
    client = get_sync_client(url=url, api_key=ALICE)
    tid = f"nul-{uuid.uuid4().hex}"
    with pytest.raises(UnprocessableEntityError) as refused:
        client.threads.create(thread_id=tid, metadata={"user": "ann\x00"})
    assert "metadata.user contains a NUL character" in refused.value.message
    with pytest.raises(NotFoundError):
        client.threads.get(tid)
    good = client.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as failed:  # runs.wait raises httpx's own
        client.runs.wait(good, "agent", input={"messages": [{"role": "user", "content": "hi"}]},
                         metadata={"note": ["x\x00"]})
    assert failed.value.response.status_code == 422
    assert "metadata.note[0] contains a NUL character" in failed.value.response.text
    assert client.runs.list(good) == []
    assert tid not in {t["thread_id"] for t in client.threads.search(limit=1000)}


def test_resume_on_a_thread_that_never_ran(deployment: Deployment) -> None:
    url, _ = deployment
    client = get_sync_client(url=url, api_key=ALICE)
    tid = client.threads.create()["thread_id"]
    assert client.threads.get(tid)["status"] == "idle"
    with pytest.raises(ConflictError) as nothing:
        client.runs.create(tid, "agent",
                           command={"resume": {"decisions": [{"type": "approve"}]}})
    message = nothing.value.message
    assert "nothing to resume" in message and "input=" in message
    with pytest.raises(NotFoundError) as missing:
        client.threads.get("no-such-thread-here")
    for text in (message, missing.value.message):
        assert "agent." not in text  # nothing an HTTP client cannot do
    assert "POST /threads" in missing.value.message


@pytest.mark.postgres
def test_a_workers_run_streams_its_model_and_tool_events(tier: dict[str, Any]) -> None:
    """On the API-only server, a run made by a worker process streams what the worker does
    (relayed through Postgres ``NOTIFY``): the model's text as chunks and the tool's start and
    end in ``events`` mode, as Agent Inbox reads the current node from them."""
    server = api(tier, "api", "--langgraph-api")
    worker(tier, "worker")
    client = get_sync_client(url=server.url + "/langgraph", api_key=ALICE)
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(
        tid, "agent", input={"messages": [{"role": "user", "content": "sql SELECT 8"}]},
        stream_mode=["events", "messages-tuple"]))
    events = [p.data for p in parts if p.event == "events"]
    text = "".join(e["data"]["chunk"]["content"] for e in events
                   if e["event"] == "on_chat_model_stream")
    assert text == "Working on it."
    chunks = [p.data[0] for p in parts if p.event == "messages"]
    assert "".join(c["content"] for c in chunks if c["type"] == "AIMessageChunk") == text
    pending = client.threads.get_state(tid)["interrupts"][0]["id"]
    parts = list(client.runs.stream(tid, "agent", command={"resume": {pending: {
        "type": "approve"}}}, stream_mode="events"))
    seen = [(p.data["event"], p.data["name"]) for p in parts if p.event == "events"]
    assert ("on_tool_start", "execute_sql") in seen and ("on_tool_end", "execute_sql") in seen
    assert seen.index(("on_tool_start", "execute_sql")) < seen.index(
        ("on_tool_end", "execute_sql")) < seen.index(("on_chain_end", "LangGraph"))
    assert client.threads.get(tid)["status"] == "idle"
    assert _ran(tier["log"]) == [("execute_sql", {"query": "SELECT 8"})]


def test_a_run_whose_stream_the_client_left_still_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that stops reading ``runs.stream`` (its UI closed, a ``break``) does not stop
    the run, and the run's record still learns its end: ``runs.get`` says ``success`` once the
    tool ran and ``runs.join`` returns, instead of ``running`` for ever."""
    import time

    release = tmp_path / "release"
    monkeypatch.setenv("INTERLOCK_TEST_RELEASE", str(release))
    with langgraph_serve(tmp_path) as (proc, log):
        client = get_sync_client(url=proc.url + "/langgraph", api_key=ALICE)
        tid = client.threads.create()["thread_id"]
        client.runs.wait(tid, "agent", input={"messages": [
            {"role": "user", "content": "hang SELECT 9"}]})
        parts = client.runs.stream(tid, "agent", command={"resume": {"decisions": [
            {"type": "approve"}]}}, stream_mode="values")
        first = next(iter(parts))
        assert first.event == "metadata"
        run_id = first.data["run_id"]
        del parts  # the client leaves while the tool runs
        deadline = time.monotonic() + 30
        while ("hang_sql:started", {"query": "SELECT 9"}) not in _ran(log):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert client.runs.get(tid, run_id)["status"] in ("pending", "running")
        release.touch()
        joined = httpx.get(f"{proc.url}/langgraph/threads/{tid}/runs/{run_id}/join",
                           headers={"x-api-key": ALICE}, timeout=30)  # once the run ended
        assert joined.status_code == 200, joined.text
        assert client.runs.get(tid, run_id)["status"] == "success"
        assert client.threads.get(tid)["status"] == "idle"
        assert _ran(log).count(("hang_sql", {"query": "SELECT 9"})) == 1
