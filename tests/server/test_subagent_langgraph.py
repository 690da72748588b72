"""Sub-agents on the LangGraph-compatible API, driven by the real ``langgraph-sdk`` client
against a real ``interlock serve --langgraph-api`` process whose agent has sub-agents (and
whose ``--db`` becomes the store of the sub-agents too): a sub-agent's calls are interrupts of
the parent thread with their path in the value, resuming the parent with ``command.resume``
decides them by the child's rules, a question two levels down is answered the same way, a
sub-agent's thread is not listed by ``threads.search`` and resuming it is a 409 that names
the parent; in the Agent Inbox format the description shows the path."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError, PermissionDeniedError, UnprocessableEntityError

from .conftest import ALICE, BOB, TOKENS, bearer
from .live import ServeProcess
from .subagent_agents import EFFECTS_ENV

pytestmark = pytest.mark.slow


class Server:
    def __init__(self, proc: ServeProcess, effects: Path) -> None:
        self.proc = proc
        self.effects = effects
        self.url = proc.url + "/langgraph"

    def ran(self) -> list[str]:
        lines = self.effects.read_text().splitlines() if self.effects.exists() else []
        return [line.split("|")[0] + ":" + line.split("|")[-1] for line in lines]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("lg-sub")
    tokens = tmp / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    effects = tmp / "effects.log"
    proc = ServeProcess("serve", f"sqlite:///{tmp / 'lg.db'}", tokens, tmp / "exec.log",
                        extra_args=["--langgraph-api", "--expiry-interval", "0"],
                        agent="server.subagent_agents:make_lead",
                        env={EFFECTS_ENV: str(effects)})
    try:
        yield Server(proc, effects)
    finally:
        assert proc.stop() == 0


def _pending(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for i in state["values"]["__interrupt__"]:
        v = i["value"]
        name = v["action_requests"][0]["name"] if isinstance(v, dict) and \
            "action_requests" in v else "question"
        out[name] = i
    return out


def test_children_are_interrupts_of_the_parent(server: Server) -> None:
    client = get_sync_client(url=server.url, api_key=ALICE)
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "lead", input={
        "messages": [{"role": "user", "content": "clean up"}]})
    assert len(out["__interrupt__"]) == 2
    state = client.threads.get_state(tid)
    pending = _pending(state)
    assert set(pending) == {"delete_file", "drop_table"}
    dba = pending["drop_table"]["value"]
    path = dba["action_requests"][0]["path"]
    assert [(p["agent"], p["tool_name"]) for p in path] == [("lead", "dba"),
                                                            ("dba", "drop_table")]
    assert path[0]["thread_id"] == tid and path[1]["thread_id"] == f"{tid}@ask_dba"
    assert dba["review_configs"][0]["reviewers"] == ["dba"]
    assert [t["interrupts"][0]["id"] for t in state["tasks"]] == \
        [i["id"] for i in state["values"]["__interrupt__"]]

    # the sub-agents' threads are not listed; the parent is
    listed = {t["thread_id"] for t in client.threads.search(status="interrupted", limit=100)}
    assert tid in listed and not any("@" in t for t in listed)
    # resuming a sub-agent's thread directly: 409 naming the parent
    with pytest.raises(ConflictError) as refused:
        client.runs.create(f"{tid}@ask_dba", "lead", command={"resume": {
            pending["drop_table"]["id"]: {"type": "approve"}}})
    assert "SubAgentThread" in str(refused.value.response.text)
    assert refused.value.response.json()["root_thread_id"] == tid

    # the child's rules: bob lacks the dba role; edit into the child's tool with a string
    # argument that the child's schema takes as it is
    bob = get_sync_client(url=server.url, api_key=BOB)
    with pytest.raises(PermissionDeniedError):
        bob.runs.create(tid, "lead", command={"resume": {
            pending["drop_table"]["id"]: {"type": "approve"}}})
    with pytest.raises(UnprocessableEntityError) as bad:
        client.runs.create(tid, "lead", command={"resume": {
            pending["drop_table"]["id"]: {"type": "respond", "message": "no"}}})
    assert "respond" in bad.value.message
    assert server.ran() == []
    out = client.runs.wait(tid, "lead", command={"resume": {
        pending["drop_table"]["id"]: {"type": "edit", "edited_action": {
            "name": "drop_table", "args": {"name": "tmp"}}}}})
    assert [i["id"] for i in out["__interrupt__"]] == [pending["delete_file"]["id"]]
    assert server.ran() == ["drop_table:tmp"]
    # Agent Inbox's response shape, on the parent, for the researcher's call
    final = client.runs.wait(tid, "lead", command={"resume": {
        pending["delete_file"]["id"]: {"type": "response", "args": "keep the notes"}}})
    assert "__interrupt__" not in final
    assert final["messages"][-1]["content"].startswith("lead: ")
    assert "keep the notes" in final["messages"][-1]["content"]
    assert server.ran() == ["drop_table:tmp"]
    assert client.threads.get(tid)["status"] == "idle"
    with pytest.raises(ConflictError):
        client.runs.create(tid, "lead", command={"resume": {
            pending["drop_table"]["id"]: {"type": "approve"}}})
    audit = httpx.get(f"{server.proc.url}/api/threads/{tid}/audit",
                      params={"subagents": "true"}, headers=bearer(ALICE)).json()["records"]
    assert {(a["thread_id"], a["data"]["via_thread_id"]) for a in audit
            if a["kind"] == "decision"} == {(f"{tid}@ask_dba", tid),
                                            (f"{tid}@ask_researcher", tid)}


def test_question_two_levels_down_and_inbox_format(server: Server) -> None:
    client = get_sync_client(url=server.url, api_key=ALICE)
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "lead", input={
        "messages": [{"role": "user", "content": "paint the kitchen"}]})
    state = client.threads.get_state(tid)
    (question,) = state["values"]["__interrupt__"]
    assert question["value"] == {"question": "Which colour for the kitchen?"}
    # the Agent Inbox format (under /agent-inbox) shows the path in the description
    inbox = get_sync_client(url=server.url + "/agent-inbox", api_key=ALICE)
    (shown,) = inbox.threads.get_state(tid)["values"]["__interrupt__"]
    assert "Raised inside a sub-agent: ` lead: manager › manager: painter › painter: paint `" \
        in shown["value"]["description"]
    # the interrupt's own path is in the thread as the HTTP API shows it
    detail = httpx.get(f"{server.proc.url}/api/threads/{tid}", headers=bearer(ALICE)).json()
    assert [p["agent"] for p in detail["interrupts"][0]["path"]] == ["lead", "manager",
                                                                     "painter"]
    final = client.runs.wait(tid, "lead", command={"resume": {question["id"]: "green"}})
    assert final["messages"][-1]["content"] == \
        "lead: manager=manager: painter: painted the kitchen green"
    assert server.ran()[-1] == "paint:kitchen=green"
