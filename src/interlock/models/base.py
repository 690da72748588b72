"""The ``Model`` protocol: what the agent loop needs from a chat model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from ..errors import ConfigurationError
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


def resolve_model(model: Model | str) -> Model:
    """Accept a model object or the shorthand ``"openai:NAME"`` / ``"anthropic:NAME"``."""
    if not isinstance(model, str):
        from ..integrations import adapt_model

        adapted = adapt_model(model)
        if adapted is not None:
            return adapted
        if not isinstance(model, Model):
            raise ConfigurationError(
                f"model={model!r} is not a model: pass an object with async generate() and "
                f"stream() (e.g. ScriptedModel([...])) or a string like 'openai:gpt-4.1-mini'."
            )
        return model
    provider, _, name = model.partition(":")
    if not name:
        raise ConfigurationError(
            f"model={model!r}: use 'openai:MODEL_NAME' or 'anthropic:MODEL_NAME'."
        )
    if provider == "openai":
        from .openai import OpenAIChat

        model_obj: Model = OpenAIChat(name)
        return model_obj
    if provider == "anthropic":
        from .anthropic import AnthropicChat

        chat: Model = AnthropicChat(name)
        return chat
    raise ConfigurationError(
        f"model={model!r}: unknown provider {provider!r}; known providers: 'openai' "
        f"(also for OpenAI-compatible servers via OPENAI_BASE_URL) and 'anthropic'."
    )
