"""The real Agent Inbox (third_party/agent-inbox, langchain-ai/agent-inbox at f38301b, built
with npm by ``ui_apps``) in Chromium against a real ``interlock serve --langgraph-api``: a
reviewer accepts, edits, responds to, ignores and resolves requests from its thread view, each
call runs (or not) exactly as decided, and the app gets no 4xx from interlock on the way.

The inbox is configured as its "Add Inbox" dialog and Settings popover store it (the
``inbox:agent_inboxes`` and ``inbox:langchain_api_key`` localStorage entries), and a request
is opened by the URL its list row navigates to (``view_state_thread_id``): at this commit the
app's first-run dialog and its row clicks race two ``router.replace`` calls in Chromium here
(the URL flips back, the page re-renders without end), whatever the server; see
docs/langgraph-clients.md.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from playwright.sync_api import Browser, Page, Response, expect
from playwright.sync_api import Error as PlaywrightError

from .conftest import ALICE
from .live import ServeProcess
from .test_multiprocess_pg import executions
from .ui_apps import TEST_TIMEOUT, NextApp, browser, server, ui_app

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(TEST_TIMEOUT)]

APP = "agent-inbox"
__all__ = ["browser", "server", "ui_app"]  # fixtures, used by name

ROUTE = "/langgraph/agent-inbox"
INBOX_ID = "5f0c2a4e-6b1d-4c3e-9a7f-2d8e1b4c6a90"


@pytest.fixture
def client(server: tuple[ServeProcess, Path]) -> SyncLangGraphClient:
    return get_sync_client(url=server[0].url + ROUTE, api_key=ALICE)


@pytest.fixture
def page(browser: Browser, ui_app: NextApp, server: tuple[ServeProcess, Path]
         ) -> Iterator[Page]:
    """A fresh browser profile with the inbox set up as the app's dialogs store it; every
    response of interlock is checked for a 4xx at the end."""
    deployment = server[0].url + ROUTE
    stored = {
        "inbox:agent_inboxes": json.dumps([{
            "id": INBOX_ID, "graphId": "agent", "deploymentUrl": deployment,
            "name": "interlock", "selected": True, "createdAt": "2026-12-01T00:00:00.000Z"}]),
        "inbox:langchain_api_key": ALICE,
        "inbox:id_backfill_completed": "true",
    }
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_init_script(
        "if (!localStorage.getItem('inbox:agent_inboxes')) {"
        f" const s = {json.dumps(stored)};"
        " for (const k in s) localStorage.setItem(k, s[k]); }")
    # globals.css imports Google Fonts: no route from here, fail at once
    context.route("https://fonts.googleapis.com/**", lambda r: r.abort())
    refused: list[str] = []

    def check(r: Response) -> None:
        if r.url.startswith(server[0].url) and 400 <= r.status < 500:
            refused.append(f"{r.request.method} {r.url} -> {r.status}: {r.text()[:300]}")

    pg = context.new_page()
    pg.on("response", check)
    yield pg
    context.close()
    assert refused == [], "interlock refused requests of Agent Inbox:\n" + "\n".join(refused)


def _paused(client: SyncLangGraphClient, text: str) -> str:
    tid: str = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": text}]})
    assert isinstance(out, dict) and out["__interrupt__"], out
    return tid


def _open(page: Page, app: NextApp, tid: str, tool: str) -> None:
    """The inbox lists the request; its thread view opens (the row's link).

    The app's thread view routes back to the list when its list of threads, at the moment it
    looks, does not hold the thread (thread-view.tsx: a list being refetched counts as not
    holding it), and the list page's own ``router.replace`` may abort a navigation: both are
    the app's races, whatever the server answers, so the link is followed again (at most five
    times) until the thread view stays open. A navigation aborted by the app's replace to
    the same address counts as done."""
    listing = f"{app.url}/?agent_inbox={INBOX_ID}&inbox=interrupted&offset=0&limit=10"
    page.goto(listing)
    expect(page.get_by_text(tool, exact=True).first).to_be_visible(timeout=30_000)
    back = page.get_by_text("Back to inbox")
    target = f"{listing}&view_state_thread_id={tid}"
    for attempt in range(5):
        last = attempt == 4
        try:
            page.goto(target)
        except PlaywrightError as e:
            aborted = "ERR_ABORTED" in str(e) or "interrupted by another navigation" in str(e)
            # the app's own replace to the very same address interrupts ours: the page is
            # where it should be, and going there again would only start the race again
            if not aborted or (last and page.url != target):
                raise
            if page.url != target:
                continue
        try:
            expect(back).to_be_visible(timeout=30_000 if last else 10_000)
            page.wait_for_load_state("networkidle")  # the threads' fetches done: it stays
            expect(back).to_be_visible()
            break
        except AssertionError:
            if last:
                raise
    expect(page.get_by_text(tool, exact=True).first).to_be_visible()


def _settled(client: SyncLangGraphClient, tid: str,
             done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        thread: dict[str, Any] = dict(client.threads.get(tid))
        if done(thread):
            return thread
        assert time.monotonic() < deadline, thread
        time.sleep(0.2)


def _idle(client: SyncLangGraphClient, tid: str) -> list[dict[str, Any]]:
    thread = _settled(client, tid, lambda t: t["status"] == "idle")
    messages: list[dict[str, Any]] = thread["values"]["messages"]
    return messages


def _ran(log: Path, before: int) -> list[tuple[str, dict[str, Any]]]:
    return [(e["name"], e["args"]) for e in executions(log)[before:]]


def test_accept(page: Page, ui_app: NextApp, client: SyncLangGraphClient,
                server: tuple[ServeProcess, Path]) -> None:
    query = f"SELECT {uuid.uuid4().int % 1000}"
    tid = _paused(client, f"sql {query}")
    before = len(executions(server[1]))
    _open(page, ui_app, tid, "execute_sql")
    page.get_by_role("button", name="Accept", exact=True).click()
    messages = _idle(client, tid)
    assert messages[-1]["content"] == f"Done. OK: ran {query}"
    assert _ran(server[1], before) == [("execute_sql", {"query": query})]


def test_edit(page: Page, ui_app: NextApp, client: SyncLangGraphClient,
              server: tuple[ServeProcess, Path]) -> None:
    tid = _paused(client, "limit 4")
    before = len(executions(server[1]))
    _open(page, ui_app, tid, "set_limit")
    field = page.get_by_role("textbox").first
    expect(field).to_have_value("4")
    field.fill("8")  # a text field: interlock parses "8" for the integer argument
    page.get_by_role("button", name="Submit", exact=True).click()
    messages = _idle(client, tid)
    # the model is told what ran instead of its call
    assert messages[-1]["content"].startswith("Done. Note: a reviewer changed this tool call")
    assert messages[-1]["content"].endswith("limit set to 8")
    assert _ran(server[1], before) == [("set_limit", {"n": 8, "reason": ""})]


def test_respond(page: Page, ui_app: NextApp, client: SyncLangGraphClient,
                 server: tuple[ServeProcess, Path]) -> None:
    tid = _paused(client, "ask Which region?")
    before = len(executions(server[1]))
    _open(page, ui_app, tid, "ask_user")
    page.get_by_role("textbox").last.fill("eu-west-1")
    page.get_by_role("button", name="Send Response").click()
    messages = _idle(client, tid)
    tool = [m for m in messages if m["type"] == "tool"]
    assert [m["content"] for m in tool] == ["eu-west-1"]  # the answer is the tool's result
    assert messages[-1]["content"] == "Done. eu-west-1"
    assert _ran(server[1], before) == []  # ask_user itself never ran


def test_ignore(page: Page, ui_app: NextApp, client: SyncLangGraphClient,
                server: tuple[ServeProcess, Path]) -> None:
    tid = _paused(client, "write notes.txt hello")
    before = len(executions(server[1]))
    _open(page, ui_app, tid, "write_file")
    page.get_by_role("button", name="Ignore", exact=True).click()
    messages = _idle(client, tid)
    assert "cancelled" in messages[-1]["content"]
    assert _ran(server[1], before) == []


def test_mark_as_resolved(page: Page, ui_app: NextApp, client: SyncLangGraphClient,
                          server: tuple[ServeProcess, Path]) -> None:
    tid = _paused(client, "drop audit_old")
    before = len(executions(server[1]))
    _open(page, ui_app, tid, "drop_table")
    page.get_by_role("button", name="Mark as Resolved").click()
    messages = _idle(client, tid)
    assert "resolved" in messages[-1]["content"]
    assert _ran(server[1], before) == []


def test_a_turn_with_two_calls_one_at_a_time(page: Page, ui_app: NextApp,
                                             client: SyncLangGraphClient,
                                             server: tuple[ServeProcess, Path]) -> None:
    """The inbox shows the first pending call; after it is accepted the thread shows the
    next one; accepting that lets the run finish. Each call runs once."""
    tid = _paused(client, "multi")
    before = len(executions(server[1]))
    _open(page, ui_app, tid, "execute_sql")
    page.get_by_role("button", name="Accept", exact=True).click()
    _settled(client, tid, lambda t: t["status"] == "interrupted" and [
        i["value"]["action_request"]["action"] for i in t["values"]["__interrupt__"]]
        == ["write_file"])
    assert _ran(server[1], before) == [("execute_sql", {"query": "SELECT 1"})]
    _open(page, ui_app, tid, "write_file")
    page.get_by_role("button", name="Accept", exact=True).click()
    messages = _idle(client, tid)
    assert messages[-1]["content"].startswith("Done.")
    assert _ran(server[1], before) == [("execute_sql", {"query": "SELECT 1"}),
                                       ("write_file", {"path": "a.txt", "content": "x"})]
