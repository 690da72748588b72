"""Size limits of the review server: what one request may carry.

Everything a request stores (messages, decisions, answers, reasons) is bounded here, at the
boundary, before the core sees it: an oversize request is refused whole (413 for the body,
422 naming the field and the limit) and nothing is stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..decisions import decision_items
from ..errors import ConfigurationError
from ..text import check_input
from .errors import ApiError

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True, kw_only=True)
class Limits:
    """``create_app(agent, limits=Limits(...))``. Sizes of text are in characters, of JSON
    values in bytes of their compact UTF-8 JSON."""

    max_body_bytes: int = 1 * MIB
    """A request body (any route); larger: 413."""
    max_message_chars: int = 64_000
    """A user message, a reject or respond message, a cancel reason."""
    max_args_bytes: int = 64 * KIB
    """The arguments of an edited call."""
    max_answer_bytes: int = 64 * KIB
    """The answer to an ``interrupt(...)`` question."""
    max_decisions: int = 1000
    """Decisions in one request."""
    max_metadata_bytes: int = 16 * KIB
    """The metadata of a thread or a run (LangGraph API)."""
    max_metadata_values: int = 256
    """Keys, list items and values in the metadata of a thread or a run, counted at every
    depth (many small keys cost far more memory than their bytes)."""
    failed_token_attempts: int = 10
    """Failed attempts with one wrong token within ``failed_token_window`` seconds before that
    token gets 429; ten times as many from one client address before every token from it
    does."""
    failed_token_window: float = 60.0

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_message_chars", "max_args_bytes",
                     "max_answer_bytes", "max_decisions", "max_metadata_bytes",
                     "max_metadata_values", "failed_token_attempts"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"Limits({name}=...) must be at least 1.")
        if self.failed_token_window <= 0:
            raise ConfigurationError("Limits(failed_token_window=...) must be positive.")

    # -- checks (raise ApiError 422 naming the field and the limit) --------------------------

    def text(self, field: str, value: str | None) -> None:
        if value is not None and len(value) > self.max_message_chars:
            raise too_large(field, f"{len(value)} characters", "max_message_chars",
                            f"{self.max_message_chars} characters")

    def json_value(self, field: str, value: Any, limit_name: str, limit: int) -> None:
        size = json_size(value)
        if size > limit:
            raise too_large(field, f"{size} bytes of JSON", limit_name, f"{limit} bytes")

    def metadata(self, field: str, value: Any) -> None:
        """The metadata of a thread or a run: storable (no NUL, lone surrogate, NaN or
        infinity: ``InvalidText``, 422), its bytes, and how many keys and values it holds at
        every depth."""
        if value is None:
            return
        self.json_value(field, value, "max_metadata_bytes", self.max_metadata_bytes)
        count = json_values(value, self.max_metadata_values + 1)
        if count > self.max_metadata_values:
            raise too_large(field, f"more than {self.max_metadata_values} keys and values",
                            "max_metadata_values", str(self.max_metadata_values))
        check_input(value, field)

    def decisions(self, raw: Any) -> None:
        """Every text and edited argument object of a decisions body, whatever its shape
        (one decision, a list, a mapping, LangChain's ``{"decisions": ...}``)."""
        items = decision_items(raw)
        if len(items) > self.max_decisions:
            raise too_large("decisions", f"{len(items)} decisions", "max_decisions",
                            str(self.max_decisions))
        for where, d in items:
            if isinstance(d, BaseModel):
                d = d.model_dump(exclude_none=True)
            if not isinstance(d, dict):
                continue
            msg = d.get("message")
            if isinstance(msg, str):
                self.text(f"{where}.message", msg)
            action = d.get("edited_action", d.get("editedAction"))
            if isinstance(action, dict):
                self.json_value(f"{where}.edited_action", action, "max_args_bytes",
                                self.max_args_bytes)


def json_values(value: Any, stop: int) -> int:
    """Keys, list items and values in ``value`` at every depth (counting stops at ``stop``)."""
    count, todo = 0, [value]
    while todo and count < stop:
        item = todo.pop()
        count += 1
        if isinstance(item, dict):
            count += len(item)
            todo.extend(item.values())
        elif isinstance(item, list | tuple):
            todo.extend(item)
    return count


def json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                          default=str).encode("utf-8", "surrogatepass"))


def too_large(field: str, size: str, limit_name: str, limit: str) -> ApiError:
    return ApiError(
        422, "LimitExceeded",
        f"{field} is {size}; the limit is {limit} ({limit_name}). Shorten it, or raise the "
        f"server's Limits({limit_name}=...). Nothing was stored.",
    )
