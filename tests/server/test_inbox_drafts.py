"""What a reviewer wrote and did not send is not lost (headless Chromium): a half-written
reject reason survives opening another request and the back button, and reloading the page; a
half-done edit survives a reload with its "Changes to send"; Cancel / Esc drop the draft, and a
sent decision does too."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from interlock import SqliteCheckpointer

from .live import LiveServer, start_thread, watched_page
from .server_agents import EXECUTED, make_agent

pytestmark = pytest.mark.browser


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    s = LiveServer(make_agent(SqliteCheckpointer(tmp_path / "drafts.db")))  # local mode
    yield s
    s.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    with watched_page(browser) as pg:
        yield pg


def test_a_half_written_reason_survives_moving_away_back_and_reload(page: Page,
                                                                    server: LiveServer) -> None:
    start_thread(server.url, "sql DELETE FROM carts", "carts")
    start_thread(server.url, "sql DELETE FROM users", "users")
    page.goto(f"{server.url}/#/t/carts")
    card = page.locator('.card[data-tool="execute_sql"]')
    expect(card.locator(".args")).to_contain_text("DELETE FROM carts")
    page.keyboard.press("r")
    page.keyboard.type("Only carts older than a year")
    page.goto(f"{server.url}/#/t/users")  # another request...
    expect(card.locator(".args")).to_contain_text("DELETE FROM users")
    expect(card.get_by_label("Reason")).to_have_count(0)
    page.go_back()  # ...and back
    expect(card.locator(".args")).to_contain_text("DELETE FROM carts")
    expect(card.get_by_label("Reason")).to_have_value("Only carts older than a year")
    page.reload()
    expect(card.get_by_label("Reason")).to_have_value("Only carts older than a year")
    card.get_by_label("Reason").press("Escape")  # closed on purpose: the draft goes
    expect(card.get_by_label("Reason")).to_be_hidden()
    page.reload()
    expect(card.locator(".args")).to_contain_text("DELETE FROM carts")
    expect(card.get_by_label("Reason")).to_have_count(0)


def test_a_half_done_edit_survives_a_reload_and_is_sent_as_shown(page: Page,
                                                                 server: LiveServer) -> None:
    start_thread(server.url, "write notes.txt hello", "notes")
    page.goto(f"{server.url}/#/t/notes")
    card = page.locator('.card[data-tool="write_file"]')
    card.get_by_role("button", name="Edit…").click()
    page.locator('.field[data-arg="path"] input').fill("archive/notes.txt")
    expect(card.locator(".diff-box")).to_contain_text("archive/notes.txt")
    page.reload()
    expect(page.locator('.field[data-arg="path"] input')).to_have_value("archive/notes.txt")
    expect(card.locator(".diff-box")).to_contain_text("archive/notes.txt")
    expect(card.locator(".diff-box")).to_contain_text("Unchanged: content")
    card.get_by_role("button", name="Run with these arguments").click()
    card.locator(".confirm").get_by_role("button", name="Yes, run it").click()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and httpx.get(
            f"{server.url}/api/threads/notes").json()["status"] != "completed":
        time.sleep(0.05)
    assert list(EXECUTED) == [("write_file", {"path": "archive/notes.txt", "content": "hello"})]
    # sent: nothing of it is offered again
    assert page.evaluate("sessionStorage.getItem('interlock.drafts')") in (None, "{}")
