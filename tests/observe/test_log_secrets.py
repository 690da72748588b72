"""No credential reaches a log line or a metric label: what the JSON log format redacts, in
linear time whatever the line; and a webhook whose URL holds a user's password, a secret path
and a query token, failing, as the dispatcher logs it and the metrics label it."""

from __future__ import annotations

import asyncio
import io
import logging
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interlock import SqliteCheckpointer, observe
from interlock.notify import Dispatcher, NotifyConfig, build_channels
from interlock.observe.logs import JsonFormatter, redact
from interlock.observe.metrics import Metrics
from notify.agents import make_agent
from notify.fakes import new_secret, webhook_receiver

REDACTED = [
    ("GET /x?access_token=AAA&x=1", "GET /x?access_token=[redacted]&x=1"),
    ("api_key=AAA&client_secret=BBB&apikey=CCC",
     "api_key=[redacted]&client_secret=[redacted]&apikey=[redacted]"),
    ("X-Amz-Signature=abc&X-Amz-Credential=zz",
     "X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]"),
    ('{"token": "AAA", "n": 1}', '{"token": "[redacted]", "n": 1}'),
    ('{"refresh_token":"AAA"}', '{"refresh_token":"[redacted]"}'),
    ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [redacted]"),
    ("authorization: bearer abc.def", "authorization: bearer [redacted]"),
    ("http://user:PASSWORD@host/x", "http://user:[redacted]@host/x"),
    ("postgresql://u:PASSWORD@h/db", "postgresql://u:[redacted]@h/db"),
    ("next=http://u:pw@h/x&token=1", "next=http://u:[redacted]@h/x&token=[redacted]"),
    ("/notify/email/TOKEN123?x", "/notify/email/[redacted]?x"),
    # camelCase names, Python members, header-like lines, numbers and escaped quotes
    ("GET /t?accessToken=A&client_secret=B&sessionToken=C HTTP/1.1",
     "GET /t?accessToken=[redacted]&client_secret=[redacted]&sessionToken=[redacted] HTTP/1.1"),
    ('{"accessToken": "A", "clientSecret": "B", "apiKey": "C"}',
     '{"accessToken": "[redacted]", "clientSecret": "[redacted]", "apiKey": "[redacted]"}'),
    ("{'api_key': 'A', 'n': 1}", "{'api_key': '[redacted]', 'n': 1}"),
    ("Authorization: Token abc123", "Authorization: Token [redacted]"),
    ("x-api-key: k1; next", "x-api-key: [redacted]; next"),
    ("password: hunter2", "password: [redacted]"),
    ('{"token": 12345678, "n": 1}', '{"token": "[redacted]", "n": 1}'),
    ('{"refresh_token": "ab\\"SECRET", "n": 1}', '{"refresh_token": "[redacted]", "n": 1}'),
]
KEPT = ["monkey=banana", "GET /api/threads?limit=5 HTTP/1.1", '{"name": "x"}',
        "postgres@127.0.0.1:5432/test", "status code: 500", "author: bob",
        "keyboard layout: us", '{"designer": "x"}']


@pytest.mark.parametrize(("text", "shown"), REDACTED)
def test_credentials_are_redacted(text: str, shown: str) -> None:
    assert redact(text) == shown


@pytest.mark.parametrize("text", KEPT)
def test_other_text_is_kept(text: str) -> None:
    assert redact(text) == text


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["a-", "a.", '"a_', "x://a:", "a=", "ab://", '"a":', "bearer ",
                        "a_" * 60 + "token_", "=", "@", "aB", "aToken", '"token":"\\',
                        "'key':'", "password:", "x-api-key: ", '"a"']),
       st.integers(min_value=2_000, max_value=20_000))
def test_redaction_takes_linear_time_on_any_line(unit: str, n: int) -> None:
    """A line of 64 KB made to make a pattern backtrack takes well under a second (a
    pattern that backtracks over what it already failed on takes minutes here)."""
    line = unit * (64_000 // len(unit)) + unit * (n // len(unit))
    start = time.process_time()
    redact(line)
    assert time.process_time() - start < 1.0


def test_a_webhook_urls_secrets_are_in_no_log_line_and_no_label(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = make_agent(store)
    metrics = Metrics()
    observe.install(observe.Observer(metrics=metrics))
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("interlock")
    logger.addHandler(handler)
    secret = new_secret()
    try:
        with webhook_receiver(secret, fail_first=1000) as rx:
            port = rx.url.split(":")[2].split("/")[0]
            # the receiver answers 500 here; the same URL with a wrong port is refused
            for n, url in enumerate((f"http://hookuser:hookPASSWORD@127.0.0.1:{port}/services/T0/PATHSECRET"
                        f"?access_token=QSECRET1&apikey=QSECRET2",
                        "http://hookuser:hookPASSWORD@127.0.0.1:9/services/T0/PATHSECRET"
                        "?access_token=QSECRET1")):
                agent.invoke("one", thread_id=f"t{n}")  # a new request to announce
                config = NotifyConfig.model_validate({
                    "webhooks": [{"url": url, "secret": secret}],
                    "dispatch": {"max_attempts": 1}})
                asyncio.run(Dispatcher(store, build_channels(config, store),
                                       settings=config.dispatch).run_once())
    finally:
        logger.removeHandler(handler)
        observe.uninstall()
        asyncio.run(store.close())
    logged = out.getvalue()
    exported = metrics.exposition().decode()
    assert "delivery of" in logged and "interlock_outbox_delivery_failures_total{" in exported
    for text in (logged, exported):
        for secret_part in ("hookPASSWORD", "PATHSECRET", "QSECRET1", "QSECRET2", "hookuser"):
            assert secret_part not in text, text
    assert "webhook:http://127.0.0.1:9/…#" in exported  # where it failed, and no more


def test_spans_of_http_requests_carry_no_credential_in_their_url() -> None:
    """The web framework's own span of a request holds its path and query: a decision link of
    the earlier form (the token in the path) and a client's query token are redacted before
    any exporter sees them, as ``interlock serve --otel`` sets the provider up."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from interlock.observe.spans import RedactURLs

    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(RedactURLs())
    provider.add_span_processor(SimpleSpanProcessor(exported))
    tracer = provider.get_tracer("test")
    tracer.start_span("GET /notify/email/{token}", attributes={
        "url.path": "/notify/email/LINKTOKEN", "url.query": "access_token=QTOKEN&limit=5",
        "url.full": "http://u:PW@h/x", "http.route": "/notify/email/{token}"}).end()
    (span,) = exported.get_finished_spans()
    assert dict(span.attributes or {}) == {
        "url.path": "/notify/email/[redacted]", "url.query": "access_token=[redacted]&limit=5",
        "url.full": "http://u:[redacted]@h/x", "http.route": "/notify/email/{token}"}
