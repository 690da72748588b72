"""``/metrics`` on a port of its own (``--metrics-port``): a minimal HTTP server in the
process's event loop, so that a scrape reads the store through the same connections as the
process (:meth:`Metrics.refresh`), then answers in the Prometheus text format."""

from __future__ import annotations

import asyncio
import logging

from ..storage.base import Checkpointer
from .metrics import CONTENT_TYPE, Metrics

log = logging.getLogger("interlock.metrics")
_MAX_HEAD = 16 * 1024
_TIMEOUT = 10.0


async def serve_metrics(metrics: Metrics, store: Checkpointer, *, host: str = "127.0.0.1",
                        port: int = 9464) -> asyncio.Server:
    """Listen on ``host:port`` and answer ``GET /metrics``; returns the started server."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _TIMEOUT)
            status, body, ctype = await _answer(head[:_MAX_HEAD], metrics, store)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                ConnectionError):
            writer.close()
            return
        writer.write(b"HTTP/1.1 " + status.encode() + b"\r\nContent-Type: " + ctype.encode()
                     + b"\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\nConnection: close\r\n\r\n" + body)
        try:
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port, limit=_MAX_HEAD)


async def _answer(head: bytes, metrics: Metrics, store: Checkpointer) -> tuple[str, bytes, str]:
    line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
    if len(line) != 3:
        return "400 Bad Request", b"bad request\n", "text/plain"
    method, target, _ = line
    if target.split("?", 1)[0] != "/metrics":
        return "404 Not Found", b"only /metrics is served here\n", "text/plain"
    if method != "GET":
        return "405 Method Not Allowed", b"use GET\n", "text/plain"
    try:
        await metrics.refresh(store)
    except Exception as exc:  # the counters are still worth a scrape; the gauges keep values
        log.warning("metrics: reading the waiting requests from the store failed: %s: %s",
                    type(exc).__name__, exc)
    return "200 OK", metrics.exposition(), CONTENT_TYPE
