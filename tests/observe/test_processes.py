"""``interlock serve --api-only`` and ``interlock worker`` with ``--metrics-port``, ``--otel``
and ``--log-format json``, as real processes on Postgres: the metrics of each process, one
trace across both, and JSON log lines that carry the ids and never a token or an argument."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from server.conftest import ALICE, BOB, bearer
from server.test_workers_pg import api, wait_for, worker

from .otel_receiver import Receiver

METRICS_AT = re.compile(r"interlock: metrics at (http://127\.0\.0\.1:\d+/metrics)")
SECRET = "hunter2-s3cret"
LINK_TOKEN = "eyJ0aHJlYWQiOiJtMSJ9.Zm9vYmFy.c2lnbmF0dXJl"


def metrics_url(process: Any) -> str:
    def found() -> str | None:
        return next((m.group(1) for line in process.lines
                     if (m := METRICS_AT.search(line))), None)
    url: str = wait_for(found, 30, f"{process.name} to open its metrics port")
    return url


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    r = httpx.get(url, timeout=60)
    assert r.status_code == 200, r.text
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(r.text) for s in f.samples}


@pytest.mark.postgres
@pytest.mark.slow
def test_serve_and_worker_metrics_one_trace_and_json_logs(tier: dict[str, Any]) -> None:
    with Receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.url,
               "OTEL_BSP_SCHEDULE_DELAY": "100"}
        flags = ["--metrics-port", "0", "--otel", "--log-format", "json"]
        server = api(tier, "api", *flags, env=env)
        w = worker(tier, "worker", *flags, env=env)
        api_metrics, worker_metrics = metrics_url(server), metrics_url(w)
        with httpx.Client(timeout=60) as c:
            r = c.post(f"{server.url}/api/threads", params={"wait": "true"},
                       headers=bearer(BOB), json={
                           "message": f"sql UPDATE users SET pw = '{SECRET}'",
                           "thread_id": "m1"})
            assert r.status_code == 200 and r.json()["status"] == "interrupted", r.text
            interrupt_id = r.json()["interrupts"][0]["id"]
            waiting = scrape(api_metrics)
            assert waiting[("interlock_pending_calls",
                            frozenset({("tool", "execute_sql")}))] == 1
            assert waiting[("interlock_pending_calls_by_role", frozenset({("role", "any")}))] == 1
            assert waiting[("interlock_oldest_pending_seconds", frozenset())] >= 0
            d = c.post(f"{server.url}/api/threads/m1/decisions", headers=bearer(ALICE),
                       json={"interrupt_id": interrupt_id, "decisions": [{"type": "approve"}]})
            assert d.status_code == 202, d.text

            def done() -> bool:
                t = c.get(f"{server.url}/api/threads/m1", headers=bearer(ALICE)).json()
                return bool(t["status"] == "completed")

            wait_for(done, 60, "the run to complete")
            # a link of the earlier form carries its token in the path (the page is the same
            # for every link); the access line must not show it
            link = c.get(f"{server.url}/notify/email/{LINK_TOKEN}")
            assert link.status_code == 200 and "link.js" in link.text, link.text
        decided = scrape(api_metrics)
        assert decided[("interlock_decisions_total",
                        frozenset({("decision", "approve"), ("tool", "execute_sql")}))] == 1
        assert decided[("interlock_time_to_decision_seconds_count",
                        frozenset({("decision", "approve")}))] == 1
        assert ("interlock_pending_calls", frozenset({("tool", "execute_sql")})) not in decided
        ran = scrape(worker_metrics)
        assert ran[("interlock_worker_claims_total", frozenset())] >= 2  # start and resume
        assert ran[("interlock_decision_to_tool_start_seconds_count", frozenset())] == 1
        assert ran[("interlock_worker_last_poll_timestamp_seconds", frozenset())] > 0
        assert server.stop() == 0 and w.stop() == 0  # their last spans are sent on exit
        spans = list(receiver.spans)

    # one trace: started on the API server, run and resumed by the worker
    ours = [s for s in spans if s.name.split(" ")[0] in
            {"invoke_agent", "chat", "execute_tool", "await_review"}]
    runs = [s for s in ours if s.name.startswith("invoke_agent")]
    assert len(runs) >= 4  # API: start, resume; worker: the first run, the resumed run
    assert {s.trace_id for s in ours} == {runs[0].trace_id}
    root = next(s for s in runs if not s.attributes["interlock.run.continued"])
    assert all(s.parent_id == root.span_id for s in runs if s is not root)
    wait = next(s for s in ours if s.name == "await_review execute_sql")
    tool = next(s for s in ours if s.name == "execute_tool execute_sql")
    assert wait.parent_id == root.span_id and tool.parent_id in {s.span_id for s in runs}
    assert wait.attributes["interlock.reviewer"] == "alice"
    assert wait.attributes["interlock.decision.type"] == "approve"
    assert tool.start_ns >= wait.end_ns
    # FastAPI's own spans (it reports to OpenTelemetry when it is installed): the run's trace
    # starts in the request that started it; the decision's request is linked from the resume
    requests = {s.attributes.get("url.path"): s for s in spans
                if s.attributes.get("http.request.method") == "POST"}
    if requests:
        assert requests["/api/threads"].trace_id == root.trace_id
        decision_request = requests["/api/threads/m1/decisions"]
        assert any(link[0] == decision_request.trace_id for s in runs for link in s.links)

    # JSON lines: every line of interlock's records parses; the events carry the ids
    records = [json.loads(line) for p in (server, w) for line in p.lines
               if line.startswith("{")]
    events = [r for r in records if r.get("logger") == "interlock.events"]
    kinds = {r["event"] for r in events}
    assert {"request_raised", "decision", "tool_started", "tool_finished"} <= kinds
    decision = next(r for r in events if r["event"] == "decision")
    assert decision["thread_id"] == "m1" and decision["interrupt_id"] == interrupt_id
    assert decision["tool_call_id"] and decision["run_id"]
    assert decision["trace_id"] == runs[0].trace_id
    everything = "".join(line for p in (server, w) for line in p.lines)
    for secret in (ALICE, BOB, SECRET, LINK_TOKEN):
        assert secret not in everything
    access = [r for r in records if r.get("logger") == "uvicorn.access"]
    assert any("/notify/email/[redacted]" in r["message"]
               or "/notify/email/<redacted>" in r["message"] for r in access), access
    # every line is JSON but the commands' own announcements ("interlock: ...")
    others = [line for p in (server, w) for line in p.lines
              if not line.startswith(("{", "interlock: "))]
    assert others == [], others
