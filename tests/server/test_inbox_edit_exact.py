"""An edit in the web inbox sends what the reviewer changed and nothing else (headless
Chromium): text that holds carriage returns (an e-mail with CRLF line endings, a value with a
lone CR) is not turned into other text by the browser's text boxes, whether the reviewer
edits another argument or that text itself."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import Page, expect

from .live import LiveServer, start_thread
from .server_agents import EXECUTED

pytestmark = pytest.mark.browser

CONTENT = "Dear Noah,\r\nyour order left.\r\n\r\nBest,\rOps"


def ran(url: str, thread_id: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if httpx.get(f"{url}/api/threads/{thread_id}").json()["status"] == "completed":
            return
        time.sleep(0.05)
    raise AssertionError(f"{thread_id} did not complete")


def test_editing_another_argument_keeps_carriage_returns(page: Page,
                                                         local_inbox: LiveServer) -> None:
    start_thread(local_inbox.url, f"write notes.txt {CONTENT}", "crlf-other")
    page.goto(f"{local_inbox.url}/#/t/crlf-other")
    card = page.locator('.card[data-tool="write_file"]')
    card.get_by_role("button", name="Edit…").click()
    page.locator('.field[data-arg="path"] input').fill("letters/noah.txt")
    diff = card.locator(".diff-box")
    expect(diff).to_contain_text("Unchanged: content")  # the reviewer's view, before sending
    card.get_by_role("button", name="Run with these arguments").click()
    card.locator(".confirm").get_by_role("button", name="Yes, run it").click()
    ran(local_inbox.url, "crlf-other")
    assert list(EXECUTED) == [("write_file", {"path": "letters/noah.txt", "content": CONTENT})]


def test_text_with_carriage_returns_is_edited_exactly(page: Page, local_inbox: LiveServer) -> None:
    start_thread(local_inbox.url, f"write notes.txt {CONTENT}", "crlf-same")
    page.goto(f"{local_inbox.url}/#/t/crlf-same")
    card = page.locator('.card[data-tool="write_file"]')
    card.get_by_role("button", name="Edit…").click()
    field = page.locator('.field[data-arg="content"]')
    expect(field).to_contain_text("carriage returns")
    box = field.locator("textarea")
    # the text as a JSON string: the reviewer changes one word, every \r stays
    box.fill(box.input_value().replace("Best", "Kind regards"))
    expect(card.locator(".diff-box")).to_contain_text("Kind regards")
    # switching to the JSON view and back keeps it too; a CR typed where a text box would
    # lose it is refused rather than changed
    card.get_by_role("button", name="Edit as JSON").click()
    raw = card.locator("textarea.raw-json")
    raw.fill(raw.input_value().replace('"notes.txt"', '"notes\\r.txt"'))
    card.get_by_role("button", name="Edit as form").click()
    expect(card.locator(".form-error")).to_contain_text("path holds a carriage return")
    raw.fill(raw.input_value().replace('"notes\\r.txt"', '"notes.txt"'))
    card.get_by_role("button", name="Edit as form").click()
    card.get_by_role("button", name="Run with these arguments").click()
    card.locator(".confirm").get_by_role("button", name="Yes, run it").click()
    ran(local_inbox.url, "crlf-same")
    assert list(EXECUTED) == [("write_file", {
        "path": "notes.txt", "content": CONTENT.replace("Best", "Kind regards")})]
