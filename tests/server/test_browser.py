"""The web inbox in headless Chromium (Debian's build, driven by Playwright): requests appear
live, every decision works from the page and the runs finish with the expected tool results,
decisions made elsewhere update the page, untrusted text never runs, 1,000 pending requests
stay fast. All waits are Playwright's auto-waiting assertions."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from playwright import sync_api as playwright_api
from playwright.sync_api import Browser, Page, expect
from pydantic import BaseModel

from interlock import Agent, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, tool
from interlock.messages import Message, UserMessage

from .conftest import ALICE, BOB, CAROL, TOKENS, bearer
from .live import CHROMIUM_ARGS, LiveServer, chromium_path, shown_box, watched_page
from .server_agents import EXECUTED, make_agent

pytestmark = pytest.mark.browser

SQL = "DELETE FROM records WHERE created_at < NOW() - INTERVAL '30 days'"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    path = chromium_path()
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    db = tmp_path_factory.mktemp("browser") / "inbox.db"
    server = LiveServer(make_agent(SqliteCheckpointer(db)))
    yield server
    server.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    with watched_page(browser) as pg:
        dialogs: list[str] = []
        pg.on("dialog", lambda d: dialogs.append(d.message))
        yield pg
    assert dialogs == [], dialogs


class Api:
    def __init__(self, base: str, token: str | None = None) -> None:
        self.base = base
        self.headers = bearer(token) if token else {}

    def start(self, message: str, thread_id: str) -> dict[str, Any]:
        r = httpx.post(f"{self.base}/api/threads", params={"wait": "true"},
                       headers=self.headers, json={"message": message, "thread_id": thread_id},
                       timeout=30)
        assert r.status_code == 200, r.text
        return dict(r.json())

    def thread(self, thread_id: str) -> dict[str, Any]:
        r = httpx.get(f"{self.base}/api/threads/{thread_id}", headers=self.headers, timeout=30)
        assert r.status_code == 200, r.text
        return dict(r.json())


def open_thread(page: Page, live: LiveServer, thread_id: str) -> None:
    page.goto(f"{live.url}/")
    row = page.locator(f'.row[data-thread-id="{thread_id}"]')
    expect(row).to_be_visible()
    row.click()
    expect(page.locator(".thread-id")).to_have_text(thread_id)


def card(page: Page, tool: str) -> Any:
    return page.locator(f'.card[data-tool="{tool}"]')


def expect_completed(page: Page, mine: bool = True) -> None:
    """The open thread completed. ``mine``: after a decision on the page, which moves on to
    the next pending request; the note it leaves opens the decided thread again."""
    if mine:
        page.locator("#done a.done-open").click()
    expect(page.locator('.detail-head [data-status]')).to_have_attribute("data-status",
                                                                        "completed")


def results(page: Page) -> Any:
    return page.locator(".msg.tool pre.result")


def confirm(c: Any) -> None:
    """Answer yes to the confirmation a decision that runs a tool asks for."""
    c.locator(".confirm").get_by_role("button", name="Yes, run it").click()


# -- live list --------------------------------------------------------------------------------


def test_pending_request_appears_live(page: Page, live: LiveServer) -> None:
    page.goto(f"{live.url}/")
    expect(page.locator("#conn")).to_have_class("conn up")
    expect(page.locator("#list-count")).to_contain_text("pending")
    before = page.locator(".row").count()
    Api(live.url).start(f"sql {SQL}", "live-1")
    row = page.locator('.row[data-thread-id="live-1"]')
    expect(row).to_be_visible()
    expect(row.locator(".row-title")).to_have_text("execute_sql")
    expect(row.locator(".row-args")).to_contain_text("DELETE FROM records")
    expect(page).to_have_title(f"({before + 1}) interlock · review inbox")


# -- decisions from the page -------------------------------------------------------------------


def test_approve_from_the_page(page: Page, live: LiveServer) -> None:
    Api(live.url).start(f"sql {SQL}", "approve-1")
    open_thread(page, live, "approve-1")
    c = card(page, "execute_sql")
    expect(c.locator(".argv dt")).to_have_text(["query"])
    expect(c.locator(".argv dd")).to_have_text([SQL])
    expect(c.locator(":scope > .actions > button")).to_have_text(
        ["Approve A", "Approve & remember… M", "Edit… E", "Reject… R",
         "Respond… P"])
    c.get_by_role("button", name="Approve", exact=True).click()
    expect(c.locator(".confirm")).to_have_text(
        "Approve execute_sql? It runs at once.Yes, run it EnterNo Esc")
    confirm(c)
    expect_completed(page)
    expect(results(page)).to_have_text([f"OK: ran {SQL}"])
    expect(page.locator('.row[data-thread-id="approve-1"]')).to_have_count(0)
    expect(page.locator("tr.decision-row")).to_contain_text(["approved execute_sql"])
    expect(page.locator("tr.decision-row td.actor")).to_have_text(["local"])
    t = Api(live.url).thread("approve-1")
    assert t["status"] == "completed"
    assert [m["content"] for m in t["messages"] if m["role"] == "tool"] == [f"OK: ran {SQL}"]
    assert EXECUTED.count(("execute_sql", {"query": SQL})) == 1


def test_edit_changes_an_argument(page: Page, live: LiveServer) -> None:
    Api(live.url).start("limit 4", "edit-1")
    open_thread(page, live, "edit-1")
    c = card(page, "set_limit")
    expect(c.locator(":scope > .actions > button")).to_have_text(
        ["Approve A", "Approve & remember… M", "Edit… E", "Reject… R"])
    c.get_by_role("button", name="Edit…").click()
    field = c.locator('.field[data-arg="n"] input')
    expect(field).to_have_value("4")
    submit = c.get_by_role("button", name="Run with these arguments")
    field.fill("four")  # checked in the page before anything is sent
    expect(c.locator('.field[data-arg="n"] .field-error')).to_have_text("must be a whole number")
    expect(submit).to_be_disabled()
    field.fill("3")  # a valid integer, but the tool only takes even numbers: the server says so
    expect(submit).to_be_enabled()
    submit.click()
    confirm(c)
    expect(c.locator(".panel .error")).to_contain_text("n must be an even number")
    expect(c.locator(".panel .error")).to_contain_text("Nothing was changed")
    field.fill("6")
    submit.click()
    confirm(c)
    expect_completed(page)
    expect(results(page)).to_have_count(1)
    expect(results(page).first).to_contain_text("limit set to 6")
    expect(results(page).first).to_contain_text("a reviewer changed this tool call")
    t = Api(live.url).thread("edit-1")
    assert t["messages"][1]["tool_calls"][0]["args"] == {"n": 4}  # history keeps the original
    assert ("set_limit", {"n": 6, "reason": ""}) in EXECUTED
    assert not any(name == "set_limit" and args["n"] in (3, 4) for name, args in EXECUTED)


def test_edit_as_raw_json(page: Page, live: LiveServer) -> None:
    Api(live.url).start("write notes.txt hello", "edit-raw")
    open_thread(page, live, "edit-raw")
    c = card(page, "write_file")
    c.get_by_role("button", name="Edit…").click()
    c.get_by_role("button", name="Edit as JSON").click()
    raw = c.get_by_label("Arguments as JSON")
    raw.fill('{"path": "notes.txt", "content": "hello", "mode": "w"}')
    expect(c.locator(".form-error")).to_contain_text("mode: unknown argument")
    expect(c.get_by_role("button", name="Run with these arguments")).to_be_disabled()
    raw.fill('{"path": "notes.txt", "content": "bye"}')
    c.get_by_role("button", name="Run with these arguments").click()
    confirm(c)
    expect_completed(page)
    expect(results(page).first).to_contain_text("wrote 3 characters to notes.txt")


def test_reject_with_a_reason(page: Page, live: LiveServer) -> None:
    Api(live.url).start("sql DROP TABLE customers", "reject-1")
    open_thread(page, live, "reject-1")
    c = card(page, "execute_sql")
    c.get_by_role("button", name="Reject…").click()
    c.get_by_label("Reason").fill("never drop customers")
    c.locator(".panel").get_by_role("button", name="Reject", exact=True).click()
    expect_completed(page)
    expect(results(page).first).to_contain_text("The user rejected the tool call `execute_sql`")
    expect(results(page).first).to_contain_text("Reason: never drop customers")
    expect(page.locator(".msg.tool .badge.decision-reject")).to_have_text("rejected")
    assert ("execute_sql", {"query": "DROP TABLE customers"}) not in EXECUTED


def test_respond(page: Page, live: LiveServer) -> None:
    Api(live.url).start("ask Which region should I deploy to?", "respond-1")
    open_thread(page, live, "respond-1")
    c = card(page, "ask_user")
    expect(c.locator(":scope > .actions > button")).to_have_text(["Reject… R", "Respond… P"])
    c.get_by_role("button", name="Respond…").click()
    send = c.get_by_role("button", name="Send response")
    expect(send).to_be_disabled()
    c.get_by_label("Response", exact=True).fill("eu-west-1")
    send.click()
    expect_completed(page)
    expect(results(page)).to_have_text(["eu-west-1"])
    expect(page.locator(".msg.assistant .text").last).to_have_text("Done. eu-west-1")
    assert not any(name == "ask_user" for name, _ in EXECUTED)


def test_approve_and_remember_then_revoke(page: Page, live: LiveServer) -> None:
    Api(live.url).start("twice SELECT 5", "remember-1")
    open_thread(page, live, "remember-1")
    c = card(page, "execute_sql")
    c.get_by_role("button", name="Approve & remember…").click()
    expect(c.locator(".panel")).to_contain_text("execute_sql is not declared read-only")
    c.get_by_role("button", name="Yes, approve and remember").click()
    expect_completed(page)
    expect(results(page)).to_have_text(["OK: ran SELECT 5", "OK: ran SELECT 5 -- again"])
    rule = page.locator(".rules li")
    expect(rule).to_contain_text("execute_sql")
    expect(page.locator("tr[data-kind=auto_approved]")).to_have_count(1)
    rule.get_by_role("button", name="Revoke").click()
    expect(page.locator(".rules li")).to_have_count(0)
    assert Api(live.url).thread("remember-1")["remembered"] == []


def test_answer_a_question(page: Page, live: LiveServer) -> None:
    Api(live.url).start("pick", "question-1")
    open_thread(page, live, "question-1")
    c = page.locator(".card.input-card")
    expect(c.locator(".question")).to_have_text("Which colour?")
    c.get_by_label("Answer", exact=True).fill("teal")
    c.get_by_role("button", name="Send answer").click()
    expect_completed(page)
    expect(results(page)).to_have_text(["colour is teal"])


def test_decision_made_elsewhere_updates_the_open_page(page: Page, live: LiveServer) -> None:
    api = Api(live.url)
    intr = api.start(f"sql {SQL}", "elsewhere-1")["interrupts"][0]
    open_thread(page, live, "elsewhere-1")
    expect(card(page, "execute_sql")).to_be_visible()
    r = httpx.post(f"{live.url}/api/threads/elsewhere-1/decisions", timeout=30,
                   json={"interrupt_id": intr["id"],
                         "decisions": [{"type": "reject", "message": "done by API"}]})
    assert r.status_code == 202
    # the card stays, saying who decided what (nothing was typed, so there is no draft)
    c = card(page, "execute_sql")
    expect(c).to_have_class("card decided decided-elsewhere")
    expect(c.locator(".elsewhere-what")).to_contain_text("local rejected this call")
    expect(c.locator(".elsewhere-what")).to_contain_text("Their words: done by API")
    expect(c.locator(":scope > .actions")).to_be_hidden()
    expect(c.locator(".draft")).to_have_count(0)
    expect_completed(page, mine=False)
    expect(page.locator('.row[data-thread-id="elsewhere-1"]')).to_have_count(0)
    expect(page.locator("tr.decision-row")).to_contain_text(["rejected execute_sql"])
    expect(page.locator("tr.decision-row pre.detail")).to_contain_text(["message: done by API"])


def test_cancel_from_the_page(page: Page, live: LiveServer) -> None:
    Api(live.url).start("multi", "cancel-1")
    open_thread(page, live, "cancel-1")
    expect(page.locator(".card")).to_have_count(2)
    page.get_by_role("button", name="Cancel thread…").click()
    page.locator(".cancel-reason").fill("wrong ticket")
    page.get_by_role("button", name="Cancel all pending calls").click()
    expect(page.locator('.detail-head [data-status]')).to_have_attribute("data-status", "idle")
    expect(page.locator(".card")).to_have_count(0)
    expect(results(page)).to_have_count(2)
    expect(results(page).first).to_contain_text("Reason: wrong ticket")


# -- untrusted text -----------------------------------------------------------------------------

XSS = ('<img src=x onerror="window.__xss=1;alert(1)"></script>'
       '<script>window.__xss=2</script><b>bold</b>')


def test_untrusted_text_renders_as_text_and_runs_nothing(page: Page, live: LiveServer) -> None:
    api = Api(live.url)
    tid = "xss-1"  # thread ids are letters, digits and . _ : @ - (markup cannot get in)
    api.start(f"write x.txt {XSS}", tid)
    page.goto(f"{live.url}/")
    row = page.locator(".row").filter(has_text="write_file").first
    expect(row.locator(".row-args")).to_contain_text('<img src=x onerror="window.__xss=1')
    expect(row.locator(".row-preview")).to_contain_text("</script><script>window.__xss=2")
    row.click()
    expect(page.locator(".thread-id")).to_have_text(tid)
    c = card(page, "write_file")
    expect(c.locator(".argv dd")).to_have_text(["x.txt", XSS])
    c.get_by_role("button", name="Show JSON").click()
    args = json.loads(c.locator("pre.json").inner_text())
    assert args == {"path": "x.txt", "content": XSS}
    expect(page.locator(".msg.user .text")).to_have_text(f"write x.txt {XSS}")
    c.get_by_role("button", name="Edit…").click()
    expect(c.locator('.field[data-arg="content"] textarea')).to_have_value(XSS)
    # nothing was parsed as markup, so there is no image, script or bold element from the data
    assert page.locator("img").count() == 0
    assert page.locator("#detail script, #list script").count() == 0
    assert page.locator("#detail b, #list b").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    c.get_by_role("button", name="Run with these arguments").click()
    confirm(c)
    expect_completed(page)
    assert page.evaluate("typeof window.__xss") == "undefined"


# -- auth in the page ----------------------------------------------------------------------------


def test_sign_in_and_roles(browser: Browser, tmp_path: Path) -> None:
    server = LiveServer(make_agent(SqliteCheckpointer(tmp_path / "auth.db")), tokens=TOKENS)
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    try:
        # bob's own thread: he may read it, but its call needs a dba
        Api(server.url, BOB).start("drop audit_2019", "roles-1")
        page = context.new_page()
        page.goto(f"{server.url}/")
        expect(page.locator("#login")).to_be_visible()
        page.locator("#token").fill("not-a-valid-token-123456")
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#login-error")).to_have_text("That token was not accepted.")
        page.locator("#token").fill(BOB)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#whoami")).to_have_text("bob (ops)")
        open_row = page.locator('.row[data-thread-id="roles-1"]')
        open_row.click()
        c = card(page, "drop_table")
        expect(c.locator(".notice")).to_have_text(
            "Only a reviewer with the role dba can decide this call.")
        expect(c.get_by_role("button", name="Approve", exact=True)).to_be_disabled()
        page.get_by_role("button", name="Sign out").click()
        expect(page.locator("#login")).to_be_visible()
        page.locator("#token").fill(ALICE)
        page.get_by_role("button", name="Sign in").click()
        page.locator('.row[data-thread-id="roles-1"]').click()
        card(page, "drop_table").get_by_role("button", name="Approve", exact=True).click()
        confirm(card(page, "drop_table"))
        expect_completed(page)
        expect(page.locator("tr.decision-row td.actor")).to_have_text(["alice"])
        assert ("drop_table", {"table": "audit_2019"}) in EXECUTED
    finally:
        context.close()
        server.stop()


def test_the_first_page_is_asked_for_together_with_the_identity(browser: Browser,
                                                                 tmp_path: Path) -> None:
    server = LiveServer(make_agent(SqliteCheckpointer(tmp_path / "first.db")), tokens=TOKENS)
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    try:
        Api(server.url, BOB).start("drop audit_2019", "first-1")
        # a token the server does not accept, remembered from before: the sign-in form says
        # so once, with no banner and no rows (the list asked for at once got a 401 too)
        context.add_init_script(
            "if (!localStorage.getItem('interlock.token'))"
            " localStorage.setItem('interlock.token', 'not-a-valid-token-123456');")
        page = context.new_page()
        events: list[str] = []
        page.on("request", lambda r: events.append(f"ask {r.url.split('/api/')[-1]}")
                if "/api/" in r.url else None)
        page.on("requestfinished", lambda r: events.append(f"got {r.url.split('/api/')[-1]}")
                if "/api/" in r.url else None)
        page.goto(f"{server.url}/")
        expect(page.locator("#login")).to_be_visible()
        expect(page.locator("#login-error")).to_have_text("That token was not accepted.")
        expect(page.locator("#banner")).to_be_hidden()
        expect(page.locator("#list .row")).to_have_count(0)
        # the identity, the first page and the count were asked for before any answered
        asked = [e for e in events if e.startswith("ask ")]
        assert sorted(a.split("?")[0] for a in asked) == ["ask me", "ask threads",
                                                          "ask threads"], events
        assert events[:3] == asked, events

        page.locator("#token").fill(BOB)
        page.locator("#remember-token").check()
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#whoami")).to_have_text("bob (ops)")
        expect(page.locator('.row[data-thread-id="first-1"]')).to_be_visible()
        expect(page.locator("#login")).to_be_hidden()

        # a new page with the token now stored: rows at once, one list request, no sign-in
        # (a list of its own: the first page, still open, may ask for a recount meanwhile)
        listed: list[str] = []
        second = context.new_page()
        second.on("request", lambda r: listed.append(r.url) if "/api/" in r.url else None)
        static: list[tuple[str, str]] = []
        second.on("response", lambda r: static.append((r.url, r.headers.get(
            "cache-control", ""))) if "/static/" in r.url else None)
        second.goto(f"{server.url}/")
        expect(second.locator('.row[data-thread-id="first-1"]')).to_be_visible()
        expect(second.locator("#login")).to_be_hidden()
        # the identity, the page without the count (counting waits for no row) and the count,
        # each asked for once: early.js sends them while the modules load, and the inbox
        # takes those answers instead of asking again
        # (the first pending request then opens on its own: api/threads/first-1)
        threads = [u for u in listed if "/api/threads?" in u]
        assert len([u for u in threads if "count=true" in u]) == 1, listed
        assert len([u for u in threads if "count=true" not in u]) == 1, listed
        assert len([u for u in listed if u.endswith("/api/me")]) == 1, listed
        assert all(c == "public, max-age=31536000, immutable" for _, c in static), static
    finally:
        context.close()
        server.stop()


# -- 1,000 pending ---------------------------------------------------------------------------


def _seed(db: Path, n: int) -> None:
    store = SqliteCheckpointer(db, synchronous="OFF")
    agent = make_agent(store)

    async def go() -> None:
        for i in range(n):
            await agent.ainvoke(f"sql UPDATE accounts SET flagged = true WHERE id = {i}",
                                thread_id=f"bulk-{i:04d}")
        await store.close()

    # Playwright's sync API owns this thread's event loop: seed from another thread
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, go()).result()


def test_a_thousand_pending_requests_stay_fast(browser: Browser, tmp_path: Path) -> None:
    db = tmp_path / "bulk.db"
    _seed(db, 1000)
    server = LiveServer(make_agent(SqliteCheckpointer(db)))
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    try:
        page = context.new_page()
        started = time.perf_counter()
        page.goto(f"{server.url}/")
        # generous bounds: the suite shares two cores with other processes (the speed itself
        # is measured by bench/scale_inbox.py, not here)
        expect(page.locator("#list-count")).to_have_text("1,000 pending requests",
                                                         timeout=30_000)
        wall = time.perf_counter() - started
        ready = page.evaluate(
            "performance.getEntriesByName('interlock:inbox-ready')[0].startTime")
        rows = page.locator(".row").count()
        print(f"\n1,000 pending: list ready {ready:.0f} ms after navigation "
              f"({wall * 1000:.0f} ms wall), {rows} row elements in the DOM")
        assert rows < 60  # virtualised: only the visible rows exist
        assert ready < 10_000
        expect(page.locator(".row").first).to_have_attribute("data-thread-id", "bulk-0999")
        # the list pages on scroll: the end of the first page brings the next one
        page.locator("#list").evaluate("el => { el.scrollTop = el.scrollHeight; }")
        deadline = time.monotonic() + 15
        while page.locator("#list-spacer").evaluate("el => el.offsetHeight") <= 100 * 78:
            assert time.monotonic() < deadline, "scrolling to the end loaded no next page"
            page.wait_for_timeout(50)
        # the oldest request is found by the server's search, not by scrolling to it
        page.locator("#list").evaluate("el => { el.scrollTop = 0; }")
        page.locator("#search").fill("bulk-0000")
        expect(page.locator("#list-count")).to_have_text("1 matching pending request")
        expect(page.locator('.row[data-thread-id="bulk-0000"]')).to_be_visible()
        t0 = time.perf_counter()
        page.locator("#search").fill("id = 123")
        expect(page.locator("#list-count")).to_have_text("1 matching pending request")
        print(f"filter over 1,000: {(time.perf_counter() - t0) * 1000:.0f} ms")
        page.locator('.row[data-thread-id="bulk-0123"]').click()
        card(page, "execute_sql").get_by_role("button", name="Approve", exact=True).click()
        confirm(card(page, "execute_sql"))
        expect_completed(page)
        page.locator("#search").fill("")
        expect(page.locator("#list-count")).to_have_text("999 pending requests")
    finally:
        context.close()
        server.stop()


def test_times_and_counts_drawn_without_intl_read_as_intl_writes_them(page: Page,
                                                                      live: LiveServer) -> None:
    # the first draw words relative times and groups counts itself (Intl's first use costs a
    # slow machine tens of ms): the same text as Intl's, and the tooltips come once Intl is
    # loaded (the first pointer move, key or touch, or 2 s)
    Api(live.url).start("sql SELECT 1 AS tooltip", "tooltip-1")
    page.goto(f"{live.url}/")
    row = page.locator('.row[data-thread-id="tooltip-1"]')
    expect(row).to_be_visible()
    differ = page.evaluate("""async () => {
      const dom = await import(new URL("static/dom.js", document.baseURI).toString());
      const intl = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
      const out = [];
      for (const unit of ["year", "month", "day", "hour", "minute", "second"]) {
        for (const v of [-12345, -1000, -59, -12, -2, -1, 0, 1, 2, 10, 45, 1001, 2500000]) {
          if (dom.relative(v, unit, true) !== intl.format(v, unit)) {
            out.push([v, unit, dom.relative(v, unit, true), intl.format(v, unit)]);
          }
        }
      }
      for (const n of [0, 7, 999, 1000, 12345, 999999, 1000000, 123456789, -4321]) {
        if (dom.count(n) !== n.toLocaleString("en-US")) out.push([n, dom.count(n)]);
      }
      return out;
    }""")
    assert differ == []
    when = row.locator("time")
    page.mouse.move(5, 5)
    expect(when).to_have_attribute("title", page.evaluate(
        "iso => new Date(iso).toLocaleString()", when.get_attribute("datetime")))
    # a detail opened after: its time has its tooltip at once, and a decision still works
    row.click()
    head = page.locator(".detail-head time")
    expect(head).to_have_attribute("title", page.evaluate(
        "iso => new Date(iso).toLocaleString()", head.get_attribute("datetime")))
    card(page, "execute_sql").get_by_role("button", name="Approve", exact=True).click()
    confirm(card(page, "execute_sql"))
    expect_completed(page)


# -- the arguments form, on a schema with every supported kind of field --------------------------


class Window(BaseModel):
    start: str
    end: str


@tool
def schedule(title: str, count: int, ratio: float, urgent: bool, level: Literal["low", "high"],
             note: str | None = None, tags: list[str] | None = None,
             window: Window | None = None) -> str:
    """A tool with many kinds of arguments."""
    return "ok"


def test_args_form_covers_the_schema_kinds(page: Page, live: LiveServer) -> None:
    args = {"title": "deploy", "count": 2, "ratio": 0.5, "urgent": False, "level": "low",
            "note": None, "tags": ["a"], "window": {"start": "09:00", "end": "10:00"}}
    page.goto(f"{live.url}/")
    expect(page.locator("#list-count")).not_to_have_text("Loading…")
    out = page.evaluate("""async ([schema, args]) => {
      const { argsEditor } = await import("./static/form.js");
      const ed = argsEditor(schema, args);
      document.body.append(ed.el);
      const field = (n) => ed.el.querySelector(`.field[data-arg="${n}"]`);
      const set = (n, v) => { const i = field(n).querySelector("input[type=text], textarea");
        i.value = v; i.dispatchEvent(new Event("input", { bubbles: true })); };
      const results = { kinds: [...ed.el.querySelectorAll(".field-type")].map((e) => e.textContent),
                        initial: ed.read() };
      set("count", "2.5"); results.fraction = ed.read();
      set("count", "7"); set("tags", '["x", 3]'); results.badTags = ed.read();
      set("tags", '["x"]');
      field("level").querySelector("select").value = "1";
      field("urgent").querySelector("input").checked = true;
      field("note").querySelector(".null-toggle input").checked = false;
      set("note", "call first");
      results.changed = ed.read();
      set("title", "");
      results.emptyTitle = ed.read();
      return results;
    }""", [schedule.args_schema, args])
    assert out["kinds"] == ["string", "integer", "number", "boolean", "enum", "string or empty",
                            "JSON or empty", "JSON or empty"]
    assert out["initial"] == {"ok": True, "value": args, "errors": []}
    assert out["fraction"]["ok"] is False
    assert out["fraction"]["errors"] == ["count: must be a whole number"]
    assert out["badTags"]["ok"] is False
    assert any(e.startswith("tags") for e in out["badTags"]["errors"])
    assert out["changed"] == {"ok": True, "errors": [], "value": {
        **args, "count": 7, "tags": ["x"], "level": "high", "urgent": True,
        "note": "call first"}}
    assert out["emptyTitle"]["ok"] is True  # an empty text is a valid str
    assert out["emptyTitle"]["value"]["title"] == ""


# -- reviewer experience: titles, diffs, keyboard, follow-ups, phone width ----------------------


def decide_api(live: LiveServer, thread_id: str, decisions: Any) -> None:
    r = httpx.post(f"{live.url}/api/threads/{thread_id}/decisions", params={"wait": "true"},
                   json={"decisions": decisions}, timeout=30)
    assert r.status_code == 200, r.text


def test_finished_thread_shows_no_null_and_says_what_happened(page: Page,
                                                              live: LiveServer) -> None:
    Api(live.url).start("sql SELECT 42 AS answer", "title-1")
    decide_api(live, "title-1", [{"type": "approve"}])
    page.goto(f"{live.url}/")
    page.select_option("#status-filter", "")
    row = page.locator('.row[data-thread-id="title-1"]')
    # titled by what it was about, then how it ended and the last decision, not by its status
    expect(row.locator(".row-title")).to_have_text("sql SELECT 42 AS answer")
    expect(row.locator(".row-args")).to_have_text("Done. OK: ran SELECT 42 AS answer")
    expect(row.locator(".row-preview")).to_have_text("approved execute_sql (local)")
    expect(row.locator(".badge")).to_have_text("completed")
    row.click()
    expect_completed(page, mine=False)
    expect(page.locator("tr.decision-row")).to_have_count(1)
    text = page.locator("body").inner_text()
    assert "null" not in text.split(), text
    assert "null" not in page.locator(".detail-head").inner_text()


def test_a_filter_chosen_before_the_first_page_arrived_is_the_list_shown(
        page: Page, live: LiveServer) -> None:
    # the first page is asked for with the default filter together with api/me; a filter
    # chosen while api/me is still on its way must not be replaced by that early answer
    Api(live.url).start("sql SELECT 7 AS early", "early-1")
    decide_api(live, "early-1", [{"type": "approve"}])
    held: list[Any] = []
    page.route("**/api/me", lambda route: held.append(route))
    page.goto(f"{live.url}/")
    page.wait_for_function("document.readyState === 'complete'")
    expect(page.locator("#whoami")).to_have_text("")  # api/me has not been answered
    page.select_option("#status-filter", "")
    row = page.locator('.row[data-thread-id="early-1"]')
    expect(row).to_be_visible()
    while not held:
        page.wait_for_timeout(20)
    held[0].continue_()
    expect(page.locator("#whoami")).to_have_text("local mode")
    page.wait_for_timeout(500)  # time for a stale first page to replace the list
    expect(row).to_be_visible()
    expect(page.locator("#status-filter")).to_have_value("")


def test_a_question_is_shown_once(page: Page, live: LiveServer) -> None:
    question = "Which region should the new replica go to?"
    Api(live.url).start(f"ask {question}", "once-1")
    open_thread(page, live, "once-1")
    expect(card(page, "ask_user").locator(".argv dd")).to_have_text([question])
    expect(page.locator(".waiting-above")).to_have_text(["waiting for your decision (above)"])
    # the request card, the agent's messages and the history name it once in all (the user's
    # own message that asked for it is the user's text, shown as the conversation's start)
    shown = sum(page.locator(sel).inner_text().count(question)
                for sel in ("#detail div.requests", "#detail div.history"))
    shown += sum(m.count(question) for m in page.locator(".msg.assistant").all_inner_texts())
    assert shown == 1


def test_empty_list_message_sits_where_the_list_is(page: Page, live: LiveServer) -> None:
    page.goto(f"{live.url}/")
    expect(page.locator("#list-count")).to_contain_text("pending")
    page.fill("#search", "no-thread-matches-this-text")
    empty = page.locator("#list-empty")
    expect(empty).to_be_visible()
    head = shown_box(page.locator(".list-head"))
    box = shown_box(empty)
    assert head and box
    assert box["y"] - (head["y"] + head["height"]) < 5  # right under the heading, not at the bottom


def test_edit_shows_a_diff_before_sending_and_in_the_history(page: Page,
                                                             live: LiveServer) -> None:
    Api(live.url).start("write notes.txt alpha\nbeta\ngamma", "diff-1")
    open_thread(page, live, "diff-1")
    c = card(page, "write_file")
    c.get_by_role("button", name="Edit…").click()
    body = c.locator('.field[data-arg="content"] textarea')  # a text box, real line breaks
    expect(body).to_have_value("alpha\nbeta\ngamma")
    expect(c.locator(".diff-box .diff-none")).to_be_visible()
    body.fill("alpha\nBETA\ngamma\ndelta")
    diff = c.locator(".diff-box")
    expect(diff.locator('.diff-arg[data-arg="content"] .diff-del')).to_have_text(["-beta"])
    expect(diff.locator('.diff-arg[data-arg="content"] .diff-add')).to_have_text(["+BETA", "+delta"])
    expect(diff.locator('.diff-arg[data-arg="content"] .diff-same')).to_have_text(["alpha", "gamma"])
    expect(diff.locator(".diff-unchanged")).to_have_text("Unchanged: path")
    c.get_by_role("button", name="Run with these arguments").click()
    confirm(c)
    expect_completed(page)
    hist = page.locator("tr.hist-edit")
    expect(hist.locator(".diff-del")).to_have_text(["-beta"])
    expect(hist.locator(".diff-add")).to_have_text(["+BETA", "+delta"])
    assert "\\n" not in hist.inner_text()
    assert ("write_file", {"path": "notes.txt", "content": "alpha\nBETA\ngamma\ndelta"}) in EXECUTED


def test_decide_with_the_keyboard_only(page: Page, live: LiveServer) -> None:
    api = Api(live.url)
    api.start("sql DELETE FROM sessions", "keys-approve")
    api.start("limit 8", "keys-edit")
    api.start("sql DROP TABLE audit", "keys-reject")
    page.goto(f"{live.url}/#/t/keys-reject")
    expect(page.locator(".thread-id")).to_have_text("keys-reject")
    # the keys are on the buttons, and ? lists them
    expect(card(page, "execute_sql").locator(":scope > .actions kbd")).to_have_text(
        ["A", "M", "E", "R", "P"])
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    expect(page.locator("#help")).to_contain_text(
        "approve (a tool not declared read-only asks to confirm")
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    # reject: R opens the reason, Ctrl+Enter sends it
    page.keyboard.press("r")
    expect(page.get_by_label("Reason")).to_be_focused()
    page.keyboard.type("not the audit table")
    page.keyboard.press("Control+Enter")
    expect_completed(page)
    expect(results(page).first).to_contain_text("Reason: not the audit table")
    # next / previous thread
    page.select_option("#status-filter", "")
    # the list of all threads has loaded (the finished thread is in it) before it is read
    expect(page.locator('.row[data-thread-id="keys-reject"]')).to_be_visible()
    expect(page.locator("#list-count")).not_to_have_text("Loading…")
    page.locator("#list").focus()
    page.locator("body").focus()
    order = page.locator(".row").evaluate_all("rows => rows.map(r => r.dataset.threadId)")
    i = order.index("keys-reject")
    page.keyboard.press("j")
    expect(page.locator(".thread-id")).to_have_text(order[i + 1])
    page.keyboard.press("k")
    expect(page.locator(".thread-id")).to_have_text("keys-reject")
    # approve asks first: Esc keeps the request, A then Enter approves
    page.goto(f"{live.url}/#/t/keys-approve")
    expect(page.locator(".thread-id")).to_have_text("keys-approve")
    page.keyboard.press("a")
    asked = card(page, "execute_sql").locator(".confirm")
    expect(asked).to_contain_text("Approve execute_sql? It runs at once.")
    page.keyboard.press("Escape")
    expect(asked).to_be_hidden()
    assert ("execute_sql", {"query": "DELETE FROM sessions"}) not in EXECUTED
    page.keyboard.press("a")
    expect(asked).to_be_visible()
    page.keyboard.press("Enter")
    expect_completed(page)
    assert EXECUTED.count(("execute_sql", {"query": "DELETE FROM sessions"})) == 1
    # edit: E focuses the first field, Ctrl+Enter sends what the diff shows
    page.goto(f"{live.url}/#/t/keys-edit")
    expect(page.locator(".thread-id")).to_have_text("keys-edit")
    page.keyboard.press("e")
    field = card(page, "set_limit").locator('.field[data-arg="n"] input')
    expect(field).to_be_focused()
    page.keyboard.press("Control+a")
    page.keyboard.type("10")
    expect(card(page, "set_limit").locator(".diff-add")).to_have_text(["+10"])
    page.keyboard.press("Control+Enter")
    expect(card(page, "set_limit").locator(".confirm")).to_be_visible()
    page.keyboard.press("Enter")
    expect_completed(page)
    expect(results(page).first).to_contain_text("limit set to 10")


def test_every_decision_that_runs_a_tool_asks_first_and_no_sends_nothing(
        page: Page, live: LiveServer) -> None:
    api = Api(live.url)
    api.start("limit 8", "ask-first")
    before = api.thread("ask-first")
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if r.method == "POST" else None)
    open_thread_any(page, live, "ask-first")
    c = card(page, "set_limit")
    asked = c.locator(".confirm")
    panel = c.locator(".panel")

    def nothing_sent() -> None:
        assert posted == []
        now = api.thread("ask-first")
        assert now["status"] == "interrupted" and now["version"] == before["version"]
        assert now["history"] == before["history"] and now["remembered"] == []
        assert now["interrupts"] == before["interrupts"]
        assert not any(name == "set_limit" for name, _ in EXECUTED)

    # approve: the button and the A key ask; No and Esc send nothing
    c.get_by_role("button", name="Approve", exact=True).click()
    expect(asked).to_contain_text("Approve set_limit? It runs at once.")
    asked.get_by_role("button", name="No").click()
    expect(asked).to_be_hidden()
    page.keyboard.press("a")
    expect(asked).to_be_visible()
    expect(asked.get_by_role("button", name="Yes, run it")).to_be_focused()
    page.keyboard.press("Escape")
    expect(asked).to_be_hidden()
    # approve and remember: button and M open the panel that says what remembering means
    c.get_by_role("button", name="Approve & remember…").click()
    expect(panel).to_contain_text("set_limit is not declared read-only")
    panel.get_by_role("button", name="Cancel").click()
    expect(panel).to_be_hidden()
    page.keyboard.press("m")
    expect(panel).to_contain_text("set_limit is not declared read-only")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    # an edit: the button and Ctrl+Enter ask under the diff; No keeps the edit open
    page.keyboard.press("e")
    field = c.locator('.field[data-arg="n"] input')
    expect(field).to_be_focused()
    page.keyboard.press("Control+a")
    page.keyboard.type("10")
    c.get_by_role("button", name="Run with these arguments").click()
    expect(asked).to_contain_text(
        "Run set_limit with the edited arguments shown above? It runs at once.")
    expect(panel.locator(".diff-add")).to_have_text(["+10"])
    asked.get_by_role("button", name="No").click()
    expect(asked).to_be_hidden()
    field.focus()
    page.keyboard.press("Control+Enter")
    expect(asked).to_be_visible()
    page.keyboard.press("Escape")
    expect(asked).to_be_hidden()
    expect(field).to_have_value("10")
    # a change after the question was asked withdraws it
    field.focus()
    page.keyboard.press("Control+Enter")
    expect(asked).to_be_visible()
    field.fill("12")
    expect(asked).to_be_hidden()
    nothing_sent()
    # yes sends the decision, once: the edited call runs
    field.focus()
    page.keyboard.press("Control+Enter")
    expect(asked).to_be_visible()
    page.keyboard.press("Enter")
    expect_completed(page)
    expect(results(page).first).to_contain_text("limit set to 12")
    assert [u.removeprefix(live.url) for u in posted] == ["/api/threads/ask-first/decisions"]
    assert [e for e in EXECUTED if e[0] == "set_limit"] == [("set_limit", {"n": 12, "reason": ""})]


@tool(read_only=True)
def count_rows(table: str) -> str:
    """Count the rows of a table."""
    EXECUTED.append(("count_rows", {"table": table}))
    return f"{table}: 400 rows"


def _count_script(messages: list[Message]) -> Any:
    if isinstance(messages[-1], UserMessage):
        return ("Counting.", [{"name": "count_rows", "args": {"table": messages[-1].content}}])
    return f"Done. {messages[-1].content}"


def test_a_read_only_tool_runs_without_a_confirmation(page: Page, tmp_path: Path) -> None:
    agent = Agent(model=ScriptedModel(_count_script), tools=[count_rows],
                  middleware=[HumanInTheLoop(interrupt_on={"count_rows": True})],
                  checkpointer=SqliteCheckpointer(tmp_path / "ro.db"))
    server = LiveServer(agent)
    try:
        api = Api(server.url)
        for tid, table in (("ro-button", "orders"), ("ro-key", "customers"),
                           ("ro-edit", "orders")):
            api.start(table, tid)
        open_thread_any(page, server, "ro-button")
        card(page, "count_rows").get_by_role("button", name="Approve", exact=True).click()
        expect_completed(page)
        open_thread_any(page, server, "ro-key")
        page.keyboard.press("a")
        expect_completed(page)
        open_thread_any(page, server, "ro-edit")
        page.keyboard.press("e")
        page.keyboard.press("Control+a")
        page.keyboard.type("invoices")
        page.keyboard.press("Control+Enter")
        expect_completed(page)
        assert page.locator(".confirm:visible").count() == 0
        assert EXECUTED == [("count_rows", {"table": "orders"}),
                            ("count_rows", {"table": "customers"}),
                            ("count_rows", {"table": "invoices"})]
    finally:
        server.stop()


def test_follow_up_message_from_the_inbox_starts_a_run(page: Page, live: LiveServer) -> None:
    Api(live.url).start("which table should I clean?", "follow-1")
    open_thread_any(page, live, "follow-1")
    expect_completed(page, mine=False)
    box = page.locator(".follow-up")
    expect(box).to_contain_text("The agent asked you something: reply")
    send = box.get_by_role("button", name="Send to the agent")
    expect(send).to_be_disabled()
    box.get_by_label("Message to the agent").fill("limit 4")
    send.click()
    # the new run pauses on the tool call the message asked for
    expect(page.locator('.detail-head [data-status]')).to_have_attribute("data-status",
                                                                        "interrupted")
    expect(card(page, "set_limit")).to_be_visible()
    expect(page.locator(".follow-up")).to_be_hidden()
    t = Api(live.url).thread("follow-1")
    assert [m["content"] for m in t["messages"] if m["role"] == "user"] == [
        "which table should I clean?", "limit 4"]
    assert t["status"] == "interrupted"


def test_follow_up_from_a_thread_creator_who_is_not_an_admin(browser: Browser,
                                                               tmp_path: Path) -> None:
    server = LiveServer(make_agent(SqliteCheckpointer(tmp_path / "owner.db")), tokens=TOKENS)
    bob_ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    alice_ctx = browser.new_context(viewport={"width": 1280, "height": 860})

    def sign_in(page: Page, token: str, who: str) -> None:
        page.goto(f"{server.url}/")
        page.locator("#token").fill(token)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#whoami")).to_have_text(who)

    try:
        bob = Api(server.url, BOB)  # roles ["ops"], not an admin: the thread's creator
        bob.start("which table should I clean?", "owned-1")
        page = bob_ctx.new_page()
        sign_in(page, BOB, "bob (ops)")
        page.goto(f"{server.url}/#/t/owned-1")
        expect_completed(page, mine=False)
        box = page.locator(".follow-up")
        expect(box).to_contain_text("The agent asked you something: reply")
        box.get_by_label("Message to the agent").fill("limit 4")
        box.get_by_role("button", name="Send to the agent").click()
        expect(page.locator('.detail-head [data-status]')).to_have_attribute(
            "data-status", "interrupted")
        expect(card(page, "set_limit")).to_be_visible()
        t = bob.thread("owned-1")
        assert [m["content"] for m in t["messages"] if m["role"] == "user"] == [
            "which table should I clean?", "limit 4"]
        assert t["may_post"] is True
        # alice (dba, ops; no admin) may decide the new call, so she may read the thread,
        # but not post to it: no message box for her, and her own POST is refused
        page2 = alice_ctx.new_page()
        sign_in(page2, ALICE, "alice (dba, ops)")
        page2.goto(f"{server.url}/#/t/owned-1")
        c = card(page2, "set_limit")
        c.get_by_role("button", name="Approve", exact=True).click()
        confirm(c)
        expect_completed(page2)
        expect(page2.locator("tr.decision-row td.actor")).to_have_text(["alice"])
        expect(page2.locator(".follow-up")).to_be_hidden()
        assert page2.locator("#follow-up-text").count() == 0
        alice = Api(server.url, ALICE)
        seen = alice.thread("owned-1")
        assert seen["status"] == "completed" and seen["may_post"] is False
        for token in (ALICE, CAROL):
            r = httpx.post(f"{server.url}/api/threads/owned-1/messages", headers=bearer(token),
                           json={"message": "limit 6"}, timeout=30)
            assert r.status_code == 403, r.text
        assert "only its creator ('bob')" in httpx.post(
            f"{server.url}/api/threads/owned-1/messages", headers=bearer(ALICE),
            json={"message": "limit 6"}, timeout=30).json()["message"]
        after = bob.thread("owned-1")
        assert after["version"] == seen["version"] and after["messages"] == seen["messages"]
        assert after["history"] == seen["history"]
        assert not any(e == ("set_limit", {"n": 6, "reason": ""}) for e in EXECUTED)
        # the creator still sees the box on the finished thread
        page.reload()
        expect_completed(page, mine=False)
        expect(page.locator(".follow-up")).to_contain_text("Send the agent a follow-up message")
    finally:
        bob_ctx.close()
        alice_ctx.close()
        server.stop()


def open_thread_any(page: Page, live: LiveServer, thread_id: str) -> None:
    page.goto(f"{live.url}/#/t/{thread_id}")
    expect(page.locator(".thread-id")).to_have_text(thread_id)


def test_phone_width_keeps_every_control_visible(browser: Browser, live: LiveServer) -> None:
    # a long argument: the request is taller than the screen
    Api(live.url).start("write phone.txt " + "hello from a phone " * 120, "phone-1")
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True)
    try:
        page = context.new_page()
        page.goto(f"{live.url}/#/t/phone-1")
        expect(page.locator(".thread-id")).to_have_text("phone-1")
        # a deep link shows the request alone, with a way back to the list
        expect(page.locator(".list-pane")).to_be_hidden()
        expect(page.locator("#back")).to_be_visible()
        # a touch screen shows no keyboard hints
        expect(page.locator("#help-open")).to_be_hidden()
        expect(page.locator("kbd.key").first).to_be_hidden()
        assert page.locator("kbd.key:visible").count() == 0
        controls = ["#status-filter", "#search", "#whoami", "#conn", ".brand"]
        boxes = {}
        for sel in controls:
            el = page.locator(sel)
            expect(el).to_be_visible()
            b = shown_box(el)
            assert b is not None and b["width"] > 0, sel
            assert b["x"] >= 0 and b["x"] + b["width"] <= 390 + 0.5, (sel, b)
            assert b["y"] >= 0 and b["y"] + b["height"] <= 844, (sel, b)
            boxes[sel] = b
        assert boxes["#search"]["width"] >= 120
        assert page.locator("#whoami").inner_text() == "local mode"
        # nothing in the top bar overlaps anything else
        items = list(boxes.values())
        for i, a in enumerate(items):
            for b in items[i + 1:]:
                overlap = (min(a["x"] + a["width"], b["x"] + b["width"]) - max(a["x"], b["x"]) > 1
                           and min(a["y"] + a["height"], b["y"] + b["height"])
                           - max(a["y"], b["y"]) > 1)
                assert not overlap, (a, b)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        c = card(page, "write_file")
        # the decision buttons are on the screen without scrolling, though the request is
        # taller than it
        assert page.locator("#detail").evaluate("d => d.scrollHeight > d.clientHeight + 200")
        for button in c.locator(":scope > .actions > button").all():
            expect(button).to_be_visible()
            b = shown_box(button)
            assert b and b["x"] >= 0 and b["x"] + b["width"] <= 390 + 0.5, b
            assert b["y"] >= 0 and b["y"] + b["height"] <= 844, b
        # back: the list alone; a row opens the request again
        page.locator("#back").click()
        expect(page.locator(".list-pane")).to_be_visible()
        expect(page.locator("#detail")).to_be_hidden()
        page.locator('.row[data-thread-id="phone-1"]').click()
        expect(page.locator(".thread-id")).to_have_text("phone-1")
        expect(page.locator(".list-pane")).to_be_hidden()
        # the long argument is clipped: the first press shows it whole, the next one decides
        approve = c.get_by_role("button", name="Approve", exact=True)
        approve.click()
        expect(c.get_by_text("Part of the arguments was hidden")).to_be_visible()
        approve.click()
        confirm(c)
        expect_completed(page)
    finally:
        context.close()
