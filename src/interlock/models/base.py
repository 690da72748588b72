"""The ``Model`` protocol: what the agent loop needs from a chat model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from ..messages import AssistantMessage, Message
from ..tools import Tool


@runtime_checkable
class Model(Protocol):
    """A chat model with tool calling.

    ``generate`` returns the whole assistant message. ``stream`` yields text deltas (``str``)
    in order and ends with the complete :class:`AssistantMessage` (tool calls with complete
    arguments). Raise :class:`~interlock.ModelError` for provider failures.
    """

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[Tool]
    ) -> AssistantMessage: ...

    def stream(
        self, messages: Sequence[Message], tools: Sequence[Tool]
    ) -> AsyncIterator[str | AssistantMessage]: ...
