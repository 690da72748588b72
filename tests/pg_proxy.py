"""A TCP proxy in front of Postgres that cuts connections in the middle of thread writes.

Processes connect to the proxy's port instead of the server's. A chunk sent by a client that
writes ``interlock_threads`` (a thread commit) or says ``COMMIT`` is, with probability
``cut``, the last thing on that connection: half the time it is dropped before it reaches
the server (nothing stored), half the time it is delivered and the server's answer is
discarded (stored, but the client never hears so) — both ends are then aborted, as a network
cut or a failover would. Runs its own event loop in a thread of the test process.
"""

from __future__ import annotations

import asyncio
import random
import threading
from dataclasses import dataclass, field


@dataclass
class CutCounts:
    before: int = 0
    """Writes cut before the server got them."""
    after: int = 0
    """Writes the server got whose answer was cut."""
    connections: int = 0


@dataclass
class _Link:
    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    deaf: bool = False
    """The server's answers are discarded (a write is being cut after delivery)."""


@dataclass
class CuttingProxy:
    target_port: int = 5432
    host: str = "127.0.0.1"
    cut: float = 0.0
    seed: int = 0
    counts: CutCounts = field(default_factory=CutCounts)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="pg-proxy")

    def start(self) -> int:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the proxy did not start")
        return self.port

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._handle, self.host, 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()
        server.close()
        tasks = asyncio.all_tasks(self.loop)
        for task in tasks:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self.loop.run_until_complete(server.wait_closed())
        self.loop.close()

    def lose_next_answer(self) -> None:
        """The next thread write (or ``COMMIT``) is delivered and its answer lost, for sure."""
        self._lose_next = True

    def _cuts(self, data: bytes) -> bool:
        writes = b"COMMIT" in data or (b"interlock_threads" in data and (
            b"UPDATE" in data or b"INSERT" in data))
        if writes and getattr(self, "_lose_next", False):
            return True
        if self.cut <= 0:
            return False
        return writes and self.rng.random() < self.cut

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self.counts.connections += 1
        link = _Link(writer, up_writer)
        await asyncio.gather(self._pump(reader, link, from_client=True),
                             self._pump(up_reader, link, from_client=False),
                             return_exceptions=True)

    async def _pump(self, src: asyncio.StreamReader, link: _Link, *, from_client: bool) -> None:
        dst = link.server if from_client else link.client
        try:
            while data := await src.read(65536):
                if not from_client and link.deaf:
                    continue
                if from_client and self._cuts(data):
                    forced, self._lose_next = getattr(self, "_lose_next", False), False
                    if not forced and self.rng.random() < 0.5:
                        self.counts.before += 1
                    else:
                        link.deaf = True
                        dst.write(data)
                        await dst.drain()
                        await asyncio.sleep(0.05)  # the server runs it; its answer is lost
                        self.counts.after += 1
                    break
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            link.client.transport.abort()
            link.server.transport.abort()
