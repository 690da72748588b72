"""Webhook delivery from the outbox, verified by the ``standardwebhooks`` library."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from interlock import SqliteCheckpointer, ThreadRecord
from interlock.notify import Dispatcher, NotifyConfig, build_channels, retry_event
from interlock.outbox import Notice, NoticeCall, OutboxEvent, outbox_json
from interlock.storage.base import Commit

from .fakes import new_secret, webhook_receiver

T0 = datetime.now(UTC).replace(microsecond=0)


def seed(store: SqliteCheckpointer, *events: OutboxEvent) -> None:
    rec = ThreadRecord(thread_id="t1", version=1, created_at=T0, updated_at=T0)
    asyncio.run(store.commit(Commit(thread=rec, outbox=list(events)), expected_version=None))


def raised(eid: str = "evt_1") -> OutboxEvent:
    notice = Notice(thread_id="t1", interrupt_id="i1", thread_version=1, calls=[NoticeCall(
        tool_call_id="c1", name="execute_sql", args={"query": "DELETE FROM t -- ü"},
        allowed_decisions=["approve", "reject"])])
    return OutboxEvent(id=eid, type="request.raised", thread_id="t1", created_at=T0,
                       next_at=T0, notice=notice)


def config(url: str, secret: str, **extra: object) -> NotifyConfig:
    return NotifyConfig.model_validate({
        "public_url": "https://review.example.com",
        "webhooks": [{"name": "ops", "url": url, "secret": secret, **extra}],
        "dispatch": {"backoff": 0.01, "backoff_max": 0.05, "max_attempts": 5,
                     "poll_interval": 0.01}})


async def dispatch_until(d: Dispatcher, done: object) -> None:
    deadline = time.monotonic() + 10.0
    while not done() and time.monotonic() < deadline:  # type: ignore[operator]
        await d.run_once()
        await asyncio.sleep(0.01)


def test_500_three_times_then_200_is_four_deliveries_of_one_id(tmp_path: Path) -> None:
    secret = new_secret()
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    seed(store, raised())
    with webhook_receiver(secret, fail_first=3) as rx:
        cfg = config(rx.url, secret)
        d = Dispatcher(store, build_channels(cfg, store), settings=cfg.dispatch)

        async def go() -> None:
            await dispatch_until(d, lambda: rx.accepted)
        asyncio.run(go())
    assert len(rx.received) == 4
    assert {r.headers["webhook-id"] for r in rx.received} == {"evt_1"}
    assert all(r.verified for r in rx.received)
    assert len(rx.accepted) == 1
    body = rx.accepted[0]
    assert body["type"] == "request.raised"
    assert body["data"]["url"] == "https://review.example.com/#/t/t1"
    assert body["data"]["calls"][0]["args"] == {"query": "DELETE FROM t -- ü"}
    ev = asyncio.run(store.outbox_get("evt_1"))
    assert ev is not None and ev.status == "delivered"
    assert ev.deliveries is not None
    delivery = ev.deliveries["webhook:ops"]
    assert (delivery.status, delivery.attempts) == ("delivered", 4)
    asyncio.run(store.close())


def test_tampered_body_and_old_timestamp_are_refused_by_the_library(tmp_path: Path) -> None:
    secret = new_secret()
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    seed(store, raised())
    with webhook_receiver(secret) as rx:
        cfg = config(rx.url, secret)
        d = Dispatcher(store, build_channels(cfg, store), settings=cfg.dispatch)
        asyncio.run(d.run_once())
    (got,) = rx.received
    assert got.verified
    hook = Webhook(secret)
    assert hook.verify(got.body, got.headers)["data"]["thread_id"] == "t1"
    tampered = got.body.replace(b"DELETE FROM t", b"DELETE FROM u")
    assert tampered != got.body
    with pytest.raises(WebhookVerificationError):
        hook.verify(tampered, got.headers)
    # an old timestamp, correctly signed for that time, is still refused
    old = int(time.time()) - 3600
    from interlock.notify.webhook import sign

    stale = {**got.headers, "webhook-timestamp": str(old),
             "webhook-signature": sign(secret, got.headers["webhook-id"], old, got.body)}
    with pytest.raises(WebhookVerificationError, match="too old"):
        hook.verify(got.body, stale)
    # and another endpoint's secret does not verify it
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(got.body, got.headers)
    asyncio.run(store.close())


def test_event_filters_and_dead_deliveries_are_retryable(tmp_path: Path) -> None:
    secret = new_secret()
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    decided = raised("evt_2").model_copy(update={"type": "request.decided"})
    seed(store, raised(), decided)
    with webhook_receiver(secret, fail_first=100) as rx:
        cfg = config(rx.url, secret, events=["request.raised"])
        d = Dispatcher(store, build_channels(cfg, store), settings=cfg.dispatch)
        asyncio.run(dispatch_until(d, lambda: len(rx.received) >= 5))
        asyncio.run(d.run_once())
        assert len(rx.received) == 5  # max_attempts, then dead: no more tries
        dead = asyncio.run(store.outbox_list(status="dead"))
        assert [e.id for e in dead] == ["evt_1"]
        assert dead[0].deliveries is not None
        assert "HTTP 500" in (dead[0].deliveries["webhook:ops"].last_error or "")
        skipped = asyncio.run(store.outbox_get("evt_2"))
        assert skipped is not None and skipped.status == "delivered"
        assert skipped.deliveries is not None
        assert skipped.deliveries["webhook:ops"].status == "skipped"
        rx.fail_first = 0
        assert asyncio.run(retry_event(store, "evt_1")) is not None
        asyncio.run(dispatch_until(d, lambda: rx.accepted))
    assert [json.loads(r.body)["type"] for r in rx.received] == ["request.raised"] * 6
    assert {r.headers["webhook-id"] for r in rx.received} == {"evt_1"}
    final = asyncio.run(store.outbox_get("evt_1"))
    assert final is not None and final.status == "delivered"
    asyncio.run(store.close())


def test_a_bad_secret_is_a_clear_configuration_error() -> None:
    from interlock import ConfigurationError
    from interlock.notify import load_config

    with pytest.raises(ConfigurationError, match="whsec_"):
        load_config({"webhooks": [{"url": "http://127.0.0.1:1/", "secret": "short"}]})


def test_lease_keeps_two_dispatchers_apart(tmp_path: Path) -> None:
    secret = new_secret()
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    seed(store, *(raised(f"evt_{i}") for i in range(6)))
    with webhook_receiver(secret) as rx:
        cfg = config(rx.url, secret)
        d1 = Dispatcher(store, build_channels(cfg, store), settings=cfg.dispatch)
        other = SqliteCheckpointer(tmp_path / "db.sqlite")
        d2 = Dispatcher(other, build_channels(cfg, other), settings=cfg.dispatch)

        async def both() -> None:
            await asyncio.gather(d1.run_once(), d2.run_once())
        asyncio.run(both())
        asyncio.run(other.close())
    assert sorted(r.headers["webhook-id"] for r in rx.received) == [f"evt_{i}" for i in range(6)]
    asyncio.run(store.close())
    _ = timedelta


def test_outbox_rows_are_stored_deflated_and_deliver_the_same_body_as_text_rows(
        tmp_path: Path) -> None:
    """An event is stored deflated on SQLite (its arguments are repeated in the default
    description and from event to event); a row an earlier version wrote as JSON text is
    still read, and both deliver the same body."""
    secret = new_secret()
    path = tmp_path / "db.sqlite"
    store = SqliteCheckpointer(path)
    big = raised("evt_1")
    big.notice.calls[0].args = {"query": "DELETE FROM t WHERE note = '" + "ü x" * 400 + "'"}
    big.notice.calls[0].description = f"Args: {json.dumps(big.notice.calls[0].args)}"
    legacy = big.model_copy(update={"id": "evt_2"})
    seed(store, big)
    with sqlite3.connect(path) as conn:
        (stored,), = conn.execute("SELECT data FROM interlock_outbox WHERE id='evt_1'")
        assert isinstance(stored, bytes)
        assert len(stored) < len(outbox_json(big)) / 3
        conn.execute("INSERT INTO interlock_outbox (id, thread_id, status, next_at, created_at, "
                     "data) SELECT 'evt_2', thread_id, status, next_at, created_at, ? "
                     "FROM interlock_outbox WHERE id='evt_1'", (outbox_json(legacy),))
    assert asyncio.run(store.outbox_get("evt_1")) == big
    assert asyncio.run(store.outbox_get("evt_2")) == legacy
    with webhook_receiver(secret) as rx:
        cfg = config(rx.url, secret)
        d = Dispatcher(store, build_channels(cfg, store), settings=cfg.dispatch)
        asyncio.run(dispatch_until(d, lambda: len(rx.accepted) == 2))
    one, two = rx.accepted
    assert one["data"]["calls"] == two["data"]["calls"]
    assert one["data"]["calls"][0]["args"] == big.notice.calls[0].args
    ev = asyncio.run(store.outbox_get("evt_2"))
    assert ev is not None and ev.status == "delivered"
    with sqlite3.connect(path) as conn:  # updated rows are stored deflated too
        assert all(isinstance(d, bytes) for d, in conn.execute("SELECT data FROM interlock_outbox"))
    asyncio.run(store.close())


def test_the_dispatcher_deletes_delivered_events_past_their_retention(tmp_path: Path) -> None:
    """Delivered events stay ``retention_days``; pending and dead ones, and recent delivered
    ones, are kept; a pass runs at most once an hour."""
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    old = T0 - timedelta(days=31)
    events = [raised("evt_old_delivered"), raised("evt_old_pending"), raised("evt_old_dead"),
              raised("evt_new_delivered")]
    events = [e.model_copy(update={"created_at": old if "old" in e.id else T0, "next_at": T0,
                                   "status": ("delivered" if "delivered" in e.id else
                                              "dead" if "dead" in e.id else "pending")})
              for e in events]
    seed(store, *events)
    now = [T0]
    cfg = NotifyConfig.model_validate({"dispatch": {"retention_days": 30}})
    d = Dispatcher(store, [], settings=cfg.dispatch, clock=lambda: now[0])

    async def go() -> list[int]:
        gone = [await d.prune_delivered()]
        await store.commit(Commit(
            thread=ThreadRecord(thread_id="t1", version=2, created_at=T0, updated_at=T0),
            outbox=[raised("evt_later").model_copy(update={
                "id": "evt_later", "created_at": old, "status": "delivered"})]),
            expected_version=1)
        now[0] = T0 + timedelta(minutes=59)
        gone.append(await d.prune_delivered())      # within the hour: no pass
        now[0] = T0 + timedelta(minutes=61)
        gone.append(await d.prune_delivered())
        return gone

    assert asyncio.run(go()) == [1, 0, 1]
    left = sorted(e.id for e in asyncio.run(store.outbox_list(limit=10)))
    assert left == ["evt_new_delivered", "evt_old_dead", "evt_old_pending"]
    keep = Dispatcher(store, [], settings=NotifyConfig.model_validate(
        {"dispatch": {"retention_days": None}}).dispatch, clock=lambda: T0 + timedelta(days=400))
    assert asyncio.run(keep.prune_delivered()) == 0
    assert len(asyncio.run(store.outbox_list(limit=10))) == 3
    asyncio.run(store.close())
