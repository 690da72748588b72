"""``Agent(model=...)``: a model object, a foreign chat model (adapted) or a shorthand string."""

from __future__ import annotations

from ..errors import ConfigurationError
from .base import Model


def resolve_model(model: Model | str) -> Model:
    """Accept a model object or the shorthand ``"openai:NAME"`` / ``"anthropic:NAME"``."""
    if isinstance(model, type):
        raise ConfigurationError(
            f"model={model.__name__} is a class: pass an instance, e.g. "
            f"model={model.__name__}(...), or a string like 'openai:gpt-4.1-mini'."
        )
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
