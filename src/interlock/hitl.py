"""``HumanInTheLoop``: pause gated tool calls for a person (SPEC §4), built on ``Middleware``."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from .errors import ConfigurationError
from .messages import ToolCall
from .middleware import DECISION_TYPES, DecisionType, Middleware, ModelTurn

DEFAULT_PREFIX = "Tool execution pending approval"


class ActionRequest(BaseModel):
    """One gated tool call waiting for a decision."""

    tool_call_id: str
    name: str
    args: dict[str, Any]
    description: str
    reason: str | None = None
    """Why the call pauses when it is not the plain policy: e.g. ``outcome_unknown``."""


class ReviewConfig(BaseModel):
    """What a reviewer may do with the matching action request."""

    action_name: str
    allowed_decisions: list[DecisionType]
    args_schema: dict[str, Any] = Field(default_factory=dict)
    reviewers: list[str] | None = None
    expires_at: datetime | None = None


class HITLRequest(BaseModel):
    """The value of a review interrupt: one per model turn that has gated calls.

    Shaped like LangChain's ``HITLRequest`` (``action_requests`` / ``review_configs``, snake
    case) plus ``tool_call_id`` and ``args_schema``, so LangChain-style clients can read it.
    """

    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


DescriptionFn = Callable[[ToolCall, ModelTurn], str]
WhenFn = Callable[[ToolCall], bool]


@dataclass(frozen=True, kw_only=True)
class InterruptOn:
    """Per-tool review policy.

    ``allowed_decisions``: non-empty subset of approve / edit / reject / respond.
    ``description``: text for the reviewer, or ``(call, turn) -> str``; evaluated once when the
    pause is created. ``when``: ``(call) -> bool``; False lets the call run without pausing; if it
    raises, the call pauses (fail closed). ``reviewers``: roles allowed to decide.
    ``expires_after``: a pending call older than this is resolved by ``on_expire``.
    """

    allowed_decisions: Sequence[DecisionType] = DECISION_TYPES
    description: str | DescriptionFn | None = None
    when: WhenFn | None = None
    reviewers: Sequence[str] | None = None
    expires_after: timedelta | None = None
    on_expire: Literal["reject"] = "reject"

    def __post_init__(self) -> None:
        allowed = self.allowed_decisions
        if isinstance(allowed, str) or not allowed:
            raise ConfigurationError(
                f"InterruptOn(allowed_decisions={allowed!r}) must be a non-empty list drawn "
                f"from {list(DECISION_TYPES)}."
            )
        bad = [d for d in allowed if d not in DECISION_TYPES]
        if bad:
            raise ConfigurationError(
                f"InterruptOn(allowed_decisions=...) has unknown decision(s) {bad}; allowed "
                f"values are {list(DECISION_TYPES)}."
            )
        if self.when is not None and not callable(self.when):
            raise ConfigurationError(
                f"InterruptOn(when=...) must be a callable (call) -> bool, got {self.when!r}."
            )
        if self.description is not None and not (
            isinstance(self.description, str) or callable(self.description)
        ):
            raise ConfigurationError(
                "InterruptOn(description=...) must be a string or a callable (call, turn) -> str."
            )
        if self.reviewers is not None and (
            isinstance(self.reviewers, str) or not all(isinstance(r, str) for r in self.reviewers)
        ):
            raise ConfigurationError(
                f"InterruptOn(reviewers=...) must be a list of role names, got {self.reviewers!r}."
            )
        if self.expires_after is not None and self.expires_after <= timedelta(0):
            raise ConfigurationError("InterruptOn(expires_after=...) must be a positive timedelta.")
        if self.on_expire != "reject":
            raise ConfigurationError(
                f"InterruptOn(on_expire={self.on_expire!r}) is not supported; allowed: 'reject'."
            )


ALL_DECISIONS = InterruptOn()


def default_description(prefix: str, call: ToolCall) -> str:
    args = json.dumps(call.args, ensure_ascii=False, sort_keys=False)
    return f"{prefix}\n\nTool: {call.name}\nArgs: {args}"


class HumanInTheLoop(Middleware):
    """Pause tool calls named in ``interrupt_on`` until a person decides.

    ``interrupt_on`` maps tool names to ``True`` (all four decisions), ``False`` (never pause)
    or an :class:`InterruptOn`. Unknown tool names are rejected when the ``Agent`` is built.
    """

    def __init__(
        self,
        interrupt_on: Mapping[str, bool | InterruptOn],
        *,
        description_prefix: str = DEFAULT_PREFIX,
    ) -> None:
        if not isinstance(interrupt_on, Mapping):
            raise ConfigurationError(
                "HumanInTheLoop(interrupt_on=...) must map tool names to True, False or "
                f"InterruptOn(...), got {type(interrupt_on).__name__}."
            )
        policy: dict[str, InterruptOn] = {}
        for name, value in interrupt_on.items():
            if value is True:
                policy[name] = ALL_DECISIONS
            elif value is False or value is None:
                continue
            elif isinstance(value, InterruptOn):
                policy[name] = value
            else:
                raise ConfigurationError(
                    f"interrupt_on[{name!r}] must be True, False or InterruptOn(...), got "
                    f"{value!r}."
                )
        self.interrupt_on = dict(interrupt_on)
        self.policy = policy
        self.description_prefix = description_prefix

    def validate_tools(self, tool_names: Collection[str]) -> None:
        """Called by ``Agent``: every name in ``interrupt_on`` must be one of its tools."""
        unknown = sorted(set(self.interrupt_on) - set(tool_names))
        if unknown:
            raise ConfigurationError(
                f"HumanInTheLoop(interrupt_on=...) names tool(s) {unknown} that the agent does "
                f"not have, so they would never be gated. The agent's tools are "
                f"{sorted(tool_names)}; fix the name(s)."
            )

    def allows_approve(self, tool_name: str) -> bool:
        cfg = self.policy.get(tool_name)
        return cfg is None or "approve" in cfg.allowed_decisions

    def after_model(self, turn: ModelTurn) -> None:
        for call in turn.calls:
            cfg = self.policy.get(call.name)
            if cfg is None:
                continue
            reason: str | None = None
            if call.args_error is not None:
                reason = f"the model's arguments could not be parsed: {call.args_error}"
            elif turn.remembered(call.name) is not None and "approve" in cfg.allowed_decisions:
                turn.auto_approve(call, rule=f"remember:thread:{call.name}")
                continue
            elif cfg.when is not None:
                try:
                    gate = bool(cfg.when(call))
                except Exception as exc:  # fail closed
                    gate, reason = True, f"the `when` predicate raised {exc!r}"
                if not gate:
                    continue
            turn.review(
                call,
                allowed_decisions=cfg.allowed_decisions,
                description=self._describe(cfg, call, turn),
                reviewers=cfg.reviewers,
                expires_after=cfg.expires_after,
                reason=reason,
            )

    def _describe(self, cfg: InterruptOn, call: ToolCall, turn: ModelTurn) -> str:
        if isinstance(cfg.description, str):
            return cfg.description
        if cfg.description is not None:
            try:
                return str(cfg.description(call, turn))
            except Exception as exc:
                return (
                    default_description(self.description_prefix, call)
                    + f"\n(The description callback failed: {exc!r})"
                )
        return default_description(self.description_prefix, call)
