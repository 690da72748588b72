"""Two more peers for the per-cycle comparison, in memory: Pydantic AI and the OpenAI Agents SDK.

Both run the same scenario as the other sides (``scenario.py``): a deterministic model that
proposes ``write_file`` when the last message is the user's and answers otherwise, a tool that
needs approval, and a reviewer who approves. Neither framework stores a pause by itself, so
each side does what an application must do to survive a restart between the pause and the
decision, and keeps the result as JSON bytes in a dict (its "memory store"):

* Pydantic AI: the tool is registered with ``requires_approval=True`` and the agent's output
  type includes ``DeferredToolRequests``. The pause is the message history, dumped with
  ``ModelMessagesTypeAdapter``; the resume loads it back and passes
  ``DeferredToolResults(approvals={call_id: True})``. After the answer the whole history is
  stored again (the next cycle continues the same conversation).
* OpenAI Agents SDK: the tool is a ``function_tool(needs_approval=True)``. The pause is
  ``result.to_state().to_string()``; the resume loads it with ``RunState.from_string``,
  approves the interruption and runs the state. After the answer the conversation is stored
  as ``result.to_input_list()`` (JSON), and the next cycle appends the new user message to it.
  Tracing is disabled (it would try to export spans over the network).

Both sides use the frameworks' async APIs on one long-lived event loop, which is the cheapest
way to drive them from a synchronous caller (their ``run_sync`` helpers make a loop per call).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from scenario import FINAL_TEXT, TOOL_NAME, TOOL_RESULT, USER_TEXT, WRITE_ARGS, ToolCounter, call_id


class _LoopSide:
    """Shared plumbing: one event loop, a dict of JSON bytes per thread, the tool counter."""

    name = ""
    backend = "memory"

    def __init__(self) -> None:
        self.counter = ToolCounter()
        self.store: dict[str, bytes] = {}
        self._runner = asyncio.Runner()

    def run(self, coro: Any) -> Any:
        return self._runner.run(coro)

    def stored_bytes(self) -> int:
        return sum(len(k) + len(v) for k, v in self.store.items())

    def close(self) -> None:
        self._runner.close()


class PydanticAISystem(_LoopSide):
    name = "pydantic-ai"

    def __init__(self) -> None:
        super().__init__()
        from pydantic_ai import Agent, DeferredToolRequests
        from pydantic_ai.messages import (
            ModelMessage,
            ModelMessagesTypeAdapter,
            ModelRequest,
            ModelResponse,
            TextPart,
            ToolCallPart,
            UserPromptPart,
        )
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        self._adapter = ModelMessagesTypeAdapter
        self._requests_type = DeferredToolRequests

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            last = messages[-1]
            if isinstance(last, ModelRequest) and any(
                isinstance(p, UserPromptPart) for p in last.parts
            ):
                return ModelResponse(parts=[ToolCallPart(
                    TOOL_NAME, dict(WRITE_ARGS), tool_call_id=call_id(len(messages)))])
            return ModelResponse(parts=[TextPart(FINAL_TEXT)])

        agent: Any = Agent(FunctionModel(respond), output_type=[str, DeferredToolRequests])
        counter = self.counter

        @agent.tool_plain(name=TOOL_NAME, requires_approval=True)
        def write_file(path: str, content: str) -> str:
            """Write a text file in the workspace."""
            counter.count += 1
            return TOOL_RESULT

        self.agent = agent

    def _history(self, thread_id: str) -> Any:
        raw = self.store.get(thread_id)
        return None if raw is None else self._adapter.validate_json(raw)

    def pause(self, thread_id: str) -> None:
        result = self.run(self.agent.run(USER_TEXT, message_history=self._history(thread_id)))
        if not isinstance(result.output, self._requests_type) or not result.output.approvals:
            raise AssertionError(f"pydantic-ai: thread {thread_id} did not pause")
        self.store[thread_id] = self._adapter.dump_json(result.all_messages())

    def resume(self, thread_id: str) -> None:
        from pydantic_ai import DeferredToolResults
        from pydantic_ai.messages import ModelResponse, ToolCallPart

        before = self.counter.count
        history = self._history(thread_id)
        last = history[-1]
        assert isinstance(last, ModelResponse)
        pending = [p.tool_call_id for p in last.parts if isinstance(p, ToolCallPart)]
        results = DeferredToolResults(approvals=dict.fromkeys(pending, True))
        result = self.run(self.agent.run(message_history=history, deferred_tool_results=results))
        if result.output != FINAL_TEXT or self.counter.count != before + 1:
            raise AssertionError(f"pydantic-ai: thread {thread_id} did not complete once")
        self.store[thread_id] = self._adapter.dump_json(result.all_messages())

    def describe_durability(self) -> str:
        return ("in memory: message history as JSON (ModelMessagesTypeAdapter) per thread; "
                "DeferredToolResults on resume")


class OpenAIAgentsSystem(_LoopSide):
    name = "openai-agents"

    def __init__(self) -> None:
        super().__init__()
        from agents import Agent, Runner, function_tool, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )

        set_tracing_disabled(True)
        self._runner_cls = Runner
        args_json = json.dumps(WRITE_ARGS)

        class ScriptedModel(Model):
            async def get_response(self, system_instructions: Any, input: Any,
                                   *args: Any, **kwargs: Any) -> ModelResponse:
                items = [{"role": "user", "content": input}] if isinstance(input, str) else input
                last = items[-1]
                role = last.get("role") if isinstance(last, dict) else None
                if role == "user":
                    cid = call_id(len(items))
                    out: Any = ResponseFunctionToolCall(
                        type="function_call", call_id=cid, name=TOOL_NAME,
                        arguments=args_json, id=f"fc_{cid}", status="completed")
                else:
                    out = ResponseOutputMessage(
                        id=f"msg_{len(items)}", type="message", role="assistant",
                        status="completed",
                        content=[ResponseOutputText(type="output_text", text=FINAL_TEXT,
                                                    annotations=[])])
                return ModelResponse(output=[out], usage=Usage(), response_id=None)

            def stream_response(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError("the benchmark does not stream")

        counter = self.counter

        @function_tool(name_override=TOOL_NAME, needs_approval=True)
        def write_file(path: str, content: str) -> str:
            """Write a text file in the workspace."""
            counter.count += 1
            return TOOL_RESULT

        self.agent = Agent(name="bench", model=ScriptedModel(), tools=[write_file])

    def pause(self, thread_id: str) -> None:
        raw = self.store.get(thread_id)
        history: list[Any] = [] if raw is None else json.loads(raw)
        history.append({"role": "user", "content": USER_TEXT})
        result = self.run(self._runner_cls.run(self.agent, history))
        if not result.interruptions:
            raise AssertionError(f"openai-agents: thread {thread_id} did not pause")
        self.store[thread_id] = result.to_state().to_string().encode()

    def resume(self, thread_id: str) -> None:
        from agents import RunState

        before = self.counter.count

        async def go() -> Any:
            state = await RunState.from_string(self.agent, self.store[thread_id].decode())
            for item in state.get_interruptions():
                state.approve(item)
            return await self._runner_cls.run(self.agent, state)

        result = self.run(go())
        if result.final_output != FINAL_TEXT or self.counter.count != before + 1:
            raise AssertionError(f"openai-agents: thread {thread_id} did not complete once")
        self.store[thread_id] = json.dumps(result.to_input_list()).encode()

    def describe_durability(self) -> str:
        return ("in memory: RunState.to_string() while paused, to_input_list() as JSON after "
                "the answer; tracing disabled")
