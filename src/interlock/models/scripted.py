"""``ScriptedModel``: a deterministic model for tests, examples and the demo."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from ..errors import ModelError
from ..messages import AssistantMessage, Message, ToolCall
from ..tools import Tool

CallSpec = ToolCall | Mapping[str, Any]
Reply = str | AssistantMessage | CallSpec | Sequence[CallSpec] | tuple[str, Sequence[CallSpec]]
"""A scripted reply: final text, a tool call, a list of tool calls, ``(text, [calls])``, or a
complete :class:`AssistantMessage`. A call is a ``ToolCall`` or ``{"name", "args"[, "id"]}``."""


class ScriptedModel:
    """Replies from a script instead of an LLM.

    ``ScriptedModel(["hi", {"name": "write_file", "args": {...}}, "done"])`` answers the first
    model call of a thread with "hi", the second with a tool call, the third with "done". Reply
    *i* is chosen by the number of assistant messages already in the conversation, so one
    script serves many threads and survives process restarts. Alternatively pass a function
    ``(messages) -> reply`` that decides from the conversation.

    Tool calls without an ``id`` get a deterministic one unique within the thread.
    ``calls`` records the conversation seen by each model call (for assertions).
    """

    def __init__(
        self,
        script: Sequence[Reply] | Callable[[Sequence[Message]], Reply],
        *,
        name: str = "scripted",
    ) -> None:
        self.script = script
        self.name = name
        self.calls: list[list[Message]] = []

    def __repr__(self) -> str:
        n = "fn" if callable(self.script) else f"{len(self.script)} replies"
        return f"ScriptedModel({n})"

    @property
    def call_count(self) -> int:
        return len(self.calls)

    def _next(self, messages: Sequence[Message]) -> AssistantMessage:
        self.calls.append(list(messages))
        if callable(self.script):
            reply = self.script(messages)
        else:
            index = sum(1 for m in messages if isinstance(m, AssistantMessage))
            if index >= len(self.script):
                raise ModelError(
                    f"ScriptedModel has {len(self.script)} replies but this is model call "
                    f"#{index + 1} of the thread; add more replies to the script.",
                    provider="scripted",
                )
            reply = self.script[index]
        return self._to_message(reply, len(messages))

    @staticmethod
    def _to_message(reply: Reply, n: int) -> AssistantMessage:
        if isinstance(reply, AssistantMessage):
            return reply
        if isinstance(reply, str):
            return AssistantMessage(content=reply)
        text = ""
        calls: Sequence[CallSpec]
        if isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[0], str):
            text, calls = reply[0], reply[1]
        elif isinstance(reply, ToolCall | Mapping):
            calls = [reply]
        else:
            calls = list(reply)
        out: list[ToolCall] = []
        for i, c in enumerate(calls):
            if isinstance(c, ToolCall):
                out.append(c)
            else:
                out.append(
                    ToolCall(
                        id=str(c.get("id") or f"call_{n}_{i}"),
                        name=str(c["name"]),
                        args=dict(c.get("args") or {}),
                        args_error=c.get("args_error"),
                    )
                )
        return AssistantMessage(content=text, tool_calls=out)

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[Tool]
    ) -> AssistantMessage:
        return self._next(messages)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[Tool]
    ) -> AsyncIterator[str | AssistantMessage]:
        message = self._next(messages)
        for piece in re.findall(r"\S+\s*|\s+", message.content):
            yield piece
        yield message
