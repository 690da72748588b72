"""The LangGraph-compatible API (``interlock serve --langgraph-api``) driven by the real
``langgraph-sdk`` client, sync and async, against a real ``interlock serve`` process: threads,
runs that pause, ``__interrupt__`` in the thread state, every decision through
``command.resume`` (keyed per interrupt id, several pending calls), streamed events, thread
search by status, roles, errors and the audit log; each tool runs exactly once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)

from .conftest import ALICE, BOB, CAROL, bearer
from .live import ServeProcess, langgraph_serve

pytestmark = pytest.mark.slow


class Server:
    def __init__(self, proc: ServeProcess, exec_log: Path) -> None:
        self.proc = proc
        self.exec_log = exec_log
        self.url = proc.url + "/langgraph"

    def executions(self) -> list[tuple[str, dict[str, Any]]]:
        if not self.exec_log.exists():
            return []
        rows = [json.loads(line) for line in self.exec_log.read_text().splitlines()]
        return [(r["name"], r["args"]) for r in rows]

    def audit(self, thread_id: str) -> list[dict[str, Any]]:
        r = httpx.get(f"{self.proc.url}/api/threads/{thread_id}/audit", headers=bearer(ALICE))
        r.raise_for_status()
        records: list[dict[str, Any]] = r.json()["records"]
        return records


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with langgraph_serve(tmp_path_factory.mktemp("langgraph")) as (proc, log):
        yield Server(proc, log)


def _ids(state: dict[str, Any]) -> list[str]:
    return [i["id"] for i in state["values"]["__interrupt__"]]


def _names(values: dict[str, Any]) -> list[str]:
    return [i["value"]["action_requests"][0]["name"] for i in values["__interrupt__"]]


BATCH = {"messages": [{"role": "user", "content": "batch"}]}


def test_sync_client_every_decision_keyed_per_interrupt(server: Server) -> None:
    client = get_sync_client(url=server.url, api_key=ALICE)
    (assistant,) = client.assistants.search()
    assert assistant["graph_id"] == "agent"
    assert client.assistants.get(assistant["assistant_id"])["graph_id"] == "agent"

    thread = client.threads.create()
    tid = thread["thread_id"]
    assert thread["status"] == "idle"
    before = server.executions()

    out = client.runs.wait(tid, "agent", input=BATCH)
    assert _names(out) == ["execute_sql", "write_file", "set_limit", "ask_user"]
    state = client.threads.get_state(tid)
    ids = _ids(state)
    assert len(set(ids)) == 4
    assert state["next"] == ["tools"]
    assert [t["interrupts"][0]["id"] for t in state["tasks"]] == ids
    first = state["values"]["__interrupt__"][0]["value"]
    assert first["action_requests"][0]["args"] == {"query": "DELETE FROM t"}
    assert first["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject",
                                                               "respond"]
    assert client.threads.get(tid)["status"] == "interrupted"
    assert tid in {t["thread_id"] for t in client.threads.search(status="interrupted")}
    assert tid not in {t["thread_id"] for t in client.threads.search(status="idle")}

    # a wrong resume: the core refuses it with its own message and nothing changes
    with pytest.raises(UnprocessableEntityError) as bad:
        client.runs.create(tid, "agent", command={"resume": {ids[2]: {
            "type": "edit", "edited_action": {"name": "set_limit", "args": {"n": 5}}}}})
    assert "set_limit" in bad.value.message and "even" in bad.value.message
    with pytest.raises(UnprocessableEntityError) as bad_type:
        client.runs.create(tid, "agent", command={"resume": {ids[3]: {"type": "approve"}}})
    assert "does not allow" in bad_type.value.message and "respond, reject" in \
        bad_type.value.message
    assert _ids(client.threads.get_state(tid)) == ids
    assert server.executions() == before

    # approve, reject, edit and respond in one resume, streamed
    parts = list(client.runs.stream(tid, "agent", command={"resume": {
        ids[0]: {"type": "approve"},
        ids[1]: {"type": "reject", "message": "not that file"},
        ids[2]: {"type": "edit", "edited_action": {"name": "set_limit", "args": {"n": 6}}},
        ids[3]: {"type": "respond", "message": "eu-west"},
    }}, stream_mode=["values", "updates", "events"]))
    kinds = [p.event for p in parts]
    assert kinds[0] == "metadata" and {"values", "updates", "events"} <= set(kinds)
    started = [p.data["name"] for p in parts
               if p.event == "events" and p.data["event"] == "on_tool_start"]
    assert started == ["execute_sql", "set_limit"]
    final = [p.data for p in parts if p.event == "values"][-1]
    assert "__interrupt__" not in final
    messages = final["messages"]
    assert messages[-1]["type"] == "ai" and messages[-1]["content"].startswith("Done.")
    results = {m["tool_call_id"]: m for m in messages if m["type"] == "tool"}
    assert results["call_1_1"]["status"] == "error" and "not that file" in \
        results["call_1_1"]["content"]
    assert results["call_1_3"]["content"] == "eu-west"

    assert server.executions()[len(before):] == [
        ("execute_sql", {"query": "DELETE FROM t"}), ("set_limit", {"n": 6, "reason": ""})]
    assert client.threads.get(tid)["status"] == "idle"
    assert tid in {t["thread_id"] for t in client.threads.search(status="idle", limit=50)}
    decisions = [r for r in server.audit(tid) if r["kind"] == "decision"]
    assert sorted(r["data"]["type"] for r in decisions) == ["approve", "edit", "reject",
                                                            "respond"]
    assert {r["actor"] for r in decisions} == {"alice"}

    # answering the same interrupts again: 409, nothing runs
    with pytest.raises(ConflictError):
        client.runs.create(tid, "agent", command={"resume": {ids[0]: {"type": "approve"}}})
    assert len(server.executions()) == len(before) + 2


@pytest.mark.anyio
async def test_async_client_pause_resume_roles_and_errors(server: Server) -> None:
    async with get_client(url=server.url, api_key=ALICE) as client:
        thread = await client.threads.create(metadata={"graph_id": "agent"})
        tid = thread["thread_id"]
        run = await client.runs.create(tid, "agent", input={
            "messages": [{"role": "user", "content": "drop audit_old"}]})
        await client.runs.join(tid, run["run_id"])
        state = await client.threads.get_state(tid)
        (pending,) = state["values"]["__interrupt__"]
        assert pending["value"]["review_configs"][0]["reviewers"] == ["dba"]
        found = await client.threads.search(status="interrupted",
                                            metadata={"graph_id": "agent"}, limit=100)
        assert tid in {t["thread_id"] for t in found}
        assert await client.threads.search(metadata={"graph_id": "other"}) == []

        # carol has no dba role and did not start the thread: the core refuses her, and the
        # thread is not hers to read either
        async with get_client(url=server.url, api_key=CAROL) as carol:
            with pytest.raises(PermissionDeniedError) as denied:
                await carol.runs.create(
                    tid, "agent", command={"resume": {pending["id"]: {"type": "approve"}}})
            assert "may not read" in denied.value.message
            with pytest.raises(PermissionDeniedError):
                await carol.threads.get_state(tid)
            assert tid not in {t["thread_id"] for t in await carol.threads.search(limit=100)}
        async with get_client(url=server.url, api_key="not-a-valid-token-000") as nobody:
            with pytest.raises(AuthenticationError):
                await nobody.threads.get(tid)
        with pytest.raises(NotFoundError):
            await client.threads.get("no-such-thread")
        with pytest.raises(NotFoundError):
            await client.runs.create(tid, "no-such-assistant", command={"resume": []})

        before = len(server.executions())
        events = [p async for p in client.runs.stream(
            tid, "agent", command={"resume": {"decisions": [{"type": "approve"}]}},
            stream_mode="events")]
        assert any(p.event == "events" and p.data["event"] == "on_tool_end"
                   and p.data["name"] == "drop_table" for p in events)
        assert server.executions()[before:] == [("drop_table", {"table": "audit_old"})]
        thread = await client.threads.get(tid)
        assert thread["status"] == "idle" and thread["interrupts"] == {}
        with pytest.raises(httpx.HTTPStatusError) as again:  # runs.wait's usual error
            await client.runs.wait(tid, "agent", command={"resume": {"decisions": [
                {"type": "approve"}]}})
        assert again.value.response.status_code == 409
        assert "NoPendingInterrupt" in again.value.response.text


def _inbox_interrupts(thread: dict[str, Any]) -> list[dict[str, Any]]:
    """What Agent Inbox reads: the first interrupt of each task in ``thread.interrupts``."""
    values = [items[0]["value"] for items in thread["interrupts"].values()]
    for v in values:  # a HITL-shaped value would make the inbox take another code path
        assert "action_requests" not in v and {"action_request", "config"} <= set(v)
    return values


def test_agent_inbox_responses_on_a_batch(server: Server) -> None:
    inbox = get_sync_client(url=server.url + "/agent-inbox", api_key=ALICE)
    tid = inbox.threads.create()["thread_id"]
    inbox.runs.wait(tid, "agent", input=BATCH)
    before = len(server.executions())

    # the inbox lists interrupted threads of its graph, then reads each one
    listed = inbox.threads.search(offset=0, limit=10, status="interrupted",
                                  metadata={"graph_id": "agent"})
    assert tid in {t["thread_id"] for t in listed}
    shown = _inbox_interrupts(inbox.threads.get(tid))
    assert [v["action_request"]["action"] for v in shown] == [
        "execute_sql", "write_file", "set_limit", "ask_user"]
    assert shown[0]["config"] == {"allow_accept": True, "allow_edit": True,
                                  "allow_respond": True, "allow_ignore": True}
    assert shown[3]["config"]["allow_accept"] is False
    assert shown[3]["config"]["allow_edit"] is False
    assert "\n```text\n" in shown[0]["description"]  # the policy's text, fenced
    assert "Tool: execute_sql" in shown[0]["description"]

    def send(response: dict[str, Any]) -> list[Any]:
        """As the inbox submits accept / edit / response: a one-item list, streamed."""
        return list(inbox.runs.stream(tid, "agent", command={"resume": [response]},
                                      stream_mode="events"))

    # accept the first pending call (args are the unchanged action request)
    parts = send({"type": "accept", "args": shown[0]["action_request"]})
    nodes = {p.data["metadata"].get("langgraph_node") for p in parts
             if p.event == "events" and p.data["event"] == "on_chain_start"}
    assert "tools" in nodes
    assert server.executions()[before:] == [("execute_sql", {"query": "DELETE FROM t"})]

    # a text response to write_file: the tool does not run, the text is its result
    send({"type": "response", "args": "Please write to c.txt instead."})
    shown = _inbox_interrupts(inbox.threads.get(tid))
    assert [v["action_request"]["action"] for v in shown] == ["set_limit", "ask_user"]

    # accept carrying changed args is refused (that would be an edit)
    with pytest.raises(UnprocessableEntityError) as changed:
        send({"type": "accept", "args": {"action": "set_limit", "args": {"n": 10}}})
    assert "edit" in changed.value.message
    # edits arrive as strings; an odd limit is refused by the tool's own validation
    with pytest.raises(UnprocessableEntityError) as odd:
        send({"type": "edit", "args": {"action": "set_limit", "args": {"n": "7",
                                                                       "reason": "ops"}}})
    assert "even" in odd.value.message
    assert len(_inbox_interrupts(inbox.threads.get(tid))) == 2
    send({"type": "edit", "args": {"action": "set_limit", "args": {"n": "8", "reason": "ops"}}})
    assert server.executions()[before + 1:] == [("set_limit", {"n": 8, "reason": "ops"})]

    # ignore the last one (the inbox sends it with runs.create): the call is cancelled
    run = inbox.runs.create(tid, "agent", command={"resume": [{"type": "ignore",
                                                               "args": None}]})
    assert run["status"] == "success"
    thread = inbox.threads.get(tid)
    assert thread["status"] == "idle" and thread["interrupts"] == {}
    results = {m["tool_call_id"]: m for m in thread["values"]["messages"] if m["type"] == "tool"}
    assert results["call_1_1"]["content"] == "Please write to c.txt instead."
    assert results["call_1_3"]["status"] == "error" and "cancel" in \
        results["call_1_3"]["content"].lower()
    assert len(server.executions()) == before + 2
    kinds = [r["kind"] for r in server.audit(tid)]
    assert kinds.count("decision") == 3 and kinds.count("cancelled") == 1


def test_agent_inbox_question_and_mark_resolved(server: Server) -> None:
    inbox = get_sync_client(url=server.url + "/agent-inbox", api_key=ALICE)
    # an interrupt() question is shown as a HumanInterrupt that takes a text response
    q = inbox.threads.create()["thread_id"]
    inbox.runs.wait(q, "agent", input={"messages": [{"role": "user", "content": "pick"}]})
    (question,) = _inbox_interrupts(inbox.threads.get(q))
    assert question["config"]["allow_respond"] is True
    assert question["action_request"]["args"] == {"question": {"question": "Which colour?"}}
    before = len(server.executions())
    list(inbox.runs.stream(q, "agent", command={"resume": [{"type": "response",
                                                            "args": "blue"}]},
                           stream_mode="events"))
    assert server.executions()[before:] == [("pick_colour", {"answer": "blue"})]

    # "mark as resolved": update_state(values=None, as_node="__end__") cancels the request
    r = inbox.threads.create()["thread_id"]
    inbox.runs.wait(r, "agent", input={"messages": [{"role": "user",
                                                     "content": "sql DELETE FROM x"}]})
    inbox.threads.update_state(r, None, as_node="__end__")
    assert inbox.threads.get(r)["status"] == "idle"
    assert len(server.executions()) == before + 1
    with pytest.raises(UnprocessableEntityError):
        inbox.threads.update_state(r, {"messages": []})


def test_a_resume_of_an_answered_interrupt_says_it_was_answered(server: Server) -> None:
    """A resume keyed by an interrupt id that was answered meanwhile (a second reviewer, a
    double submit) on a thread with nothing else pending is 409 StaleInterrupt naming that id,
    as when other calls are still pending: not NoPendingInterrupt, which tells the sender
    to send a new message instead. Nothing is stored or run."""
    client = get_sync_client(url=server.url, api_key=ALICE)
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "agent", input={"messages": [
        {"role": "user", "content": "sql SELECT 'answered once'"}]})
    (shown,) = out["__interrupt__"]
    command: Any = {"resume": {shown["id"]: {"type": "approve"}}}
    assert "__interrupt__" not in client.runs.wait(tid, "agent", command=command)
    ran, rows = server.executions(), len(server.audit(tid))
    assert ran[-1] == ("execute_sql", {"query": "SELECT 'answered once'"})

    with pytest.raises(ConflictError) as created:
        client.runs.create(tid, "agent", command=command)
    with pytest.raises(ConflictError) as streamed:
        list(client.runs.stream(tid, "agent", command=command, stream_mode="updates"))
    with pytest.raises(httpx.HTTPStatusError) as waited:
        client.runs.wait(tid, "agent", command=command)
    bodies = [created.value.body, streamed.value.body, waited.value.response.json()]
    for body in bodies:
        assert isinstance(body, dict) and body["error"] == "StaleInterrupt", body
        assert shown["id"] in body["message"] and "already answered" in body["message"]
        assert "new message" not in body["message"] and "input=" not in body["message"]
    assert waited.value.response.status_code == 409
    assert server.executions() == ran and len(server.audit(tid)) == rows
    assert client.threads.get(tid)["status"] == "idle"


def test_every_operation_the_sdk_has_and_interlock_does_not_says_so(server: Server) -> None:
    """Each ``langgraph-sdk`` method whose operation interlock does not do (an assistant's
    graph, schemas, subgraphs, versions; creating, updating, deleting or counting assistants;
    re-joining a run's or a thread's stream; batches of runs, cancelling runs; crons; the
    store) raises the SDK's ``UnprocessableEntityError`` with ``UnsupportedOperation`` and a
    message saying what to do instead: not a bare 404 "Not Found" (which reads as a wrong
    assistant or run id) or 405. Nothing changes."""
    client = get_sync_client(url=server.url, api_key=ALICE)
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "agent", input={"messages": [
        {"role": "user", "content": "sql SELECT 'unsupported'"}]}, stream_resumable=True)
    assert "__interrupt__" in client.runs.join(tid, run["run_id"])
    state, ran = client.threads.get_state(tid), server.executions()
    (assistant,) = client.assistants.search()
    aid = assistant["assistant_id"]
    calls: dict[str, Any] = {
        "assistants.get_graph": lambda: client.assistants.get_graph(aid),
        "assistants.get_schemas": lambda: client.assistants.get_schemas("agent"),
        "assistants.get_subgraphs": lambda: client.assistants.get_subgraphs(aid),
        "assistants.create": lambda: client.assistants.create("agent"),
        "assistants.update": lambda: client.assistants.update(aid, name="renamed"),
        "assistants.delete": lambda: client.assistants.delete(aid),
        "assistants.get_versions": lambda: client.assistants.get_versions(aid),
        "assistants.set_latest": lambda: client.assistants.set_latest(aid, 1),
        "assistants.count": lambda: client.assistants.count(),
        "runs.join_stream": lambda: list(client.runs.join_stream(
            tid, run["run_id"], last_event_id="-1")),
        "threads.join_stream": lambda: list(client.threads.join_stream(tid)),
        "runs.create_batch": lambda: client.runs.create_batch([{
            "assistant_id": "agent", "input": {"messages": [
                {"role": "user", "content": "sql SELECT 'batch'"}]}}]),
        "runs.cancel_many": lambda: client.runs.cancel_many(thread_id=tid,
                                                            run_ids=[run["run_id"]]),
        "crons.create": lambda: client.crons.create("agent", schedule="* * * * *"),
        "crons.create_for_thread": lambda: client.crons.create_for_thread(
            tid, "agent", schedule="* * * * *"),
        "crons.update": lambda: client.crons.update("c1", schedule="* * * * *"),
        "crons.delete": lambda: client.crons.delete("c1"),
        "crons.search": lambda: client.crons.search(),
        "crons.count": lambda: client.crons.count(),
        "store.put_item": lambda: client.store.put_item(["notes"], "k", {"v": 1}),
        "store.get_item": lambda: client.store.get_item(["notes"], "k"),
        "store.delete_item": lambda: client.store.delete_item(["notes"], "k"),
        "store.search_items": lambda: client.store.search_items(["notes"]),
        "store.list_namespaces": lambda: client.store.list_namespaces(),
    }
    wrong = {}
    for name, call in calls.items():
        try:
            call()
        except UnprocessableEntityError as exc:
            body = exc.body
            if not (isinstance(body, dict) and body.get("error") == "UnsupportedOperation"
                    and "is not supported by interlock's LangGraph API" in body["message"]):
                wrong[name] = body
        except Exception as exc:  # every other outcome is what this test looks for
            wrong[name] = f"{type(exc).__name__}: {exc}"
        else:
            wrong[name] = "no error"
    assert wrong == {}
    assert client.threads.get_state(tid) == state and server.executions() == ran


def test_a_resume_sent_for_a_checkpoint_the_thread_has_left_is_a_conflict(
        server: Server) -> None:
    """A client binds its resume to the state it was shown by sending that state's checkpoint
    (``runs.create(..., command=..., checkpoint=state["checkpoint"])``). When the thread moved
    on meanwhile (bob approved the call alice was shown, and the agent asked for another),
    the resume is 409 StaleCheckpoint (the SDK's ``ConflictError``) and nothing is stored
    or run: not 422 UnsupportedCheckpoint telling the client to send it again without the
    checkpoint, which would approve a call alice was never shown. Sent with the thread's
    latest checkpoint, the same resume is an ordinary one."""
    alice = get_sync_client(url=server.url, api_key=ALICE)
    bob = get_sync_client(url=server.url, api_key=BOB)
    tid = alice.threads.create()["thread_id"]
    alice.runs.wait(tid, "agent", input={"messages": [
        {"role": "user", "content": "twice SELECT 'bound'"}]})
    seen = alice.threads.get_state(tid)
    (shown,) = seen["interrupts"]
    assert shown["value"]["action_requests"][0]["args"] == {"query": "SELECT 'bound'"}
    bob.runs.wait(tid, "agent", command={"resume": {shown["id"]: {"type": "approve"}}})
    (now,) = alice.threads.get_state(tid)["interrupts"]
    assert now["value"]["action_requests"][0]["args"] == {"query": "SELECT 'bound' -- again"}
    ran, rows = server.executions(), len(server.audit(tid))

    approve: Any = {"resume": {"decisions": [{"type": "approve"}]}}
    with pytest.raises(ConflictError) as created:
        alice.runs.create(tid, "agent", command=approve, checkpoint=seen["checkpoint"])
    with pytest.raises(ConflictError) as streamed:
        list(alice.runs.stream(tid, "agent", command=approve,
                               checkpoint_id=seen["checkpoint"]["checkpoint_id"]))
    with pytest.raises(httpx.HTTPStatusError) as waited:
        alice.runs.wait(tid, "agent", command={"goto": "__end__"},
                        checkpoint=seen["checkpoint"])
    assert waited.value.response.status_code == 409
    for body in (created.value.body, streamed.value.body, waited.value.response.json()):
        assert isinstance(body, dict) and body["error"] == "StaleCheckpoint", body
        assert seen["checkpoint"]["checkpoint_id"] in body["message"]
        assert "without a checkpoint" not in body["message"]
    assert server.executions() == ran and len(server.audit(tid)) == rows
    assert [i["id"] for i in alice.threads.get_state(tid)["interrupts"]] == [now["id"]]

    latest = alice.threads.get_state(tid)["checkpoint"]
    out = alice.runs.wait(tid, "agent", command=approve, checkpoint=latest)
    assert "__interrupt__" not in out
    assert server.executions()[len(ran):] == [
        ("execute_sql", {"query": "SELECT 'bound' -- again"})]


def test_history_filters_are_applied(server: Server) -> None:
    """``threads.get_history(metadata=..., checkpoint=...)`` lists only the states that match,
    as LangGraph filters them: the thread's one state when it matches, else none (not the
    state whatever the filter, which a client would take for a match)."""
    client = get_sync_client(url=server.url, api_key=ALICE)
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "agent", input={"messages": [
        {"role": "user", "content": "sql SELECT 'history'"}]})
    state = client.threads.get_state(tid)
    head, step = state["checkpoint"], state["metadata"]["step"]

    def ids(**filters: Any) -> list[str]:
        return [h["checkpoint"]["checkpoint_id"]
                for h in client.threads.get_history(tid, **filters)]

    assert ids() == [head["checkpoint_id"]]
    assert ids(metadata={"step": step}) == [head["checkpoint_id"]]
    assert ids(metadata={"step": step + 5}) == []
    assert ids(metadata={"source": "fork"}) == []
    assert ids(checkpoint={"checkpoint_id": head["checkpoint_id"]}) == [head["checkpoint_id"]]
    assert ids(checkpoint=state["parent_checkpoint"]) == []
    assert ids(checkpoint={"checkpoint_ns": "tools:1"}) == []


def test_a_stateless_run_asked_to_delete_its_thread_is_refused(server: Server) -> None:
    """A stateless run (``thread_id=None``) with ``on_completion="delete"`` asks for its
    thread to be deleted when it ends; interlock keeps every thread with its audit log, so
    the run is refused (422 UnsupportedOption) and nothing is created or run, rather than
    keeping the thread the client asked to delete. ``keep`` (or nothing) runs as usual, and
    the thread stays readable."""
    client = get_sync_client(url=server.url, api_key=ALICE)
    message = {"messages": [{"role": "user", "content": "sql SELECT 'stateless'"}]}

    def threads() -> set[str]:
        return {t["thread_id"] for t in client.threads.search(limit=1000)}

    before = threads()
    with pytest.raises(UnprocessableEntityError) as created:
        client.runs.create(None, "agent", input=message, on_completion="delete")
    with pytest.raises(UnprocessableEntityError) as streamed:
        list(client.runs.stream(None, "agent", input=message, on_completion="delete"))
    with pytest.raises(httpx.HTTPStatusError) as waited:
        client.runs.wait(None, "agent", input=message, on_completion="delete")
    assert waited.value.response.status_code == 422
    for body in (created.value.body, streamed.value.body, waited.value.response.json()):
        assert isinstance(body, dict) and body["error"] == "UnsupportedOption", body
        assert "on_completion" in body["message"]
    assert threads() == before

    run = client.runs.create(None, "agent", input=message, on_completion="keep")
    assert "__interrupt__" in client.runs.join(run["thread_id"], run["run_id"])
    assert threads() == before | {run["thread_id"]}
