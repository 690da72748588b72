"""LangChain's OpenAI integration (``langchain-openai``'s ``ChatOpenAI``) as an interlock model,
against the local fake OpenAI server: the same review cycle (two parallel calls, one edited,
one rejected, then one approved) gives the same transcript and the same requests on the wire
as interlock's own OpenAI adapter, with plain JSON and with SSE streaming."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_openai import ChatOpenAI

from interlock import AssistantMessage, RunResult, Usage

from .fake_servers import Call, FakeOpenAI, text, tools
from .helpers import (
    EDITED_QUERY,
    EMAIL_ARGS,
    ORIGINAL_QUERY,
    REJECT_REASON,
    USER_TEXT,
    Ops,
    Runner,
    deltas,
    make_agent,
    make_model,
)

SQL_ID, MAIL_ID, THIRD_ID = ("call_Qz3kQm1X8hWvT2nJ4aL0pB7c", "call_Vb9sR2dE6yUiO4pA8sDf1GhJ",
                             "call_Lm4nB8vC2xZ6aS0dF3gH7jK1")
FIRST_TEXT = ("我将", "删除旧记录，", "并通知 DBA。")
FINAL_TEXT = ("完成：", "已删除 2019 年以前的记录。")


class OneLoopRunner(Runner):
    """Streams every run on one event loop: LangChain's OpenAI client keeps its async HTTP
    client bound to the loop it first ran on (as in any LangChain app)."""

    def __init__(self, mode: str) -> None:
        super().__init__(mode)
        self.loop = asyncio.Runner()

    def run_async(self, coro: Coroutine[Any, Any, RunResult]) -> RunResult:
        return self.loop.run(coro)


def cycle(fake: FakeOpenAI, model: Any, runner: Runner, tmp_path: Path) -> dict[str, Any]:
    fake.reset()
    fake.script(
        tools(Call(SQL_ID, "execute_sql", {"query": ORIGINAL_QUERY}),
              Call(MAIL_ID, "send_email", EMAIL_ARGS), text=FIRST_TEXT, interleave=True),
        tools(Call(THIRD_ID, "execute_sql", {"query": "VACUUM"})),
        text(*FINAL_TEXT),
    )
    ops = Ops()
    agent = make_agent(model, tmp_path, ops)
    first = runner.invoke(agent, USER_TEXT, "t1")
    assert first.interrupted
    first_events = runner.take()
    second = runner.resume(agent, "t1", [
        {"type": "edit", "edited_action": {"name": "execute_sql",
                                           "args": {"query": EDITED_QUERY}}},
        {"type": "reject", "message": REJECT_REASON},
    ])
    assert second.interrupted
    runner.take()
    final = runner.resume(agent, "t1", [{"type": "approve"}])
    assert final.status == "completed"
    assert fake.problems == []
    return {
        "requests": [[(a.tool_call_id, a.name, a.args)
                      for a in r.interrupts[0].value.action_requests] for r in (first, second)],
        "ran": ops.ran,
        "messages": final.messages,
        "wire": [(fake.assistant_calls(b), fake.tool_results(b), fake.user_texts(b),
                  [m["role"] for m in b["messages"]], [t["function"] for t in b["tools"]])
                 for b in fake.bodies],
        "first_deltas": deltas(first_events),
        "final_deltas": deltas(runner.take()),
    }


@pytest.mark.parametrize("mode", ["invoke", "stream"])
def test_chat_openai_gives_the_native_transcript_and_wire(
    openai_fake: FakeOpenAI, mode: str, tmp_path: Path
) -> None:
    native = cycle(openai_fake, make_model(openai_fake), Runner(mode), tmp_path / "native")
    # langchain-openai shares one cached async HTTP client per base URL across models, bound
    # to the event loop that first used it; this test's runs use their own loop and client
    lc_model = ChatOpenAI(model=openai_fake.model_name, base_url=openai_fake.url,
                          api_key="test-key", max_retries=1,  # type: ignore[arg-type]
                          stream_usage=True, http_async_client=httpx.AsyncClient())
    runner = OneLoopRunner(mode)
    try:
        lc = cycle(openai_fake, lc_model, runner, tmp_path / "langchain")
    finally:
        runner.loop.close()

    assert lc["requests"] == native["requests"] == [
        [(SQL_ID, "execute_sql", {"query": ORIGINAL_QUERY}),
         (MAIL_ID, "send_email", EMAIL_ARGS)],
        [(THIRD_ID, "execute_sql", {"query": "VACUUM"})],
    ]
    assert lc["ran"] == native["ran"] == [("execute_sql", {"query": EDITED_QUERY}),
                                          ("execute_sql", {"query": "VACUUM"})]
    # the same conversation; only the LangChain model reports token usage
    assert [m.model_dump(exclude={"usage"}) for m in lc["messages"]] == [
        m.model_dump(exclude={"usage"}) for m in native["messages"]]
    assistants = [m for m in lc["messages"] if isinstance(m, AssistantMessage)]
    assert [m.usage for m in assistants] == [
        Usage(input_tokens=120, output_tokens=30, total_tokens=150)] * 3
    # what reached the provider: same calls, results, user texts, roles and tool schemas
    assert lc["wire"] == native["wire"]
    if mode == "stream":
        assert lc["first_deltas"] == native["first_deltas"] == list(FIRST_TEXT)
        assert lc["final_deltas"] == native["final_deltas"] == list(FINAL_TEXT)
