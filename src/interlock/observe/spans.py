"""A span processor for the OpenTelemetry SDK that keeps credentials out of URL attributes.

The web framework traces each HTTP request by itself once a tracer provider is set, with the
request's path and query as attributes (``url.path``, ``url.query``, ...). A path or a query
may carry a credential: the token of an e-mail decision link sent by an earlier version
(``/notify/email/<token>``), or a client's ``?access_token=...``. :class:`RedactURLs` rewrites
those attributes when a span starts, with the same redaction as the JSON logs
(:func:`~interlock.observe.logs.redact`), before any exporter sees them. ``interlock serve
--otel`` adds it; add it to your own provider with ``provider.add_span_processor(RedactURLs())``.
"""

from __future__ import annotations

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .logs import redact

URL_ATTRIBUTES = ("url.path", "url.query", "url.full", "http.target", "http.url")
"""The attributes of the HTTP semantic conventions (current and earlier) that hold a URL."""


class RedactURLs(SpanProcessor):
    """Redacts credentials in the URL attributes of every span as it starts."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        attributes = span.attributes or {}
        for key in URL_ATTRIBUTES:
            value = attributes.get(key)
            if isinstance(value, str) and (shown := redact(value)) != value:
                span.set_attribute(key, shown)

    def on_end(self, span: ReadableSpan) -> None:
        pass
