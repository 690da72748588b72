"""Models: the ``Model`` protocol, ``ScriptedModel`` and provider adapters."""

from .base import Model, resolve_model
from .scripted import ScriptedModel

__all__ = ["Model", "ScriptedModel", "resolve_model"]
