"""Sub-agents in the web inbox (headless Debian Chromium via Playwright): a request raised in
a sub-agent is one item of its parent thread, its card shows the path (parent call → child
agent → tool and arguments), and every decision works from there — edit and reject on two
parallel children, approve and respond in token mode, an ``interrupt()`` question two levels
down; a sub-agent's thread opens read-only with links to its parent; only a reviewer holding
the child's role may decide."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from interlock import SqliteCheckpointer
from procs.subagent_team import Effects

from . import test_browser
from .conftest import ALICE, BOB, TOKENS, bearer
from .live import LiveServer, start_thread
from .subagent_agents import make_lead, make_same_name_team

# the same Chromium, and the same page that fails a test on any script or console error
browser = test_browser.browser
page = test_browser.page

pytestmark = pytest.mark.browser


@pytest.fixture
def fx() -> Effects:
    return Effects()


@pytest.fixture
def live(tmp_path: Path, fx: Effects) -> Iterator[LiveServer]:
    server = LiveServer(make_lead(SqliteCheckpointer(tmp_path / "team.db"), fx))
    yield server
    server.stop()


def card(page: Page, tool: str) -> Any:
    return page.locator(f'.card[data-tool="{tool}"]')


def steps(c: Any) -> Any:
    return c.locator(".call-path .path-step")


def test_parallel_children_decided_from_the_parent_item(page: Page, live: LiveServer,
                                                        fx: Effects) -> None:
    start_thread(live.url, "clean up", "team-1")
    page.goto(f"{live.url}/")
    # one item in the inbox: the parent thread, naming both children's calls
    rows = page.locator(".row")
    expect(rows).to_have_count(1)
    expect(page.locator("#list-count")).to_have_text("1 pending request")  # children not counted
    row = page.locator('.row[data-thread-id="team-1"]')
    expect(row.locator(".row-title")).to_have_text(
        "delete_file (in researcher), drop_table (in dba) (2 calls)")
    row.click()
    expect(page.locator(".thread-id")).to_have_text("team-1")

    # each card shows the path: parent call -> child agent -> tool, then the arguments
    dba = card(page, "drop_table")
    expect(steps(dba)).to_have_count(2)
    expect(steps(dba).nth(0)).to_have_text("lead calls sub-agent dbaask_dba")
    expect(steps(dba).nth(1)).to_contain_text("dba calls drop_table")
    expect(steps(dba).nth(1).locator(".thread-link")).to_have_text("team-1@ask_dba")
    expect(dba.locator(".argv dd")).to_have_text(["users"])
    expect(dba.locator(".tool-doc")).to_have_text("Drop a database table.")
    # the child's policy: no respond, no remembering
    expect(dba.locator(":scope > .actions > button")).to_have_text(
        ["Approve A", "Edit… E", "Reject… R"])
    researcher = card(page, "delete_file")
    expect(steps(researcher).nth(0)).to_have_text("lead calls sub-agent researcherask_researcher")
    expect(steps(researcher).nth(1).locator(".thread-link")).to_have_text(
        "team-1@ask_researcher")
    # the conversation says which call of the parent waits
    expect(page.locator(".waiting-above")).to_have_count(2)

    # edit the dba's call: the child validates and runs the edited call, once
    dba.get_by_role("button", name="Edit…").click()
    field = dba.locator('.field[data-arg="name"] input')
    expect(field).to_have_value("users")
    field.fill("tmp_users")
    dba.get_by_role("button", name="Run with these arguments").click()
    dba.locator(".confirm").get_by_role("button", name="Yes, run it").click()
    expect(card(page, "drop_table")).to_have_count(0)
    expect(page.locator('.detail-head [data-status]')).to_have_attribute(
        "data-status", "interrupted")
    assert fx.all() == [f"drop_table|team-1@ask_dba|{fx.all()[0].split('|')[2]}|tmp_users"]

    # reject the researcher's call with a message: the child's model gets it
    researcher.get_by_role("button", name="Reject…").click()
    researcher.get_by_label("Reason").fill("keep the notes")
    researcher.locator(".panel").get_by_role("button", name="Reject", exact=True).click()
    expect(page.locator('.detail-head [data-status]')).to_have_attribute(
        "data-status", "completed")
    expect(page.locator(".msg.tool pre.result")).to_have_count(2)
    final = page.locator(".msg.assistant .text").last
    expect(final).to_contain_text("dba=dba:")
    expect(final).to_contain_text("keep the notes")
    expect(page.locator('.row[data-thread-id="team-1"]')).to_have_count(0)
    # the history links the decisions to the children's threads
    expect(page.locator("tr[data-kind=decision_routed]")).to_have_count(2)
    expect(page.locator("tr[data-kind=decision_routed]").first).to_contain_text(
        "decision passed to sub-agent thread team-1@ask_dba")
    assert fx.counts() == {"drop_table": 1}

    # the child's thread opens read-only, with links to where it is decided
    page.goto(f"{live.url}/#/t/team-1@ask_dba")
    expect(page.locator(".thread-id")).to_have_text("team-1@ask_dba")
    notice = page.locator(".subagent-notice")
    expect(notice).to_contain_text("run by the sub-agent tool dba for call ask_dba of agent lead")
    expect(page.locator(".follow-up textarea")).to_have_count(0)
    notice.locator(".root-link").click()
    expect(page.locator(".thread-id")).to_have_text("team-1")


def test_depth_two_question_answered_in_the_inbox(page: Page, live: LiveServer,
                                                  fx: Effects) -> None:
    start_thread(live.url, "paint the kitchen", "paint-1")
    page.goto(f"{live.url}/")
    expect(page.locator(".row")).to_have_count(1)
    row = page.locator('.row[data-thread-id="paint-1"]')
    expect(row.locator(".row-title")).to_have_text("Question for you (in manager › painter)")
    row.click()
    c = page.locator(".card.input-card")
    expect(c.locator(".question")).to_have_text("Which colour for the kitchen?")
    expect(steps(c)).to_have_count(3)
    expect(steps(c).nth(0)).to_have_text("lead calls sub-agent managerask_manager")
    expect(steps(c).nth(1)).to_contain_text("manager calls sub-agent painter")
    expect(steps(c).nth(1).locator(".thread-link")).to_have_text("paint-1@ask_manager")
    expect(steps(c).nth(2)).to_contain_text("painter calls paint")
    bottom = steps(c).nth(2).locator(".thread-link")
    expect(bottom).to_contain_text("paint-1@ask_manager@")  # derived from the middle's call
    bottom_id = steps(c).nth(2).get_attribute("data-thread-id")
    c.get_by_label("Answer", exact=True).fill("green")
    c.get_by_role("button", name="Send answer").click()
    expect(page.locator('.detail-head [data-status]')).to_have_attribute(
        "data-status", "completed")
    expect(page.locator(".msg.assistant .text").last).to_have_text(
        "lead: manager=manager: painter: painted the kitchen green")
    assert fx.counts() == {"paint": 1}
    # the bottom thread links to its parent (the middle one) and to the top
    assert bottom_id
    page.goto(f"{live.url}/#/t/{bottom_id}")
    notice = page.locator(".subagent-notice")
    expect(notice.locator(".parent-link")).to_have_text("paint-1@ask_manager")
    expect(notice.locator(".root-link")).to_have_text("paint-1")


def test_only_the_childs_role_may_decide_in_the_inbox(browser: Browser, tmp_path: Path) -> None:
    fx = Effects()
    server = LiveServer(make_lead(SqliteCheckpointer(tmp_path / "roles.db"), fx), tokens=TOKENS)
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    try:
        start_thread(server.url, "clean up", "roles-1", BOB)  # bob's thread; the dba's call needs dba
        page = context.new_page()
        page.goto(f"{server.url}/")
        page.locator("#token").fill(BOB)
        page.get_by_role("button", name="Sign in").click()
        page.locator('.row[data-thread-id="roles-1"]').click()
        dba = card(page, "drop_table")
        expect(steps(dba)).to_have_count(2)
        expect(dba.locator(".notice")).to_have_text(
            "Only a reviewer with the role dba can decide this call.")
        expect(dba.get_by_role("button", name="Approve", exact=True)).to_be_disabled()
        page.get_by_role("button", name="Sign out").click()
        page.locator("#token").fill(ALICE)
        page.get_by_role("button", name="Sign in").click()
        page.locator('.row[data-thread-id="roles-1"]').click()
        dba = card(page, "drop_table")
        dba.get_by_role("button", name="Approve", exact=True).click()
        dba.locator(".confirm").get_by_role("button", name="Yes, run it").click()
        expect(card(page, "drop_table")).to_have_count(0)
        assert fx.counts() == {"drop_table": 1}
        # respond in place of the researcher's tool: its model gets the text as the result
        researcher = card(page, "delete_file")
        expect(steps(researcher)).to_have_count(2)
        researcher.get_by_role("button", name="Respond…").click()
        researcher.get_by_label("Response", exact=True).fill("already archived")
        researcher.get_by_role("button", name="Send response").click()
        expect(page.locator('.detail-head [data-status]')).to_have_attribute(
            "data-status", "completed")
        expect(page.locator(".msg.assistant .text").last).to_contain_text(
            "researcher=researcher: already archived")
        assert fx.counts() == {"drop_table": 1}
        audit = httpx.get(f"{server.url}/api/threads/roles-1@ask_dba/audit",
                          headers=bearer(ALICE)).json()["records"]
        assert [(a["actor"], a["data"]["via_thread_id"]) for a in audit
                if a["kind"] == "decision"] == [("alice", "roles-1")]
    finally:
        context.close()
        server.stop()


def test_a_childs_tool_sharing_the_parents_tool_name_is_shown_as_its_own(
        page: Page, tmp_path: Path) -> None:
    """The parent gates ``purge`` (it deletes rows) and its sub-agent gates its own ``purge``
    (declared read-only): each card shows its own tool's description, the child's approves
    in one step and the parent's asks first."""
    ran: list[str] = []
    lead = make_same_name_team(SqliteCheckpointer(tmp_path / "same-name.db"), ran)
    server = LiveServer(lead)
    try:
        start_thread(server.url, "go", "same-1")
        page.goto(f"{server.url}/#/t/same-1")
        cards = card(page, "purge")
        expect(cards).to_have_count(2)
        kid = cards.filter(has=page.locator(".call-path"))
        own = cards.filter(has_not=page.locator(".call-path"))
        expect(kid.locator(".tool-doc")).to_have_text(
            "Count what a purge would delete; changes nothing.")
        expect(own.locator(".tool-doc")).to_have_text("Delete every row of a table.")
        kid.get_by_role("button", name="Approve", exact=True).click()
        expect(card(page, "purge")).to_have_count(1)  # no confirmation for a read-only tool
        assert ran == ["dry *.tmp"]
        own = card(page, "purge")
        own.get_by_role("button", name="Approve", exact=True).click()
        expect(own.locator(".confirm")).to_be_visible()  # the parent's purge asks first
        assert ran == ["dry *.tmp"]
        own.locator(".confirm").get_by_role("button", name="Yes, run it").click()
        test_browser.expect_completed(page)
        assert ran == ["dry *.tmp", "purge sessions"]
    finally:
        server.stop()
