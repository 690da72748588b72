"""The web inbox shows, compares and sends numbers exactly as they will run (invariant 1:
nothing a reviewer did not see can run on their approval). A JavaScript number cannot hold an
integer beyond 2**53 or tell 1.0 from 1: the card used to show 9007199254740992 for a call that
ran with 9007199254740993, and an edit of another argument sent the rounded value back while
its diff said "Unchanged". Headless Chromium against a live server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import playwright.sync_api as playwright_api
import pytest
from playwright.sync_api import Page, expect

from interlock import Agent, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, tool
from interlock.messages import Message, UserMessage
from server.live import CHROMIUM_ARGS, LiveServer, chromium_path

pytestmark = pytest.mark.browser

BIG = 9007199254740993  # 2**53 + 1: a JavaScript number holds ...992
HUGE = 12345678901234567891
RAN: list[tuple[str, dict[str, Any]]] = []


@tool
def transfer(account: str, amount: int, memo: str = "") -> str:
    """Transfer an amount to an account."""
    RAN.append(("transfer", {"account": account, "amount": amount, "memo": memo}))
    return f"sent {amount} to {account}"


@tool
def flag(note: str, urgent: bool | None = None) -> str:
    """Flag something."""
    RAN.append(("flag", {"note": note, "urgent": urgent}))
    return "flagged"


@tool
def configure(settings: dict[str, Any], ratio: float = 1.0) -> str:
    """Change settings."""
    RAN.append(("configure", {"settings": settings, "ratio": ratio}))
    return "configured"


def _model(messages: list[Message]) -> Any:
    last = messages[-1]
    if isinstance(last, UserMessage):
        return json.loads(last.content)
    return "done"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    RAN.clear()
    agent = Agent(model=ScriptedModel(_model), tools=[transfer, configure, flag],
                  middleware=[HumanInTheLoop(interrupt_on={"transfer": True, "flag": True,
                                                           "configure": True})],
                  checkpointer=SqliteCheckpointer(tmp_path / "db.sqlite"))
    server = LiveServer(agent)
    yield server
    server.stop()


@pytest.fixture
def page() -> Iterator[Page]:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            pg = browser.new_context(viewport={"width": 1360, "height": 900}).new_page()
            errors: list[str] = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            yield pg
            assert errors == [], errors
        finally:
            browser.close()


def start(live: LiveServer, thread_id: str, call: dict[str, Any]) -> None:
    r = httpx.post(f"{live.url}/api/threads", params={"wait": "true"}, timeout=30,
                   json={"thread_id": thread_id, "message": json.dumps(call)})
    assert r.status_code == 200 and r.json()["status"] == "interrupted", r.text


def open_card(page: Page, live: LiveServer, thread_id: str, tool_name: str) -> Any:
    page.goto(f"{live.url}/#/t/{thread_id}")
    card = page.locator(f'.card[data-tool="{tool_name}"]')
    expect(card).to_be_visible()
    return card


def run_it(page: Page, card: Any) -> None:
    """Answer the card's confirmation yes and wait for the thread to complete."""
    card.locator(".confirm").get_by_role("button", name="Yes, run it").click()
    expect(page.locator('.detail-head [data-status]')).to_have_attribute(
        "data-status", "completed")


def test_a_big_integer_is_shown_and_approved_as_it_runs(page: Page, live: LiveServer) -> None:
    start(live, "big", {"name": "transfer", "args": {"account": "acme", "amount": BIG}})
    card = open_card(page, live, "big", "transfer")
    expect(card.locator(".argv")).to_contain_text(str(BIG))
    card.get_by_role("button", name="Show JSON").click()
    expect(card.locator(".json-view")).to_contain_text(f'"amount": {BIG}')
    card.get_by_role("button", name="Approve", exact=True).click()
    run_it(page, card)
    assert RAN == [("transfer", {"account": "acme", "amount": BIG, "memo": ""})]


def test_an_edit_of_another_argument_sends_the_numbers_unchanged(
        page: Page, live: LiveServer) -> None:
    start(live, "edit", {"name": "transfer", "args": {"account": "acme", "amount": HUGE}})
    card = open_card(page, live, "edit", "transfer")
    card.get_by_role("button", name="Edit…").click()
    expect(card.locator('.field[data-arg="amount"] input')).to_have_value(str(HUGE))
    card.locator('.field[data-arg="memo"] input').fill("quarterly")
    diff = card.locator(".diff-box")
    expect(diff.locator(".diff-unchanged")).to_contain_text("amount")
    expect(diff.locator('.diff-arg[data-arg="memo"]')).to_be_visible()
    expect(diff.locator('.diff-arg[data-arg="amount"]')).to_have_count(0)
    card.get_by_role("button", name="Run with these arguments").click()
    run_it(page, card)
    assert RAN == [("transfer", {"account": "acme", "amount": HUGE, "memo": "quarterly"})]


def test_a_typed_big_integer_and_nested_numbers_in_json_are_sent_exactly(
        page: Page, live: LiveServer) -> None:
    start(live, "typed", {"name": "transfer", "args": {"account": "acme", "amount": 5}})
    card = open_card(page, live, "typed", "transfer")
    card.get_by_role("button", name="Edit…").click()
    card.locator('.field[data-arg="amount"] input').fill(str(BIG))
    expect(card.locator('.diff-arg[data-arg="amount"]')).to_contain_text(str(BIG))
    card.get_by_role("button", name="Run with these arguments").click()
    run_it(page, card)
    assert RAN[-1] == ("transfer", {"account": "acme", "amount": BIG, "memo": ""})

    settings = {"limit": BIG, "x": 1.0, "nested": [HUGE, 2.5]}
    start(live, "nested", {"name": "configure", "args": {"settings": settings}})
    card = open_card(page, live, "nested", "configure")
    expect(card.locator(".argv")).to_contain_text(str(BIG))
    expect(card.locator(".argv")).to_contain_text("1.0")
    card.get_by_role("button", name="Edit…").click()
    card.locator('.field[data-arg="ratio"] input').fill("0.5")
    expect(card.locator(".diff-box .diff-unchanged")).to_contain_text("settings")
    card.get_by_role("button", name="Run with these arguments").click()
    run_it(page, card)
    name, ran = RAN[-1]
    assert name == "configure" and ran["ratio"] == 0.5
    assert ran["settings"] == settings
    assert isinstance(ran["settings"]["x"], float)


def test_an_edit_adds_no_argument_the_call_did_not_have(page: Page, live: LiveServer) -> None:
    """The form shows an optional yes/no argument the model left out as an unticked box;
    editing another argument does not send it as false (the diff shows no added argument, and
    the tool gets its default)."""
    start(live, "flag", {"name": "flag", "args": {"note": "disk full"}})
    card = open_card(page, live, "flag", "flag")
    card.get_by_role("button", name="Edit…").click()
    card.locator('.field[data-arg="note"] textarea, .field[data-arg="note"] input').fill(
        "disk almost full")
    expect(card.locator('.diff-arg[data-arg="note"]')).to_be_visible()
    expect(card.locator('.diff-arg[data-arg="urgent"]')).to_have_count(0)
    card.get_by_role("button", name="Run with these arguments").click()
    run_it(page, card)
    assert RAN == [("flag", {"note": "disk almost full", "urgent": None})]
