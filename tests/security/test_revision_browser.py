"""The web inbox in headless Chromium: an approval clicked on a card that still shows the call
as it was before a colleague's edit is refused (the page sends the revision it rendered), the
reviewer sees why, nothing is stored; the reloaded card shows the edited call and its revision,
and approving that runs the edited call once. The same in the "approve several" view: a call
edited after the list was shown is refused on its own line and nothing runs on it, while the
others are approved."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import playwright.sync_api as playwright_api
import pytest
from playwright.sync_api import Page, Route, expect

from interlock import SqliteCheckpointer
from server.live import CHROMIUM_ARGS, LiveServer, chromium_path

from .revision_agent import executions, make_agent, proposal
from .test_revision_surfaces import TOKENS, as_

pytestmark = pytest.mark.browser


@contextlib.contextmanager
def inbox_page(who: str) -> Iterator[Page]:
    """A page of headless Chromium (desktop size) whose inbox signs in with ``who``'s token
    (one of :data:`TOKENS`); nothing loaded yet."""
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1360, "height": 900})
            context.add_init_script(
                f"localStorage.setItem('interlock.token', '{who}-token-0123456789abcdef');")
            yield context.new_page()
        finally:
            browser.close()


@contextlib.contextmanager
def payment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    """(the agent, the URL of a live server) whose thread ``t`` proposes ``pay(acme, 100)``
    (two finance approvals), started by hal."""
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"))
    server = LiveServer(agent, tokens=TOKENS)
    try:
        httpx.post(f"{server.url}/api/threads", params={"wait": "true"}, headers=as_("hal"),
                   json={"thread_id": "t", "message": proposal("pay", account="acme",
                                                               amount=100)}, timeout=60)
        yield agent, server.url
    finally:
        server.stop()


def test_a_stale_card_cannot_approve_the_edited_call(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"))
    server = LiveServer(agent, tokens=TOKENS)

    def audit() -> list[Any]:  # Playwright's sync API runs an event loop in this thread
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(agent.audit, "t").result()

    def post(who: str, path: str, body: Any) -> httpx.Response:
        return httpx.post(f"{server.url}{path}", params={"wait": "true"}, json=body,
                          headers=as_(who), timeout=60)

    try:
        post("hal", "/api/threads",
             {"thread_id": "t", "message": proposal("pay", account="acme", amount=100)})
        with inbox_page("frank") as page:
            # the page keeps showing the thread as it first read it (revision 1)
            shown = httpx.get(f"{server.url}/api/threads/t", headers=as_("frank")).text

            def stale(route: Route) -> None:
                if route.request.method == "GET" and route.request.url.split("?")[
                        0].endswith("/api/threads/t"):
                    route.fulfill(status=200, content_type="application/json", body=shown)
                else:
                    route.continue_()
            page.route("**/api/threads/t*", stale)
            page.goto(f"{server.url}/#/t/t")
            card = page.locator('.card[data-tool="pay"]')
            expect(card).to_contain_text("acme")
            edited = post("gina", "/api/threads/t/decisions", {"decisions": [{
                "type": "edit", "edited_action": {
                    "name": "pay", "args": {"account": "offshore-9", "amount": 90000}}}]})
            assert edited.json()["status"] == "interrupted", edited.text
            rows = len(audit())
            with page.expect_request("**/api/threads/t/decisions") as sent:
                card.get_by_role("button", name="Approve", exact=True).click()
                # as shown, pay has no approval yet and needs two: frank's would be the first
                expect(card.locator(".confirm")).to_contain_text(
                    "This is approval 1 of 2: it runs once 1 more reviewer approves.")
                card.locator(".confirm").get_by_role(
                    "button", name="Yes, run it once approved").click()
            body = sent.value.post_data_json
            assert body["decisions"][next(iter(body["decisions"]))]["revision"] == 1
            expect(card.get_by_role("alert").filter(has_text="edited the call")).to_contain_text(
                "'gina' edited the call")
            assert executions() == [] and len(audit()) == rows
            page.unroute("**/api/threads/t*", stale)
            page.reload()
            card = page.locator('.card[data-tool="pay"]')
            expect(card.locator(".badge.revision")).to_have_text("revision 2, edited by gina")
            expect(card).to_contain_text("offshore-9")
            card.get_by_role("button", name="Approve", exact=True).click()
            card.locator(".confirm").get_by_role("button", name="Yes, run it").click()
            expect(page.locator('.detail-head [data-status]')).to_have_attribute(
                "data-status", "completed")
    finally:
        server.stop()
    assert executions() == ["pay offshore-9 90000"]
    (row,) = [a for a in agent.audit("t") if a.kind == "decision"]
    assert (row.actor, row.data["revision"]) == ("frank", 2)


def test_approving_several_refuses_the_call_edited_after_the_list_was_shown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inbox's "approve several" lists three `note` calls in full; bob edits the second
    while alice looks at the list. "Yes, run 3" approves the first and third; the second's
    line says bob edited it, nothing of alice's approval is stored for it and nothing runs on
    it; it waits at revision 2 until someone approves what it now is."""
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"))
    server = LiveServer(agent, tokens=TOKENS)

    def in_thread(fn: Any, *args: Any) -> Any:  # Playwright's sync API runs an event loop here
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(fn, *args).result()

    def post(who: str, path: str, body: Any) -> httpx.Response:
        return httpx.post(f"{server.url}{path}", params={"wait": "true"}, json=body,
                          headers=as_(who), timeout=60)

    try:
        for n in range(3):
            post("hal", "/api/threads", {"thread_id": f"b{n}",
                                         "message": proposal("note", text=f"n{n}")})
        with inbox_page("alice") as page:
            page.goto(f"{server.url}/#/t/b0")
            expect(page.locator(".row")).to_have_count(3)
            card = page.locator('.card[data-tool="note"]')
            expect(card.locator(".batch-offer")).to_contain_text("2 more note requests")
            page.keyboard.press("s")
            batch = page.locator(".batch")
            items = batch.locator(".batch-item")
            expect(items).to_have_count(3)
            row = batch.locator('.batch-item[data-thread-id="b1"]')
            expect(row.locator(".batch-args")).to_contain_text('"text": "n1"')
            (call,) = httpx.get(f"{server.url}/api/threads/b1", headers=as_("bob")).json()[
                "interrupts"][0]["value"]["action_requests"]
            edited = post("bob", "/api/threads/b1/decisions", {"decisions": {
                call["tool_call_id"]: {"type": "edit", "edited_action": {
                    "name": "note", "args": {"text": "rewritten by bob"}}}}})
            assert edited.json()["status"] == "interrupted", edited.text
            rows = len(in_thread(agent.audit, "b1"))
            with page.expect_request(lambda r: r.url.endswith("/api/threads/b2/decisions")):
                batch.get_by_role("button", name="Approve 3 calls…").click()
                batch.get_by_role("button", name="Yes, run 3").click()
            for tid in ("b0", "b2"):
                expect(batch.locator(f'.batch-item[data-thread-id="{tid}"] .batch-status')
                       ).to_have_text("Approved.")
            expect(row).to_have_class(re.compile(r"\bbatch-failed\b"))
            expect(row.locator(".batch-status")).to_contain_text("'bob' edited the call")
            assert sorted(executions()) == ["note n0", "note n2"]
            assert len(in_thread(agent.audit, "b1")) == rows
            state = in_thread(agent.get_thread, "b1")
            (intr,) = state.interrupts
            assert state.status == "interrupted"
            assert intr.value.action_requests[0].args == {"text": "rewritten by bob"}
            assert intr.value.review_configs[0].revision == 2
    finally:
        server.stop()
    assert sorted(executions()) == ["note n0", "note n2"]
    # the only decision row of b1 is bob's edit: nothing of alice's
    assert [(a.kind, a.actor, a.data.get("revision")) for a in agent.audit("b1")
            if a.kind in ("decision", "approval_recorded")] == [("approval_recorded", "bob", 1)]


def test_a_reviewer_whose_approval_is_counted_is_not_asked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pay needs two finance approvals. frank approves in the inbox: the card says his approval
    is counted and the call waits for one more (not "the run continues"). Reloaded, the card
    offers him no Approve (a second approval by him would be refused) and says why; Reject is
    still offered. gina's approval then runs the call once."""
    with payment(tmp_path, monkeypatch) as (agent, url):
        with inbox_page("frank") as page:
            page.goto(f"{url}/#/t/t")
            card = page.locator('.card[data-tool="pay"]')
            card.get_by_role("button", name="Approve", exact=True).click()
            card.locator(".confirm").get_by_role(
                "button", name="Yes, run it once approved").click()
            expect(card.locator(".card-status")).to_have_text(
                "Your approval is counted (1 of 2). The call runs once 1 more reviewer "
                "approves.")
            assert executions() == []
            page.reload()
            card = page.locator('.card[data-tool="pay"]')
            expect(card.locator(".badge.role").filter(has_text="approvals")).to_contain_text(
                "approvals 1 of 2: frank")
            expect(card.locator(".approved-by-me")).to_have_text(
                "You approved this call (1 of 2 approvals). It runs once 1 more reviewer "
                "approves; you can still reject it.")
            expect(card.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
            expect(card.get_by_role("button", name="Reject…")).to_be_enabled()
            page.keyboard.press("a")  # the key does nothing either
            expect(card.locator(".confirm")).to_be_hidden()
        with inbox_page("gina") as page:
            page.goto(f"{url}/#/t/t")
            card = page.locator('.card[data-tool="pay"]')
            expect(card.locator(".approved-by-me")).to_have_count(0)
            card.get_by_role("button", name="Approve", exact=True).click()
            card.locator(".confirm").get_by_role("button", name="Yes, run it").click()
            expect(page.locator('.detail-head [data-status]')).to_have_attribute(
                "data-status", "completed")
    assert executions() == ["pay acme 100"]
    assert sorted(a.actor for a in agent.audit("t") if a.kind in (
        "decision", "approval_recorded")) == ["frank", "gina"]


def test_an_approval_given_meanwhile_redraws_the_card_before_frank_approves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """frank has the payment open (approvals 0 of 2); gina approves it through the API. The
    card is drawn again with her approval counted, so frank's confirmation says the call runs
    at once (not "this is approval 1 of 2") before he answers yes; it runs once."""
    with payment(tmp_path, monkeypatch) as (_agent, url), inbox_page("frank") as page:
        page.goto(f"{url}/#/t/t")
        card = page.locator('.card[data-tool="pay"]')
        expect(card.locator(".badge.role").filter(has_text="approvals")).to_have_text(
            "approvals 0 of 2")
        r = httpx.post(f"{url}/api/threads/t/decisions", headers=as_("gina"),
                       json={"decisions": [{"type": "approve", "revision": 1}]}, timeout=60)
        assert r.status_code in (200, 202), r.text
        expect(card.locator(".badge.role").filter(has_text="approvals")).to_have_text(
            "approvals 1 of 2: gina")
        assert executions() == []
        card.get_by_role("button", name="Approve", exact=True).click()
        expect(card.locator(".confirm")).to_contain_text("It runs at once.")
        expect(card.locator(".confirm")).not_to_contain_text("approval 1 of 2")
        card.locator(".confirm").get_by_role("button", name="Yes, run it").click()
        expect(page.locator('.detail-head [data-status]')).to_have_attribute(
            "data-status", "completed")
    assert executions() == ["pay acme 100"]


def test_a_card_left_by_an_edit_says_the_call_was_edited_and_still_waits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """frank has the payment open after gina's approval (1 of 2); hal edits it. The old card
    stays for the record and says hal edited the call and that its revision 2 waits in its own
    card, never that someone decided it; the new card shows the edit, with no approval
    counted; nothing runs."""
    with payment(tmp_path, monkeypatch) as (_agent, url), inbox_page("frank") as page:
        r = httpx.post(f"{url}/api/threads/t/decisions", headers=as_("gina"),
                       json={"decisions": [{"type": "approve", "revision": 1}]}, timeout=60)
        assert r.status_code in (200, 202), r.text
        page.goto(f"{url}/#/t/t")
        old = page.locator('.card[data-tool="pay"]')
        expect(old.locator(".badge.role").filter(has_text="approvals")).to_have_text(
            "approvals 1 of 2: gina")
        r = httpx.post(f"{url}/api/threads/t/decisions", headers=as_("hal"), params={
            "wait": "true"}, json={"decisions": [{"type": "edit", "revision": 1, "edited_action": {
                "name": "pay", "args": {"account": "acme", "amount": 90}}}]}, timeout=60)
        assert r.status_code == 200, r.text
        lost = page.locator(".card.decided-elsewhere")
        expect(lost.locator(".elsewhere-what")).to_have_text(
            "hal edited this call: revision 2 waits for a decision in its own card. Nothing was "
            "decided on what this card shows.")
        new = page.locator('.card[data-tool="pay"]:not(.decided)')
        expect(new.locator(".badge.revision")).to_have_text("revision 2, edited by hal")
        expect(new).to_contain_text("90")
        expect(new.locator(".badge.role").filter(has_text="approvals")).to_contain_text(
            "1 of 2: hal")
    assert executions() == []
