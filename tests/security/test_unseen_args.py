"""Nothing runs on an approval of arguments its reviewer was not shown whole (invariant 1).

A call whose arguments are too long for a surface is shown there cut short, and the dangerous
part of a long argument can sit past the cut (``SELECT 1 -- <5,000 characters> ; DROP TABLE
users``). So:

* Slack: the message of such a call offers no Approve button (Reject stays; "Approve in
  inbox…" instead) and says why; a signed approve click for it (as a message posted by an
  earlier version carries, or a forged one) is refused, nothing decided, and the reviewer is
  told so.
* E-mail links: the confirmation page of a call whose arguments it cuts offers no approval
  and says why; an approval posted anyway is refused (409), nothing decided.
* Web inbox: while a part of the arguments is clipped ("Show all" not opened), Approve (its
  button or key A) and "Approve & remember" first show the arguments whole, say so and send
  nothing; the second press proceeds. In "Approve several…", "Approve N calls…" first shows
  the hidden parts of the checked rows and sends nothing.

A call with short arguments is the control on every surface: approved at once, run once."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Request, expect

from interlock import (
    Agent,
    Checkpointer,
    HumanInTheLoop,
    InterruptOn,
    Reviewer,
    ScriptedModel,
    SqliteCheckpointer,
    ToolMessage,
    UserMessage,
    tool,
)
from interlock.notify import NotifyConfig
from notify.agents import executions, runs_file
from notify.fakes import FakeSlack, fake_slack, smtp_server
from notify.test_email import LINK_SECRET, PUBLIC, LinkPage, body_of, link_token
from notify.test_slack import SIGNING_SECRET, buttons, click, signed, wait_for
from server.live import LiveServer

from .test_revision_surfaces import TOKENS, as_

# the dangerous part is at the end, past any cut
LONG = "SELECT 1 -- " + "x" * 5000 + "; DROP TABLE users"
# longer than the e-mail confirmation page shows (LINK_PAGE_ARGS, 20,000 characters)
LONGER = "SELECT 1 -- " + "x" * 25000 + "; DROP TABLE users"
SHORT = "SELECT count(*) FROM users"
TAIL = "; DROP TABLE users"
HIDDEN_NOTE = ("Part of the arguments was hidden. They are shown in full now: read them, then "
               "approve again.")
ALICE = Reviewer("alice", frozenset({"dba"}))


def _ran(tool_name: str, sql: str) -> str:
    with runs_file().open("a", encoding="utf-8") as f:
        f.write(f"{tool_name} {sql}\n")
    return "ok"


@tool
def run_sql(sql: str) -> str:
    """Run a SQL statement on the production database."""
    return _ran("run_sql", sql)


@tool(read_only=True)
def read_sql(sql: str) -> str:
    """Run a read-only SQL query (approved in one step in the inbox)."""
    return _ran("read_sql", sql)


@tool
def tag_sql(sql: str, comment: str = "") -> str:
    """Run a SQL statement with a comment for the change log (edits allowed)."""
    return _ran("tag_sql", f"{sql} [{comment}]")


def proposal(name: str, sql: str) -> str:
    """The user message that makes the model propose ``name(sql=sql)``."""
    return json.dumps({"name": name, "args": {"sql": sql}})


def _script(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, UserMessage):
        return json.loads(str(last.content))
    return f"done: {last.content}" if isinstance(last, ToolMessage) else "done"


def make_agent(store: Checkpointer) -> Agent:
    policy = InterruptOn(allowed_decisions=["approve", "reject"], reviewers=["dba"])
    return Agent(model=ScriptedModel(_script), tools=[run_sql, read_sql, tag_sql],
                 middleware=[HumanInTheLoop(interrupt_on={
                     "run_sql": policy, "read_sql": policy,
                     "tag_sql": InterruptOn(allowed_decisions=["approve", "edit", "reject"],
                                            reviewers=["dba"])})],
                 checkpointer=store)


def decisions_of(agent: Agent, tid: str) -> list[Any]:
    return [a for a in agent.audit(tid) if a.kind in ("decision", "approval_recorded")]


# -- Slack and e-mail -------------------------------------------------------------------------


@pytest.fixture
def notified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, ...]]:
    """(agent, fake Slack, mailbox, live server): alice (dba) on Slack and e-mail."""
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"))
    with fake_slack() as slack, smtp_server() as box:
        config = NotifyConfig.model_validate({
            "public_url": PUBLIC,
            "slack": {"token": slack.token, "signing_secret": SIGNING_SECRET,
                      "channel": "#approvals", "channels": {"dba": "#dba"},
                      "api_url": slack.url},
            "email": {"host": "127.0.0.1", "port": box.port, "from": "interlock@example.com",
                      "link_secret": LINK_SECRET},
            "reviewers": [{"id": "alice", "roles": ["dba"], "slack_user": "U_ALICE",
                           "email": "alice@example.com"}],
            "dispatch": {"poll_interval": 0.05, "backoff": 0.05}})
        server = LiveServer(agent, notify=config)
        try:
            yield agent, slack, box, server
        finally:
            server.stop()


def posted_for(slack: FakeSlack, tids: list[str]) -> dict[str, dict[str, Any]]:
    """The Slack message of each thread in ``tids`` (by the thread its buttons name)."""
    def found() -> dict[str, dict[str, Any]] | None:
        by: dict[str, dict[str, Any]] = {}
        for m in slack.of("chat.postMessage"):
            for b in buttons(m):
                if "value" in b:
                    by[json.loads(b["value"])["t"]] = m
        return by if set(tids) <= set(by) else None
    return wait_for(found)


def action_ids(message: dict[str, Any]) -> list[str]:
    return [b["action_id"].split(":")[0] for b in buttons(message)]


def test_slack_message_of_a_call_with_long_arguments_offers_no_approve_button(
        notified: tuple[Any, ...]) -> None:
    agent, slack, _, server = notified
    for tid, sql in (("long", LONG), ("short", SHORT)):
        assert agent.invoke(proposal("run_sql", sql), thread_id=tid).interrupted
    posts = posted_for(slack, ["long", "short"])
    long, short = posts["long"], posts["short"]
    assert slack.refused == []
    shown = json.dumps(long["blocks"])
    assert "more characters not shown" in shown and TAIL not in shown  # cut before the DROP
    # no approve action at all; Reject stays, and the inbox link stands in for Approve
    assert "interlock_approve" not in action_ids(long)
    assert sorted(b["text"]["text"] for b in buttons(long)) == ["Approve in inbox…", "Reject"]
    assert "too long to show here in full" in shown
    # the control: a call shown whole has its Approve button, and a click on it runs it once
    assert "interlock_approve" in action_ids(short)
    assert "too long to show here in full" not in json.dumps(short["blocks"])
    approve = next(b for b in buttons(short) if b["action_id"].startswith("interlock_approve"))
    body = click(approve, "U_ALICE")
    url = f"{server.url}/api/slack/interactions"
    assert httpx.post(url, content=body, headers=signed(body)).status_code == 200
    wait_for(lambda: agent.get_thread("short").status == "completed")
    assert executions() == [f"run_sql {SHORT}"]
    assert agent.get_thread("long").status == "interrupted"


def test_slack_approve_click_for_a_call_with_long_arguments_is_refused(
        notified: tuple[Any, ...]) -> None:
    """An approve click for the long call, signed with the app's secret (the button a message
    of an earlier version offered; its value is the Reject button's): refused, the reviewer is
    told, nothing is decided or run. The call still waits; approved where it is shown whole
    (the inbox / API), it runs once."""
    agent, slack, _, server = notified
    assert agent.invoke(proposal("run_sql", LONG), thread_id="long").interrupted
    message = posted_for(slack, ["long"])["long"]
    reject = next(b for b in buttons(message) if b["action_id"].startswith("interlock_reject"))
    forged = {**reject, "action_id": reject["action_id"].replace("interlock_reject",
                                                                 "interlock_approve"),
              "text": {"type": "plain_text", "text": "Approve"}, "style": "primary"}
    rows = len(agent.audit("long"))
    body = click(forged, "U_ALICE")
    r = httpx.post(f"{server.url}/api/slack/interactions", content=body, headers=signed(body))
    assert r.status_code == 200
    # whichever comes first: the refusal, or (the defect) the thread moving on
    wait_for(lambda: slack.of("chat.postEphemeral")
             or agent.get_thread("long").status != "interrupted")
    time.sleep(0.3)  # a run started by the click would have begun by now
    assert executions() == [], "the call ran on an approval of arguments not shown whole"
    assert agent.get_thread("long").status == "interrupted"
    assert decisions_of(agent, "long") == [] and len(agent.audit("long")) == rows
    (said,) = slack.of("chat.postEphemeral")
    assert said["user"] == "U_ALICE"
    assert said["text"].startswith("interlock: not decided:") and "inbox" in said["text"]
    # the call still waits for a decision where its arguments are shown whole
    agent.resume("long", [{"type": "approve", "revision": 1}], reviewer=ALICE)
    assert agent.get_thread("long").status == "completed"
    assert executions() == [f"run_sql {LONG}"]


def mail_link(box: Any, server: LiveServer, tid: str) -> LinkPage:
    """The decision link of the e-mail about thread ``tid``."""
    def found() -> Any:
        return next((m for m in box.messages if f"(thread {tid})" in m["Subject"]), None)
    return LinkPage(server, link_token(body_of(wait_for(found))))


def test_email_link_does_not_approve_arguments_its_page_cuts(
        notified: tuple[Any, ...]) -> None:
    agent, _, box, server = notified
    for tid, sql in (("longer", LONGER), ("long", LONG), ("short", SHORT)):
        assert agent.invoke(proposal("run_sql", sql), thread_id=tid).interrupted
    link = mail_link(box, server, "longer")
    view = link.open()
    assert view.status_code == 200, view.text
    rows = len(agent.audit("longer"))
    # an approval posted with the link (the page offers none, see below) decides nothing
    done = link.decide("approve")
    time.sleep(0.3)  # a run started by the approval would have begun by now
    assert executions() == [], "the call ran on an approval of arguments not shown whole"
    assert done.status_code == 409, done.text
    assert "inbox" in done.json()["message"]
    assert agent.get_thread("longer").status == "interrupted"
    assert decisions_of(agent, "longer") == [] and len(agent.audit("longer")) == rows
    # what the page showed: the arguments cut before the DROP, no approval, and why
    page = view.json()
    assert "more characters not shown" in page["args"] and TAIL not in page["args"]
    assert page["decisions"] == ["reject"]
    assert "too long to show here in full" in (page.get("note") or "")
    # rejecting from the page is still possible (nothing runs)
    assert link.decide("reject", "too long to review here").status_code == 200
    wait_for(lambda: agent.get_thread("longer").status == "completed")
    assert executions() == []
    # controls: arguments the page shows whole (5,000 characters here; short) are approved
    for tid, sql in (("long", LONG), ("short", SHORT)):
        link = mail_link(box, server, tid)
        page = link.open().json()
        assert page["decisions"] == ["approve", "reject"] and page.get("note") is None
        assert sql in page["args"]  # shown whole, its end included
        done = link.decide("approve")
        assert done.status_code == 200, done.text
        wait_for(lambda tid=tid: agent.get_thread(tid).status == "completed")
    assert sorted(executions()) == sorted([f"run_sql {LONG}", f"run_sql {SHORT}"])


# -- the web inbox in headless Chromium -------------------------------------------------------


@contextlib.contextmanager
def inbox(browser: Browser, agent: Agent, *calls: tuple[str, str, str],
          ) -> Iterator[tuple[Page, str, list[str]]]:
    """(a page signed in as alice (dba), the live server's URL, the decision POSTs the page
    sends) for ``agent``, once hal has started a thread ``tid`` proposing ``name(sql)`` for
    each of ``calls``."""
    server = LiveServer(agent, tokens=TOKENS)
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    context.add_init_script(
        "localStorage.setItem('interlock.token', 'alice-token-0123456789abcdef');")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sent: list[str] = []

    def record(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/decisions"):
            sent.append(request.url.rsplit("/api/threads/", 1)[-1])
    page.on("request", record)
    try:
        for tid, name, sql in calls:
            r = httpx.post(f"{server.url}/api/threads", params={"wait": "true"},
                           headers=as_("hal"), timeout=60,
                           json={"thread_id": tid, "message": proposal(name, sql)})
            assert r.status_code == 200 and r.json()["status"] == "interrupted", r.text
        yield page, server.url, sent
    finally:
        context.close()
        server.stop()
    assert errors == [], errors


@pytest.fixture
def served_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Agent]:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    yield make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"))


def status(agent: Agent, tid: str) -> str:
    """The thread's status, read in another thread: Playwright's sync API (the module's
    browser) runs an event loop in this one, where the agent's blocking calls refuse to run."""
    with ThreadPoolExecutor(1) as pool:
        return str(pool.submit(agent.get_thread, tid).result().status)


def completes(agent: Agent, tid: str) -> None:
    """Wait until thread ``tid`` has completed (the inbox moves on to the next request once
    one is decided, so its page shows another thread by then)."""
    deadline = time.monotonic() + 15
    while (now := status(agent, tid)) != "completed":
        assert time.monotonic() < deadline, f"thread {tid} did not complete: it is {now}"
        time.sleep(0.05)


def clipped(card: Any) -> Any:
    return card.locator('.argv [data-clipped="true"]')


@pytest.mark.browser
def test_inbox_approve_shows_hidden_arguments_first(browser: Browser,
                                                    served_agent: Agent) -> None:
    """read_sql is declared read-only, so Approve sends at once: on the long call the first
    press shows the arguments whole and sends nothing; the second approves, run once. The
    short call (nothing hidden) is approved by the first press."""
    agent = served_agent
    with inbox(browser, agent, ("long", "read_sql", LONG), ("short", "read_sql", SHORT)
               ) as (page, url, sent):
        page.goto(f"{url}/#/t/long")
        card = page.locator('.card[data-tool="read_sql"]')
        expect(clipped(card)).to_have_count(1)
        expect(card.locator(".argv")).not_to_contain_text(TAIL)
        approve = card.get_by_role("button", name="Approve", exact=True)
        approve.click()
        page.wait_for_timeout(300)  # a decision sent by the press would be on its way by now
        assert sent == [], "approved on the first press, with part of the arguments hidden"
        expect(card.get_by_text(HIDDEN_NOTE)).to_be_visible()
        expect(clipped(card)).to_have_count(0)
        expect(card.locator(".argv")).to_contain_text(TAIL)
        assert executions() == [] and status(agent, "long") == "interrupted"
        approve.click()
        completes(agent, "long")
        assert sent == ["long/decisions"]
        # the control: nothing hidden, the first press approves
        page.goto(f"{url}/#/t/short")
        card = page.locator('.card[data-tool="read_sql"]')
        expect(card).to_contain_text(SHORT)
        card.get_by_role("button", name="Approve", exact=True).click()
        completes(agent, "short")
        expect(page.get_by_text(HIDDEN_NOTE)).to_have_count(0)
        assert sent == ["long/decisions", "short/decisions"]
    assert executions() == [f"read_sql {LONG}", f"read_sql {SHORT}"]


@pytest.mark.browser
def test_inbox_key_a_and_approve_and_remember_show_hidden_arguments_first(
        browser: Browser, served_agent: Agent) -> None:
    """run_sql: key A on the long call shows the arguments whole and opens no confirmation;
    A again asks "run it?", and yes runs it once. read_sql: "Approve & remember for this
    thread" (one step for a read-only tool) likewise shows them first and sends nothing."""
    agent = served_agent
    with inbox(browser, agent, ("long", "run_sql", LONG), ("remember", "read_sql", LONG)
               ) as (page, url, sent):
        page.goto(f"{url}/#/t/long")
        card = page.locator('.card[data-tool="run_sql"]')
        expect(clipped(card)).to_have_count(1)
        page.keyboard.press("a")
        page.wait_for_timeout(300)
        assert not card.locator(".confirm").is_visible(), (
            "asked to confirm running the call with part of its arguments hidden")
        expect(card.get_by_text(HIDDEN_NOTE)).to_be_visible()
        expect(clipped(card)).to_have_count(0)
        expect(card.locator(".argv")).to_contain_text(TAIL)
        page.keyboard.press("a")
        confirm = card.locator(".confirm")
        expect(confirm).to_contain_text("It runs at once.")
        assert sent == [] and executions() == []
        confirm.get_by_role("button", name="Yes, run it").click()
        completes(agent, "long")
        assert sent == ["long/decisions"]
        assert executions() == [f"run_sql {LONG}"]

        page.goto(f"{url}/#/t/remember")
        card = page.locator('.card[data-tool="read_sql"]')
        expect(clipped(card)).to_have_count(1)
        remember = card.get_by_role("button", name="Approve & remember for this thread")
        remember.click()
        page.wait_for_timeout(300)
        assert sent == ["long/decisions"], "approved and remembered on the first press"
        expect(card.get_by_text(HIDDEN_NOTE)).to_be_visible()
        expect(clipped(card)).to_have_count(0)
        assert status(agent, "remember") == "interrupted"
        remember.click()
        completes(agent, "remember")
        assert sent == ["long/decisions", "remember/decisions"]
    assert executions() == [f"run_sql {LONG}", f"read_sql {LONG}"]


@pytest.mark.browser
def test_approving_several_shows_hidden_arguments_of_checked_rows_first(
        browser: Browser, served_agent: Agent) -> None:
    """Three run_sql requests, the middle one long: "Approve 3 calls…" first shows the long
    row whole, asks again and sends nothing; pressed again it asks "Yes, run 3", and each
    call runs once."""
    agent = served_agent
    with inbox(browser, agent, ("b0", "run_sql", SHORT + " -- b0"), ("b1", "run_sql", LONG),
               ("b2", "run_sql", SHORT + " -- b2")) as (page, url, sent):
        page.goto(f"{url}/#/t/b0")
        expect(page.locator(".row")).to_have_count(3)
        card = page.locator('.card[data-tool="run_sql"]')
        expect(card.locator(".batch-offer")).to_contain_text("2 more run_sql requests")
        page.keyboard.press("s")
        batch = page.locator(".batch")
        expect(batch.locator(".batch-item")).to_have_count(3)
        row = batch.locator('.batch-item[data-thread-id="b1"]')
        expect(row.locator('[data-clipped="true"]')).to_have_count(1)
        expect(row).not_to_contain_text(TAIL)
        go = batch.get_by_role("button", name="Approve 3 calls…")
        go.click()
        page.wait_for_timeout(300)
        assert not batch.get_by_role("button", name="Yes, run 3").is_visible(), (
            "asked to confirm running 3 calls with part of their arguments hidden")
        expect(batch.get_by_text(
            "Part of the arguments of 1 call was hidden. They are shown in full now: read "
            "them, then approve again.")).to_be_visible()
        expect(row.locator('[data-clipped="true"]')).to_have_count(0)
        expect(row).to_contain_text(TAIL)
        assert sent == [] and executions() == []
        go.click()
        with page.expect_request(lambda r: r.url.endswith("/api/threads/b2/decisions")):
            batch.get_by_role("button", name="Yes, run 3").click()
        for tid in ("b0", "b1", "b2"):
            expect(batch.locator(f'.batch-item[data-thread-id="{tid}"] .batch-status')
                   ).to_have_text("Approved.")
        assert sorted(sent) == ["b0/decisions", "b1/decisions", "b2/decisions"]
    deadline = time.monotonic() + 15
    while len(executions()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(executions()) == sorted([f"run_sql {SHORT} -- b0", f"run_sql {LONG}",
                                           f"run_sql {SHORT} -- b2"])


@pytest.mark.browser
def test_an_edit_that_leaves_hidden_arguments_unchanged_shows_them_first(
        browser: Browser, served_agent: Agent) -> None:
    """An edit runs what it leaves unchanged too: editing only the comment of a call whose
    sql is clipped shows the sql whole and sends nothing; sending again runs the edit."""
    agent = served_agent
    with inbox(browser, agent, ("edit", "tag_sql", LONG)) as (page, url, sent):
        page.goto(f"{url}/#/t/edit")
        card = page.locator('.card[data-tool="tag_sql"]')
        expect(clipped(card)).to_have_count(1)
        card.get_by_role("button", name="Edit…").click()
        card.locator('.field[data-arg="comment"] input, .field[data-arg="comment"] textarea'
                     ).first.fill("ticket 123")
        submit = card.get_by_role("button", name="Run with these arguments")
        submit.click()
        page.wait_for_timeout(300)
        assert not card.locator(".confirm").is_visible(), (
            "asked to confirm an edit that runs arguments partly hidden")
        expect(card.get_by_text("Part of the arguments was hidden")).to_be_visible()
        expect(clipped(card)).to_have_count(0)
        expect(card.locator(".argv")).to_contain_text(TAIL)
        assert sent == [] and executions() == []
        submit.click()
        card.locator(".confirm").get_by_role("button", name="Yes, run it").click()
        completes(agent, "edit")
        assert sent == ["edit/decisions"]
    assert executions() == [f"tag_sql {LONG} [ticket 123]"]


def test_backticks_in_arguments_never_end_slacks_code_block() -> None:
    from interlock.notify.slack import _args_code

    for ticks in range(3, 9):
        text, whole = _args_code({"sql": "DELETE FROM " + "`" * ticks + "x WHERE _id_ = *7*"})
        assert whole
        inner = text[3:-3]
        assert text.startswith("```") and text.endswith("```") and "``" not in inner


@pytest.mark.browser
def test_keys_act_on_the_call_being_worked_on(browser: Browser, served_agent: Agent) -> None:
    """A request of two calls, the long (clipped) one first: A with the focus on the short
    call's card decides the short call, never the long one; and a first A that shows the long
    call's hidden part moves the focus there, so the next A decides the call just shown."""
    agent = served_agent
    calls = [{"name": "run_sql", "args": {"sql": LONG}, "id": "c_long"},
             {"name": "run_sql", "args": {"sql": SHORT}, "id": "c_short"}]
    with inbox(browser, agent) as (page, url, sent):
        r = httpx.post(f"{url}/api/threads", params={"wait": "true"}, headers=as_("hal"),
                       timeout=60, json={"thread_id": "two", "message": json.dumps(calls)})
        assert r.status_code == 200 and r.json()["status"] == "interrupted", r.text
        page.goto(f"{url}/#/t/two")
        long_card = page.locator('.card[data-call-id="c_long"]')
        short_card = page.locator('.card[data-call-id="c_short"]')
        expect(clipped(long_card)).to_have_count(1)
        short_card.get_by_role("button", name="Approve", exact=True).focus()
        page.keyboard.press("a")
        expect(short_card.locator(".confirm")).to_be_visible()
        assert not long_card.locator(".confirm").is_visible()
        expect(clipped(long_card)).to_have_count(1)
        page.keyboard.press("Enter")
        deadline = time.monotonic() + 15
        while executions() != [f"run_sql {SHORT}"]:
            assert time.monotonic() < deadline, executions()
            time.sleep(0.05)
        assert sent == ["two/decisions"]
        # the long call: the first A shows it and takes the focus, the second asks about it
        long_card.get_by_role("button", name="Approve", exact=True).focus()
        page.keyboard.press("a")
        expect(long_card.get_by_text(HIDDEN_NOTE)).to_be_visible()
        page.keyboard.press("a")
        expect(long_card.locator(".confirm")).to_contain_text("It runs at once.")
        page.keyboard.press("Enter")
        deadline = time.monotonic() + 15
        while sent != ["two/decisions", "two/decisions"]:
            # what the page shows if Enter sent nothing: where the focus is, the card's text
            assert time.monotonic() < deadline, (sent, page.evaluate(
                "document.activeElement && document.activeElement.outerHTML.slice(0, 200)"),
                long_card.inner_text()[-400:])
            page.wait_for_timeout(50)
        completes(agent, "two")
    assert executions() == [f"run_sql {SHORT}", f"run_sql {LONG}"]
