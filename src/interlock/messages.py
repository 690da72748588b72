"""Conversation messages: plain, JSON-serialisable pydantic models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class ToolCall(BaseModel):
    """A tool call proposed by the model. ``id`` is unique within the thread."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    args_error: str | None = None
    """Set when the model's arguments could not be parsed as a JSON object (the call fails
    closed: it pauses for review if gated and is never run with guessed arguments)."""

    def __getitem__(self, key: str) -> Any:
        """Read as a mapping, as LangChain's tool-call dicts are (``call["name"]``)."""
        if key in ("id", "name", "args"):
            return getattr(self, key)
        if key == "type":
            return "tool_call"
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


class SystemMessage(BaseModel):
    role: Literal["system"] = "system"
    content: str


class UserMessage(BaseModel):
    role: Literal["user"] = "user"
    content: str


class Usage(BaseModel):
    """Tokens a model call used, when the model reports them."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage | None = None


ToolStatus = Literal["success", "error"]


class ToolMessage(BaseModel):
    """The result of one tool call, paired with it by ``tool_call_id``.

    ``decision`` says how the result came about when a person (or the system) produced it
    instead of the tool: ``reject``, ``respond``, ``edit``, ``cancel`` or ``expire``.
    """

    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    content: str
    status: ToolStatus = "success"
    decision: str | None = None


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]
MESSAGE_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)


MESSAGES_ADAPTER: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def message_from_json(data: str | bytes) -> Message:
    return MESSAGE_ADAPTER.validate_json(data)


def messages_from_json(rows: Sequence[str]) -> list[Message]:
    """The messages stored as ``rows`` (each one message's JSON, as :func:`message_to_json`
    writes it), parsed in one call: one JSON array instead of a validator call per row (about
    5 % fewer instructions for a thread of 200 messages)."""
    if not rows:
        return []
    messages = MESSAGES_ADAPTER.validate_json("[" + ",".join(rows) + "]")
    if len(messages) != len(rows):  # a row that is not one JSON value: parse row by row
        return [MESSAGE_ADAPTER.validate_json(r) for r in rows]
    return messages


def tool_call_ids(messages: Sequence[Message]) -> set[str]:
    """The ids of the tool calls proposed in ``messages``."""
    return {c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls}


def message_to_json(message: Message) -> str:
    """The stored form of a message (fields that are None are left out)."""
    # the adapter's serializer itself (``dump_json`` passes it all its options: same bytes)
    return MESSAGE_ADAPTER.serializer.to_json(message, exclude_none=True).decode()
