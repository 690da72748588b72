"""The real Agent Chat UI (third_party/agent-chat-ui, langchain-ai/agent-chat-ui at fdc87e6,
built with npm by ``ui_apps``) in Chromium against a real ``interlock serve --langgraph-api``:
set up through its own form, a user chats and sees the answer streamed (``useStream`` with the
``messages-tuple`` mode), sees the HITL card of a gated call, approves it or rejects it with a
reason, and the call runs once (or never); interlock answers none of its requests with a 4xx.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from playwright.sync_api import Browser, Locator, Page, Request, Response, Route, expect

from .conftest import ALICE
from .live import ServeProcess
from .test_multiprocess_pg import executions
from .ui_apps import TEST_TIMEOUT, NextApp, browser, server, ui_app

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(TEST_TIMEOUT)]

APP = "agent-chat-ui"
__all__ = ["browser", "server", "ui_app"]  # fixtures, used by name


class Traffic:
    """What the page sent to interlock, and what interlock refused."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.streams: list[dict[str, Any]] = []
        self.refused: list[str] = []
        self.in_flight = 0
        self.last = time.monotonic()

    def request(self, r: Request) -> None:
        if r.url.startswith(self.base):
            self.in_flight += 1
            self.last = time.monotonic()
        if r.url.startswith(self.base) and r.url.endswith("/runs/stream"):
            self.streams.append(json.loads(r.post_data or "{}"))

    def failed(self, r: Request) -> None:
        if r.url.startswith(self.base):
            self.in_flight -= 1
            self.last = time.monotonic()

    def finished(self, r: Request) -> None:
        self.failed(r)

    def wait_quiet(self, page: Page, quiet: float = 0.8) -> None:
        """Until no request to interlock has been open for ``quiet`` seconds: after a run's
        stream the page reloads the thread's history, and its HITL card starts afresh with the
        new interrupt object (what was typed into it before is lost)."""
        deadline = time.monotonic() + 30
        while self.in_flight or time.monotonic() - self.last < quiet:
            assert time.monotonic() < deadline, self.in_flight
            page.wait_for_timeout(100)

    def response(self, r: Response) -> None:
        if r.url.startswith(self.base) and 400 <= r.status < 500:
            self.refused.append(f"{r.request.method} {r.url} -> {r.status}: {r.text()[:300]}")


@pytest.fixture
def chat(browser: Browser, ui_app: NextApp, server: tuple[ServeProcess, Path]
         ) -> Iterator[tuple[Page, Traffic]]:
    """A fresh browser profile, set up through the app's own form as a user does."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    traffic = Traffic(server[0].url)
    page = context.new_page()
    page.on("request", traffic.request)
    page.on("response", traffic.response)
    page.on("requestfinished", traffic.finished)
    page.on("requestfailed", traffic.failed)
    page.goto(ui_app.url)
    form_url = page.locator("#apiUrl")
    expect(form_url).to_be_visible(timeout=30_000)
    page.wait_for_load_state("networkidle")
    form_url.fill(server[0].url + "/langgraph")
    page.locator("#assistantId").fill("agent")
    page.locator("#apiKey").fill(ALICE)
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_placeholder("Type your message...")).to_be_visible(timeout=30_000)
    yield page, traffic
    context.close()
    assert traffic.refused == [], "interlock refused requests of Agent Chat UI:\n" + "\n".join(
        traffic.refused)


def _send(page: Page, text: str) -> None:
    box = page.get_by_placeholder("Type your message...")
    box.fill(text)
    page.get_by_role("button", name="Send").click()


def _card(page: Page, traffic: Traffic, log: Path, text: str, tool: str
          ) -> tuple[int, Locator]:
    """Send ``text``; the HITL card of the ``tool`` call it makes shows, nothing has run, and
    the page is done loading. The executions so far and the card's Approve button."""
    before = len(executions(log))
    _send(page, text)
    approve = page.get_by_role("button", name="Approve", exact=True)
    expect(approve).to_be_visible(timeout=30_000)
    expect(page.get_by_text(tool).first).to_be_visible()
    traffic.wait_quiet(page)
    assert executions(log)[before:] == []  # nothing runs before the decision
    return before, approve


def _thread(page: Page) -> str:
    deadline = time.monotonic() + 30
    while "threadId=" not in page.url:
        assert time.monotonic() < deadline, page.url
        page.wait_for_timeout(100)
    return page.url.split("threadId=")[1].split("&")[0]


def _messages(server: ServeProcess, tid: str) -> list[dict[str, Any]]:
    client = get_sync_client(url=server.url + "/langgraph", api_key=ALICE)
    state = client.threads.get_state(tid)
    messages: list[dict[str, Any]] = state["values"]["messages"]
    return messages


def test_chat_streams_the_answer(chat: tuple[Page, Traffic],
                                 server: tuple[ServeProcess, Path]) -> None:
    page, traffic = chat
    bodies: list[str] = []

    def keep(route: Route) -> None:
        """The run's stream, passed on to the page whole and kept (a streamed body is not
        always readable from the page's side once it has been consumed)."""
        response = route.fetch()
        bodies.append(response.text())
        route.fulfill(response=response)

    page.route(re.compile(r".*/runs/stream$"), keep)
    _send(page, "hello there")
    expect(page.get_by_text("You said: hello there")).to_be_visible(timeout=30_000)
    # useStream's run: streamed with the modes the page reads
    assert traffic.streams and "messages-tuple" in traffic.streams[-1]["stream_mode"]
    assert len(bodies) == 1, bodies
    events = [line[len("event: "):] for line in bodies[0].splitlines()
              if line.startswith("event: ")]
    assert events[0] == "metadata" and "messages" in events and "values" in events, events
    tid = _thread(page)
    assert [(m["type"], m["content"]) for m in _messages(server[0], tid)][-1] == (
        "ai", "You said: hello there")
    # a follow-up in the same thread
    _send(page, "and again")
    expect(page.get_by_text("You said: and again")).to_be_visible(timeout=30_000)
    assert _thread(page) == tid
    assert len(_messages(server[0], tid)) == 4


def test_an_interrupt_is_approved_and_runs_once(chat: tuple[Page, Traffic],
                                                server: tuple[ServeProcess, Path]) -> None:
    page, traffic = chat
    before, approve = _card(page, traffic, server[1], "sql SELECT 7", "execute_sql")
    approve.click()
    expect(page.get_by_text("Done. OK: ran SELECT 7")).to_be_visible(timeout=30_000)
    assert [(e["name"], e["args"]) for e in executions(server[1])[before:]] == [
        ("execute_sql", {"query": "SELECT 7"})]
    assert traffic.streams[-1]["command"] == {"resume": {"decisions": [{"type": "approve"}]}}
    tid = _thread(page)
    assert _messages(server[0], tid)[-1]["content"] == "Done. OK: ran SELECT 7"


def test_an_interrupt_is_rejected_with_a_reason(chat: tuple[Page, Traffic],
                                                server: tuple[ServeProcess, Path]) -> None:
    page, traffic = chat
    before, _ = _card(page, traffic, server[1], "write report.txt numbers", "write_file")
    reason = page.get_by_placeholder("Share feedback with the agent...")
    chosen = page.get_by_text("Currently selected: Reject")
    for _ in range(20):  # the card picks its default (approve) once mounted: type after that
        reason.fill("not on Fridays")
        try:
            expect(chosen).to_be_visible(timeout=500)
            break
        except AssertionError:
            pass
    page.get_by_role("button", name="Submit rejection").click()
    # the run goes on with the rejection as the tool's result, and its answer streams in
    expect(page.get_by_text(re.compile(r"^Done\. .*not on Fridays"))).to_be_visible(
        timeout=30_000)
    tid = _thread(page)
    assert _messages(server[0], tid)[-1]["content"].startswith("Done.")
    tool = [m for m in _messages(server[0], tid) if m["type"] == "tool"]
    assert "not on Fridays" in tool[-1]["content"]
    assert traffic.streams[-1]["command"] == {"resume": {"decisions": [
        {"type": "reject", "message": "not on Fridays"}]}}
    assert executions(server[1])[before:] == []


def test_mark_as_resolved_then_reload_and_reopen(chat: tuple[Page, Traffic],
                                                 server: tuple[ServeProcess, Path]) -> None:
    """"Mark as Resolved" ends the pending call unrun (``command.goto: "__end__"``); after a
    reload the thread's history is shown again, and the thread list names the thread."""
    page, traffic = chat
    before = len(executions(server[1]))
    _send(page, "drop audit_old")
    resolve = page.get_by_role("button", name="Mark as Resolved")
    expect(resolve).to_be_visible(timeout=30_000)
    resolve.click()
    expect(resolve).to_be_hidden(timeout=30_000)
    tid = _thread(page)
    assert traffic.streams[-1]["command"] == {"goto": "__end__"}
    deadline = time.monotonic() + 30
    while not any("resolved" in str(m["content"]) for m in _messages(server[0], tid)):
        assert time.monotonic() < deadline, _messages(server[0], tid)
        time.sleep(0.2)
    assert executions(server[1])[before:] == []

    page.reload()  # the thread comes back from its state and history
    expect(page.get_by_text("drop audit_old").first).to_be_visible(timeout=30_000)
    expect(page.get_by_role("button", name="Mark as Resolved")).to_have_count(0)
    # the thread list (searched by graph_id, in the collapsed side panel) names the thread by
    # its first message
    page.goto(page.url.split("&threadId=")[0])
    expect(page.get_by_placeholder("Type your message...")).to_be_visible(timeout=30_000)
    expect(page.get_by_role("button", name="drop audit_old", include_hidden=True)
           ).not_to_have_count(0, timeout=30_000)


def test_an_interrupt_is_edited_and_the_edit_runs(chat: tuple[Page, Traffic],
                                                  server: tuple[ServeProcess, Path]) -> None:
    page, traffic = chat
    _card(page, traffic, server[1], "limit 4", "set_limit")
    before = len(executions(server[1]))
    field = page.locator("textarea").filter(has_text="4").first
    expect(field).to_have_value("4")
    submit = page.get_by_role("button", name="Submit", exact=True)
    for _ in range(20):  # the card sets its fields once mounted: type after that
        field.fill("6")  # a text field: interlock parses "6" for the integer argument
        try:
            expect(submit).to_be_visible(timeout=500)
            break
        except AssertionError:
            pass
    submit.click()
    expect(page.get_by_text(re.compile(r"limit set to 6$")).last).to_be_visible(timeout=30_000)
    assert [(e["name"], e["args"]) for e in executions(server[1])[before:]] == [
        ("set_limit", {"n": 6, "reason": ""})]
    decision = traffic.streams[-1]["command"]["resume"]["decisions"]
    assert decision == [{"type": "edit", "edited_action": {"name": "set_limit",
                                                          "args": {"n": "6"}}}]
