"""Partial approvals are visible everywhere: the API, the terminal (`interlock show`) and the
web inbox (headless Chromium), and the inbox's Approve completes the quorum."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from interlock import InterruptOn, Reviewer, SqliteCheckpointer
from interlock.cli import main
from server.live import CHROMIUM_ARGS, LiveServer, chromium_path

from .agents import QUERY, executions, make_agent

ALICE = Reviewer("alice", frozenset({"dba"}))


@pytest.fixture
def paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LiveServer, Path]]:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    db = tmp_path / "db.sqlite"
    agent = make_agent(SqliteCheckpointer(db), InterruptOn(approvals=2))
    agent.invoke("clean up", thread_id="q1")
    agent.resume("q1", [{"type": "approve"}], reviewer=ALICE)
    server = LiveServer(agent)
    try:
        yield server, db
    finally:
        server.stop()


def test_api_and_terminal_show_the_partial_approval(paused: tuple[LiveServer, Path]) -> None:
    server, db = paused
    detail = httpx.get(f"{server.url}/api/threads/q1").json()
    (config,) = detail["interrupts"][0]["value"]["review_configs"]
    assert config["approvals"] == 2
    assert [a["by"] for a in config["approved_by"]] == ["alice"]
    shown = CliRunner().invoke(main, ["show", "q1", "--db", f"sqlite:///{db}"],
                               env={"COLUMNS": "160"})
    assert shown.exit_code == 0, shown.output
    assert "approvals 1 of 2 (alice)" in shown.output


@pytest.mark.browser
def test_inbox_shows_the_count_and_its_approve_completes_the_quorum(
    paused: tuple[LiveServer, Path],
) -> None:
    from playwright.sync_api import expect, sync_playwright

    server, _ = paused
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{server.url}/#/t/q1")
            card = page.locator('.card[data-tool="execute_sql"]')
            expect(card).to_contain_text("approvals 1 of 2: alice")
            assert executions() == []
            card.get_by_role("button", name="Approve", exact=True).click()
            card.locator(".confirm").get_by_role("button", name="Yes, run it").click()
            expect(page.locator('.detail-head [data-status]')).to_have_attribute(
                "data-status", "completed")
        finally:
            browser.close()
    assert executions() == [QUERY]


def test_server_records_who_started_the_run_and_refuses_their_approval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    alice, bob = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
    tokens = {alice: {"id": "alice", "roles": ["dba"]}, bob: {"id": "bob", "roles": ["dba"]}}
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"),
                       InterruptOn(reviewers=["dba"], self_approval=False))
    server = LiveServer(agent, tokens=tokens)
    try:
        def call(token: str, path: str, body: object) -> httpx.Response:
            return httpx.post(f"{server.url}{path}", params={"wait": "true"}, json=body,
                              headers={"Authorization": f"Bearer {token}"}, timeout=30)

        started = call(alice, "/api/threads", {"thread_id": "s1", "message": "clean up"})
        assert started.json()["status"] == "interrupted"
        own = call(alice, "/api/threads/s1/decisions", {"decisions": [{"type": "approve"}]})
        assert own.status_code == 403 and "self_approval" in own.json()["message"]
        assert executions() == []
        other = call(bob, "/api/threads/s1/decisions", {"decisions": [{"type": "approve"}]})
        assert other.status_code == 200 and other.json()["status"] == "completed"
    finally:
        server.stop()
    assert executions() == [QUERY]
