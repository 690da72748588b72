"""What the :class:`~interlock.Agent` methods are given, parsed at the boundary: the input
of ``invoke`` / ``stream`` (messages or a :class:`Command`), the thread id (``thread_id=...``
or LangChain's ``config``), the thread id of a lookup, and the acting reviewer. Everything
behind the ``Agent`` methods works with the parsed values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from .authz import Reviewer, actor_of
from .errors import ConfigurationError, ThreadNotFound
from .messages import MESSAGE_ADAPTER, Message, UserMessage
from .text import check_input, check_thread_id, text_problem

_NOT_GIVEN: Any = object()


@dataclass(frozen=True, init=False)
class Command:
    """LangChain-style input: ``agent.invoke(Command(resume={"decisions": [...]}), thread_id=...)``.

    ``resume`` may be ``{"decisions": [...]}``, a list of decisions, a mapping
    ``{interrupt_id: answer}``, or a plain answer for a pending ``interrupt()``. LangGraph's
    ``update=``, ``goto=`` and ``graph=`` are refused with a ``ConfigurationError``: an
    interlock thread changes only through runs and decisions.
    """

    resume: Any

    def __init__(self, resume: Any = _NOT_GIVEN, *, update: Any = None, goto: Any = (),
                 graph: Any = None) -> None:
        given = [name for name, used in (
            ("update", update is not None),
            ("goto", goto is not None and not (isinstance(goto, tuple | list) and not goto)),
            ("graph", graph is not None)) if used]
        if given:
            raise ConfigurationError(
                f"Command({', '.join(f'{n}=...' for n in given)}): interlock's Command "
                f"supports only resume=..., because a thread's state changes only through runs "
                f"and decisions (LangGraph's update/goto/graph edit or route a graph, which "
                f"interlock has not). Answer the pending calls with Command(resume=...); to end "
                f"a paused run without running its calls, use agent.cancel(thread_id) "
                f"(agent.agent.cancel(thread_id) on create_agent's agent); to send new input, "
                f"invoke the agent with it once nothing is pending.")
        if resume is _NOT_GIVEN:
            raise ConfigurationError(
                "Command() needs resume=...: the decisions, e.g. "
                "Command(resume={'decisions': [{'type': 'approve'}]}).")
        object.__setattr__(self, "resume", resume)


def coerce_input(value: Any) -> list[Message]:
    """The input as messages; text that cannot be stored is refused (``InvalidText``)."""
    messages = _as_messages(value)
    for n, m in enumerate(messages):
        check_input(m, f"input message {n + 1} ({m.role})")
    return messages


_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
          "system": "system", "developer": "system", "tool": "tool"}
"""Role names as LangChain reads them (``convert_to_messages``), as interlock's roles."""

_SHAPES = ("a string (one user message), a message, a dict {'role': 'user', 'content': '...'}, "
           "a ('role', 'content') pair (role user/human, assistant/ai, system/developer), a "
           "list of these, {'messages': <any of these>}, or Command(resume=...)")


def _as_messages(value: Any) -> list[Message]:
    """The input as messages, read as LangGraph reads ``{"messages": ...}``: a list is a list
    of messages; anything else (a string, a ``("role", "content")`` pair, a dict, a message)
    is one message. A tuple that is not a pair is a sequence of messages too."""
    if isinstance(value, Mapping) and "messages" in value:
        value = value["messages"]
    if isinstance(value, list) or (isinstance(value, tuple) and not _is_pair(value)):
        return [_message(item, f"input message {n + 1}") for n, item in enumerate(value)]
    return [_message(value, "the input")]


def _is_pair(value: object) -> bool:
    return isinstance(value, tuple | list) and len(value) == 2 and isinstance(value[0], str)


def _message(item: Any, where: str) -> Message:
    """One message of the input: a string is a user message, a ``(role, content)`` pair or a
    dict with ``role`` (or LangChain's ``type``) and ``content`` is a message of that role."""
    if isinstance(item, str):
        return UserMessage(content=item)
    fields: dict[str, Any]
    if _is_pair(item):
        role, content = item
        if _ROLES.get(role) == "tool":
            raise ConfigurationError(
                f"Cannot use {short(item)} as {where}: a tool message needs its tool_call_id "
                f"and name; write it as a dict {{'role': 'tool', 'tool_call_id': ..., "
                f"'name': ..., 'content': ...}}.")
        fields = {"role": role, "content": content}
    elif isinstance(item, Mapping):
        fields = dict(item)
        if "role" not in fields and isinstance(fields.get("type"), str):
            fields["role"] = fields.pop("type")
    elif isinstance(item, BaseModel):
        fields = item.model_dump()
    else:
        raise ConfigurationError(
            f"Cannot use {type(item).__name__} {short(item)} as {where}; the input may be "
            f"{_SHAPES}.")
    role = fields.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise ConfigurationError(
            f"Cannot use {short(item)} as {where}: its role {role!r} is not one of "
            f"{sorted(_ROLES)}; the input may be {_SHAPES}.")
    fields["role"] = _ROLES[role]
    try:
        return MESSAGE_ADAPTER.validate_python(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:])) or 'message'}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigurationError(
            f"Cannot use {short(item)} as {where} ({problems}); the input may be "
            f"{_SHAPES}.") from None


def short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def thread_of(method: str, thread_id: object, config: object) -> str:
    """The thread id of an ``invoke`` / ``stream`` call: ``thread_id=...``, or LangChain's
    ``config={"configurable": {"thread_id": ...}}``."""
    spelling = (f"agent.{method}(message, thread_id='t1') (LangChain's "
                f"config={{'configurable': {{'thread_id': 't1'}}}} works too)")
    if config is not None:
        configurable = config.get("configurable") if isinstance(config, Mapping) else None
        from_config = configurable.get("thread_id") if isinstance(configurable, Mapping) \
            else None
        if from_config is None:
            raise ConfigurationError(
                f"{method}(config={short(config)}) names no thread: interlock reads only "
                f"config['configurable']['thread_id']. Write {spelling}."
            )
        extra = sorted(set(config) - {"configurable"}) if isinstance(config, Mapping) else []
        extra += sorted(f"configurable.{k}" for k in configurable if k != "thread_id") \
            if isinstance(configurable, Mapping) else []
        if extra:
            raise ConfigurationError(
                f"{method}(config=...) has {', '.join(map(repr, extra))}, which interlock does "
                f"not use (it reads only the thread id; set limits with Agent(max_turns=...)). "
                f"Pass only the thread: {spelling}."
            )
        if thread_id is not None and thread_id != from_config:
            raise ConfigurationError(
                f"{method}() got two different threads: thread_id={thread_id!r} and "
                f"config's thread_id {from_config!r}. Pass one of them."
            )
        thread_id = from_config
    if thread_id is None:
        raise ConfigurationError(f"{method}() needs a thread id: {spelling}.")
    if not isinstance(thread_id, str) or not thread_id:
        raise ConfigurationError(
            f"{method}(): the thread id must be a non-empty string, got {short(thread_id)}. "
            f"Write {spelling}."
        )
    return thread_id


def known_thread(thread_id: str, *, create: bool = False) -> str:
    """A thread id to look up or run on, checked once where ``Agent`` takes it: one with text
    no store can hold cannot name a thread (``ThreadNotFound``); an operation that may create
    the thread (``create``) refuses it as a new thread id instead (``InvalidText``). The
    charset of a new thread's id is checked when it is created (the run engine)."""
    if text_problem(thread_id) is not None:
        if create:
            check_thread_id(thread_id)
        raise ThreadNotFound(thread_id)
    return thread_id


def reviewer_of(reviewer: Reviewer | str | None) -> tuple[Reviewer | None, str]:
    """The acting identity and the name recorded for it; reserved names are refused."""
    check_input(reviewer.id if isinstance(reviewer, Reviewer) else reviewer, "the reviewer id")
    rv = Reviewer(reviewer) if isinstance(reviewer, str) else reviewer
    return rv, actor_of(rv)


def resumed_thread(thread_id: object) -> str:
    """The thread id ``resume()`` takes first; anything else there means it is missing."""
    if not isinstance(thread_id, str):
        raise ConfigurationError(
            f"resume() takes the thread id first, then the decisions: "
            f"agent.resume('t1', [{{'type': 'approve'}}]). It got "
            f"{type(thread_id).__name__} {short(thread_id)} where the thread id goes, so "
            f"the thread id is missing."
        )
    return thread_id


MAX_INDEX = 2**63 - 1
"""The largest row id or count any store takes (a signed 64-bit integer)."""


def count_of(name: str, value: object, minimum: int) -> int:
    """A paging parameter (``limit``, ``after_id``): a whole number from ``minimum`` to
    :data:`MAX_INDEX`, else a :class:`ConfigurationError` naming it (nothing is read)."""
    if isinstance(value, bool) or not isinstance(value, int) or not (
            minimum <= value <= MAX_INDEX):
        raise ConfigurationError(
            f"{name}={short(value)}: give a whole number from {minimum} to {MAX_INDEX:,}.")
    return value
