""""Approve and remember" is a policy choice: ``InterruptOn(allow_remember=False)`` refuses it
in the library and the API (nothing stored); the web inbox offers it with one click only for
read-only tools and asks for confirmation otherwise (Chromium)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright import sync_api as playwright_api
from playwright.sync_api import Browser, Page, expect

from interlock import (
    Agent,
    HumanInTheLoop,
    InterruptOn,
    InvalidDecision,
    Message,
    ScriptedModel,
    SqliteCheckpointer,
    UserMessage,
    tool,
)
from interlock.storage.memory import MemoryCheckpointer
from server.conftest import Server, running

RAN: list[str] = []


@tool(read_only=True)
def lookup(key: str) -> str:
    """Read a value."""
    RAN.append(f"lookup {key}")
    return f"value of {key}"


@tool
def wire(amount: int) -> str:
    """Move money."""
    RAN.append(f"wire {amount}")
    return "sent"


@tool
def rm(path: str) -> str:
    """Delete a file."""
    RAN.append(f"rm {path}")
    return "deleted"


def _script(messages: Sequence[Message]) -> Any:
    last = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last]
    assert isinstance(user, UserMessage)
    done = len(messages) - last - 1
    name, _, arg = user.content.partition(" ")
    if done == 0:
        key = {"lookup": "key", "wire": "amount", "rm": "path"}[name]
        return ("ok", [{"name": name, "args": {key: int(arg) if name == "wire" else arg}}])
    return "Done."


def make(store: Any) -> Agent:
    return Agent(model=ScriptedModel(_script), tools=[lookup, wire, rm], checkpointer=store,
                 middleware=[HumanInTheLoop(interrupt_on={
                     "lookup": True,
                     "wire": InterruptOn(allowed_decisions=["approve", "reject"],
                                         allow_remember=False),
                     "rm": True,
                 })])


@pytest.fixture(autouse=True)
def _clean() -> None:
    RAN.clear()


def test_library_refuses_remember_when_the_policy_forbids_it() -> None:
    agent = make(MemoryCheckpointer())
    result = agent.invoke("wire 100", thread_id="w")
    cfg = result.interrupts[0].value.review_configs[0]  # type: ignore[union-attr]
    assert cfg.allow_remember is False
    version = agent.get_thread("w").version
    with pytest.raises(InvalidDecision, match="allow_remember=False"):
        agent.resume("w", [{"type": "approve", "remember": "thread"}])
    state = agent.get_thread("w")
    assert (state.version, state.remembered, RAN) == (version, [], [])
    agent.resume("w", [{"type": "approve"}])
    assert RAN == ["wire 100"]
    # the next call pauses again: nothing was remembered
    assert agent.invoke("wire 5", thread_id="w").interrupted


@pytest.mark.anyio
async def test_api_refuses_remember_with_422() -> None:
    agent = make(MemoryCheckpointer())
    async with running(agent) as s:
        await _start(s, "wire 7", "w")
        r = await s.client.post("/api/threads/w/decisions", json={
            "decisions": [{"type": "approve", "remember": "thread"}]})
        assert r.status_code == 422 and r.json()["error"] == "InvalidDecision"
        assert "allow_remember=False" in r.json()["message"]
        assert (await agent.aget_thread("w")).remembered == []
        assert RAN == []


async def _start(s: Server, message: str, thread_id: str) -> None:
    r = await s.client.post("/api/threads", params={"wait": "true"},
                            json={"message": message, "thread_id": thread_id})
    assert r.json()["status"] == "interrupted", r.text


# -- the inbox --------------------------------------------------------------------------------


from server.live import CHROMIUM_ARGS, LiveServer, chromium_path  # noqa: E402


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    db: Path = tmp_path_factory.mktemp("remember") / "inbox.db"
    server = LiveServer(make(SqliteCheckpointer(db)))
    yield server
    server.stop()


@pytest.fixture
def page(live: LiveServer) -> Iterator[Page]:
    with playwright_api.sync_playwright() as p:
        browser: Browser = p.chromium.launch(executable_path=chromium_path(),
                                             args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1360, "height": 900})
        yield pg
        browser.close()


def _open(page: Page, live: LiveServer, message: str, thread_id: str) -> Any:
    r = httpx.post(f"{live.url}/api/threads", params={"wait": "true"},
                   json={"message": message, "thread_id": thread_id}, timeout=30)
    assert r.json()["status"] == "interrupted", r.text
    page.goto(f"{live.url}/")
    page.locator(f'.row[data-thread-id="{thread_id}"]').click()
    expect(page.locator(".thread-id")).to_have_text(thread_id)
    return page.locator(".card").first


@pytest.mark.browser
def test_inbox_offers_remember_by_policy_and_confirms_for_tools_that_change_things(
        page: Page, live: LiveServer) -> None:
    buttons = ":scope > .actions > button"
    # not allowed by the policy: no such button at all
    c = _open(page, live, "wire 9", "b-wire")
    expect(c.locator(buttons)).to_have_text(["Approve A", "Reject… R"])
    # a read-only tool: one click
    c = _open(page, live, "lookup k", "b-lookup")
    expect(c.locator(buttons)).to_have_text(
        ["Approve A", "Approve & remember for this thread M", "Edit… E", "Reject… R",
         "Respond… P"])
    # a tool that changes things: a confirmation step; cancelling it decides nothing
    c = _open(page, live, "rm /tmp/x", "b-rm")
    c.get_by_role("button", name="Approve & remember…").click()
    panel = c.locator(".panel")
    expect(panel).to_contain_text("rm is not declared read-only")
    panel.get_by_role("button", name="Cancel").click()
    expect(panel).to_be_hidden()
    t = httpx.get(f"{live.url}/api/threads/b-rm", timeout=30).json()
    assert t["status"] == "interrupted" and t["remembered"] == [] and RAN == []
    c.get_by_role("button", name="Approve & remember…").click()
    c.get_by_role("button", name="Yes, approve and remember").click()
    # the inbox moves on to the next request; its note leads back to this thread
    page.locator("#done a.done-open").click()
    expect(page.locator(".thread-id")).to_have_text("b-rm")
    expect(page.locator(".rules li")).to_contain_text("rm")
    t = httpx.get(f"{live.url}/api/threads/b-rm", timeout=30).json()
    assert [r["tool_name"] for r in t["remembered"]] == ["rm"]
    assert RAN == ["rm /tmp/x"]
