"""The observability options of ``interlock serve`` and ``interlock worker``: ``--otel``,
``--metrics-port`` / ``--metrics-host`` and ``--log-format`` (see docs/observability.md)."""

from __future__ import annotations

import asyncio
import atexit
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .. import observe
from ..agent import Agent
from ..errors import MissingDependency
from ..subagent_tree import subagents
from ._common import CliError

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("interlock.metrics")


def observability_options(f: F) -> F:
    """Add the observability options to a command."""
    options = [
        click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
                     show_default=True,
                     help="json: one JSON object per log line, with one line per stored "
                     "event (thread, run, call and request ids, trace id; never arguments, "
                     "results or tokens)."),
        click.option("--otel", is_flag=True,
                     help="Export OpenTelemetry traces over OTLP/HTTP, configured by the "
                     "standard OTEL_* variables (e.g. OTEL_EXPORTER_OTLP_ENDPOINT; extra "
                     "[otel])."),
        click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
                     metavar="PORT",
                     help="Serve Prometheus metrics at http://HOST:PORT/metrics (extra "
                     "[metrics]); a port of its own, not the API's."),
        click.option("--metrics-host", default="127.0.0.1", show_default=True,
                     help="Address of the metrics port."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _tool_names(agent: Agent) -> set[str]:
    names = set(agent.tools_by_name)
    for sub in subagents(agent):
        names |= set(sub.tools_by_name)
    return names


def install_observer(agent: Agent, *, otel: bool, metrics_port: int | None,
                     log_format: str, worker: bool = False) -> observe.Observer | None:
    """Build and install the process's observer for the chosen options (None: none chosen)."""
    tracing = metrics = None
    try:
        if otel:
            tracing = _otlp_tracing()
        if metrics_port is not None:
            from ..observe.metrics import Metrics
            metrics = Metrics(tools=_tool_names(agent), worker=worker)
    except ImportError as exc:
        extra = "otel" if otel and tracing is None else "metrics"
        raise CliError(str(MissingDependency(
            "--otel" if extra == "otel" else "--metrics-port", extra, exc.name or "?"))) \
            from exc
    if tracing is None and metrics is None and log_format != "json":
        return None
    return observe.install(observe.Observer(tracing=tracing, metrics=metrics,
                                            events=log_format == "json"))


def _otlp_tracing() -> Any:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from ..observe.spans import RedactURLs
    from ..observe.tracing import Tracing

    provider = TracerProvider(resource=Resource.create({"service.name": "interlock"}))
    provider.add_span_processor(RedactURLs())  # before any exporter sees a request's URL
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)  # the last spans are sent before the process exits
    return Tracing(provider)


async def start_metrics(observer: observe.Observer | None, agent: Agent, host: str,
                        port: int | None) -> asyncio.Server | None:
    """Start the metrics port, when asked for."""
    if observer is None or observer.metrics is None or port is None:
        return None
    from ..observe.endpoint import serve_metrics
    server = await serve_metrics(observer.metrics, agent.checkpointer, host=host, port=port)
    bound = server.sockets[0].getsockname()
    click.echo(f"interlock: metrics at http://{bound[0]}:{bound[1]}/metrics", err=True)
    return server
