"""Dead deliveries are visible and retryable from the command line and the API."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from click.testing import CliRunner

from interlock import SqliteCheckpointer
from interlock.cli import main
from interlock.notify import Dispatcher, NotifyConfig, build_channels
from interlock.notify.webhook import shown_url
from server.live import LiveServer

from .agents import make_agent
from .fakes import new_secret, webhook_receiver


def test_dead_events_listed_and_retried_by_cli_and_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    secret = new_secret()
    db = tmp_path / "db.sqlite"
    store = SqliteCheckpointer(db)
    agent = make_agent(store)
    agent.invoke("one", thread_id="t1")
    agent.invoke("two", thread_id="t2")
    url = f"sqlite:///{db}"
    with webhook_receiver(secret, fail_first=1000) as rx:
        config = NotifyConfig.model_validate({
            "webhooks": [{"name": "ops", "url": rx.url, "secret": secret}],
            "dispatch": {"max_attempts": 1}})
        asyncio.run(Dispatcher(store, build_channels(config, store),
                               settings=config.dispatch).run_once())
        assert len(rx.received) == 2
        runner = CliRunner()
        listed = runner.invoke(main, ["outbox", "--db", url, "--status", "dead"],
                               env={"COLUMNS": "200"})
        assert listed.exit_code == 0, listed.output
        dead = asyncio.run(store.outbox_list(status="dead"))
        assert len(dead) == 2
        for e in dead:
            assert e.id in listed.output
        assert listed.output.count("webhook:ops=dead/1 (error below)") == 2
        # the error whole, with where it failed, on a line of its own (not cut in it); of the
        # URL only its scheme, host and port (a path or query may hold the endpoint's key)
        assert listed.output.count(f"    webhook:ops: HTTP 500 from {shown_url(rx.url)}") == 2
        assert urlsplit(rx.url).path not in listed.output

        retried = runner.invoke(main, ["outbox", "retry", dead[0].id, "--db", url])
        assert retried.exit_code == 0, retried.output
        assert [e.id for e in asyncio.run(store.outbox_list(status="dead"))] == [dead[1].id]
        missing = runner.invoke(main, ["outbox", "retry", "evt_nope", "--db", url])
        assert missing.exit_code == 1 and "no dead outbox event" in missing.output

        server = LiveServer(agent)
        try:
            api = httpx.get(f"{server.url}/api/outbox", params={"status": "dead"}).json()
            assert [e["id"] for e in api] == [dead[1].id]
            assert api[0]["deliveries"]["webhook:ops"]["status"] == "dead"
            ok = httpx.post(f"{server.url}/api/outbox/{dead[1].id}/retry")
            assert ok.status_code == 200 and ok.json()["status"] == "pending"
            gone = httpx.post(f"{server.url}/api/outbox/{dead[1].id}/retry")
            assert gone.status_code == 404
        finally:
            server.stop()
        rx.fail_first = 0
        asyncio.run(Dispatcher(store, build_channels(config, store),
                               settings=config.dispatch).run_once())
    assert {e.status for e in asyncio.run(store.outbox_list())} == {"delivered"}
    assert len(rx.accepted) == 2
    kept = CliRunner().invoke(main, ["outbox", "prune", "--db", url])  # 30 days by default
    assert kept.exit_code == 0 and "deleted 0 delivered" in kept.output
    # both requests still wait: the events that announced them are kept (a decision updates
    # what they posted); once decided, they go
    waiting = CliRunner().invoke(main, ["outbox", "prune", "--older-than", "0", "--db", url])
    assert waiting.exit_code == 0 and "deleted 0 delivered" in waiting.output
    assert len(asyncio.run(store.outbox_list())) == 2
    for tid in ("t1", "t2"):
        agent.cancel(tid)
    pruned = CliRunner().invoke(main, ["outbox", "prune", "--older-than", "0", "--db", url])
    assert pruned.exit_code == 0 and "deleted 2 delivered" in pruned.output, pruned.output
    assert [e.type for e in asyncio.run(store.outbox_list())] == ["request.cancelled"] * 2
