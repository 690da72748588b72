"""Local fake provider servers that speak the OpenAI chat-completions and Anthropic Messages
wire protocols (plain JSON and SSE streaming), for testing the adapters through the real SDKs.

Each server runs uvicorn in a background thread on 127.0.0.1 (a port picked by the OS), is
scripted per test with :class:`Reply` objects (served in order), records every request, and
checks each request against the provider's protocol rules the way the real API does: a
request that breaks a rule is answered with HTTP 400 and the problem is recorded in
``problems`` (tests assert that list is empty).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

Args = dict[str, Any] | str
"""Tool-call arguments: a dict (sent as JSON) or a raw string (sent as is, may be broken)."""


@dataclass
class Call:
    id: str
    name: str
    args: Args

    def arguments_text(self) -> str:
        return self.args if isinstance(self.args, str) else json.dumps(self.args,
                                                                       ensure_ascii=False)


@dataclass
class Reply:
    """One scripted answer of a fake server.

    ``text`` is a list of pieces: one SSE delta per piece when streaming, joined otherwise.
    ``status`` other than 200 answers with the provider's error body carrying ``error``.
    ``raw`` answers with that body as is (e.g. broken JSON). ``stream_error`` sends an error
    event after the text when streaming; ``cut`` ends the stream early without the final
    events; ``abort`` (with ``cut``) then drops the connection in the middle of the body. ``fragment`` is the size of the argument fragments in the tool-call deltas;
    ``interleave`` sends the argument fragments of parallel calls alternately.
    """

    text: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    status: int = 200
    error: str = ""
    error_type: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    content_type: str = "application/json"
    stream_error: str | None = None
    cut: bool = False
    abort: bool = False
    delay: float = 0.0
    fragment: int = 7
    interleave: bool = False


def text(*pieces: str) -> Reply:
    return Reply(text=list(pieces))


def tools(*calls: Call, text: tuple[str, ...] = (), **kw: Any) -> Reply:
    return Reply(text=list(text), calls=list(calls), **kw)


def error(status: int, message: str, **kw: Any) -> Reply:
    headers = {"retry-after-ms": "10"} if status in (429, 500, 503, 529) else {}
    headers.update(kw.pop("headers", {}))
    return Reply(status=status, error=message, headers=headers, **kw)


def malformed(body: bytes = b'{"id": "chatcmpl-broken", "choices": [', **kw: Any) -> Reply:
    return Reply(raw=body, **kw)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any


def _pieces(s: str, size: int) -> list[str]:
    return [s[i:i + size] for i in range(0, len(s), size)] or [""]


def sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class FakeProvider:
    """Base: the HTTP plumbing, the script, the request log."""

    provider = "?"
    path = "/"

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        """Answers a request when no scripted reply is left (a reply computed from it)."""
        self.requests: list[Recorded] = []
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # ---------------------------------------------------------------- scripting

    def reset(self) -> None:
        """Forget the script, the requests and the problems (between tests)."""
        with self._lock:
            self.replies.clear()
            self.requests.clear()
            self.problems.clear()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The base URL to give the SDK."""
        raise NotImplementedError

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> FakeProvider:
        app = Starlette(routes=[Route(self.path, self._handle, methods=["POST"])])
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        daemon=True, name=f"fake-{self.provider}")
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"fake {self.provider} server did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    # ---------------------------------------------------------------- serving

    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in request.headers.items()}
        with self._lock:
            self.requests.append(Recorded(request.url.path, headers, raw, body))
            problems = (self.validate(body, headers) if isinstance(body, dict)
                        else ["request body is not a JSON object"])
            if problems:
                self.problems.extend(problems)
                return self.error_response(400, "; ".join(problems), "invalid_request_error", {})
            if not self.replies and self.responder is not None:
                self.replies.append(self.responder(body))
            if not self.replies:
                problem = f"no scripted reply left for request #{len(self.requests)}"
                self.problems.append(problem)
                return self.error_response(500, f"fake server: {problem}", "server_error", {})
            reply = self.replies.pop(0)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.raw is not None:
            return Response(reply.raw, status_code=reply.status,
                            media_type=reply.content_type, headers=reply.headers)
        if reply.status != 200:
            return self.error_response(reply.status, reply.error,
                                       reply.error_type or self.default_error_type(reply.status),
                                       reply.headers)
        if body.get("stream") is True:
            return StreamingResponse(self._slow(self.stream_events(reply, body), reply.abort),
                                     media_type="text/event-stream", headers=reply.headers)
        return JSONResponse(self.completion(reply, body), headers=reply.headers)

    @staticmethod
    async def _slow(events: list[bytes], abort: bool = False) -> AsyncIterator[bytes]:
        for e in events:
            yield e
            await asyncio.sleep(0)  # separate writes, as a real server's would be
        if abort:
            raise ConnectionAbortedError("fake server drops the connection mid-body")

    # ---------------------------------------------------------------- per provider

    def validate(self, body: dict[str, Any], headers: dict[str, str]) -> list[str]:
        raise NotImplementedError

    def completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def stream_events(self, reply: Reply, body: dict[str, Any]) -> list[bytes]:
        raise NotImplementedError

    def error_response(
        self, status: int, message: str, kind: str, headers: dict[str, str]
    ) -> Response:
        raise NotImplementedError

    def default_error_type(self, status: int) -> str:
        raise NotImplementedError

    # provider-neutral views of a request, for assertions

    def assistant_calls(self, body: dict[str, Any]) -> list[list[tuple[str, str, Any]]]:
        """Per assistant turn in the request: ``[(id, name, args), ...]``."""
        raise NotImplementedError

    def tool_results(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Every tool result in the request, in order: ``{id, content, is_error}``."""
        raise NotImplementedError

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        raise NotImplementedError


# ====================================================================== OpenAI


class FakeOpenAI(FakeProvider):
    """``POST /v1/chat/completions`` as OpenAI answers it."""

    provider = "openai"
    path = "/v1/chat/completions"
    model_name = "gpt-4.1-mini"

    @property
    def url(self) -> str:
        return f"{self.root}/v1"

    def validate(self, body: dict[str, Any], headers: dict[str, str]) -> list[str]:
        p: list[str] = []
        if not headers.get("authorization", "").startswith("Bearer "):
            p.append("missing 'Authorization: Bearer' header")
        if not isinstance(body.get("model"), str) or not body["model"]:
            p.append("'model' must be a non-empty string")
        if "stream" in body and not isinstance(body["stream"], bool):
            p.append("'stream' must be a boolean")
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return [*p, "'messages' must be a non-empty array"]
        waiting: dict[str, str] = {}
        for i, m in enumerate(msgs):
            role = m.get("role") if isinstance(m, dict) else None
            if waiting and role != "tool":
                p.append(
                    f"messages[{i}]: an assistant message with 'tool_calls' must be followed by "
                    f"tool messages responding to each 'tool_call_id'. The following "
                    f"tool_call_ids did not have response messages: {', '.join(waiting)}")
                waiting = {}
            if role in ("system", "developer", "user"):
                if not isinstance(m.get("content"), str):
                    p.append(f"messages[{i}].content must be a string")
            elif role == "assistant":
                calls = m.get("tool_calls")
                content = m.get("content")
                if content is not None and not isinstance(content, str):
                    p.append(f"messages[{i}].content must be a string or null")
                if calls is None:
                    if not isinstance(content, str):
                        p.append(f"messages[{i}]: 'content' is required when 'tool_calls' is "
                                 f"not given")
                    continue
                if not isinstance(calls, list) or not calls:
                    p.append(f"messages[{i}].tool_calls must be a non-empty array")
                    continue
                for j, c in enumerate(calls):
                    fn = c.get("function") or {}
                    if c.get("type") != "function":
                        p.append(f"messages[{i}].tool_calls[{j}].type must be 'function'")
                    if not isinstance(c.get("id"), str) or not c["id"]:
                        p.append(f"messages[{i}].tool_calls[{j}].id must be a string")
                    if not isinstance(fn.get("name"), str) or not fn["name"]:
                        p.append(f"messages[{i}].tool_calls[{j}].function.name is required")
                    args = fn.get("arguments")
                    if not isinstance(args, str):
                        p.append(f"messages[{i}].tool_calls[{j}].function.arguments must be a "
                                 f"JSON string")
                    else:
                        try:
                            json.loads(args)
                        except ValueError:
                            p.append(f"messages[{i}].tool_calls[{j}].function.arguments is not "
                                     f"valid JSON")
                    waiting[str(c.get("id"))] = str(fn.get("name"))
            elif role == "tool":
                tid = m.get("tool_call_id")
                if tid not in waiting:
                    p.append(f"messages[{i}]: messages with role 'tool' must be a response to a "
                             f"preceding message with 'tool_calls' (tool_call_id {tid!r})")
                else:
                    del waiting[tid]
                if not isinstance(m.get("content"), str):
                    p.append(f"messages[{i}].content must be a string")
                extra = set(m) - {"role", "tool_call_id", "content", "name"}
                if extra:
                    p.append(f"messages[{i}]: unknown field(s) {sorted(extra)} on a tool message")
            else:
                p.append(f"messages[{i}].role {role!r} is not supported")
        if waiting:
            p.append(f"tool_call_ids without response messages at the end: "
                     f"{', '.join(waiting)}")
        for j, t in enumerate(body.get("tools") or []):
            fn = t.get("function") or {}
            if t.get("type") != "function" or not fn.get("name"):
                p.append(f"tools[{j}] must be {{'type': 'function', 'function': {{'name': ...}}}}")
            params = fn.get("parameters")
            if not isinstance(params, dict) or params.get("type") != "object":
                p.append(f"tools[{j}].function.parameters must be a JSON schema object")
        if "tools" in body and not body["tools"]:
            p.append("'tools' must not be an empty array (omit it)")
        return p

    def _calls_json(self, reply: Reply) -> list[dict[str, Any]]:
        return [{"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments_text()}}
                for c in reply.calls]

    def completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(reply.text) or None,
                                   "refusal": None, "annotations": []}
        if reply.calls:
            message["tool_calls"] = self._calls_json(reply)
        return {
            "id": f"chatcmpl-{len(self.requests)}Bx9mZ",
            "object": "chat.completion",
            "created": 1735689600,
            "model": f"{body['model']}-2025-04-14",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if reply.calls else "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                      "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                      "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                    "accepted_prediction_tokens": 0,
                                                    "rejected_prediction_tokens": 0}},
            "service_tier": "default",
            "system_fingerprint": "fp_a1b2c3d4e5",
        }

    def stream_events(self, reply: Reply, body: dict[str, Any]) -> list[bytes]:
        base = {"id": f"chatcmpl-{len(self.requests)}Sx9mZ", "object": "chat.completion.chunk",
                "created": 1735689600, "model": f"{body['model']}-2025-04-14",
                "service_tier": "default", "system_fingerprint": "fp_a1b2c3d4e5"}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return sse({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                             "finish_reason": finish}]})

        out = [chunk({"role": "assistant", "content": "", "refusal": None})]
        out += [chunk({"content": piece}) for piece in reply.text]
        if reply.stream_error is not None:
            out.append(sse({"error": {"message": reply.stream_error, "type": "server_error",
                                      "param": None, "code": None}}))
            return out
        heads = [chunk({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                                        "function": {"name": c.name, "arguments": ""}}]})
                 for i, c in enumerate(reply.calls)]
        frags = [[chunk({"tool_calls": [{"index": i, "function": {"arguments": f}}]})
                  for f in _pieces(c.arguments_text(), reply.fragment)]
                 for i, c in enumerate(reply.calls)]
        if reply.interleave:
            out += heads
            for group in _zip_longest(frags):
                out += group
        else:
            for head, fs in zip(heads, frags, strict=True):
                out += [head, *fs]
        if reply.cut:
            return out
        out.append(chunk({}, "tool_calls" if reply.calls else "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            # as OpenAI does: one last chunk without choices, carrying the usage
            out.append(sse({**base, "choices": [], "usage": {
                "prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}))
        out.append(b"data: [DONE]\n\n")
        return out

    def default_error_type(self, status: int) -> str:
        return {429: "rate_limit_exceeded", 401: "invalid_request_error"}.get(status,
                                                                                "server_error")

    def error_response(
        self, status: int, message: str, kind: str, headers: dict[str, str]
    ) -> Response:
        return JSONResponse({"error": {"message": message, "type": kind, "param": None,
                                       "code": None}}, status_code=status,
                            headers={"x-request-id": f"req_{len(self.requests)}abc", **headers})

    def assistant_calls(self, body: dict[str, Any]) -> list[list[tuple[str, str, Any]]]:
        return [[(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                 for c in m["tool_calls"]]
                for m in body["messages"] if m["role"] == "assistant" and m.get("tool_calls")]

    def tool_results(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"id": m["tool_call_id"], "content": m["content"], "is_error": None}
                for m in body["messages"] if m["role"] == "tool"]

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        return [m["content"] for m in body["messages"] if m["role"] == "user"]


def _zip_longest(groups: list[list[bytes]]) -> list[list[bytes]]:
    n = max((len(g) for g in groups), default=0)
    return [[g[i] for g in groups if i < len(g)] for i in range(n)]


# ====================================================================== Anthropic


class FakeAnthropic(FakeProvider):
    """``POST /v1/messages`` as Anthropic answers it."""

    provider = "anthropic"
    path = "/v1/messages"
    model_name = "claude-sonnet-4-6"

    @property
    def url(self) -> str:
        return self.root

    def validate(self, body: dict[str, Any], headers: dict[str, str]) -> list[str]:
        p: list[str] = []
        if not (headers.get("x-api-key") or headers.get("authorization", "").startswith("Bearer ")):
            p.append("missing credentials: neither x-api-key nor Authorization: Bearer given")
        if not headers.get("anthropic-version"):
            p.append("missing anthropic-version header")
        if not isinstance(body.get("model"), str) or not body["model"]:
            p.append("model: Field required")
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            p.append("max_tokens: Field required (a positive integer)")
        system = body.get("system")
        if system is not None and not (
            isinstance(system, str)
            or (isinstance(system, list) and all(b.get("type") == "text" for b in system))
        ):
            p.append("system: must be a string or a list of text blocks")
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return [*p, "messages: at least one message is required"]
        previous_uses: list[str] = []
        for i, m in enumerate(msgs):
            role = m.get("role")
            if role not in ("user", "assistant"):
                p.append(f"messages.{i}.role: Input should be 'user' or 'assistant' (system "
                         f"prompts go in the top-level 'system' parameter)")
                continue
            if i == 0 and role != "user":
                p.append("messages.0: the first message must use the 'user' role")
            if i > 0 and msgs[i - 1].get("role") == role:
                p.append(f"messages.{i}: roles must alternate between 'user' and 'assistant'")
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            if not isinstance(blocks, list) or not blocks:
                p.append(f"messages.{i}.content: must be a string or a non-empty list of blocks")
                continue
            uses = []
            results = []
            for j, b in enumerate(blocks):
                t = b.get("type")
                if t == "text":
                    if not isinstance(b.get("text"), str) or not b["text"]:
                        p.append(f"messages.{i}.content.{j}: text content blocks must be "
                                 f"non-empty")
                elif t == "tool_use":
                    if role != "assistant":
                        p.append(f"messages.{i}.content.{j}: tool_use only in assistant turns")
                    if not isinstance(b.get("id"), str) or not isinstance(b.get("name"), str):
                        p.append(f"messages.{i}.content.{j}: tool_use needs id and name")
                    if not isinstance(b.get("input"), dict):
                        p.append(f"messages.{i}.content.{j}.input: Input should be an object")
                    uses.append(b.get("id"))
                elif t == "tool_result":
                    if role != "user":
                        p.append(f"messages.{i}.content.{j}: tool_result only in user turns")
                    if "is_error" in b and not isinstance(b["is_error"], bool):
                        p.append(f"messages.{i}.content.{j}.is_error: must be a boolean")
                    c = b.get("content")
                    if c is not None and not isinstance(c, str | list):
                        p.append(f"messages.{i}.content.{j}.content: string or list of blocks")
                    if results is not None and len(results) == j:
                        results.append(b.get("tool_use_id"))
                    else:
                        p.append(f"messages.{i}.content.{j}: tool_result blocks must come "
                                 f"first in the user message")
                else:
                    p.append(f"messages.{i}.content.{j}.type: unknown block type {t!r}")
            if previous_uses:
                missing = [u for u in previous_uses if u not in results]
                if role != "user" or missing:
                    p.append(f"messages.{i}: `tool_use` ids were found without `tool_result` "
                             f"blocks immediately after: {', '.join(missing or previous_uses)}. "
                             f"Each `tool_use` block must have a corresponding `tool_result` "
                             f"block in the next message.")
            unexpected = [r for r in results if r not in previous_uses]
            if unexpected:
                p.append(f"messages.{i}: unexpected `tool_use_id` found in `tool_result` "
                         f"blocks: {', '.join(map(str, unexpected))}. Each `tool_result` block "
                         f"must have a corresponding `tool_use` block in the previous message.")
            previous_uses = uses
        if previous_uses:
            p.append("the last message has tool_use blocks without results")
        for j, t in enumerate(body.get("tools") or []):
            schema = t.get("input_schema")
            if not isinstance(t.get("name"), str) or not isinstance(schema, dict) or \
                    schema.get("type") != "object":
                p.append(f"tools.{j}: needs 'name' and an 'input_schema' of type object")
        return p

    def _message(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"msg_01{len(self.requests):04d}XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 472, "output_tokens": 2,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "service_tier": "standard"},
        }

    def completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        msg = self._message(reply, body)
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": "".join(reply.text)})
        for c in reply.calls:
            content.append({"type": "tool_use", "id": c.id, "name": c.name,
                            "input": json.loads(c.arguments_text()) if isinstance(c.args, dict)
                            else c.args})
        msg.update(content=content, stop_reason="tool_use" if reply.calls else "end_turn")
        msg["usage"]["output_tokens"] = 89
        return msg

    def stream_events(self, reply: Reply, body: dict[str, Any]) -> list[bytes]:
        out = [sse({"type": "message_start", "message": self._message(reply, body)},
                   "message_start")]
        index = 0
        if reply.text:
            out.append(sse({"type": "content_block_start", "index": 0,
                            "content_block": {"type": "text", "text": ""}},
                           "content_block_start"))
            out.append(sse({"type": "ping"}, "ping"))
            out += [sse({"type": "content_block_delta", "index": 0,
                         "delta": {"type": "text_delta", "text": piece}}, "content_block_delta")
                    for piece in reply.text]
            out.append(sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
            index = 1
        if reply.stream_error is not None:
            out.append(sse({"type": "error", "error": {"type": "overloaded_error",
                                                       "message": reply.stream_error}},
                           "error"))
            return out
        for k, c in enumerate(reply.calls):
            i = index + k
            out.append(sse({"type": "content_block_start", "index": i,
                            "content_block": {"type": "tool_use", "id": c.id, "name": c.name,
                                              "input": {}}}, "content_block_start"))
            out.append(sse({"type": "content_block_delta", "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": ""}},
                           "content_block_delta"))
            out += [sse({"type": "content_block_delta", "index": i,
                         "delta": {"type": "input_json_delta", "partial_json": f}},
                        "content_block_delta")
                    for f in _pieces(c.arguments_text(), reply.fragment)]
            out.append(sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
        if reply.cut:
            return out
        out.append(sse({"type": "message_delta",
                        "delta": {"stop_reason": "tool_use" if reply.calls else "end_turn",
                                  "stop_sequence": None},
                        "usage": {"output_tokens": 89}}, "message_delta"))
        out.append(sse({"type": "message_stop"}, "message_stop"))
        return out

    def default_error_type(self, status: int) -> str:
        return {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error",
                400: "invalid_request_error"}.get(status, "api_error")

    def error_response(
        self, status: int, message: str, kind: str, headers: dict[str, str]
    ) -> Response:
        return JSONResponse({"type": "error", "error": {"type": kind, "message": message}},
                            status_code=status,
                            headers={"request-id": f"req_011C{len(self.requests):04d}", **headers})

    def assistant_calls(self, body: dict[str, Any]) -> list[list[tuple[str, str, Any]]]:
        out = []
        for m in body["messages"]:
            if m["role"] == "assistant" and isinstance(m["content"], list):
                uses = [(b["id"], b["name"], b["input"]) for b in m["content"]
                        if b["type"] == "tool_use"]
                if uses:
                    out.append(uses)
        return out

    def tool_results(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"id": b["tool_use_id"], "content": b.get("content", ""),
                 "is_error": b.get("is_error")}
                for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
                for b in m["content"] if b["type"] == "tool_result"]

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        out = []
        for m in body["messages"]:
            if m["role"] != "user":
                continue
            if isinstance(m["content"], str):
                out.append(m["content"])
            else:
                out += [b["text"] for b in m["content"] if b["type"] == "text"]
        return out


FAKES: dict[str, Callable[[], FakeProvider]] = {"openai": FakeOpenAI, "anthropic": FakeAnthropic}
