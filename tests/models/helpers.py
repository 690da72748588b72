"""Shared pieces of the adapter tests: the tools, the agent, running through each entry point."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from interlock import (
    Agent,
    AnthropicChat,
    Command,
    HumanInTheLoop,
    Model,
    ModelTextDelta,
    OpenAIChat,
    RunCompleted,
    RunResult,
    SqliteCheckpointer,
    tool,
)
from interlock.events import Event

from .fake_servers import FakeAnthropic, FakeOpenAI, FakeProvider

SYSTEM_PROMPT = "你是数据库运维助手。危险操作需要人工审批。"
USER_TEXT = "删除数据库中的旧记录"
ORIGINAL_QUERY = "DELETE FROM records WHERE created_at < '2020-01-01'"
EDITED_QUERY = "DELETE FROM records WHERE created_at < '2019-01-01'"
EMAIL_ARGS = {"to": "dba@example.com", "body": "旧记录已删除 ✅，请检查。"}
REJECT_REASON = "不要发邮件，我会亲自通知 DBA"


def make_model(fake: FakeProvider, **kw: Any) -> Model:
    """The adapter for ``fake``'s provider, pointed at it, with one SDK retry."""
    kw.setdefault("max_retries", 1)
    kw.setdefault("api_key", "test-key")
    if isinstance(fake, FakeOpenAI):
        return OpenAIChat(fake.model_name, base_url=fake.url, **kw)
    assert isinstance(fake, FakeAnthropic)
    return AnthropicChat(fake.model_name, base_url=fake.url, **kw)


class Ops:
    """Two side-effecting tools that record what actually ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @tool
        def execute_sql(query: str) -> str:
            """Run a SQL statement against the orders database."""
            self.ran.append(("execute_sql", {"query": query}))
            return "已删除 42 行"

        @tool
        def send_email(to: str, body: str) -> str:
            """Send an e-mail."""
            self.ran.append(("send_email", {"to": to, "body": body}))
            return "sent"

        @tool
        def ask_user(question: str) -> str:
            """Ask the user a question."""
            self.ran.append(("ask_user", {"question": question}))
            return "(no one answered)"

        self.tools = [execute_sql, send_email, ask_user]


def make_agent(model: Model, tmp_path: Path, ops: Ops, **kw: Any) -> Agent:
    return Agent(
        model=model,
        tools=ops.tools,
        middleware=[HumanInTheLoop(interrupt_on={"execute_sql": True, "send_email": True,
                                                 "ask_user": True})],
        checkpointer=SqliteCheckpointer(tmp_path / "interlock.db"),
        system_prompt=SYSTEM_PROMPT,
        **kw,
    )


class Runner:
    """Drives an agent through ``invoke``/``resume`` or through ``astream`` (``mode``)."""

    def __init__(self, mode: str) -> None:
        assert mode in ("invoke", "stream")
        self.mode = mode
        self.events: list[Event] = []

    @property
    def streaming(self) -> bool:
        return self.mode == "stream"

    def _stream(self, agent: Agent, input: Any, thread_id: str) -> RunResult:
        async def go() -> RunResult:
            result: RunResult | None = None
            async for event in agent.astream(input, thread_id=thread_id):
                self.events.append(event)
                if isinstance(event, RunCompleted):
                    result = event.result
            assert result is not None
            return result

        return self.run_async(go())

    def run_async(self, coro: Coroutine[Any, Any, RunResult]) -> RunResult:
        return asyncio.run(coro)

    def invoke(self, agent: Agent, text: str, thread_id: str) -> RunResult:
        if self.streaming:
            return self._stream(agent, text, thread_id)
        return agent.invoke(text, thread_id=thread_id)

    def resume(self, agent: Agent, thread_id: str, decisions: list[dict[str, Any]]) -> RunResult:
        if self.streaming:
            return self._stream(agent, Command(resume={"decisions": decisions}), thread_id)
        return agent.resume(thread_id, decisions)

    def take(self) -> list[Event]:
        out, self.events = self.events, []
        return out


def deltas(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, ModelTextDelta)]
