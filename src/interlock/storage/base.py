"""The storage Protocol every checkpointer implements, and the records it stores.

A thread is stored as

* one small **thread row** (:class:`ThreadRecord`): status, version, open turn, pending
  interrupts, remembered approvals, lease, head of the audit chain;
* its **messages**, appended once each (``seq`` 0, 1, 2 ...), never rewritten;
* one **journal row** per tool call (:class:`JournalEntry`), updated as the call moves
  through its states;
* its **audit rows** (:class:`AuditRecord`), append-only and hash-chained;
* **outbox events** (:class:`~interlock.outbox.OutboxEvent`): notifications written in the
  same commit as the change they announce, then delivered by a dispatcher.

Every write is one atomic :meth:`Checkpointer.commit` guarded by the thread's version
(compare-and-set), so two writers can never both advance a thread from the same state.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python

from ..errors import ConfigurationError
from ..errors import VersionConflict as VersionConflict  # where backends import it from
from ..interrupts import Interrupt, PathStep
from ..messages import Message, ToolCall, ToolMessage
from ..outbox import OutboxEvent
from ..review_request import index_calls, index_deadline

RESOLVED_KEPT = 20
"""How many answered interrupt ids a thread row remembers (see ``ThreadRecord.resolved``)."""

ThreadStatus = Literal["idle", "running", "interrupted", "completed", "failed"]


class CallState(StrEnum):
    """States of a tool call in the journal (SPEC §5.2)."""

    PROPOSED = "proposed"
    PENDING_REVIEW = "pending_review"
    APPROVED = "approved"
    EDITED = "edited"
    AUTO_APPROVED = "auto_approved"
    REJECTED = "rejected"
    RESPONDED = "responded"
    RUNNING = "running"
    INTERRUPTED = "interrupted"
    """The tool called ``interrupt()`` and waits for an answer."""
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNKNOWN = "unknown"
    """The process stopped while the call was ``running``: the outcome is not known."""
    WAITING = "waiting"
    """The call runs a sub-agent (``Agent.as_tool``) whose thread waits for someone; its
    result is the sub-agent's final answer (see ``JournalEntry.child_thread``)."""
    CANCELLED = "cancelled"
    EXPIRED = "expired"


RUNNABLE_STATES = frozenset({CallState.APPROVED, CallState.EDITED, CallState.AUTO_APPROVED})
FINAL_STATES = frozenset(
    {
        CallState.SUCCEEDED,
        CallState.FAILED,
        CallState.REJECTED,
        CallState.RESPONDED,
        CallState.CANCELLED,
        CallState.EXPIRED,
    }
)


_is_none = partial(operator.is_, None)
"""``value is None`` as a callable the serializer calls without a Python frame (it is called
for every optional field of every record it writes)."""


def omitted_when_none() -> Any:
    """A field of a :class:`_Record` that is ``None`` by default and left out of the record's
    JSON while ``None`` (a per-field rule: about half the cost of a serializer that rewrites
    the whole record)."""
    return Field(default=None, exclude_if=_is_none)


class RememberedApproval(BaseModel):
    """A standing approval: later calls of ``tool_name`` in the thread run without pausing."""

    tool_name: str
    scope: Literal["thread"] = "thread"
    created_at: datetime
    created_by: str
    tool_call_id: str
    """The decision that created the rule."""
    roles: list[str] | None = omitted_when_none()
    """The roles its creator held. A rule applies only while its creator could approve the
    call alone under the tool's policy then (:func:`interlock.authz.remembered_applies`)."""
    app: bool | None = omitted_when_none()
    """True: created by the application itself, through the library without a reviewer (no
    roles to check). A rule with neither ``roles`` nor ``app`` (stored by an earlier version)
    does not apply to a tool whose policy names reviewers."""


class _Record(BaseModel):
    """A record stored inside a row: unknown keys are ignored (rows written by a newer minor
    version stay readable) and its optional fields, declared with :func:`omitted_when_none`,
    are left out of its JSON while ``None``."""

    model_config = ConfigDict(extra="ignore")


class MarkRecord(_Record):
    """A stored ``after_model`` mark (see :mod:`interlock.middleware`): ``review``,
    ``reject`` or ``auto``."""

    kind: Literal["review", "reject", "auto"]
    allowed_decisions: list[str] | None = omitted_when_none()
    description: str | None = omitted_when_none()
    reviewers: list[str] | None = omitted_when_none()
    expires_after: float | None = omitted_when_none()
    """Seconds."""
    on_expire: str | None = omitted_when_none()
    reason: str | None = omitted_when_none()
    message: str | None = omitted_when_none()
    rule: str | None = omitted_when_none()
    by: str | None = omitted_when_none()
    approvals: int | None = omitted_when_none()
    self_approval: bool | None = omitted_when_none()
    escalate_to: list[str] | None = omitted_when_none()
    escalate_after: float | None = omitted_when_none()
    """Seconds."""
    per_call: bool | None = omitted_when_none()
    edit_notice: str | None = omitted_when_none()
    allow_remember: bool | None = omitted_when_none()


class HookProgress(_Record):
    """How far the ``after_model`` hooks of the open turn got: the next hook to run, the
    answers it was given to its ``interrupt()`` calls, the marks of the hooks before it."""

    index: int = 0
    answers: list[Any] = Field(default_factory=list)
    marks: dict[str, MarkRecord] = Field(default_factory=dict)
    done: bool = False
    """All hooks ran and their marks are applied to the journal."""


class ReviewSettings(_Record):
    """How a call pauses for review, captured when the pause is created; never re-evaluated."""

    kind: Literal["review"] = "review"
    allowed_decisions: list[str] = Field(default_factory=list)
    reviewers: list[str] | None = omitted_when_none()
    expires_after: float | None = omitted_when_none()
    expires_at: datetime | None = omitted_when_none()
    on_expire: str | None = omitted_when_none()
    by: str | None = omitted_when_none()
    reason: str | None = omitted_when_none()
    """``outcome_unknown`` for the question raised after a crash; a policy's reason otherwise."""
    description: str | None = omitted_when_none()
    per_call: bool | None = omitted_when_none()
    edit_notice: str | None = omitted_when_none()
    """``None``: the default note after an edit; ``""``: none; else the note's first sentence."""
    approvals: int | None = omitted_when_none()
    """Distinct approvals the call needed (``None``: one)."""
    self_approval: bool | None = omitted_when_none()
    """``False``: whoever started the run could not approve it."""
    allow_remember: bool | None = omitted_when_none()
    """``False``: an approval of it could not be remembered (``None``: it could)."""
    escalate_to: list[str] | None = omitted_when_none()
    escalate_after: float | None = omitted_when_none()
    revision: int | None = omitted_when_none()
    """The revision decided, where an edit made one (``None``: the model's proposal)."""


class EditedCall(_Record):
    name: str
    args: dict[str, Any]


class DecisionRecord(_Record):
    """The decision that settled a call, as stored in its journal row."""

    type: Literal["approve", "edit", "reject", "respond"]
    message: str | None = omitted_when_none()
    remember: Literal["thread"] | None = omitted_when_none()
    edited_action: EditedCall | None = omitted_when_none()
    tool_call_id: str | None = omitted_when_none()
    metadata: dict[str, Any] | None = omitted_when_none()
    """What the reviewer gave the tool with the decision (``ToolContext.decision_metadata``)."""


class ParentLink(_Record):
    """Where a sub-agent's thread comes from: the call ``tool_call_id`` of tool ``tool_name``
    in thread ``thread_id``, run by the agent named ``agent``. Its requests are decided, and
    the thread is recovered, cancelled and expired, through that thread."""

    thread_id: str
    tool_call_id: str
    tool_name: str
    agent: str
    above: list[PathStep] | None = omitted_when_none()
    """The sub-agent calls from the top-most thread down to ``thread_id`` (``None`` when
    ``thread_id`` is the top-most thread, or in rows stored before it was recorded)."""

    def steps(self) -> list[PathStep]:
        """The path from the top-most thread down to this call."""
        return [*(self.above or []), PathStep(thread_id=self.thread_id, agent=self.agent,
                                      tool_call_id=self.tool_call_id, tool_name=self.tool_name)]

    @property
    def root_thread_id(self) -> str:
        """The top-most thread, where this thread's requests are decided."""
        return self.above[0].thread_id if self.above else self.thread_id

    def same_call(self, other: ParentLink) -> bool:
        return (self.thread_id, self.tool_call_id, self.tool_name, self.agent) == (
            other.thread_id, other.tool_call_id, other.tool_name, other.agent)


class ThreadRecord(BaseModel):
    thread_id: str
    status: ThreadStatus = "idle"
    version: int = 0
    created_at: datetime
    updated_at: datetime
    message_count: int = 0
    turn: int | None = None
    """``seq`` of the assistant message whose tool calls are not all answered yet."""
    hooks: HookProgress | None = None
    """Progress of the ``after_model`` hooks of the open turn (index, answers, marks)."""
    pending: list[Interrupt] = Field(default_factory=list)
    resolved: list[str] = Field(default_factory=list)
    """Ids of the interrupts most recently answered by a resume (oldest first, the last
    :data:`RESOLVED_KEPT`), so that a late resume of one of them is told it lost the race
    (``InterruptConflict``) rather than that the id never existed (``StaleInterrupt``)."""
    remembered: list[RememberedApproval] = Field(default_factory=list)
    lease_owner: str | None = None
    lease_until: datetime | None = None
    audit_seq: int = 0
    audit_hash: str = ""
    error: str | None = None
    preview: str = ""
    """First characters of the latest user message (for inbox listings)."""
    started_by: str | None = None
    """Who sent the message that started the current run, when the caller said so (review
    requests it raises record it for ``InterruptOn(self_approval=False)``)."""
    last_decision: str = ""
    """The latest decision, e.g. ``approved execute_sql (alice)`` (for inbox listings)."""
    outcome: str = ""
    """How the latest run ended: the start of the final answer, a cancellation or the error."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_by: str | None = None
    """Who created the thread (``None``: the application itself, or a thread stored before
    creators were recorded). See :mod:`interlock.authz` for what the creator may do."""
    started_by_roles: list[str] = Field(default_factory=list)
    """The roles ``started_by`` held when it started the run: remembered approvals apply only
    to runs started by an identity that may post to the thread (:mod:`interlock.authz`)."""
    deciders: list[str] = Field(default_factory=list)
    """Reviewers who decided one of the thread's calls (they may read it)."""
    parent: ParentLink | None = None
    """Set on the thread of a sub-agent (``Agent.as_tool``): the parent's call that runs it."""
    trace: str | None = None
    """The W3C ``traceparent`` of the current run's first span, when tracing is on
    (:mod:`interlock.observe`): a run resumed in another process continues that trace."""
    results_unseen: bool | None = omitted_when_none()
    """True while the thread's last message is a tool result: the model has not been called
    with it yet (a run that failed there has work left for the sweep, see
    :func:`needs_sweep`)."""


class JournalEntry(BaseModel):
    """One tool call and everything that happened to it."""

    tool_call_id: str
    turn: int
    position: int
    name: str
    args: dict[str, Any]
    state: CallState
    exec_name: str | None = None
    """The tool that runs, when a reviewer's edit changed it (``None``: ``name``)."""
    exec_args: dict[str, Any] | None = None
    """The arguments it runs with, when an edit changed them (``None``: ``args``)."""
    decision: DecisionRecord | None = None
    decided_by: str | None = None
    review: ReviewSettings | None = None
    """Review settings captured when the pause was created (allowed decisions, reviewers,
    deadline); never re-evaluated."""
    answers: list[Any] = Field(default_factory=list)
    """Answers to the ``interrupt()`` calls the tool made, in order."""
    paused_from: CallState | None = None
    """The runnable state to return to once an ``interrupt()`` inside the tool is answered."""
    result: ToolMessage | None = None
    attempts: int = 0
    updated_at: datetime
    child_thread: str | None = None
    """For a call of a sub-agent (``Agent.as_tool``): the thread the sub-agent runs in."""
    run_owner: str | None = None
    """The lease owner ("host|pid|nonce") of the run that stored this attempt as ``running``:
    the one process that may have called its tool. A process whose own ``running`` write
    failed knows its attempt never started, but only an entry with its own owner is that
    attempt: another process may have stored the same attempt number and run the tool."""

    @property
    def proposed(self) -> ToolCall:
        """The call as the model proposed it."""
        return ToolCall(id=self.tool_call_id, name=self.name, args=self.args)

    @property
    def effective(self) -> ToolCall:
        """The call that runs: the model's, or the reviewer's version after an edit."""
        return ToolCall(id=self.tool_call_id, name=self.exec_name or self.name,
                        args=self.exec_args if self.exec_args is not None else self.args)


class AuditRecord(BaseModel):
    """One append-only, hash-chained audit row, signed with the audit key."""

    thread_id: str
    seq: int
    ts: datetime
    kind: str
    actor: str
    tool_call_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    prev_hash: str
    hash: str
    key_id: str | None = None
    """Fingerprint of the audit key whose HMAC ``hash`` is (None: an unsigned row written
    before audit keys existed, whose ``hash`` is a plain SHA-256)."""
    id: int | None = None
    """Global insertion order, assigned by the store."""


ChangeCursor = tuple[int, str]
"""A position in a store's change feed (see :meth:`Checkpointer.changes`): compared as a tuple;
opaque to callers, who only pass back what the store returned."""


@dataclass
class ChangePage:
    """Threads whose row changed after a cursor, in change order, and the cursor to pass next."""

    threads: list[ThreadRecord]
    cursor: ChangeCursor
    held: bool = False
    """Changes committed after the cursor exist that are not returned yet, because a
    transaction that started before them is still open (Postgres): read again shortly."""


def review_deadline(thread: ThreadRecord) -> datetime | None:
    """The earliest ``expires_at`` — or ``escalate_at`` of a call not escalated yet — among the
    thread's pending review calls (``None``: no deadline). Stores keep it in an indexed column,
    so that expiry and escalation read only what is due."""
    times = [d for intr in thread.pending if intr.kind == "review"
             and (d := index_deadline(intr.value)) is not None]
    return min(times) if times else None


def needs_sweep(thread: ThreadRecord) -> bool:
    """Whether the recovery sweep must look at the thread: a run holds it (``running``: its
    owner may be gone), or its run failed part-way with work left (``failed`` with an open
    turn — an approved call not run yet, results not handed on — or with tool results the
    model was not called with). Stores with a :class:`SweepIndex` keep it in an indexed
    column, so that the sweep reads only these threads."""
    if thread.status == "running":
        return True
    return thread.status == "failed" and (thread.turn is not None or bool(thread.results_unseen))


SEARCH_CHARS = 600
"""Characters of a thread's search text (see :func:`search_text`) that stores keep."""

_SEARCH_JSON = json.JSONEncoder(ensure_ascii=False, default=str)
"""``json.dumps(..., ensure_ascii=False, default=str)``, built once (``json.dumps`` with options
builds an encoder at every call)."""


def search_text(thread: ThreadRecord) -> str:
    """What a text search of the thread list matches, lower-cased: the thread id, the preview
    of its latest message, and for each pending request the tool names with their arguments
    (as JSON) or the question. Stores keep it in a column next to the thread row, so a search
    never loads or parses threads."""
    parts = [thread.thread_id, thread.preview]
    for intr in thread.pending:
        value = intr.value
        if intr.kind == "review":
            parts += [f"{name} {_SEARCH_JSON.encode(args)}" for name, args in index_calls(value)]
        else:
            parts.append(value if isinstance(value, str) else _SEARCH_JSON.encode(value))
    return _storable(" ".join(parts).lower()[:SEARCH_CHARS])


def search_key(text: str) -> str:
    """A search query as stores compare it with :func:`search_text` (a lower-cased substring)."""
    return _storable(text.strip().lower()[:SEARCH_CHARS])


def _storable(text: str) -> str:
    """Text every store can index: NUL as a space, a lone surrogate as its escape."""
    return text.replace("\x00", " ").encode("utf-8", "backslashreplace").decode("utf-8")


def metadata_contains(have: Any, want: Any) -> bool:
    """Whether the JSON value ``have`` contains ``want``, as Postgres's ``jsonb @>`` decides
    it (LangGraph's thread metadata filter): an object contains every key of ``want`` with a
    value that contains its value, an array contains each element of ``want`` in one of its
    own elements, and a scalar equals one of the same JSON type (``true`` is not ``1``,
    ``1`` is ``1.0``). Stores filter :meth:`Checkpointer.list_threads` by ``metadata`` so."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            k in have and metadata_contains(have[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and all(
            any(metadata_contains(h, w) for h in have) for w in want)
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return type(have) is type(want) and have == want
    if isinstance(want, int | float):
        if isinstance(have, bool) or not isinstance(have, int | float):
            return False
        return have == want or (have != have and want != want)  # NaN is stored as one value
    return False


_UNINDEXABLE = re.compile("[\x00\ufffd\ud800-\udfff]")


def _indexable(value: Any) -> Any:
    """``value`` with every string (keys too) that a ``jsonb`` value cannot hold (NUL, a lone
    surrogate) rewritten one-to-one: such a character and U+FFFD itself become U+FFFD and
    four hex digits, so two strings are equal exactly when their rewritten forms are, and
    containment is decided the same. Infinite and NaN numbers become such strings too."""
    if isinstance(value, str):
        if _UNINDEXABLE.search(value) is None:
            return value
        return _UNINDEXABLE.sub(lambda m: f"\ufffd{ord(m.group()):04x}", value)
    if isinstance(value, dict):
        return {_indexable(str(k)): _indexable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_indexable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return f"\ufffd{value!r}"
    return value


def metadata_index(metadata: dict[str, Any] | None) -> str | None:
    """A thread's (or a filter's) metadata as the JSON text a store indexes and compares with
    ``jsonb @>`` (``None`` for none): JSON-native values, with what ``jsonb`` cannot hold
    rewritten one-to-one (:func:`_indexable`), so the index decides exactly as
    :func:`metadata_contains`."""
    if not metadata:
        return None
    native = to_jsonable_python(metadata, fallback=str)
    return json.dumps(_indexable(native), ensure_ascii=False, separators=(",", ":"))


def thread_json(thread: ThreadRecord) -> str:
    """How a thread row is stored: fields at their default are left out (reading fills them
    in again)."""
    # the serializer itself: ``model_dump_json`` passes it its sixteen options, which costs
    # more than serialising a small row (the same bytes: the rest are at their defaults)
    return thread.__pydantic_serializer__.to_json(thread, exclude_defaults=True).decode()


def journal_json(entry: JournalEntry) -> str:
    """How a journal row is stored: fields at their default (``None``, ``[]``, ``0``) are left
    out; reading fills them in again."""
    return entry.__pydantic_serializer__.to_json(entry, exclude_defaults=True).decode()


def posted_a_message(event_id: str) -> bool:
    """Whether the event is a request's ``request.raised`` or ``request.escalated`` event:
    the ones that post a message (Slack) which the request's later events update, so a prune
    keeps them while their thread waits (see :meth:`Checkpointer.outbox_prune`)."""
    return event_id.startswith("evt_") and (
        event_id.endswith("_raised") or "_escalated" in event_id)


def ts_key(at: datetime) -> str:
    """A UTC timestamp as fixed-width text that sorts like the time (for text columns)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")


_NO_ID = {"id"}


def audit_json(record: AuditRecord) -> str:
    """How an audit row is stored by a backend that keeps ``id`` in a column of its own."""
    return record.__pydantic_serializer__.to_json(record, exclude=_NO_ID).decode()


def audit_rows(change: Commit) -> list[str]:
    """The JSON of a commit's audit rows, as stores write them: ``change.audit_rows`` when it
    holds one for each row, else :func:`audit_json` of each."""
    if len(change.audit_rows) == len(change.audit):
        return change.audit_rows
    return [audit_json(rec) for rec in change.audit]


def stored_audit(row_id: int, thread_id: str, seq: int, data: str | bytes) -> AuditRecord:
    """An audit row as a backend stores it, at its place: the thread and position are those
    of the columns that listings select and order by, not the copies inside ``data``, so a
    row moved to another thread or position no longer matches its signed hash (which covers
    the thread and position it was written at)."""
    return AuditRecord.model_validate_json(data).model_copy(
        update={"id": row_id, "thread_id": thread_id, "seq": seq})


@dataclass
class ThreadSnapshot:
    """Everything needed to continue a thread: the row, the messages, the open turn's journal."""

    thread: ThreadRecord
    messages: list[Message]
    journal: dict[str, JournalEntry]


@dataclass
class Commit:
    """One atomic change to a thread. ``thread.version`` is the new version."""

    thread: ThreadRecord
    messages: list[Message] = field(default_factory=list)
    """Appended with ``seq`` starting at the previous ``message_count``."""
    journal: list[JournalEntry] = field(default_factory=list)
    """Inserted or replaced by ``tool_call_id``."""
    audit: list[AuditRecord] = field(default_factory=list)
    audit_rows: list[str] = field(default_factory=list)
    """The JSON each row of ``audit`` is stored as, made when it was signed (the rows are
    serialised once); empty: the store serialises them (see :func:`audit_rows`)."""
    outbox: list[OutboxEvent] = field(default_factory=list)
    """Notification events, inserted (new ids only)."""
    readers: Sequence[str] = ()
    """Who may read the thread as of this change: the read keys that
    ``list_threads(readers=...)`` matches, kept next to the row and replaced at every commit.
    The layer that owns the rule computes them (the run transaction, with
    :func:`interlock.authz.read_keys`); the store only keeps them. Empty: the thread is
    listed only without a ``readers`` filter."""
    enqueue: bool = False
    """Also put the thread on the run queue (:class:`RunQueue`), in the same transaction, for
    a worker process to continue. Stores without a run queue refuse such a commit."""


ReadKeys = Callable[[ThreadRecord], Sequence[str]]
"""Who may read a thread, as read keys (:func:`interlock.authz.read_keys`). A SQL backend is
given it to index the threads a database already holds when it first builds the readers
index; every later change brings its keys on the :class:`Commit`."""


def readers_of(rows: Iterable[tuple[str, str, Any, str]], read_keys: ReadKeys | None,
               store: object) -> list[tuple[str, str, str, Any]]:
    """The readers index of threads stored before it existed: ``(key, thread_id, status,
    updated_at)`` for every ``(thread_id, status, updated_at, row JSON)``. Raises (so that the
    migration is rolled back and nothing changes) when there are rows and the store was not
    given ``read_keys``."""
    found: list[tuple[str, str, str, Any]] = []
    for thread_id, status, updated, data in rows:
        if read_keys is None:
            raise ConfigurationError(
                f"{store!r} holds threads stored before interlock indexed who may read them; "
                f"the index is built once, when the store is first opened by this version, "
                f"and needs the rule: open it with read_keys=interlock.authz.read_keys (for "
                f"example SqliteCheckpointer(path, read_keys=read_keys), or from_url(url, "
                f"read_keys=read_keys); `interlock serve` and the CLI do this). Nothing was "
                f"changed.")
        found.extend((k, thread_id, status, updated)
                     for k in read_keys(ThreadRecord.model_validate_json(data)))
    return found


@runtime_checkable
class Checkpointer(Protocol):
    """Durable store of threads. Implemented by memory, SQLite and Postgres backends."""

    async def load(self, thread_id: str, *, after_seq: int = 0) -> ThreadSnapshot | None:
        """Thread row, its messages from ``seq`` ``after_seq`` on (all of them by default) and
        the journal rows of the open turn; None if unknown. One consistent snapshot."""
        ...

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        """Apply ``change`` atomically if the stored version equals ``expected_version``
        (``None``: the thread must not exist yet). Raises :class:`VersionConflict`."""
        ...

    async def list_threads(
        self, *, status: str | None = None, limit: int = 50, before: datetime | None = None,
        before_id: str | None = None, search: str | None = None,
        readers: Sequence[str] | None = None, top_level: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> list[ThreadRecord]:
        """Threads, newest first by ``(updated_at, thread_id)``, optionally filtered by status,
        by ``search``, a case-insensitive substring of :func:`search_text` (every character
        literal, any length), by ``readers``: only threads whose read keys
        (:attr:`Commit.readers`, kept next to the row) include one of these, and
        with ``top_level`` only threads that are not a sub-agent's (``parent`` is None; the
        parent's thread id is kept next to the row). ``metadata``: only threads whose
        :attr:`ThreadRecord.metadata` contains it (:func:`metadata_contains`, LangGraph's
        thread filter; Postgres answers it from a GIN index of :func:`metadata_index`).

        ``before`` alone: only threads with ``updated_at < before``. With ``before_id``: only
        threads strictly before the cursor ``(before, before_id)`` in that order, so that a page
        boundary between threads with the same ``updated_at`` skips none of them (see
        :mod:`interlock.paging`). Durable stores answer these filters from indexes."""
        ...

    async def count_threads(self, *, status: str | None = None, search: str | None = None,
                            top_level: bool = False) -> int:
        """How many threads :meth:`list_threads` would list with these filters, from the
        stored columns (no thread is loaded)."""
        ...

    async def journal(self, thread_id: str) -> list[JournalEntry]:
        """Every journal row of a thread, in call order."""
        ...

    async def changes(self, *, after: ChangeCursor | None, limit: int = 500) -> ChangePage:
        """The change feed: threads whose row was committed after ``after``, oldest change
        first, each at its latest version (several changes of one thread between two reads
        come back as one), and the cursor to pass next time. ``after=None`` returns no rows and
        the cursor of "now". Every committed change is seen by a reader that keeps passing the
        returned cursor, whatever the order in which concurrent transactions commit; the cost
        is proportional to the rows returned, not to the number of threads."""
        ...

    async def due(self, *, now: datetime, limit: int = 200) -> list[str]:
        """Ids of threads with a pending review call whose deadline (:func:`review_deadline`)
        is at or before ``now``, earliest first; read from an index, not by loading threads."""
        ...

    async def audit(
        self, *, thread_id: str | None = None, after_id: int = 0, limit: int = 1000
    ) -> list[AuditRecord]:
        """Audit rows in insertion order, after the given global id."""
        ...

    async def outbox_claim(
        self, owner: str, *, now: datetime, until: datetime, limit: int = 20
    ) -> list[OutboxEvent]:
        """Lease up to ``limit`` pending events that are due (``next_at <= now``) and not
        leased by a live dispatcher (``lease_until`` unset or ``< now``) to ``owner`` until
        ``until``; oldest due first. Two dispatchers never get the same event while its lease
        runs."""
        ...

    async def outbox_update(self, event: OutboxEvent, *, leased_by: str | None) -> bool:
        """Store the event's status, schedule, deliveries and lease (``event.lease_owner`` /
        ``lease_until``) if its stored lease owner is ``leased_by`` (``None``: not leased).
        Returns False, storing nothing, otherwise."""
        ...

    async def outbox_get(self, event_id: str) -> OutboxEvent | None: ...

    async def outbox_prune(self, *, before: datetime,
                           statuses: Sequence[str] = ("delivered",)) -> int:
        """Delete events created before ``before`` whose status is one of ``statuses``,
        except those :func:`posted_a_message` names while their thread is ``interrupted``
        (later events of the request update what they posted); returns how many were
        deleted."""
        ...

    async def outbox_list(
        self, *, status: str | None = None, thread_id: str | None = None, limit: int = 100,
        id_prefix: str | None = None,
    ) -> list[OutboxEvent]:
        """Events, oldest first, optionally filtered by status, thread and the start of
        their id (:func:`interlock.outbox.request_event_prefix`: the events of a request)."""
        ...

    async def close(self) -> None: ...


# -- optional capabilities ----------------------------------------------------------------------
#
# A checkpointer implements the Protocol above. The capabilities below are optional: a backend
# declares one by implementing its methods (checked with ``isinstance``), and the conformance
# suite runs their tests only for the backends that have them (see ``capabilities``).

ROW_ONLY = 2**62
"""``load(after_seq=ROW_ONLY)`` starts past every message: the thread row and the open turn
only."""

MAX_DEPTH = 64
"""How far parent links are followed (a guard against a store that links in a circle)."""


async def parent_chain(store: Checkpointer, thread_id: str) -> list[ParentLink]:
    """The parent links from ``thread_id`` up to its top-most thread (empty: not a
    sub-agent's thread, or unknown), read from the thread rows only."""
    chain: list[ParentLink] = []
    tid = thread_id
    while len(chain) < MAX_DEPTH:
        snap = await store.load(tid, after_seq=ROW_ONLY)
        if snap is None or snap.thread.parent is None:
            break
        chain.append(snap.thread.parent)
        tid = snap.thread.parent.thread_id
    return chain


RUN_QUEUE = "run_queue"
CHANGE_SIGNALS = "change_signals"
SWEEP_INDEX = "sweep_index"
EVENT_RELAY = "event_relay"


@dataclass(frozen=True)
class QueuedRun:
    """A thread on the run queue: stored input waits for a worker to continue the run."""

    thread_id: str
    ticket: int
    """Changes every time the thread is queued again (so finishing an older claim never removes
    a newer entry)."""
    attempts: int
    """How many times it was claimed (1 on the first claim)."""
    queued_at: datetime
    lease_owner: str | None = None
    lease_until: datetime | None = None


@runtime_checkable
class RunQueue(Protocol):
    """Optional capability: a queue of runs for separate worker processes (``interlock
    worker``). A commit with ``enqueue=True`` puts its thread on the queue in the same
    transaction; a worker claims entries for a while (a lease), renews the claim while the run
    goes on, and removes the entry when it is done. An entry whose claim ran out (its worker
    died) can be claimed again. Claims never overlap: two workers never hold one entry."""

    async def queue_claim(self, owner: str, *, now: datetime, until: datetime,
                          limit: int = 1) -> list[QueuedRun]:
        """Claim up to ``limit`` entries that nobody holds (no claim, or one that ended before
        ``now``) for ``owner`` until ``until``, oldest first."""
        ...

    async def queue_extend(self, owner: str, thread_ids: Sequence[str], *,
                           until: datetime) -> list[str]:
        """Extend ``owner``'s claims of these threads to ``until``; returns the ids it still
        held (an entry queued again or claimed by another worker is not extended)."""
        ...

    async def queue_release(self, run: QueuedRun, owner: str, *, at: datetime) -> bool:
        """Give a claimed entry back, to be claimed again from ``at`` on. False (nothing
        changed) when ``owner`` no longer holds that ticket."""
        ...

    async def queue_done(self, run: QueuedRun, owner: str) -> bool:
        """Remove a claimed entry: the run is done. False (nothing removed) when ``owner`` no
        longer holds that ticket (e.g. the thread was queued again meanwhile)."""
        ...

    async def queue_list(self, *, limit: int = 100) -> list[QueuedRun]:
        """Entries on the queue, oldest first (claimed or not)."""
        ...


SignalTopic = Literal["changes", "queue"]


@runtime_checkable
class ChangeSignals(Protocol):
    """Optional capability: wake-ups sent by every commit of any process (Postgres
    ``LISTEN/NOTIFY``): ``changes`` after any thread commit, ``queue`` after a commit that
    queued a run. A wake-up carries no data (read the change feed or claim from the queue);
    after a lost connection every callback is called once, since signals may have been
    missed."""

    def on_signal(self, topic: SignalTopic, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (from another thread) at each signal of ``topic``; returns a
        function that stops it."""
        ...


@runtime_checkable
class SweepIndex(Protocol):
    """Optional capability: the threads for which :func:`needs_sweep` holds, read through an
    index of those threads alone (the recovery sweep then costs what is to be swept, not what
    the store holds). Without it, the sweep lists threads by status."""

    async def sweep_candidates(self, *, limit: int = 200,
                               after: str | None = None) -> list[ThreadRecord]:
        """Up to ``limit`` threads that :func:`needs_sweep` marks, by ``thread_id``, starting
        after ``after``."""
        ...


@runtime_checkable
class EventRelay(Protocol):
    """Optional capability: the events of a run (``interlock.events``, as JSON) sent by the
    process that runs it to every process listening (Postgres ``NOTIFY``), so that an
    API-only server streams what its workers do. Best effort: an event is small (large
    fields are cut), is not stored, and one sent while a listener is disconnected is lost."""

    async def relay_event(self, thread_id: str, event: dict[str, Any]) -> None:
        """Send ``event`` of thread ``thread_id`` to the listeners."""
        ...

    def on_relayed_event(
        self, callback: Callable[[str, dict[str, Any]], None]
    ) -> Callable[[], None]:
        """Call ``callback(thread_id, event)`` (from another thread) for every relayed event;
        returns a function that stops it."""
        ...


@dataclass(frozen=True)
class StoreHealth:
    """What a store says of itself for ``/api/health``: whether writes work now (``reason``:
    why not), and whether other processes' changes arrive live (``live_updates``: True;
    False with ``live_reason`` when they are seen only by polling; None before anything
    listens)."""

    writes: bool
    reason: str | None = None
    live_updates: bool | None = None
    live_reason: str | None = None


@runtime_checkable
class HealthCheck(Protocol):
    """Optional capability: a store that can tell whether writes work now (Postgres: not a
    standby, not read-only, reachable)."""

    async def health(self) -> StoreHealth:
        """Check with one round trip; never raises for an unreachable server."""
        ...


def capabilities(store: object) -> frozenset[str]:
    """The optional capabilities ``store`` has (``RUN_QUEUE``, ``CHANGE_SIGNALS``,
    ``SWEEP_INDEX``, ``EVENT_RELAY``)."""
    found = set()
    if isinstance(store, RunQueue):
        found.add(RUN_QUEUE)
    if isinstance(store, ChangeSignals):
        found.add(CHANGE_SIGNALS)
    if isinstance(store, SweepIndex):
        found.add(SWEEP_INDEX)
    if isinstance(store, EventRelay):
        found.add(EVENT_RELAY)
    return frozenset(found)


def no_run_queue(store: object) -> ConfigurationError:
    """The error for handing a run to a worker through a store without a run queue."""
    return ConfigurationError(
        f"{type(store).__name__} has no run queue, so a run cannot be handed to a worker "
        f"process; use PostgresCheckpointer for separate API and worker processes, or let "
        f"the process that stores the input run it (the default).")


def refuse_enqueue(store: object, change: Commit) -> None:
    """For stores without a run queue: a commit that asks to queue its run is refused."""
    if change.enqueue:
        raise no_run_queue(store)
