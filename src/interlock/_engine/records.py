"""Cheap operations on the engine's pydantic records.

The engine treats its records (thread rows, journal entries, messages) as values: a change is
a new record with some fields replaced. :func:`replaced` does what ``model_copy(update=...)``
does — a shallow copy, the changed fields set, no validation — in about half the time, which
matters on the paths that copy a thread row a dozen times per cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypedDict, TypeVar, Unpack

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from ..interrupts import Interrupt
from ..messages import ToolMessage
from ..storage.base import (
    CallState,
    DecisionRecord,
    HookProgress,
    JournalEntry,
    ParentLink,
    RememberedApproval,
    ReviewSettings,
    ThreadStatus,
)

M = TypeVar("M", bound=BaseModel)

_set = object.__setattr__


_SHAPES: dict[type[BaseModel], tuple[bool, bool]] = {}
"""Per record class, looked up once: whether it allows extra fields, and whether it has
private attributes (none of the engine's records does either)."""


def replaced(model: M, changes: Mapping[str, object]) -> M:
    """A shallow copy of ``model`` with the fields in ``changes`` replaced (not validated),
    like ``model.model_copy(update=changes)``. A name that is not a field of the model is a
    ``TypeError`` (``model_copy`` would store it where no one reads it)."""
    cls = type(model)
    fields = cls.__pydantic_fields__
    if not changes.keys() <= fields.keys():
        unknown = sorted(set(changes) - set(fields))
        raise TypeError(f"{cls.__name__} has no field(s) {', '.join(unknown)}")
    shape = _SHAPES.get(cls)
    if shape is None:
        shape = _SHAPES[cls] = (cls.model_config.get("extra") == "allow",
                                bool(cls.__private_attributes__))
    allows_extra, has_private = shape
    if allows_extra:
        return model.model_copy(update=changes)
    new = cls.__new__(cls)
    values = model.__dict__.copy()
    values.update(changes)
    fields_set = set(model.__pydantic_fields_set__)
    fields_set.update(changes)
    _set(new, "__dict__", values)
    _set(new, "__pydantic_extra__", None)
    _set(new, "__pydantic_fields_set__", fields_set)
    private = getattr(model, "__pydantic_private__", None) if has_private else None
    _set(new, "__pydantic_private__", None if private is None else
         {k: v for k, v in private.items() if v is not PydanticUndefined})
    return new


class ThreadChanges(TypedDict, total=False):
    """Fields of a thread row a step may change (:meth:`ThreadTxn.stage`); mypy checks each
    one against :class:`~interlock.storage.base.ThreadRecord`."""

    status: ThreadStatus
    version: int
    updated_at: datetime
    message_count: int
    turn: int | None
    hooks: HookProgress | None
    pending: list[Interrupt]
    resolved: list[str]
    remembered: list[RememberedApproval]
    lease_owner: str | None
    lease_until: datetime | None
    audit_seq: int
    audit_hash: str
    error: str | None
    preview: str
    started_by: str | None
    last_decision: str
    outcome: str
    metadata: dict[str, Any]
    created_by: str | None
    started_by_roles: list[str]
    deciders: list[str]
    parent: ParentLink | None
    trace: str | None
    results_unseen: bool | None


class EntryChanges(TypedDict, total=False):
    """Fields of a journal entry a step may change (:func:`entry_with`)."""

    state: CallState
    exec_name: str | None
    exec_args: dict[str, Any] | None
    decision: DecisionRecord | None
    decided_by: str | None
    review: ReviewSettings | None
    answers: list[Any]
    paused_from: CallState | None
    result: ToolMessage | None
    attempts: int
    updated_at: datetime
    child_thread: str | None
    run_owner: str | None


def entry_with(entry: JournalEntry, /, **changes: Unpack[EntryChanges]) -> JournalEntry:
    """A copy of ``entry`` with ``changes`` (:func:`replaced`: shallow, not validated); mypy
    checks each change against the entry's fields."""
    return replaced(entry, changes)
