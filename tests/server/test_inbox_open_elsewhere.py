"""The request open in the inbox learns what happened to it elsewhere (headless Chromium): a
thread opened by a link, beyond the rows the list has loaded, still turns into "someone else
decided" when another reviewer decides it (what the reviewer typed kept, an open edit as the
reviewer's edit, not as the model's text); a decision that lost a race to another reviewer's
approval of a four-eyes call says so on the card drawn again, and the keyboard stays there; a
request that expires while open says it expired, and nothing on the page says it still waits;
the offer to approve several says how many wait as a lower bound while the list has more to
load."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from interlock import (
    Agent,
    HumanInTheLoop,
    InterruptConflict,
    InterruptOn,
    ScriptedModel,
    SqliteCheckpointer,
)

from .conftest import ADMIN, ALICE, BOB, TOKENS, bearer
from .live import LiveServer, start_thread, watch
from .server_agents import EXECUTED, TOOLS, script

pytestmark = pytest.mark.browser


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    policy = HumanInTheLoop(interrupt_on={
        "execute_sql": True,
        "drop_table": InterruptOn(allowed_decisions=["approve", "reject"], approvals=2),
        "purge": InterruptOn(allowed_decisions=["approve", "reject"],
                             expires_after=timedelta(seconds=12)),
    })
    agent = Agent(model=ScriptedModel(script), tools=TOOLS, middleware=[policy],
                  checkpointer=SqliteCheckpointer(tmp_path / "elsewhere.db"))
    s = LiveServer(agent, tokens=TOKENS, expiry_interval=timedelta(seconds=0.2))
    yield s
    s.stop()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1360, "height": 900})
    yield ctx
    ctx.close()


def approve_as_bob(url: str, thread_id: str) -> None:
    t = httpx.get(f"{url}/api/threads/{thread_id}", headers=bearer(BOB), timeout=30).json()
    r = httpx.post(f"{url}/api/threads/{thread_id}/decisions", headers=bearer(BOB), timeout=30,
                   json={"interrupt_id": t["interrupts"][0]["id"],
                         "decisions": [{"type": "approve"}]})
    assert r.status_code == 202, r.text


def alice(context: BrowserContext, url: str, thread_id: str) -> tuple[Page, list[str]]:
    page = context.new_page()
    errors = watch(page)
    page.goto(f"{url}/#/t/{thread_id}")
    page.locator("#token").fill(ALICE)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#whoami")).to_have_text("alice (dba, ops)")
    return page, errors


def test_a_thread_opened_beyond_the_loaded_rows_learns_it_was_decided(
        context: BrowserContext, server: LiveServer) -> None:
    # the thread alice reviews is the oldest of 42: the list's first page (40 rows) leaves it out
    start_thread(server.url, "sql DELETE FROM carts WHERE stale", "open-by-link", ADMIN)
    for n in range(41):
        start_thread(server.url, f"sql SELECT {n}", f"newer-{n:02d}", ADMIN)
    page, errors = alice(context, server.url, "open-by-link")
    card = page.locator('.card[data-tool="execute_sql"]')
    expect(card.locator(".args")).to_contain_text("DELETE FROM carts WHERE stale")
    expect(page.locator("#list-count")).to_contain_text("40+")
    card.get_by_role("button", name="Reject…").click()
    card.get_by_label("Reason").fill("Only carts older than a year.")
    approve_as_bob(server.url, "open-by-link")  # alice may not read the thread after that
    expect(card).to_have_class(re.compile(r"\bdecided-elsewhere\b"))
    expect(card.locator(".elsewhere-what")).to_contain_text("bob approved this call")
    expect(card.locator(".draft textarea")).to_have_value("Only carts older than a year.")
    expect(card.locator(":scope > .actions")).to_be_hidden()
    assert errors == []


def test_a_decision_that_lost_a_race_to_an_approval_says_so_on_the_new_card(
        context: BrowserContext, server: LiveServer) -> None:
    start_thread(server.url, "drop orders", "four-eyes", ADMIN)
    page, errors = alice(context, server.url, "four-eyes")
    card = page.locator('.card[data-tool="drop_table"]')
    expect(card).to_contain_text("approvals 0 of 2")
    thread = httpx.get(f"{server.url}/api/threads/four-eyes", headers=bearer(ALICE)).json()
    refused = {"error": "InterruptConflict", "message": str(InterruptConflict(
        "four-eyes", thread["interrupts"][0]["id"]))}

    def race(route: Route) -> None:
        # bob's approval is stored first; alice's, sent at the same moment, is refused as the
        # server refuses the loser of two concurrent writes
        approve_as_bob(server.url, "four-eyes")
        route.fulfill(status=409, content_type="application/json", body=json.dumps(refused))

    page.route("**/api/threads/four-eyes/decisions", race)
    card.get_by_role("button", name="Approve", exact=True).click()
    card.locator(".confirm").get_by_role("button", name=re.compile("^Yes")).click()
    expect(card).to_contain_text("approvals 1 of 2: bob")
    expect(card.locator(":scope > .error")).to_contain_text(
        "Your decision was not applied: another reviewer's decision on this call was stored")
    approve = card.get_by_role("button", name="Approve", exact=True)
    expect(approve).to_be_focused()
    page.unroute("**/api/threads/four-eyes/decisions")
    page.keyboard.press("Enter")  # approve again, from where the keyboard is
    card.locator(".confirm").get_by_role("button", name=re.compile("^Yes")).click()
    expect(page.locator("#done")).to_contain_text("Approved drop_table")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and httpx.get(
            f"{server.url}/api/threads/four-eyes", headers=bearer(ADMIN)).json()["status"] != "completed":
        time.sleep(0.05)
    assert EXECUTED.count(("drop_table", {"table": "orders"})) == 1
    assert errors == []


def test_a_request_that_expires_while_open_says_so_and_nothing_says_it_waits(
        context: BrowserContext, server: LiveServer) -> None:
    start_thread(server.url, "purge", "expiring", ADMIN)
    page, errors = alice(context, server.url, "expiring")
    card = page.locator('.card[data-tool="purge"]')
    deadline = card.locator(".badge", has_text="expires")
    expect(deadline).to_be_visible()
    expect(page.locator(".detail-head [data-status]")).to_have_text("waiting for a decision")
    # the sweeper rejects it once its deadline passed; alice may not read the thread after that
    expect(card).to_have_class(re.compile(r"\bdecided-elsewhere\b"), timeout=30_000)
    expect(card.locator(".elsewhere-what")).to_contain_text(
        "This call expired", timeout=30_000)
    expect(card.locator(".elsewhere-what")).to_contain_text("did not run")
    expect(deadline).to_be_hidden()
    head = page.locator(".detail-head")
    expect(head.locator("[data-status]")).to_have_text("no longer waiting for you")
    expect(head.locator(".gone-note")).to_contain_text("not yours to read any more")
    expect(head.get_by_role("button", name="Cancel thread…")).to_have_count(0)
    expect(page.locator(".detail-section.requests h3")).to_be_hidden()
    assert "waiting for a decision" not in page.locator(".detail-head").inner_text()
    assert errors == []


def test_an_open_edit_is_kept_as_the_reviewers_edit_not_as_the_models_text(
        context: BrowserContext, server: LiveServer) -> None:
    start_thread(server.url, "sql DELETE FROM carts WHERE stale", "edit-untouched", ADMIN)
    start_thread(server.url, "sql DELETE FROM users WHERE stale", "edit-changed", ADMIN)
    page, errors = alice(context, server.url, "edit-untouched")
    card = page.locator('.card[data-tool="execute_sql"]')
    # an edit opened and left as proposed: nothing of it is the reviewer's text
    card.get_by_role("button", name="Edit…").click()
    expect(page.locator('.field[data-arg="query"] textarea')).to_have_value(
        "DELETE FROM carts WHERE stale")
    approve_as_bob(server.url, "edit-untouched")
    expect(card.locator(".elsewhere-what")).to_contain_text("bob approved this call")
    expect(card.locator(".draft")).to_have_count(0)
    # an edit that changed the query: that edit is what is kept
    page.goto(f"{server.url}/#/t/edit-changed")
    expect(card.locator(".args")).to_contain_text("DELETE FROM users WHERE stale")
    card.get_by_role("button", name="Edit…").click()
    page.locator('.field[data-arg="query"] textarea').fill("DELETE FROM users WHERE id = 7")
    approve_as_bob(server.url, "edit-changed")
    expect(card.locator(".elsewhere-what")).to_contain_text("bob approved this call")
    kept = card.locator(".draft textarea")
    expect(kept).to_have_value('{\n  "query": "DELETE FROM users WHERE id = 7"\n}')
    assert errors == []


def test_the_offer_to_approve_several_does_not_undercount_what_waits(
        context: BrowserContext, server: LiveServer) -> None:
    for n in range(42):  # the list's first page holds 40 of them
        start_thread(server.url, f"sql SELECT {n}", f"select-{n:02d}", ADMIN)
    page, errors = alice(context, server.url, "select-41")
    offer = page.locator('.card[data-tool="execute_sql"] .batch-offer')
    # 41 others wait; 39 are loaded: the count says it is a lower bound, not the total
    expect(offer).to_contain_text("At least 39 more execute_sql requests wait")
    expect(offer).to_contain_text("among the requests loaded so far")
    assert errors == []
