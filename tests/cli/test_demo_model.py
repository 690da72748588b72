"""`interlock demo --model openai:NAME` talks to an OpenAI-compatible server given by
OPENAI_BASE_URL (here a small fake on 127.0.0.1) instead of the scripted model."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai  # noqa: F401  (a declared dependency: missing is a failure)
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import interlock.server  # noqa: F401  (a declared dependency: missing is a failure)

from .helpers import child_env
from .test_demo import Demo

DELETE = "DELETE FROM orders WHERE status = 'refunded'"


class FakeChat:
    """Chat completions: a user message → execute_sql(DELETE ...); a tool result → text."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        app = Starlette(routes=[Route("/v1/chat/completions", self.complete,
                                      methods=["POST"])])
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.sock]}, daemon=True)

    async def complete(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        if body.get("stream"):
            return JSONResponse({"error": {"message": "streaming not scripted"}},
                                status_code=400)
        last = body["messages"][-1]
        n = len(self.requests)
        if last["role"] == "user":
            message: dict[str, Any] = {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": f"call_{n}", "type": "function", "function": {
                    "name": "execute_sql", "arguments": f'{{"query": "{DELETE}"}}'}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": f"Finished: {last['content']}"}
            finish = "stop"
        return JSONResponse({
            "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def __enter__(self) -> FakeChat:
        self.thread.start()
        give_up = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < give_up, "fake chat server did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def fake_chat() -> Iterator[FakeChat]:
    with FakeChat() as fake:
        yield fake


def test_demo_with_a_real_model_endpoint(fake_chat: FakeChat, tmp_path: Path) -> None:
    env = child_env(OPENAI_BASE_URL=f"http://127.0.0.1:{fake_chat.port}/v1",
                    OPENAI_API_KEY="test-key")
    demo = Demo(tmp_path / "data", extra=["--model", "openai:ops-model"], env=env)
    try:
        url = demo.wait_for_url()
        with httpx.Client(base_url=url, timeout=30) as client:
            inbox = client.get("/api/threads", params={"status": "interrupted"}).json()
            assert len(inbox["threads"]) == 4
            detail = client.get("/api/threads/cleanup-cancelled-orders").json()
            [req] = detail["interrupts"][0]["value"]["action_requests"]
            assert req["args"] == {"query": DELETE}
            assert "would delete" in req["description"]
        assert demo.stop() == 0
        out = demo.rest_of_output()
    finally:
        if demo.proc.poll() is None:
            demo.proc.kill()
            demo.proc.wait()
    assert "model: openai:ops-model" in " ".join(out.split())
    assert "INTERLOCK_DEMO_MODEL=openai:ops-model" in out  # the review command uses it too
    first = fake_chat.requests[0]
    assert first["model"] == "ops-model"
    assert first["messages"][0]["role"] == "system"
    assert "online shop" in first["messages"][0]["content"]
    assert {t["function"]["name"] for t in first["tools"]} == {
        "execute_sql", "read_data", "send_email", "ask_user"}


def test_a_follow_up_outside_the_script_is_answered_with_what_it_can_do() -> None:
    """The scripted model does not pretend to understand: a follow-up that changes the task
    gets its help text (which says it is scripted), not a guess."""
    from interlock.demo.model import HELP, ops_model
    from interlock.messages import UserMessage

    reply = ops_model([UserMessage(content="only before 2023")])
    assert reply == HELP and "scripted model" in HELP
