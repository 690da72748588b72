"""Models: the ``Model`` protocol, ``ScriptedModel`` and provider adapters."""

from .base import Model
from .resolve import resolve_model
from .scripted import ScriptedModel

__all__ = ["Model", "ScriptedModel", "resolve_model"]
