"""A reviewer's hour in the web inbox (headless Chromium): losing a race to another reviewer
keeps the draft and says who decided what; the inbox moves on to the next request after a
decision and opens one on load; Enter in the filter opens the match; several requests of the
same tool and policy are approved together, each shown in full, each decided on its own by the
server; the phone layout shows the list or the request, one at a time."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from interlock import SqliteCheckpointer

from .conftest import ALICE, BOB, CAROL, TOKENS, bearer
from .live import LiveServer, shown_box, start_thread, watch
from .server_agents import EXECUTED, make_agent

pytestmark = pytest.mark.browser


def thread(url: str, thread_id: str, token: str | None = None) -> dict[str, Any]:
    r = httpx.get(f"{url}/api/threads/{thread_id}", headers=bearer(token) if token else {},
                  timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def signed_in(context: BrowserContext, url: str, token: str, who: str) -> Page:
    page = context.new_page()
    page.goto(f"{url}/")
    page.locator("#token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#whoami")).to_have_text(who)
    return page


def card(page: Page, tool: str) -> Any:
    return page.locator(f'.card[data-tool="{tool}"]')


def confirm(c: Any) -> None:
    c.locator(".confirm").get_by_role("button", name="Yes, run it").click()


# -- losing a race ------------------------------------------------------------------------------


def test_losing_a_race_keeps_the_draft_and_says_who_decided(browser: Browser,
                                                            tmp_path: Path) -> None:
    server = LiveServer(make_agent(SqliteCheckpointer(tmp_path / "race.db")), tokens=TOKENS)
    contexts = [browser.new_context(viewport={"width": 1280, "height": 860}) for _ in range(3)]
    try:
        start_thread(server.url, "sql DELETE FROM carts WHERE stale", "race-1", BOB)
        bob = signed_in(contexts[0], server.url, BOB, "bob (ops)")       # started it
        carol = signed_in(contexts[1], server.url, CAROL, "carol")       # no roles, no posts
        alice = signed_in(contexts[2], server.url, ALICE, "alice (dba, ops)")
        errors = [watch(p) for p in (bob, carol, alice)]
        drafts = {}
        for page, text in ((bob, "Only carts older than a year, please."),
                           (carol, "Wait for the finance export first.")):
            page.goto(f"{server.url}/#/t/race-1")
            c = card(page, "execute_sql")
            c.get_by_role("button", name="Reject…").click()
            c.get_by_label("Reason").fill(text)
            drafts[page] = text
        c = card(alice, "execute_sql")
        alice.goto(f"{server.url}/#/t/race-1")
        c.get_by_role("button", name="Approve", exact=True).click()
        confirm(c)
        for page in (bob, carol):
            lost = card(page, "execute_sql")
            expect(lost).to_have_class(re.compile(r"\bdecided-elsewhere\b"))
            what = lost.locator(".elsewhere-what")
            expect(what).to_contain_text("alice approved this call")
            expect(what.locator("time")).to_have_count(1)
            # the draft is kept, word for word; nothing says "may not read"
            expect(lost.locator(".draft textarea")).to_have_value(drafts[page])
            expect(lost.locator(":scope > .actions")).to_be_hidden()
            assert "may not read" not in page.locator("body").inner_text()
        # carol may not post to bob's thread: her text is kept to copy, with no send button
        expect(card(carol, "execute_sql").locator(".draft-send")).to_have_count(0)
        expect(card(carol, "execute_sql").locator(".draft")).to_contain_text(
            "only the thread's creator or an admin can post")
        # bob may: once the approved run is done, his reason goes to the agent as a message
        send = card(bob, "execute_sql").get_by_role("button",
                                                    name="Send as a follow-up message")
        assert EXECUTED.count(("execute_sql", {"query": "DELETE FROM carts WHERE stale"})) == 1
        # (the page follows the run: once it finished, a message may start the next one)
        expect(bob.locator(".detail-head [data-status]")).to_have_attribute("data-status",
                                                                           "completed")
        send.click()
        expect(card(bob, "execute_sql").locator(".draft > .card-status")).to_have_text(
            "Sent to the agent as a new message.")
        t = thread(server.url, "race-1", BOB)
        assert [m["content"] for m in t["messages"] if m["role"] == "user"] == [
            "sql DELETE FROM carts WHERE stale", "Only carts older than a year, please."]
        assert [e for e in errors if e] == []
    finally:
        for ctx in contexts:
            ctx.close()
        server.stop()


# -- moving on ------------------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    """Local mode, a store of its own: the list holds exactly what a test starts."""
    from interlock import Agent, HumanInTheLoop, InterruptOn, ScriptedModel

    from .server_agents import TOOLS, script

    policy = HumanInTheLoop(interrupt_on={
        "write_file": True,
        "execute_sql": InterruptOn(allow_remember=False),  # every call decided on its own
        "drop_table": InterruptOn(allowed_decisions=["approve", "reject"], approvals=2,
                                  description="Runs `DROP TABLE`: every row goes. "
                                              "<b>not bold</b> `unpaired"),
    })
    agent = Agent(model=ScriptedModel(script), tools=TOOLS, middleware=[policy],
                  checkpointer=SqliteCheckpointer(tmp_path / "flow.db"))
    s = LiveServer(agent)
    yield s
    s.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    pg = context.new_page()
    errors = watch(pg)
    yield pg
    context.close()
    assert errors == [], errors


def test_the_next_request_opens_on_load_and_after_each_decision(page: Page,
                                                                server: LiveServer) -> None:
    for n in (1, 2, 3):
        start_thread(server.url, f"sql SELECT {n}", f"next-{n}")
    page.goto(f"{server.url}/")
    # the newest request is open at once: the right pane does not start empty
    expect(page.locator(".thread-id")).to_have_text("next-3")
    # two keys per approval: A, then Enter to confirm; the next request opens by itself
    for n, following in ((3, "next-2"), (2, "next-1")):
        expect(card(page, "execute_sql").locator(".argv dd")).to_have_text([f"SELECT {n}"])
        page.keyboard.press("a")
        page.keyboard.press("Enter")
        expect(page.locator(".thread-id")).to_have_text(following)
        expect(page.locator("#done")).to_have_text(
            f"Approved execute_sql in thread next-{n}. Open it again")
    page.keyboard.press("a")
    page.keyboard.press("Enter")
    # nothing else waits: the decided thread stays open and runs to its end
    expect(page.locator(".detail-head [data-status]")).to_have_attribute("data-status",
                                                                        "completed")
    expect(page.locator(".thread-id")).to_have_text("next-1")
    expect(page.locator("#list-empty")).to_be_visible()
    assert sorted(a["query"] for name, a in EXECUTED if name == "execute_sql") == [
        "SELECT 1", "SELECT 2", "SELECT 3"]
    # the note leads back to a thread decided earlier
    page.locator("#done a.done-open").click()
    expect(page.locator(".thread-id")).to_have_text("next-1")


def test_rows_show_the_policys_word_on_the_risk_first(page: Page, server: LiveServer,
                                                     browser: Browser) -> None:
    """A call whose policy describes it (its risk) shows that right under the tool's name in
    the list, the arguments after it; a call with the default description (which only
    repeats the tool and its arguments) shows its arguments there and the user's message."""
    start_thread(server.url, "drop orders", "risky")
    start_thread(server.url, "write a.txt some text", "plain")
    listed = {t["thread_id"]: t for t in httpx.get(
        f"{server.url}/api/threads", timeout=30).json()["threads"]}
    assert listed["risky"]["pending"][0]["calls"][0]["risk"] == \
        "Runs `DROP TABLE`: every row goes. <b>not bold</b> `unpaired"
    assert listed["plain"]["pending"][0]["calls"][0]["risk"] == ""
    page.goto(f"{server.url}/")
    risky, plain = (page.locator(f'.row[data-thread-id="{t}"]') for t in ("risky", "plain"))
    expect(risky.locator(".row-risk")).to_have_text(
        "Runs `DROP TABLE`: every row goes. <b>not bold</b> `unpaired")
    expect(risky.locator(".row-risk b")).to_have_count(0)  # text, not markup
    expect(risky.locator(".row-args")).to_have_text("table: orders")
    # the risk is the row's second line, above the arguments, in bold
    assert risky.evaluate("r => [...r.querySelectorAll('.row-risk, .row-args')]"
                          ".map(e => e.matches('.row-risk'))") == [True, False]
    assert risky.locator(".row-risk").evaluate("e => getComputedStyle(e).fontWeight") == "600"
    expect(plain.locator(".row-risk")).to_have_count(0)
    expect(plain.locator(".row-args")).to_have_text("path: a.txt · content: some text")
    expect(plain.locator(".row-preview")).to_have_text("write a.txt some text")
    # on a phone: the same order, the risk line inside the screen's width
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                has_touch=True)
    try:
        small = phone.new_page()
        small.goto(f"{server.url}/")
        risk = small.locator('.row[data-thread-id="risky"] .row-risk')
        expect(risk).to_be_visible()
        box = shown_box(risk)
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390 + 0.5, box
        args = shown_box(small.locator('.row[data-thread-id="risky"] .row-args'))
        assert args is not None and args["y"] > box["y"], (args, box)
    finally:
        phone.close()


def test_a_row_whose_call_may_have_run_says_outcome_unknown(page: Page, tmp_path: Path) -> None:
    """A process approved a call and died inside the tool (its side effect made); the server
    recovers the thread at start and asks about it: the list's row says "outcome unknown" and
    gives the recovery's word on it first."""
    from procs.common import build_agent, read_lines
    from procs.harness import PROCS

    url, effects = f"sqlite:///{tmp_path / 'unknown.db'}", tmp_path / "effects.log"

    def pause() -> bool:  # in a thread of its own: Playwright's sync API runs a loop here
        first = build_agent(url, effects)
        try:
            return first.invoke("line-1", thread_id="crashed").interrupted
        finally:
            first.close()

    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(pause).result()
    died = subprocess.run([sys.executable, str(PROCS / "crash_child.py"), "resume",
                           "--kill-at", "tool", "--decision", '{"type": "approve"}', "--db", url,
                           "--effects", str(effects), "--thread", "crashed"],
                          cwd=PROCS, capture_output=True, text=True, timeout=120)
    assert died.returncode == -signal.SIGKILL, died.stderr
    assert len(read_lines(effects)) == 1  # the side effect happened once
    server = LiveServer(build_agent(url, effects))  # recovers the thread at start
    try:
        page.goto(f"{server.url}/")
        row = page.locator('.row[data-thread-id="crashed"]')
        expect(row.locator(".row-unknown")).to_have_text("outcome unknown")
        expect(row.locator(".row-risk")).to_contain_text("outcome unknown: the process stopped")
        expect(row.locator(".row-args")).to_be_visible()
    finally:
        server.stop()
    assert len(read_lines(effects)) == 1  # not run again without a person deciding


def test_enter_in_the_filter_opens_the_match(page: Page, server: LiveServer) -> None:
    for name in ("alpha", "beta", "gamma"):
        start_thread(server.url, f"write {name}.txt some text", f"file-{name}")
    page.goto(f"{server.url}/")
    expect(page.locator(".row")).to_have_count(3)
    # the rows show the arguments as a reader writes them, not as JSON
    expect(page.locator('.row[data-thread-id="file-beta"] .row-args')).to_have_text(
        "path: beta.txt · content: some text")
    page.keyboard.press("/")
    page.keyboard.type("beta.txt")
    page.keyboard.press("Enter")
    expect(page.locator(".thread-id")).to_have_text("file-beta")
    expect(page.locator(".row")).to_have_count(1)
    # the keys act on the request at once (the filter box gave up the focus)
    page.keyboard.press("r")
    expect(card(page, "write_file").get_by_label("Reason")).to_be_focused()


def test_approve_several_requests_of_one_tool_each_shown_in_full(
        page: Page, server: LiveServer) -> None:
    for name in ("a", "b", "c"):
        start_thread(server.url, f"write {name}.txt text for {name}", f"w-{name}")
    start_thread(server.url, "sql DELETE FROM t1", "s-1")
    start_thread(server.url, "sql DELETE FROM t2", "s-2")
    start_thread(server.url, "drop t3", "d-1")
    start_thread(server.url, "drop t4", "d-2")
    page.goto(f"{server.url}/#/t/w-a")
    expect(page.locator(".row")).to_have_count(7)
    # the policies that ask for every call on its own, or for two reviewers, offer nothing
    for thread_id, tool in (("s-1", "execute_sql"), ("d-1", "drop_table")):
        page.goto(f"{server.url}/#/t/{thread_id}")
        expect(page.locator(".thread-id")).to_have_text(thread_id)
        expect(card(page, tool).locator(":scope > .actions > button").first).to_be_visible()
        expect(page.locator(".batch-offer")).to_have_count(0)
    # the policy's word on the call (its risk) comes first, above the tool's docstring
    risk = card(page, "drop_table").locator(":scope > .desc")
    expect(risk).to_have_text("Runs DROP TABLE: every row goes. <b>not bold</b> `unpaired")
    # backticks mark code; nothing in the text becomes HTML
    expect(risk.locator("code")).to_have_text(["DROP TABLE"])
    expect(risk.locator("b")).to_have_count(0)
    assert risk.evaluate("d => getComputedStyle(d).fontWeight") == "600"
    assert card(page, "drop_table").evaluate(
        "c => [...c.children].findIndex(e => e.matches('.desc'))"
        " < [...c.children].findIndex(e => e.matches('.tool-doc'))")
    page.goto(f"{server.url}/#/t/w-a")
    c = card(page, "write_file")
    expect(c.locator(".batch-offer")).to_contain_text("2 more write_file requests wait.")
    page.keyboard.press("s")
    batch = page.locator(".batch")
    items = batch.locator(".batch-item")
    expect(items).to_have_count(3)
    # every call that would run, in full: the open one first, then the list's order
    for i, name in enumerate(("a", "c", "b")):
        expect(items.nth(i).locator(".batch-args")).to_contain_text(f'"path": "{name}.txt"')
        expect(items.nth(i).locator(".batch-args")).to_contain_text(f'"content": "text for {name}"')
    items.nth(2).get_by_role("checkbox").uncheck()
    go = batch.get_by_role("button", name="Approve 2 calls…")
    go.click()
    expect(batch.locator(".confirm")).to_contain_text(
        "Run write_file 2 times, with the arguments shown above?")
    assert not [e for e in EXECUTED if e[0] == "write_file"]  # nothing before the yes
    batch.get_by_role("button", name="Yes, run 2").click()
    expect(items.nth(0).locator(".batch-status")).to_have_text("Approved.")
    expect(items.nth(1).locator(".batch-status")).to_have_text("Approved.")
    expect(items.nth(2).locator(".batch-status")).to_have_text("")
    # one decision per call, each recorded on its own thread
    for thread_id in ("w-a", "w-c"):
        history = thread(server.url, thread_id)["history"]
        assert [h["kind"] for h in history].count("decision") == 1, history
    assert thread(server.url, "w-b")["status"] == "interrupted"
    assert {tuple(sorted(a.items())) for name, a in EXECUTED if name == "write_file"} == {
        (("content", "text for a"), ("path", "a.txt")),
        (("content", "text for c"), ("path", "c.txt"))}
    page.keyboard.press("Escape")
    expect(page.locator(".batch")).to_have_count(0)
