"""The demo agent's policy and scripted model, in process."""

from __future__ import annotations

from pathlib import Path

import pytest

from interlock import CallState, ToolMessage
from interlock.demo import build_agent, estimate_impact, is_read_only, prepare, queue_runs

from .helpers import sample_rows


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return prepare(tmp_path)


@pytest.mark.parametrize("query", [
    "SELECT COUNT(*) FROM orders",
    "select name from customers where id = 17",
    "WITH t AS (SELECT * FROM orders) SELECT status, COUNT(*) FROM t GROUP BY status",
])
def test_reading_statements_run_without_review(sample: Path, query: str) -> None:
    assert is_read_only(sample, query)


@pytest.mark.parametrize("query", [
    "DELETE FROM orders WHERE id = 1001",
    "UPDATE customers SET credit_cents = 0",
    "WITH t AS (SELECT id FROM orders) DELETE FROM orders WHERE id IN (SELECT id FROM t)",
    "SELECT 1; DELETE FROM orders",
    "INSERT INTO outbox (to_addr, subject, body, created_at) VALUES ('a', 'b', 'c', 'd')",
    "DROP TABLE orders",
    "PRAGMA writable_schema = 1",
    "ATTACH DATABASE 'x.db' AS x",
    "SELEC broken",
    "",
])
def test_anything_else_pauses(sample: Path, query: str) -> None:
    assert not is_read_only(sample, query)
    assert sample_rows(sample.parent, "SELECT COUNT(*) FROM orders") == [(400,)]  # not run


def test_impact_estimate(sample: Path) -> None:
    n = sample_rows(sample.parent, "SELECT COUNT(*) FROM orders WHERE status = 'cancelled'")
    assert estimate_impact(sample, "DELETE FROM orders WHERE status = 'cancelled'") == \
        f"This statement would delete {n[0][0]} of 400 rows in `orders`."
    assert estimate_impact(sample, "UPDATE customers SET tier = 'gold' WHERE id = 17;") == \
        "This statement would change 1 of 120 rows in `customers`."
    assert "no WHERE clause" in (estimate_impact(sample, "DELETE FROM orders") or "")
    assert estimate_impact(sample, "DROP TABLE orders") is None
    assert estimate_impact(sample, "DELETE FROM nope WHERE x = 1") is None


def test_scripted_runs_pause_on_the_intended_tools(tmp_path: Path) -> None:
    prepare(tmp_path)
    agent = build_agent(tmp_path)
    try:
        results = {r.thread_id: r for r in queue_runs(agent)}
        waiting = {tid: [(a.name, c.allowed_decisions)
                         for a, c in zip(r.interrupts[0].value.action_requests,
                                         r.interrupts[0].value.review_configs, strict=True)]
                   for tid, r in results.items()}
        assert waiting == {
            "cleanup-cancelled-orders": [("execute_sql", ["approve", "reject"])],
            "late-order-1042": [("send_email", ["approve", "edit", "reject"])],
            "goodwill-credit": [("ask_user", ["respond"])],
            "weekly-report": [("send_email", ["approve", "edit", "reject"])],
        }
        # the SELECT before the DELETE ran without a review, by policy
        first = agent.journal("cleanup-cancelled-orders")[0]
        assert first.name == "execute_sql" and first.state == CallState.SUCCEEDED
        assert first.decided_by == "policy"
        config = results["cleanup-cancelled-orders"].interrupts[0].value.review_configs[0]
        assert config.expires_at is not None

        # a reviewer's rejection is acknowledged, and nothing changed
        done = agent.resume("cleanup-cancelled-orders",
                            [{"type": "reject", "message": "keep them for the audit"}])
        assert done.output is not None
        assert "rejected `execute_sql` (reason: keep them for the audit)" in done.output
        assert sample_rows(tmp_path, "SELECT COUNT(*) FROM orders") == [(400,)]

        # an answer without an amount changes nothing either
        asked = agent.resume("goodwill-credit", [{"type": "respond", "message": "not sure"}])
        assert asked.status == "completed"
        assert asked.output is not None and "could not find an amount" in asked.output

        # an unknown request gets an explanation, not a tool call
        other = agent.invoke("What's the weather like?", thread_id="chat")
        assert other.status == "completed"
        assert other.output is not None and "scripted model" in other.output
        assert not [m for m in other.messages if isinstance(m, ToolMessage)]
    finally:
        agent.close()


def test_send_email_is_written_once(tmp_path: Path) -> None:
    prepare(tmp_path)
    agent = build_agent(tmp_path)
    try:
        queue_runs(agent)
        result = agent.resume("late-order-1042", [{"type": "approve"}])
        assert result.status == "completed"
        rows = sample_rows(tmp_path, "SELECT to_addr, subject, idempotency_key FROM outbox")
        assert [(r[0], r[1]) for r in rows] == [
            ("noah.weber@example.com", "Your order #1042 is delayed")]
        assert rows[0][2]  # keyed by the call's idempotency key
    finally:
        agent.close()
