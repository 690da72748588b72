"""MCP servers' tools in an interlock agent (``pip install -e '.[mcp]'`` in the checkout,
the official ``mcp`` SDK).

::

    git = MCPServerStdio("mcp-server-git", ["--repository", "/srv/repo"], name="git")
    agent = Agent(model=..., tools=[git],
                  middleware=[HumanInTheLoop(interrupt_on=git.policy())])

* :class:`MCPServerStdio` starts the server as a subprocess and talks over stdin/stdout;
  :class:`MCPServerHTTP` connects to a streamable-HTTP endpoint. Either goes in
  ``Agent(tools=[...])``: the agent connects and lists the server's tools when it is built
  (name, description and input schema as the server declares them) and closes the connection
  (stopping a stdio server) in ``agent.close()`` / ``await agent.aclose()``.
* A result with ``isError`` reaches the model as an error result. Before each call the
  connection is checked (a ping); a server that died since the last call is started again
  and the call goes to the new one, so a call that was never sent is never "outcome
  unknown". A connection that breaks during a call gives the model an error that says the
  outcome is unknown; the thread goes on and the next call starts the server again.
* :meth:`MCPServer.policy` turns the tools' annotations into ``interrupt_on`` entries:
  ``readOnlyHint`` tools with ``openWorldHint: false`` run without review; every other tool
  pauses: read-only tools that reach an open world (``openWorldHint`` true or absent: a URL
  or a query to an outside service is a channel out of the agent), ``destructiveHint``
  tools, writes that are not destructive, and tools without annotations (MCP's defaults
  assume the worst).
  ``idempotentHint`` (and ``readOnlyHint``) make the tool ``idempotent`` for crash recovery.
  Annotations are hints written by the server's author: trust them as much as the server.

* A server that asks the user something while a tool runs (``elicitation/create``) pauses the
  run with an ``interrupt()`` question: its value is ``{"type": "mcp_elicitation", "server",
  "tool", "message", "requested_schema"}`` (or ``"url"``). Answer with
  ``agent.resume(thread_id, value=...)``: the form's fields as a dict to accept, or
  ``"decline"`` / ``"cancel"``. As with every ``interrupt()``, the tool call is made again
  from its start on resume, and this time the server gets the answer.

Each server connection lives on its own event loop in a background thread, so one connection
serves sync and async callers, any number of runs, and survives the caller's event loops.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import threading
import weakref
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ConfigurationError, InterlockError, MissingDependency
from ..hitl import InterruptOn
from ..interrupts import interrupt
from ..tools import Tool, ToolContext, ToolError
from ._schema import check_json_args

try:
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.session import ClientRequestContext
    from mcp.shared.exceptions import MCPError
except ImportError as exc:  # pragma: no cover - exercised in a venv without the extra
    raise MissingDependency("MCP servers", "mcp", "mcp") from exc

T = TypeVar("T")
PolicyValue = bool | InterruptOn
Asker = Any
"""(In the server's loop) hands an elicitation to the tool call waiting in its own loop."""

_OPEN: weakref.WeakSet[MCPServer] = weakref.WeakSet()


PING_TIMEOUT = 5.0
"""Seconds a server has to answer the ping before each call (else it is started again)."""


class MCPServerError(InterlockError):
    """An MCP server could not be started, reached or listed."""


class MCPTool(Tool):
    """One tool of an MCP server, called through the server's connection."""

    def __init__(self, server: MCPServer, spec: mcp_types.Tool, name: str) -> None:
        self.server = server
        self.remote_name = spec.name
        self.name = name
        self.description = spec.description or spec.title or ""
        schema = spec.input_schema if isinstance(spec.input_schema, dict) else {}
        self.args_schema = {"type": "object", "properties": {}, **schema}
        ann = spec.annotations
        self.read_only = bool(ann and ann.read_only_hint)
        # MCP's defaults: not read-only, destructive, not idempotent
        self.destructive = not self.read_only and (
            ann is None or ann.destructive_hint is None or bool(ann.destructive_hint))
        self.idempotent = self.read_only or bool(ann and ann.idempotent_hint)
        # MCP's default: the tool may reach an open world of outside entities
        self.open_world = ann is None or ann.open_world_hint is None or bool(
            ann.open_world_hint)
        self.annotations = ann
        self.func = self.__call__
        self.is_async = True
        self._context_param = None
        if not name.replace("_", "").replace("-", "").isalnum():
            raise ConfigurationError(
                f"MCP server {server.name!r} has a tool named {spec.name!r}; interlock tool "
                f"names may contain only letters, digits, '_' and '-'. Give the server a "
                f"prefix= that makes the names valid, or skip the tool with exclude=."
            )

    def validate_args(self, args: dict[str, Any]) -> dict[str, Any]:
        check_json_args(self.name, self.args_schema, args, "mcp")
        return dict(args)

    async def run(self, args: dict[str, Any], context: ToolContext) -> Any:
        self.validate_args(args)
        return await self.server.acall(self.remote_name, args)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"MCP tool {self.name!r} runs inside an Agent; it is not callable.")

    def __repr__(self) -> str:
        return (f"MCPTool(name={self.name!r}, server={self.server.name!r}, "
                f"read_only={self.read_only}, destructive={self.destructive}, "
                f"idempotent={self.idempotent})")


def _result_text(result: mcp_types.CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        else:
            parts.append(json.dumps(block.model_dump(mode="json", exclude_none=True),
                                    ensure_ascii=False))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


class MCPServer:
    """Base of :class:`MCPServerStdio` and :class:`MCPServerHTTP`: a connection to one MCP
    server and the interlock tools for its tools (a ``ToolSource`` for ``Agent(tools=...)``).

    ``prefix`` is put before every tool name (e.g. ``"repo_"``); ``include`` / ``exclude``
    select tools by their server names. ``call_timeout`` bounds one tool call (seconds).
    ``protocol``: ``"auto"`` (the newest the server speaks), ``"legacy"`` (the
    ``initialize`` handshake; servers that ask questions with server-initiated
    ``elicitation/create`` requests need it) or a protocol version.
    """

    def __init__(
        self,
        *,
        name: str,
        prefix: str = "",
        include: Sequence[str] | None = None,
        exclude: Sequence[str] = (),
        connect_timeout: float = 60.0,
        call_timeout: float = 300.0,
        protocol: str = "auto",
    ) -> None:
        self.name = name
        self.prefix = prefix
        self.include = None if include is None else set(include)
        self.exclude = set(exclude)
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.protocol = protocol
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._tools: list[MCPTool] | None = None
        self._askers: list[Asker] = []
        self.connects = 0
        """How many times a connection was opened (a broken one is reopened on the next call)."""

    # ------------------------------------------------------------ to override

    def _target(self) -> StdioServerParameters | str:
        raise NotImplementedError

    def _describe(self) -> str:
        return self.name

    # ------------------------------------------------------------ the background loop

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, daemon=True,
                                          name=f"interlock-mcp-{self.name}")
                thread.start()
                self._loop, self._thread = loop, thread
                _OPEN.add(self)
            return self._loop

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())

    async def _connected(self) -> Client:
        """(In the server's loop.) The open connection, opening it if needed."""
        if self._client is not None and self._holder is not None and not self._holder.done():
            return self._client
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Client] = loop.create_future()
        stop = asyncio.Event()

        async def hold() -> None:
            try:
                async with Client(self._target(), mode=self.protocol,
                                  elicitation_callback=self._on_elicit) as client:
                    self._client = client
                    ready.set_result(client)
                    await stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
            finally:
                self._client = None

        self._stop = stop
        self._holder = loop.create_task(hold())
        self.connects += 1
        try:
            return await asyncio.wait_for(asyncio.shield(ready), self.connect_timeout)
        except Exception as exc:
            await self._disconnect()
            raise MCPServerError(
                f"Cannot connect to MCP server {self._describe()}: {type(exc).__name__}: "
                f"{exc}. Check that it starts and speaks MCP (run it by hand to see its "
                f"errors)."
            ) from exc

    async def _disconnect(self) -> None:
        holder, stop = self._holder, self._stop
        self._holder = self._stop = None
        self._client = None
        if stop is not None:
            stop.set()
        if holder is not None and not holder.done():
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(holder, 10)

    async def _list(self) -> list[MCPTool]:
        client = await self._connected()
        specs: list[mcp_types.Tool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            specs.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        tools = []
        for spec in specs:
            if spec.name in self.exclude or (self.include is not None
                                             and spec.name not in self.include):
                continue
            tools.append(MCPTool(self, spec, f"{self.prefix}{spec.name}"))
        return tools

    async def _on_elicit(self, context: ClientRequestContext,
                         params: mcp_types.ElicitRequestParams,
                         ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        """(In the server's loop.) The server asks the user something during a tool call."""
        if len(self._askers) != 1:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST,
                message="interlock can route a question only while exactly one tool call of "
                        "this server runs")
        answer: concurrent.futures.Future[mcp_types.ElicitResult] = concurrent.futures.Future()
        self._askers[0](params, answer)
        return await asyncio.wrap_future(answer)

    async def _call(self, tool: str, args: dict[str, Any], ask: Asker = None) -> str:
        try:
            client = await self._alive()
        except MCPServerError as exc:
            raise ToolError(f"{exc} The tool {tool!r} was not run.") from exc
        if ask is not None:
            self._askers.append(ask)
        try:
            result = await client.call_tool(tool, args, read_timeout_seconds=self.call_timeout)
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                return await self._broken(tool, exc)
            raise ToolError(f"MCP server {self.name!r} refused the call to {tool!r}: "
                            f"{exc}") from exc
        except Exception as exc:
            return await self._broken(tool, exc)
        finally:
            if ask is not None:
                self._askers.remove(ask)
        text = _result_text(result)
        if result.is_error:
            raise ToolError(text or f"MCP tool {tool!r} reported an error without details.")
        return text

    async def _alive(self) -> Client:
        """(In the server's loop.) A connection that answers a ping: a server that died since
        the last call is started again before anything is sent to it."""
        client = await self._connected()
        try:
            # The session's ping, not ``Client.send_ping``: that one warns (a ``UserWarning``)
            # that the newer protocol has no ping. Such a server answers "method not found",
            # which is just as good: it answered.
            await asyncio.wait_for(client.session.send_ping(),
                                   min(self.connect_timeout, PING_TIMEOUT))
            return client
        except MCPError as exc:
            if exc.code != mcp_types.CONNECTION_CLOSED:
                return client  # an answer, even "method not found" (newer servers): alive
        except Exception:  # no answer: the connection is gone
            pass
        await self._disconnect()
        return await self._connected()

    async def _broken(self, tool: str, exc: BaseException) -> str:
        await self._disconnect()
        raise ToolError(
            f"The connection to MCP server {self.name!r} broke while it ran {tool!r} "
            f"({type(exc).__name__}: {exc}); the server may have stopped. Whether the call "
            f"took effect is unknown: check before calling it again. The server is started "
            f"again on the next call."
        ) from exc

    # ------------------------------------------------------------ public

    def interlock_tools(self) -> list[MCPTool]:
        """Connect (once) and list the server's tools. Called by ``Agent`` when it is built."""
        if self._tools is None:
            self._tools = self._submit(self._list()).result()
        return list(self._tools)

    async def alist_tools(self) -> list[MCPTool]:
        """Async form of :meth:`interlock_tools` (connects without blocking the caller's
        event loop; later ``Agent(...)`` construction then uses the listed tools)."""
        if self._tools is None:
            self._tools = await asyncio.wrap_future(self._submit(self._list()))
        return list(self._tools)

    async def acall(self, tool: str, args: dict[str, Any]) -> str:
        """Call ``tool`` (the server's name for it) and return its text result; an ``isError``
        result or a broken connection raises :class:`~interlock.ToolError`. Questions the
        server asks meanwhile become ``interrupt()`` questions (inside an agent run)."""
        caller = asyncio.get_running_loop()
        questions: asyncio.Queue[tuple[Any, concurrent.futures.Future[Any]]] = asyncio.Queue()

        def ask(params: Any, answer: concurrent.futures.Future[Any]) -> None:
            caller.call_soon_threadsafe(questions.put_nowait, (params, answer))

        call = asyncio.wrap_future(self._submit(self._call(tool, args, ask)))
        while True:
            question = asyncio.ensure_future(questions.get())
            waiting: set[asyncio.Future[Any]] = {call, question}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if call.done():
                question.cancel()
                return call.result()
            params, answer = question.result()
            try:
                reply = _elicit_answer(interrupt(_elicit_question(self.name, tool, params)))
            except RuntimeError:  # not inside an agent run: nobody to ask
                reply = mcp_types.ElicitResult(action="decline")
            except BaseException:  # the run pauses for the answer: stop this call
                answer.set_result(mcp_types.ElicitResult(action="cancel"))
                call.cancel()
                raise
            answer.set_result(reply)

    def policy(
        self,
        *,
        read_only: PolicyValue = False,
        write: PolicyValue = True,
        destructive: PolicyValue = True,
        open_world: PolicyValue = True,
    ) -> dict[str, PolicyValue]:
        """``interrupt_on`` entries for this server's tools from their annotations:
        ``readOnlyHint`` tools get ``read_only`` (default: run without review) when they
        declare ``openWorldHint: false``, else ``open_world`` (default: pause: reading a URL
        the model chose can send data out), ``destructiveHint`` tools (and tools without
        annotations) get ``destructive``, other writes get ``write`` (default: pause with every
        decision allowed)."""
        return policy_from_annotations(self.interlock_tools(), read_only=read_only,
                                       write=write, destructive=destructive,
                                       open_world=open_world)

    async def aclose(self) -> None:
        """Close the connection (a stdio server is stopped) and the background loop."""
        loop = self._loop
        if loop is None:
            return
        if loop.is_running():
            fut = asyncio.run_coroutine_threadsafe(self._disconnect(), loop)
            await asyncio.wrap_future(fut)
        self._shutdown_loop()

    def close(self) -> None:
        """Blocking form of :meth:`aclose`."""
        loop = self._loop
        if loop is None:
            return
        if loop.is_running():
            asyncio.run_coroutine_threadsafe(self._disconnect(), loop).result(timeout=15)
        self._shutdown_loop()

    def _shutdown_loop(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)
        if not loop.is_running():
            loop.close()
        _OPEN.discard(self)


def _elicit_question(server: str, tool: str, params: Any) -> dict[str, Any]:
    question: dict[str, Any] = {"type": "mcp_elicitation", "server": server, "tool": tool,
                                "message": params.message}
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        question["url"] = params.url
    else:
        question["requested_schema"] = params.requested_schema
    return question


def _elicit_answer(answer: Any) -> mcp_types.ElicitResult:
    """A reviewer's answer as the server's ``ElicitResult``: a dict of the form's fields
    accepts; ``"decline"`` / ``"cancel"`` (or ``{"action": ...}``) say so."""
    if answer in ("decline", "cancel", "accept"):
        return mcp_types.ElicitResult(action=answer)
    if isinstance(answer, Mapping) and answer.get("action") in ("accept", "decline", "cancel"):
        return mcp_types.ElicitResult(action=answer["action"], content=answer.get("content"))
    if isinstance(answer, Mapping):
        return mcp_types.ElicitResult(action="accept", content=dict(answer))
    return mcp_types.ElicitResult(action="decline")


class MCPServerStdio(MCPServer):
    """An MCP server started as a subprocess (``command`` + ``args``), spoken to over its
    stdin/stdout. ``env`` adds environment variables; ``cwd`` is its working directory."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        name: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(name=name or Path(command).name, **options)
        self.params = StdioServerParameters(command=command, args=list(args),
                                            env=dict(env) if env is not None else None, cwd=cwd)

    def _target(self) -> StdioServerParameters:
        return self.params

    def _describe(self) -> str:
        cmd = " ".join([self.params.command, *self.params.args])
        return f"{self.name!r} (command: {cmd})"

    def __repr__(self) -> str:
        return f"MCPServerStdio({self._describe()})"


class MCPServerHTTP(MCPServer):
    """An MCP server reached over streamable HTTP at ``url`` (e.g.
    ``http://127.0.0.1:8000/mcp``)."""

    def __init__(self, url: str, *, name: str | None = None, **options: Any) -> None:
        super().__init__(name=name or url, **options)
        self.url = url

    def _target(self) -> str:
        return self.url

    def _describe(self) -> str:
        return f"{self.name!r} (url: {self.url})"

    def __repr__(self) -> str:
        return f"MCPServerHTTP({self._describe()})"


def policy_from_annotations(
    tools: Sequence[Tool],
    *,
    read_only: PolicyValue = False,
    write: PolicyValue = True,
    destructive: PolicyValue = True,
    open_world: PolicyValue = True,
) -> dict[str, PolicyValue]:
    """``interrupt_on`` entries for MCP tools from their annotations (see
    :meth:`MCPServer.policy`). Tools that are not MCP tools are left out."""
    out: dict[str, PolicyValue] = {}
    for t in tools:
        if not isinstance(t, MCPTool):
            continue
        if t.read_only:
            out[t.name] = open_world if t.open_world else read_only
        elif t.destructive:
            out[t.name] = destructive
        else:
            out[t.name] = write
    return out


@atexit.register
def _close_open_servers() -> None:
    for server in list(_OPEN):
        with contextlib.suppress(Exception):
            server.close()
