"""Invariant 1 for responses sent without an interrupt id, against a real ``interlock serve``
process, through the real ``langgraph-sdk`` client (``/langgraph``) and the HTTP API
(``/api``): such a response decides the calls pending *now* by position, so when the thread
moved on to a new request after its sender last read it (another reviewer answered what they
were shown and the agent asked about a new call, or their own first submit did) it is refused
with 409 UnseenRequest, and nothing is stored or run. After the sender reads the thread again
the same response is accepted; a client that never read the thread works as before."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError

from .conftest import ADMIN, ALICE, BOB, bearer
from .live import ServeProcess, langgraph_serve

pytestmark = pytest.mark.slow

UNKEYED = {"decisions": [{"type": "approve"}]}
"""What the Agent Chat UI sends: no interrupt id."""
INBOX_ACCEPT = [{"type": "accept", "args": None}]
"""What the Agent Inbox sends: no interrupt id."""


class Server:
    def __init__(self, proc: ServeProcess, exec_log: Path) -> None:
        self.proc = proc
        self.exec_log = exec_log
        self.url = proc.url + "/langgraph"

    def ran(self, query: str) -> int:
        """How many times execute_sql ran with ``query``."""
        if not self.exec_log.exists():
            return 0
        rows = [json.loads(line) for line in self.exec_log.read_text().splitlines()]
        return sum(1 for r in rows if r["name"] == "execute_sql" and r["args"] == {
            "query": query})

    def api(self, method: str, path: str, token: str, **kw: Any) -> httpx.Response:
        return httpx.request(method, f"{self.proc.url}/api{path}", headers=bearer(token),
                             timeout=30, **kw)

    def audit_rows(self, thread_id: str) -> int:
        r = self.api("GET", f"/threads/{thread_id}/audit", ADMIN)
        r.raise_for_status()
        return len(r.json()["records"])

    def pending_query(self, thread_id: str) -> str | None:
        """The query of the call pending on the thread, read by an admin (not the reviewers
        under test, whose reads are what the server records)."""
        r = self.api("GET", f"/threads/{thread_id}", ADMIN)
        r.raise_for_status()
        body = r.json()
        if body["status"] != "interrupted":
            return None
        return str(body["interrupts"][0]["value"]["action_requests"][0]["args"]["query"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with langgraph_serve(tmp_path_factory.mktemp("unseen")) as (proc, log):
        yield Server(proc, log)


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _query(values: dict[str, Any]) -> str:
    return str(values["__interrupt__"][0]["value"]["action_requests"][0]["args"]["query"])


def _message(start: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"twice {start}"}]}


# -- /langgraph -------------------------------------------------------------------------------


def test_an_unkeyed_resume_never_approves_the_next_turn_its_sender_was_not_shown(
        server: Server) -> None:
    """alice reads the first request; bob approves it by its interrupt id and the agent asks
    about a second call; alice's unkeyed approve would now decide that second call: 409
    UnseenRequest, nothing stored or run. After she reads the state again, it is accepted."""
    alice = get_sync_client(url=server.url, api_key=ALICE)
    bob = get_sync_client(url=server.url, api_key=BOB)
    tid = alice.threads.create()["thread_id"]
    out = alice.runs.wait(tid, "agent", input=_message("SELECT 42"))
    assert _query(out) == "SELECT 42"
    seen = alice.threads.get_state(tid)
    assert _query(seen["values"]) == "SELECT 42"

    first = bob.threads.get_state(tid)["interrupts"][0]["id"]
    bob.runs.wait(tid, "agent", command={"resume": {first: {"type": "approve"}}})
    assert server.pending_query(tid) == "SELECT 42 -- again"
    assert server.ran("SELECT 42") == 1
    rows = server.audit_rows(tid)

    for resume in (UNKEYED, INBOX_ACCEPT, {"type": "approve"}):
        with pytest.raises(ConflictError) as refused:
            alice.runs.create(tid, "agent", command={"resume": resume})
        assert refused.value.body["error"] == "UnseenRequest", refused.value.body
        message = refused.value.body["message"]
        assert "Nothing was stored or run" in message and "Read the thread again" in message
    with pytest.raises(ConflictError):
        list(alice.runs.stream(tid, "agent", command={"resume": UNKEYED},
                               stream_mode="values"))
    assert server.ran("SELECT 42 -- again") == 0
    assert server.audit_rows(tid) == rows
    assert server.pending_query(tid) == "SELECT 42 -- again"

    # alice reads the thread again: she is shown the second call, and answers it
    assert _query(alice.threads.get_state(tid)["values"]) == "SELECT 42 -- again"
    alice.runs.wait(tid, "agent", command={"resume": UNKEYED})
    assert server.ran("SELECT 42 -- again") == 1
    assert alice.threads.get(tid)["status"] == "idle"


def test_an_unkeyed_double_submit_never_approves_the_call_raised_in_between(
        server: Server) -> None:
    """alice's unkeyed approve of the first call, sent twice: the second copy arrives after
    the agent asked about the next call, which alice was never shown: refused."""
    alice = get_sync_client(url=server.url, api_key=ALICE)
    tid = alice.threads.create()["thread_id"]
    alice.runs.wait(tid, "agent", input=_message("SELECT 7"))
    alice.runs.create(tid, "agent", command={"resume": INBOX_ACCEPT})
    _until(lambda: server.pending_query(tid) == "SELECT 7 -- again", "the second call")
    rows = server.audit_rows(tid)
    with pytest.raises(ConflictError) as refused:
        alice.runs.create(tid, "agent", command={"resume": INBOX_ACCEPT})
    assert refused.value.body["error"] == "UnseenRequest"
    assert server.ran("SELECT 7") == 1 and server.ran("SELECT 7 -- again") == 0
    assert server.audit_rows(tid) == rows


def test_a_client_that_never_read_the_thread_answers_by_position_as_before(
        server: Server) -> None:
    """A script that starts runs and answers without reading anything (no response to it
    showed the thread's requests) is not refused: nothing is known of what it was shown."""
    alice = get_sync_client(url=server.url, api_key=ALICE)
    tid = alice.threads.create()["thread_id"]
    alice.runs.create(tid, "agent", input=_message("SELECT 8"))
    _until(lambda: server.pending_query(tid) == "SELECT 8", "the first call")
    alice.runs.create(tid, "agent", command={"resume": UNKEYED})
    _until(lambda: server.pending_query(tid) == "SELECT 8 -- again", "the second call")
    alice.runs.create(tid, "agent", command={"resume": UNKEYED})
    _until(lambda: server.ran("SELECT 8 -- again") == 1, "the second call to run")
    assert server.ran("SELECT 8") == 1


def test_agent_inbox_answers_two_turns_unkeyed_after_reloading(server: Server) -> None:
    """Agent Inbox's way: it reads with threads.search and answers ``[HumanResponse]``
    without an interrupt id, streaming the run in ``events`` mode or creating it; each turn
    after a reload is accepted (and the resume run's own stream shows the next request)."""
    inbox_url = server.proc.url + "/langgraph/agent-inbox"
    alice = get_sync_client(url=inbox_url, api_key=ALICE)
    tid = alice.threads.create()["thread_id"]
    alice.runs.create(tid, "agent", input=_message("SELECT 9"))
    _until(lambda: server.pending_query(tid) == "SELECT 9", "the first call")

    def reload() -> dict[str, Any]:
        found = {t["thread_id"]: t for t in alice.threads.search(status="interrupted",
                                                                  limit=100)}
        return found[tid]

    shown = reload()
    (first,) = shown["interrupts"].values()
    assert first[0]["value"]["action_request"]["args"] == {"query": "SELECT 9"}
    list(alice.runs.stream(tid, "agent", command={"resume": INBOX_ACCEPT},
                           stream_mode="events"))
    assert server.ran("SELECT 9") == 1
    shown = reload()
    (second,) = shown["interrupts"].values()
    assert second[0]["value"]["action_request"]["args"] == {"query": "SELECT 9 -- again"}
    alice.runs.create(tid, "agent", command={"resume": INBOX_ACCEPT})
    _until(lambda: server.ran("SELECT 9 -- again") == 1, "the second call to run")


@pytest.mark.parametrize("mode", ["values", "updates", "events"])
def test_what_a_stream_showed_binds_an_unkeyed_resume(server: Server, mode: str) -> None:
    """Agent Chat UI's way: it streams its runs and answers without an interrupt id. What
    the stream showed counts as read: the resume run's own stream shows the next request,
    which is then accepted; a request raised after the stream (bob answered) is refused."""
    alice = get_sync_client(url=server.url, api_key=ALICE)
    bob = get_sync_client(url=server.url, api_key=BOB)
    tid = alice.threads.create()["thread_id"]
    list(alice.runs.stream(tid, "agent", input=_message(f"SELECT 10 -- {mode}"),
                           stream_mode=mode))
    list(alice.runs.stream(tid, "agent", command={"resume": UNKEYED}, stream_mode=mode))
    assert server.pending_query(tid) == f"SELECT 10 -- {mode} -- again"
    list(alice.runs.stream(tid, "agent", command={"resume": UNKEYED}, stream_mode=mode))
    assert server.ran(f"SELECT 10 -- {mode} -- again") == 1

    tid = alice.threads.create()["thread_id"]
    list(alice.runs.stream(tid, "agent", input=_message(f"SELECT 11 -- {mode}"),
                           stream_mode=mode))
    first = bob.threads.get_state(tid)["interrupts"][0]["id"]
    bob.runs.wait(tid, "agent", command={"resume": {first: {"type": "approve"}}})
    with pytest.raises(ConflictError) as refused:
        list(alice.runs.stream(tid, "agent", command={"resume": UNKEYED}, stream_mode=mode))
    assert refused.value.body["error"] == "UnseenRequest"
    assert server.ran(f"SELECT 11 -- {mode} -- again") == 0


# -- /api -------------------------------------------------------------------------------------


def test_api_decisions_without_interrupt_id_never_approve_a_request_not_shown(
        server: Server) -> None:
    """The same on ``POST /api/threads/{id}/decisions`` with ``decisions`` as a list and no
    ``interrupt_id``: refused after the thread moved on past what alice last read; accepted
    after she reads it again. Keyed decisions are unaffected."""
    r = server.api("POST", "/threads?wait=true", ALICE, json={"message": "twice SELECT 43"})
    assert r.status_code == 200, r.text
    tid = r.json()["thread_id"]
    shown = server.api("GET", f"/threads/{tid}", ALICE).json()
    request = shown["interrupts"][0]["id"]
    r = server.api("POST", f"/threads/{tid}/decisions?wait=true", BOB,
                   json={"interrupt_id": request, "decisions": [{"type": "approve"}]})
    assert r.status_code == 200, r.text
    assert server.pending_query(tid) == "SELECT 43 -- again"
    rows = server.audit_rows(tid)
    for body in ({"decisions": [{"type": "approve"}]}, {"decisions": {"type": "approve"}}):
        r = server.api("POST", f"/threads/{tid}/decisions", ALICE, json=body)
        assert r.status_code == 409, r.text
        assert r.json()["error"] == "UnseenRequest", r.text
        assert "Nothing was stored or run" in r.json()["message"]
    assert server.ran("SELECT 43 -- again") == 0 and server.audit_rows(tid) == rows

    # read again (the list shows the new request too): accepted
    listed = server.api("GET", "/threads?status=interrupted&limit=500", ALICE).json()
    assert tid in {t["thread_id"] for t in listed["threads"]}
    r = server.api("POST", f"/threads/{tid}/decisions?wait=true", ALICE,
                   json={"decisions": [{"type": "approve"}]})
    assert r.status_code == 200, r.text
    assert server.ran("SELECT 43 -- again") == 1


def test_api_double_submit_and_a_client_that_never_read(server: Server) -> None:
    r = server.api("POST", "/threads?wait=true", ALICE, json={"message": "twice SELECT 44"})
    tid = r.json()["thread_id"]
    approve = {"decisions": [{"type": "approve"}]}
    assert server.api("POST", f"/threads/{tid}/decisions", ALICE,
                      json=approve).status_code == 202
    _until(lambda: server.pending_query(tid) == "SELECT 44 -- again", "the second call")
    r = server.api("POST", f"/threads/{tid}/decisions", ALICE, json=approve)
    assert r.status_code == 409 and r.json()["error"] == "UnseenRequest", r.text
    assert server.ran("SELECT 44") == 1 and server.ran("SELECT 44 -- again") == 0

    # bob never read this thread (through this process): he answers by position as before
    r = server.api("POST", f"/threads/{tid}/decisions?wait=true", BOB, json=approve)
    assert r.status_code == 200, r.text
    assert server.ran("SELECT 44 -- again") == 1
