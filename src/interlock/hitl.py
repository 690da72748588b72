"""``HumanInTheLoop``: pause gated tool calls for a person (SPEC §4), built on ``Middleware``."""

from __future__ import annotations

import fnmatch
import inspect
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from .authz import remembered_applies
from .errors import ConfigurationError
from .messages import Message, ToolCall
from .middleware import Middleware, ModelTurn

# the review request's types, where they were always imported from
from .review_request import DECISION_TYPES as DECISION_TYPES
from .review_request import ActionRequest as ActionRequest
from .review_request import ApprovalRecord as ApprovalRecord
from .review_request import DecisionType as DecisionType
from .review_request import HITLRequest as HITLRequest
from .review_request import ReviewConfig as ReviewConfig
from .review_request import ReviewRules as ReviewRules
from .review_request import read_request as read_request
from .review_request import review_config as review_config
from .review_request import shown_digest as shown_digest
from .tools import ArgumentError

DEFAULT_PREFIX = "Tool execution requires approval"
"""The default ``description_prefix``: the same text as LangChain's middleware."""


DescriptionFn = Callable[..., str]
"""``(call, turn) -> str`` (``call`` is a :class:`ToolCall`), or LangChain's
``(tool_call, state, runtime) -> str`` (``tool_call`` is a dict with ``name``, ``args``, ``id``;
``state`` is ``{"messages": [...]}``; ``runtime`` has ``thread_id``): a callable that can take
three positional arguments is called the LangChain way (:func:`description_style`)."""
WhenFn = Callable[[ToolCall], bool]

DescriptionStyle = Literal["interlock", "langchain"]


@dataclass(frozen=True)
class DescriptionRuntime:
    """The ``runtime`` a LangChain-style ``description`` or ``when`` callable reads: the
    thread (``thread_id``, and as LangGraph's ``config["configurable"]["thread_id"]``), the
    call's ``tool_call_id`` and ``state["messages"]``. interlock has no LangGraph ``context``
    or ``store``: they are ``None``."""

    thread_id: str
    context: Any = None
    store: Any = None
    tool_call_id: str | None = None
    messages_view: Callable[[], list[Any]] = field(default=list, repr=False, compare=False)
    """The conversation as :attr:`state` shows it, made when first read."""

    @property
    def config(self) -> dict[str, Any]:
        """LangGraph's ``RunnableConfig``, as far as interlock has one: the thread."""
        return {"configurable": {"thread_id": self.thread_id}}

    @property
    def state(self) -> dict[str, Any]:
        return {"messages": self.messages_view()}


class WhenCall(ToolCall):
    """What a ``when`` predicate receives: the :class:`ToolCall` (``call.args``), which also
    reads like LangChain's ``ToolCallRequest`` (``request.tool_call["args"]``,
    ``request.state["messages"]``, ``request.tool``, ``request.runtime.thread_id``,
    ``request.runtime.tool_call_id``, ``request.runtime.config["configurable"]["thread_id"]``),
    so predicates written for either work."""

    thread_id: str = Field(default="", exclude=True, repr=False)
    _messages: Callable[[], list[Any]] = PrivateAttr(default=list)
    """The conversation as :attr:`state` shows it, made when first read."""
    _tool: Any = PrivateAttr(default=None)

    @property
    def tool(self) -> Any:
        """The tool the call names: the LangChain ``BaseTool`` for a LangChain tool (as
        LangChain's ``per_call`` mode passes it), else interlock's :class:`~interlock.Tool`;
        ``None`` for a name the agent has no tool for."""
        return getattr(self._tool, "lc_tool", self._tool)

    @property
    def tool_call(self) -> dict[str, Any]:
        return {"name": self.name, "args": dict(self.args), "id": self.id, "type": "tool_call"}

    @property
    def state(self) -> dict[str, Any]:
        return {"messages": self._messages()}

    @property
    def runtime(self) -> DescriptionRuntime:
        return DescriptionRuntime(thread_id=self.thread_id, tool_call_id=self.id,
                                  messages_view=self._messages)


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        type(fn).__call__)


def description_style(fn: Callable[..., Any], where: str) -> DescriptionStyle:
    """How to call a description callable, from its signature: as LangChain's
    ``(tool_call, state, runtime)`` when it can be called with three positional arguments
    (three or more positional parameters, with defaults or not, or ``*args``), else as
    ``(call, turn)`` when it can be called with two; a clear error if it can be called with
    neither."""
    if _is_async(fn):
        raise ConfigurationError(
            f"{where}: the description callable {fn!r} is async; it must be a plain function "
            f"returning a string (it is called once, when the pause is created)."
        )
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature to read (some builtins): the native form
        return "interlock"
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(1 for p in positional if p.default is p.empty)
    var = any(p.kind is p.VAR_POSITIONAL for p in params)
    kw_required = any(p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in params)

    def takes(n: int) -> bool:
        return not kw_required and required <= n and (n <= len(positional) or var)

    if takes(3):  # three or more positional parameters, or *args
        return "langchain"
    if takes(2):
        return "interlock"
    raise ConfigurationError(
        f"{where}: the description callable {fn!r} cannot be called as (call, turn) nor as "
        f"LangChain's (tool_call, state, runtime); its parameters are "
        f"{[p.name for p in params]}. Give it two or three positional parameters."
    )


@dataclass(frozen=True, kw_only=True)
class InterruptOn:
    """Per-tool review policy.

    ``allowed_decisions``: non-empty subset of approve / edit / reject / respond.
    ``description``: text for the reviewer, or ``(call, turn) -> str``; evaluated once when the
    pause is created. ``when``: ``(call) -> bool``; False lets the call run without pausing; if it
    raises or returns ``None`` (a forgotten ``return``), the call pauses (fail closed).
    ``reviewers``: roles allowed to decide (a non-empty list; None: any reviewer).
    ``expires_after``: a pending call older than this is resolved by ``on_expire``.
    ``approvals``: how many distinct reviewers must approve (four-eyes: 2); one reject
    rejects; an edit restarts the count (:mod:`interlock.quorum`). ``self_approval=False``: the
    identity that started the run may not approve its own request. ``escalate_to`` /
    ``escalate_after``: a call still pending after ``escalate_after`` is re-notified to those
    roles (who may then decide it too), audited as ``system:escalation``.
    ``allow_remember``: whether a reviewer may "approve and remember" this tool for the rest of
    the thread (False: every call is decided on its own).
    """

    allowed_decisions: Sequence[DecisionType] = DECISION_TYPES
    description: str | DescriptionFn | None = None
    when: WhenFn | None = None
    reviewers: Sequence[str] | None = None
    expires_after: timedelta | None = None
    on_expire: Literal["reject"] = "reject"
    approvals: int = 1
    self_approval: bool = True
    escalate_to: Sequence[str] | None = None
    escalate_after: timedelta | None = None
    allow_remember: bool = True

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
        if self.when is not None and _is_async(self.when):
            raise ConfigurationError(
                f"InterruptOn(when=...): the predicate {self.when!r} is async; it must be a "
                f"plain function (call) -> bool (an async one would never be awaited, and a "
                f"coroutine is always true)."
            )
        if self.description is not None and not (
            isinstance(self.description, str) or callable(self.description)
        ):
            raise ConfigurationError(
                "InterruptOn(description=...) must be a string or a callable (call, turn) -> str "
                "or (tool_call, state, runtime) -> str."
            )
        if callable(self.description):
            description_style(self.description, "InterruptOn(description=...)")
        if self.reviewers is not None and (
            isinstance(self.reviewers, str) or not all(isinstance(r, str) for r in self.reviewers)
        ):
            raise ConfigurationError(
                f"InterruptOn(reviewers=...) must be a list of role names, got {self.reviewers!r}."
            )
        if self.reviewers is not None and not self.reviewers:
            raise ConfigurationError(
                "InterruptOn(reviewers=[]) names no role, so no reviewer could decide the "
                "calls: leave reviewers out to let any reviewer decide, or name the roles, "
                "e.g. reviewers=['dba'].")
        for arg in ("expires_after", "escalate_after"):
            value = getattr(self, arg)
            if value is not None and not isinstance(value, timedelta):
                raise ConfigurationError(
                    f"InterruptOn({arg}={value!r}) must be a datetime.timedelta, e.g. "
                    f"{arg}=timedelta(hours=1).")
        for arg in ("self_approval", "allow_remember"):
            if not isinstance(getattr(self, arg), bool):
                raise ConfigurationError(
                    f"InterruptOn({arg}={getattr(self, arg)!r}) must be True or False.")
        if self.expires_after is not None and self.expires_after <= timedelta(0):
            raise ConfigurationError("InterruptOn(expires_after=...) must be a positive timedelta.")
        if not isinstance(self.approvals, int) or isinstance(self.approvals, bool) or \
                self.approvals < 1:
            raise ConfigurationError(
                f"InterruptOn(approvals={self.approvals!r}) must be a whole number >= 1 (2 for "
                f"four-eyes approval).")
        if self.approvals > 1 and "approve" not in self.allowed_decisions and \
                "edit" not in self.allowed_decisions:
            raise ConfigurationError(
                f"InterruptOn(approvals={self.approvals}) needs 'approve' or 'edit' in "
                f"allowed_decisions.")
        if (self.escalate_to is None) != (self.escalate_after is None) or (
                self.escalate_to is not None and (
                    isinstance(self.escalate_to, str) or not self.escalate_to
                    or not all(isinstance(r, str) for r in self.escalate_to))):
            raise ConfigurationError(
                "InterruptOn(escalate_to=[...], escalate_after=timedelta(...)) go together: "
                "give a non-empty list of roles and a positive timedelta.")
        if self.escalate_after is not None:
            if self.escalate_after <= timedelta(0):
                raise ConfigurationError(
                    "InterruptOn(escalate_after=...) must be a positive timedelta.")
            if self.expires_after is not None and self.escalate_after >= self.expires_after:
                raise ConfigurationError(
                    f"InterruptOn(escalate_after={self.escalate_after}) must be shorter than "
                    f"expires_after={self.expires_after}: escalation happens before the "
                    f"default outcome applies.")
        if self.on_expire != "reject":
            raise ConfigurationError(
                f"InterruptOn(on_expire={self.on_expire!r}) is not supported; allowed: 'reject'."
            )


ALL_DECISIONS = InterruptOn()

_CONFIG_KEYS = {f.name for f in fields(InterruptOn)}
_CONFIG_KEYS_CAMEL = {"allowedDecisions": "allowed_decisions", "argsSchema": "args_schema",
                      "expiresAfter": "expires_after", "onExpire": "on_expire"}


def interrupt_on_from_dict(name: str, config: Mapping[str, Any]) -> InterruptOn:
    """LangChain's ``InterruptOnConfig`` dict (``allowed_decisions``, ``description``, ``when``,
    ``args_schema``) as an :class:`InterruptOn`; interlock's own fields are accepted too.
    ``args_schema`` is accepted and not used: the request carries the tool's own schema."""
    values: dict[str, Any] = {}
    for key, value in config.items():
        field = _CONFIG_KEYS_CAMEL.get(key, key)
        if field == "args_schema":
            continue
        if field not in _CONFIG_KEYS:
            raise ConfigurationError(
                f"interrupt_on[{name!r}] has the unknown key {key!r}; known keys are "
                f"{sorted(_CONFIG_KEYS | {'args_schema'})}."
            )
        values[field] = value
    allowed = values.get("allowed_decisions")
    if isinstance(allowed, str) or not allowed:
        raise ConfigurationError(
            f"interrupt_on[{name!r}] needs 'allowed_decisions': a non-empty list drawn from "
            f"{list(DECISION_TYPES)}, e.g. {{'allowed_decisions': ['approve', 'reject']}}; got "
            f"{allowed!r}."
        )
    try:
        return InterruptOn(**values)
    except ConfigurationError as exc:
        raise ConfigurationError(f"interrupt_on[{name!r}]: {exc}") from None
    except TypeError as exc:
        raise ConfigurationError(f"interrupt_on[{name!r}]: {exc}") from None


def is_pattern(key: str) -> bool:
    return any(ch in key for ch in "*?[")


_ARGS_JSON = json.JSONEncoder(ensure_ascii=False)
"""``json.dumps(..., ensure_ascii=False)``, built once (``json.dumps`` with options builds an
encoder at every call)."""


def default_description(prefix: str, call: ToolCall) -> str:
    args = _ARGS_JSON.encode(call.args)
    return f"{prefix}\n\nTool: {call.name}\nArgs: {args}"


InterruptMode = Literal["batched", "per_call"]
InvalidArgs = Literal["ask", "model"]
StateMessages = Callable[[Sequence[Message]], Sequence[Any]]
"""Turns interlock's messages into those a LangChain-style callable reads (e.g.
``interlock.integrations.langchain.to_langchain``)."""


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT_EDIT_NOTICE"


DEFAULT_EDIT_NOTICE = _Default()
"""``HumanInTheLoop(edit_notice=...)``'s default: interlock's own note (see the docs)."""


def _invalid_args(call: ToolCall, turn: ModelTurn) -> str | None:
    """What is wrong with ``call``'s arguments for its tool (``None``: nothing known)."""
    if call.args_error is not None:
        return f"they could not be parsed ({call.args_error})"
    tool = turn.tools.get(call.name)
    if tool is None:
        return None
    try:
        tool.validate_args(dict(call.args))
    except ArgumentError as exc:
        return "; ".join(exc.errors)
    return None


class HumanInTheLoop(Middleware):
    """Pause tool calls named in ``interrupt_on`` until a person decides.

    ``interrupt_on`` maps tool names to ``True`` (all four decisions), ``False`` (never pause),
    an :class:`InterruptOn`, or LangChain's dict form ``{"allowed_decisions": [...],
    "description": ...}``. A key may be a glob pattern (``"git_*"``, ``"*"``): an exact name
    wins over patterns, and among patterns the first matching one in the mapping's order.
    Names that are not tools of the agent, and patterns that match none, are rejected when the
    ``Agent`` is built.

    ``edit_notice``: the note put before the result of a call a reviewer edited. By default
    interlock's note; a string replaces its first sentence as in LangChain (``"<your text>
    Executed instead: NAME with arguments {...}.``" then ``Tool response:``); ``None`` adds
    no note. ``interrupt_mode="per_call"``: one request (interrupt) per gated call instead of
    one per model turn, each answered on its own (``Command(resume={interrupt_id:
    decision})``, ``resume(..., interrupt_id=...)`` or a mapping ``{tool_call_id: decision}``).

    ``invalid_args``: what happens to a gated call whose arguments do not match its tool's
    schema (or could not be parsed). ``"ask"`` (the default, as LangChain): a person is asked,
    and the request's ``reason`` says what is wrong (approved as is, the tool answers the model
    with the same error and is not run). ``"model"`` (as Pydantic AI): nobody is asked; the
    model gets the validation error as the call's result and may call again, and the corrected
    call is reviewed as any other.

    ``state_messages``: how a LangChain-style ``description`` ``(tool_call, state, runtime)``
    or ``when`` (``request.state["messages"]``) sees the conversation: interlock's messages by
    default; ``interlock.compat.create_agent`` passes LangChain's message objects when
    langchain-core is installed (``interlock.integrations.langchain.to_langchain``).
    """

    def __init__(
        self,
        interrupt_on: Mapping[str, bool | InterruptOn | Mapping[str, Any]],
        *,
        description_prefix: str = DEFAULT_PREFIX,
        edit_notice: str | _Default | None = DEFAULT_EDIT_NOTICE,
        interrupt_mode: InterruptMode = "batched",
        invalid_args: InvalidArgs = "ask",
        state_messages: StateMessages | None = None,
    ) -> None:
        if invalid_args not in ("ask", "model"):
            raise ConfigurationError(
                f"HumanInTheLoop(invalid_args={invalid_args!r}) must be 'ask' (a person decides "
                f"a call with invalid arguments, told what is wrong) or 'model' (the model gets "
                f"the validation error back and nobody is asked).")
        self.invalid_args = invalid_args
        self.state_messages = state_messages
        """How the conversation is shown to LangChain-style callables (``state["messages"]``
        of a ``description`` or ``when``); ``None``: interlock's own messages."""
        if not isinstance(interrupt_on, Mapping):
            raise ConfigurationError(
                "HumanInTheLoop(interrupt_on=...) must map tool names to True, False or "
                f"InterruptOn(...), got {type(interrupt_on).__name__}."
            )
        exact: dict[str, InterruptOn | None] = {}
        patterns: list[tuple[str, InterruptOn | None]] = []
        for name, value in interrupt_on.items():
            cfg: InterruptOn | None
            if value is True:
                cfg = ALL_DECISIONS
            elif value is False or value is None:
                cfg = None
            elif isinstance(value, InterruptOn):
                cfg = value
            elif isinstance(value, Mapping):
                cfg = interrupt_on_from_dict(name, value)
            else:
                raise ConfigurationError(
                    f"interrupt_on[{name!r}] must be True, False, InterruptOn(...) or a dict "
                    f"like {{'allowed_decisions': ['approve', 'reject']}}, got {value!r}."
                )
            if is_pattern(name):
                patterns.append((name, cfg))
            else:
                exact[name] = cfg
        self.interrupt_on: dict[str, InterruptOn | Mapping[str, Any]] = {}
        """The configuration as LangChain's middleware shows it: ``True`` as
        ``{"allowed_decisions": ["approve", "edit", "reject", "respond"]}``, ``False`` (and
        ``None``) left out, dicts and ``InterruptOn`` as given. Only read back: the policy in
        force is :meth:`config_for`'s."""
        for name, value in interrupt_on.items():
            if value is True:
                self.interrupt_on[name] = {"allowed_decisions": list(DECISION_TYPES)}
            elif isinstance(value, InterruptOn | Mapping):
                self.interrupt_on[name] = value
        self._exact = exact
        self._patterns = patterns
        self.policy = {n: c for n, c in exact.items() if c is not None}
        """Gated exact names and their configs (patterns are resolved by :meth:`config_for`)."""
        self.description_prefix = description_prefix
        if interrupt_mode not in ("batched", "per_call"):
            raise ConfigurationError(
                f"HumanInTheLoop(interrupt_mode={interrupt_mode!r}) must be 'batched' (one "
                f"request per model turn) or 'per_call' (one request per gated call)."
            )
        self.interrupt_mode = interrupt_mode
        if not (isinstance(edit_notice, str | _Default) or edit_notice is None):
            raise ConfigurationError(
                f"HumanInTheLoop(edit_notice=...) must be a string or None (no note), got "
                f"{edit_notice!r}."
            )
        self.edit_notice = edit_notice
        self._notice: str | None = (None if isinstance(edit_notice, _Default)
                                    else edit_notice or "")

    def config_for(self, tool_name: str) -> InterruptOn | None:
        """The policy of ``tool_name``: its exact entry, else the first matching pattern's."""
        if tool_name in self._exact:
            return self._exact[tool_name]
        for pattern, cfg in self._patterns:
            if fnmatch.fnmatchcase(tool_name, pattern):
                return cfg
        return None

    def validate_tools(self, tool_names: Collection[str]) -> None:
        """Called by ``Agent``: every name in ``interrupt_on`` must be one of its tools and
        every pattern must match at least one of them."""
        unknown = sorted(set(self._exact) - set(tool_names))
        unmatched = [p for p, _ in self._patterns
                     if not any(fnmatch.fnmatchcase(n, p) for n in tool_names)]
        if unknown or unmatched:
            what = []
            if unknown:
                what.append(f"names tool(s) {unknown} that the agent does not have")
            if unmatched:
                what.append(f"has pattern(s) {unmatched} that match none of its tools")
            raise ConfigurationError(
                f"HumanInTheLoop(interrupt_on=...) {' and '.join(what)}, so they would never "
                f"be gated. The agent's tools are {sorted(tool_names)}; fix the name(s)."
            )

    def policy_for(self, tool_name: str) -> InterruptOn | None:
        """The policy that governs calls of ``tool_name`` (:meth:`config_for`)."""
        return self.config_for(tool_name)

    def allows_approve(self, tool_name: str) -> bool:
        cfg = self.config_for(tool_name)
        return cfg is None or "approve" in cfg.allowed_decisions

    def reviewers_for(self, tool_name: str) -> tuple[str, ...] | None:
        """The roles allowed to decide calls of ``tool_name`` (``None``: anyone); an edit
        *into* that tool needs them too (see :mod:`interlock.authz`)."""
        cfg = self.config_for(tool_name)
        return tuple(cfg.reviewers) if cfg is not None and cfg.reviewers is not None else None

    def describe(self, call: ToolCall, turn: ModelTurn) -> str | None:
        """What this policy tells the reviewer of ``call`` (its ``description``, or the default
        one) when the call is reviewed in ``turn``; ``None``: this middleware does not gate the
        tool. Used for a call a reviewer edited into another revision, which is reviewed under
        every rule of its tool, its description included."""
        cfg = self.config_for(call.name)
        if cfg is None:
            return None
        return self._describe(cfg, call, turn, self._view(turn))

    def _view(self, turn: ModelTurn) -> Callable[[], list[Any]]:
        """The conversation for ``state["messages"]``, converted once per turn when read."""
        made: list[list[Any]] = []

        def view() -> list[Any]:
            if not made:
                convert = self.state_messages
                made.append(list(convert(turn.messages)) if convert is not None
                            else list(turn.messages))
            return list(made[0])

        return view

    def after_model(self, turn: ModelTurn) -> None:
        view = self._view(turn)
        for call in turn.calls:
            cfg = self.config_for(call.name)
            if cfg is None:
                continue
            reason: str | None = None
            invalid = _invalid_args(call, turn)
            if invalid is not None and self.invalid_args == "model":
                turn.reject(call, f"Invalid arguments for tool {call.name!r}: {invalid}. The "
                                  f"tool was not run and nobody was asked; fix the arguments "
                                  f"and call it again.")
                continue
            if call.args_error is not None:
                reason = f"the model's arguments could not be parsed: {call.args_error}"
            elif (rule := turn.remembered(call.name)) is not None and remembered_applies(
                    rule, cfg, turn.started_by):
                turn.auto_approve(call, rule=f"remember:thread:{call.name}")
                continue
            elif cfg.when is not None:
                try:
                    asked = WhenCall(**call.model_dump(), thread_id=turn.thread_id)
                    asked._messages = view
                    asked._tool = turn.tools.get(call.name)
                    answer = cfg.when(asked)
                    if inspect.isawaitable(answer):  # never awaited: fail closed
                        if inspect.iscoroutine(answer):
                            answer.close()
                        raise TypeError("it returned an awaitable, not a bool")
                    if answer is None:  # e.g. a forgotten `return`: fail closed
                        gate, reason = True, "the `when` predicate returned None, not a bool"
                    else:
                        gate = bool(answer)
                except Exception as exc:  # fail closed
                    gate, reason = True, f"the `when` predicate raised {exc!r}"
                if not gate:
                    continue
            if reason is None and invalid is not None:
                reason = (f"the arguments do not match the tool's schema: {invalid} (approved "
                          f"as they are, the tool is not run and the model gets this error)")
            turn.review(
                call,
                allowed_decisions=cfg.allowed_decisions,
                description=self._describe(cfg, call, turn, view),
                reviewers=cfg.reviewers,
                expires_after=cfg.expires_after,
                reason=reason,
                approvals=cfg.approvals,
                self_approval=cfg.self_approval,
                escalate_to=cfg.escalate_to,
                escalate_after=cfg.escalate_after,
                per_call=self.interrupt_mode == "per_call",
                edit_notice=self._notice,
                allow_remember=cfg.allow_remember,
            )

    def _describe(self, cfg: InterruptOn, call: ToolCall, turn: ModelTurn,
                  view: Callable[[], list[Any]]) -> str:
        if isinstance(cfg.description, str):
            return cfg.description
        if cfg.description is not None:
            try:
                if description_style(cfg.description, call.name) == "langchain":
                    tool_call = {"name": call.name, "args": dict(call.args), "id": call.id,
                                 "type": "tool_call"}
                    state = {"messages": view()}
                    runtime = DescriptionRuntime(thread_id=turn.thread_id,
                                                 tool_call_id=call.id, messages_view=view)
                    return str(cfg.description(tool_call, state, runtime))
                return str(cfg.description(call, turn))
            except Exception as exc:
                return (
                    default_description(self.description_prefix, call)
                    + f"\n(The description callback failed: {exc!r})"
                )
        return default_description(self.description_prefix, call)
