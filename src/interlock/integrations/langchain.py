"""LangChain tools and chat models in an interlock agent (``pip install -e '.[langchain]'``
in the checkout).

* Any ``langchain_core.tools.BaseTool`` (``StructuredTool``, ``@langchain_core.tools.tool``,
  your own subclass) can be listed in ``Agent(tools=[...])``: it keeps its name, description
  and argument schema, runs through its own ``invoke`` / ``ainvoke`` (async tools stay async,
  sync tools run in interlock's worker threads) and its ``ToolException`` handling: an error
  the tool handles (``handle_tool_error``) reaches the model as an error result, verbatim.
* Any ``langchain_core.language_models.BaseChatModel`` that implements ``bind_tools`` can be
  ``Agent(model=...)``: tool calls (also several per turn), streamed text deltas and token
  usage are carried over; :func:`to_langchain` / :func:`from_langchain` convert messages.

Both happen automatically when such objects are passed to ``Agent``; :class:`LangChainTool`
and :class:`LangChainChatModel` can also be built by hand (e.g. ``idempotent=True``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from .._tool_threads import run_in_worker
from ..errors import ConfigurationError, MissingDependency, ModelError
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from ..tools import ArgumentError, Tool, ToolContext, ToolError
from ._schema import check_json_args

try:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
    from langchain_core.messages import SystemMessage as LCSystemMessage
    from langchain_core.messages import ToolMessage as LCToolMessage
    from langchain_core.messages.ai import UsageMetadata
    from langchain_core.runnables import Runnable
    from langchain_core.tools import BaseTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover - exercised in a venv without the extra
    raise MissingDependency("LangChain tools and chat models", "langchain",
                            "langchain-core") from exc

DECISION_SOURCE = "hitl_interrupt_decision"
"""``additional_kwargs["lc_source"]`` of a tool result a person produced (LangChain's marker)."""


# ====================================================================== tools


def _text(content: Any) -> str:
    """A LangChain message content (a string or a list of content blocks) as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if all(isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
               for b in content):
            return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)
        return json.dumps(content, ensure_ascii=False, default=str)
    return json.dumps(content, ensure_ascii=False, default=str)


def _command_result(out: Any, tool_call_id: str) -> str | None:
    """The result in a LangGraph ``Command(update={"messages": [ToolMessage(...)]})`` for
    this call, when that is all it does (no ``goto``, no other state keys); else None."""
    update = getattr(out, "update", None)
    if type(out).__name__ != "Command" or getattr(out, "goto", ()) not in ((), None, []) or \
            getattr(out, "graph", None) is not None or \
            getattr(out, "resume", None) is not None or not isinstance(update, dict) or \
            set(update) != {"messages"}:
        return None
    mine = [m for m in update["messages"]
            if isinstance(m, LCToolMessage) and m.tool_call_id == tool_call_id]
    if len(mine) != 1 or len(update["messages"]) != 1:
        return None
    if mine[0].status == "error":
        raise ToolError(_text(mine[0].content))
    return _text(mine[0].content)


def _is_async(lc_tool: BaseTool) -> bool:
    coroutine = getattr(lc_tool, "coroutine", None)
    if coroutine is not None:
        return True
    if getattr(lc_tool, "func", None) is not None:
        return False
    return type(lc_tool)._arun is not BaseTool._arun


class LangChainTool(Tool):
    """An interlock tool that runs a LangChain ``BaseTool``.

    Arguments are validated against the tool's own schema (its ``tool_call_schema``) before
    a call is stored or a reviewer's edit is accepted; unknown arguments are refused as for
    native tools. ``idempotent=True`` lets recovery retry it after a crash.
    """

    def __init__(self, lc_tool: Any, *, idempotent: bool = False) -> None:
        if not isinstance(lc_tool, BaseTool):
            raise ConfigurationError(
                f"LangChainTool needs a langchain_core BaseTool, got {lc_tool!r}."
            )
        try:
            spec = convert_to_openai_tool(lc_tool)["function"]
        except Exception as exc:
            raise ConfigurationError(
                f"Cannot read the schema of LangChain tool {lc_tool.name!r}: {exc}. Give it "
                f"an args_schema (a pydantic model or a JSON schema)."
            ) from exc
        self.lc_tool = lc_tool
        self.func = lc_tool.invoke
        self.name = str(spec["name"])
        if not self.name.replace("_", "").replace("-", "").isalnum():
            raise ConfigurationError(
                f"LangChain tool name {self.name!r} must contain only letters, digits, '_' "
                f"and '-' to be callable by models; rename it (name=...)."
            )
        self.description = str(spec.get("description") or "")
        self.idempotent = idempotent
        self.return_direct = bool(getattr(lc_tool, "return_direct", False))
        self.is_async = _is_async(lc_tool)
        self._context_param = None
        params = spec.get("parameters") or {}
        self.args_schema = {"type": "object", "properties": {}, **params}
        self.args_schema.pop("title", None)
        schema = lc_tool.tool_call_schema
        self._pydantic: type[BaseModel] | None = (
            schema if isinstance(schema, type) and issubclass(schema, BaseModel) else None
        )

    def validate_args(self, args: dict[str, Any]) -> dict[str, Any]:
        if self._pydantic is None:
            check_json_args(self.name, self.args_schema, args, "langchain")
            return dict(args)
        problems: list[str] = []
        if self._pydantic.model_config.get("extra") != "allow":
            unknown = sorted(set(args) - set(self._pydantic.model_fields))
            problems += [f"{k}: Extra inputs are not permitted" for k in unknown]
        try:
            self._pydantic.model_validate(args)
        except ValidationError as exc:
            problems += [f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                         for e in exc.errors()]
        if problems:
            raise ArgumentError(self.name, problems)
        return dict(args)

    async def run(self, args: dict[str, Any], context: ToolContext) -> Any:
        self.validate_args(args)
        call = {"type": "tool_call", "id": context.tool_call_id, "name": self.name,
                "args": dict(args)}
        if self.is_async:
            out = await self.lc_tool.ainvoke(call)
        else:
            out = await run_in_worker(lambda: self.lc_tool.invoke(call))
        if isinstance(out, LCToolMessage):
            if out.status == "error":
                raise ToolError(_text(out.content))
            return _text(out.content)
        if isinstance(out, BaseMessage | str):
            return _text(out.content if isinstance(out, BaseMessage) else out)
        answer = _command_result(out, context.tool_call_id)
        if answer is not None:
            return answer
        raise ToolError(
            f"LangChain tool {self.name!r} returned {type(out).__name__}, which interlock "
            f"cannot apply (a LangGraph Command is taken only as update={{'messages': "
            f"[ToolMessage(..., tool_call_id=<this call>)]}}, its result); return a string, "
            f"content blocks or a ToolMessage."
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.lc_tool.invoke(*args, **kwargs)

    def __repr__(self) -> str:
        return f"LangChainTool(name={self.name!r}, idempotent={self.idempotent})"


# ====================================================================== messages


def _decision_kwargs(decision: str | None) -> dict[str, Any]:
    if decision is None:
        return {}
    return {"lc_source": DECISION_SOURCE, "lc_data": {"decision": decision}}


def to_langchain(messages: Sequence[Message]) -> list[BaseMessage]:
    """interlock messages as LangChain messages (``from_langchain`` gives them back equal)."""
    out: list[BaseMessage] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append(LCSystemMessage(content=m.content))
        elif isinstance(m, UserMessage):
            out.append(HumanMessage(content=m.content))
        elif isinstance(m, AssistantMessage):
            kwargs: dict[str, Any] = {}
            if m.usage is not None:
                kwargs["usage_metadata"] = UsageMetadata(
                    input_tokens=m.usage.input_tokens, output_tokens=m.usage.output_tokens,
                    total_tokens=m.usage.total_tokens)
            bad = {c.id: c.args_error for c in m.tool_calls if c.args_error is not None}
            if bad:
                kwargs["additional_kwargs"] = {"interlock_args_errors": bad}
            out.append(AIMessage(
                content=m.content,
                tool_calls=[{"type": "tool_call", "id": c.id, "name": c.name,
                             "args": dict(c.args)} for c in m.tool_calls],
                **kwargs,
            ))
        else:
            out.append(LCToolMessage(content=m.content, tool_call_id=m.tool_call_id,
                                     name=m.name, status=m.status,
                                     additional_kwargs=_decision_kwargs(m.decision)))
    return out


def _usage(msg: AIMessage) -> Usage | None:
    meta = msg.usage_metadata
    if not meta:
        return None
    return Usage(input_tokens=int(meta.get("input_tokens") or 0),
                 output_tokens=int(meta.get("output_tokens") or 0),
                 total_tokens=int(meta.get("total_tokens") or 0))


def _assistant(msg: AIMessage) -> AssistantMessage:
    arg_errors: dict[str, str] = dict(msg.additional_kwargs.get("interlock_args_errors") or {})
    calls: list[ToolCall] = []
    for c in msg.tool_calls:
        cid = c.get("id") or f"call_{uuid.uuid4().hex[:24]}"
        calls.append(ToolCall(id=cid, name=c["name"], args=dict(c.get("args") or {}),
                              args_error=arg_errors.get(cid)))
    for bad in msg.invalid_tool_calls:
        cid = bad.get("id") or f"call_{uuid.uuid4().hex[:24]}"
        calls.append(ToolCall(
            id=cid, name=str(bad.get("name") or ""),
            args_error=str(bad.get("error") or f"not a JSON object: {bad.get('args')!r}"),
        ))
    return AssistantMessage(content=str(msg.text), tool_calls=calls, usage=_usage(msg))


def from_langchain(messages: Sequence[BaseMessage]) -> list[Message]:
    """LangChain messages as interlock messages. Text content is kept; content blocks that
    are not text (images, reasoning) are kept as their JSON in the text."""
    out: list[Message] = []
    for m in messages:
        if isinstance(m, AIMessage):
            out.append(_assistant(m))
        elif isinstance(m, HumanMessage):
            out.append(UserMessage(content=_text(m.content)))
        elif isinstance(m, LCSystemMessage):
            out.append(SystemMessage(content=_text(m.content)))
        elif isinstance(m, LCToolMessage):
            decision = None
            if m.additional_kwargs.get("lc_source") == DECISION_SOURCE:
                decision = (m.additional_kwargs.get("lc_data") or {}).get("decision")
            out.append(ToolMessage(tool_call_id=m.tool_call_id, name=m.name or "",
                                   content=_text(m.content), status=m.status,
                                   decision=decision))
        else:
            raise ConfigurationError(
                f"Cannot convert a LangChain {type(m).__name__} to an interlock message; "
                f"use system, human, AI and tool messages."
            )
    return out


# ====================================================================== chat models


def _tool_spec(t: Tool) -> Any:
    if isinstance(t, LangChainTool):
        return t.lc_tool
    return {"type": "function", "function": t.definition()}


class LangChainChatModel:
    """An interlock model backed by a LangChain chat model with tool calling.

    The agent's tools are bound with the model's own ``bind_tools``; each model call gets
    the whole conversation converted with :func:`to_langchain`. Provider errors become
    :class:`~interlock.ModelError` (the thread is unchanged and the run can be retried).
    """

    def __init__(self, model: Any, **bind_kwargs: Any) -> None:
        if not isinstance(model, BaseChatModel):
            what = "a LangChain Runnable" if isinstance(model, Runnable) else repr(model)
            raise ConfigurationError(
                f"model={what} is not a LangChain chat model (BaseChatModel). Pass the chat "
                f"model itself, e.g. ChatOpenAI(...), without bind_tools(): interlock binds "
                f"the agent's tools."
            )
        if type(model).bind_tools is BaseChatModel.bind_tools:
            raise ConfigurationError(
                f"{type(model).__name__} does not support tool calling (it does not implement "
                f"bind_tools), so it cannot drive an agent. Use a chat model with tool calling "
                f"(e.g. ChatOpenAI, ChatAnthropic, ChatOllama)."
            )
        self.model = model
        self.bind_kwargs = bind_kwargs
        self._bound: dict[tuple[int, ...], Runnable[Any, Any]] = {}

    def __repr__(self) -> str:
        return f"LangChainChatModel({type(self.model).__name__})"

    @property
    def provider(self) -> str:
        return f"langchain:{type(self.model).__name__}"

    def _runnable(self, tools: Sequence[Tool]) -> Runnable[Any, Any]:
        if not tools:
            return self.model
        key = tuple(id(t) for t in tools)
        bound = self._bound.get(key)
        if bound is None:
            bound = self.model.bind_tools([_tool_spec(t) for t in tools], **self.bind_kwargs)
            self._bound[key] = bound
        return bound

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[Tool]
    ) -> AssistantMessage:
        runnable = self._runnable(tools)
        try:
            out = await runnable.ainvoke(to_langchain(messages))
        except Exception as exc:
            raise ModelError(f"{type(exc).__name__}: {exc}", provider=self.provider) from exc
        if not isinstance(out, AIMessage):
            raise ModelError(f"the model returned {type(out).__name__}, not an AIMessage",
                             provider=self.provider)
        return _assistant(out)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[Tool]
    ) -> AsyncIterator[str | AssistantMessage]:
        runnable = self._runnable(tools)
        total: AIMessageChunk | AIMessage | None = None
        try:
            async for chunk in runnable.astream(to_langchain(messages)):
                if isinstance(chunk, AIMessageChunk):
                    if chunk.text:
                        yield str(chunk.text)
                    total = chunk if not isinstance(total, AIMessageChunk) else total + chunk
                elif isinstance(chunk, AIMessage):  # a model without native streaming
                    if chunk.text:
                        yield str(chunk.text)
                    total = chunk
        except Exception as exc:
            raise ModelError(f"{type(exc).__name__}: {exc}", provider=self.provider) from exc
        if total is None:
            raise ModelError("the model's stream ended without a message",
                             provider=self.provider)
        yield _assistant(total)
