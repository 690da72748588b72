"""What a reviewer wrote and did not send is not lost (headless Chromium): a half-written
reject reason survives opening another request and the back button, and reloading the page; a
half-done edit survives a reload with its "Changes to send"; Cancel / Esc drop the draft, and a
sent decision does too."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import Page, expect

from .live import LiveServer, start_thread
from .server_agents import EXECUTED

pytestmark = pytest.mark.browser


def test_a_half_written_reason_survives_moving_away_back_and_reload(page: Page,
                                                                    local_inbox: LiveServer) -> None:
    start_thread(local_inbox.url, "sql DELETE FROM carts", "carts")
    start_thread(local_inbox.url, "sql DELETE FROM users", "users")
    page.goto(f"{local_inbox.url}/#/t/carts")
    card = page.locator('.card[data-tool="execute_sql"]')
    expect(card.locator(".args")).to_contain_text("DELETE FROM carts")
    page.keyboard.press("r")
    page.keyboard.type("Only carts older than a year")
    page.goto(f"{local_inbox.url}/#/t/users")  # another request...
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
                                                                 local_inbox: LiveServer) -> None:
    start_thread(local_inbox.url, "write notes.txt hello", "notes")
    page.goto(f"{local_inbox.url}/#/t/notes")
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
            f"{local_inbox.url}/api/threads/notes").json()["status"] != "completed":
        time.sleep(0.05)
    assert list(EXECUTED) == [("write_file", {"path": "archive/notes.txt", "content": "hello"})]
    # sent: nothing of it is offered again
    assert page.evaluate("sessionStorage.getItem('interlock.drafts')") in (None, "{}")
