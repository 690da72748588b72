"""An e-mail decision link in headless Chromium: the confirmation page's own form posts (the
page's CSP lets it post to this origin and nowhere else), the decision is stored once, and the
reject reason typed on the page reaches the agent."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from playwright.sync_api import Browser, Page, expect

from server.live import shown_box

from .agents import QUERY, executions
from .test_email import body_of, local, setup  # noqa: F401  (the fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    # a CSP violation (a blocked form submission) is logged as a console error
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield pg
    context.close()
    assert errors == [], errors


R = TypeVar("R")


def off(fn: Callable[[], R]) -> R:
    """The agent's blocking calls, away from the thread Playwright's event loop runs in."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn).result()


def link_of(box: Any, server: Any) -> str:
    (msg,) = box.wait(1)
    (url,) = re.findall(r"https?://\S+/notify/email#\S+", body_of(msg))
    return local(url, server)


def wait_status(agent: Any, thread_id: str, status: str) -> None:
    deadline = time.monotonic() + 30
    while off(lambda: agent.get_thread(thread_id).status) != status \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert off(lambda: agent.get_thread(thread_id).status) == status


def test_approve_button_of_an_email_link_decides_in_a_browser(
        setup: tuple[Any, ...], page: Page) -> None:  # noqa: F811
    agent, box, server = setup
    assert off(lambda: agent.invoke("clean up", thread_id="b1")).interrupted
    link = link_of(box, server)
    token = link.split("#", 1)[1]
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url + " " + (r.post_data or "")))
    shown = page.goto(link)
    assert shown is not None
    # the page keeps the inbox's strict policy: its script posts with fetch, no form submission
    csp = shown.headers["content-security-policy"]
    assert "form-action 'none'" in csp and "script-src 'self'" in csp
    expect(page.locator("h1")).to_have_text("Confirm your decision")
    # the warning about hidden characters carries a sign drawn by the stylesheet (U+26A0
    # needs an emoji font: without one Chromium shows an empty box)
    sign = page.locator(".notice .warn-sign").first
    expect(sign).to_be_visible()
    box = shown_box(sign)
    assert box is not None and box["width"] > 8 and box["height"] > 8
    assert sign.evaluate("s => getComputedStyle(s).clipPath").startswith("polygon")
    assert "\u26a0" not in page.locator("main").inner_text()
    # the arguments are shown once (the default description's "Args:" line is left out)
    assert page.locator("main").inner_text().count("Args:") == 0
    # styled by the inbox's stylesheet (an unstyled button keeps the browser's grey)
    approve = page.get_by_role("button", name="Approve")
    assert approve.evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(19, 122, 60)"
    approve.click()
    expect(page.locator("h1")).to_have_text("Thank you")
    expect(page.locator("main")).to_contain_text("You approved the call")
    wait_status(agent, "b1", "completed")
    assert executions() == [QUERY]
    (decision,) = [a for a in off(lambda: agent.audit("b1")) if a.kind == "decision"]
    assert decision.actor == "alice" and decision.data["type"] == "approve"
    # the token travelled only in request bodies, never in a URL the server or a proxy logs
    assert not [u for u in sent if token in u.split(" ", 1)[0]], sent
    assert any(token in u for u in sent)


def test_reject_with_a_reason_from_the_browser(setup: tuple[Any, ...],  # noqa: F811
                                               page: Page) -> None:
    agent, box, server = setup
    assert off(lambda: agent.invoke("clean up", thread_id="b2")).interrupted
    page.goto(link_of(box, server))
    page.get_by_label("Reason (optional)").fill("not on a Thursday")
    page.get_by_role("button", name="Reject").click()
    expect(page.locator("main")).to_contain_text("You rejected the call")
    wait_status(agent, "b2", "completed")
    assert executions() == []
    (decision,) = [a for a in off(lambda: agent.audit("b2")) if a.kind == "decision"]
    assert decision.data["type"] == "reject"
    assert "not on a Thursday" in str(decision.data)
