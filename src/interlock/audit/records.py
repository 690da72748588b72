"""Signed, hash-chained audit records.

Each row carries the hash of the previous row of its thread, and the thread row carries the
head (last seq and hash), so editing, deleting or reordering any row — including the last — is
detected by :func:`verify_chain`. The signed text names the row's thread and position (seq);
stores return a row at the place it is stored (their columns), so a row moved to another
thread or position no longer matches its hash, and rows whose global ids are out of their
chain's order are reported too. The hash of a row is an HMAC-SHA256 under the audit key
(:mod:`interlock.audit_key`), which is kept outside the database: someone who can write the
database but does not hold the key cannot rewrite a row and recompute the hashes after it.
Rows written before audit keys existed (``key_id`` unset) carry a plain SHA-256.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic_core import to_jsonable_python

from .._canonical import canonical_json
from ..storage.base import AuditRecord
from .key import AuditKey, load_key

GENESIS = "0" * 64


class AuditKind(StrEnum):
    """Every kind of audit row interlock writes (``AuditRecord.kind`` holds the value)."""

    MESSAGE_POSTED = "message_posted"
    """Someone sent a message to the thread (actor: who; data: its seq and SHA-256)."""
    RUN_STARTED = "run_started"
    """A run started (actor: who sent the input that started it)."""
    REQUEST_RAISED = "request_raised"
    """A review request was created (or grew) for gated calls."""
    DECISION = "decision"
    """A reviewer decided one call (approve / edit / reject / respond)."""
    APPROVAL_RECORDED = "approval_recorded"
    """An approval (or an edit) of a call that needs more approvals (quorum)."""
    ESCALATED = "escalated"
    """A call still pending at ``escalate_after`` was escalated to more roles."""
    RULE_CREATED = "rule_created"
    """An "approve and remember" decision created a standing approval."""
    RULE_REVOKED = "rule_revoked"
    AUTO_APPROVED = "auto_approved"
    """A call ran without review because a rule or middleware approved it."""
    REJECTED_BY_POLICY = "rejected_by_policy"
    INPUT_REQUESTED = "input_requested"
    """A tool or hook called ``interrupt()``."""
    INPUT_ANSWERED = "input_answered"
    TOOL_STARTED = "tool_started"
    TOOL_FINISHED = "tool_finished"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    OUTCOME_UNKNOWN = "outcome_unknown"
    """A call was ``running`` when its process stopped."""
    RETRY_IDEMPOTENT = "retry_idempotent"
    RECOVERED = "recovered"
    """A run whose owner was gone was taken over."""
    SUBAGENT_STARTED = "subagent_started"
    """A sub-agent's thread was created for a call of another thread (data: the parent thread,
    call and tool)."""
    SUBAGENT_WAITING = "subagent_waiting"
    """A call of this thread waits for its sub-agent's thread (data: the child thread and the
    requests it shows here)."""
    DECISION_ROUTED = "decision_routed"
    """A decision or answer given on this thread was passed to the sub-agent thread that
    raised the request (data: interrupt id, child thread, path)."""


def digest(value: Any) -> str:
    """SHA-256 of a value's canonical JSON: audit rows name big payloads by their digest
    instead of copying them (the journal and the messages hold the payloads)."""
    canon = canonical_json(value, default=str)
    return hashlib.sha256(canon.encode()).hexdigest()


def record_hash(
    *, thread_id: str, seq: int, ts: datetime, kind: str, actor: str,
    tool_call_id: str | None, data: dict[str, Any], prev_hash: str,
    key: AuditKey | None = None,
) -> str:
    """The hash of a record's canonical JSON (``data`` must already be JSON-compatible):
    HMAC-SHA256 under ``key`` (whose id is part of the signed text), or — without a key — the
    plain SHA-256 of rows written before audit keys existed."""
    body: dict[str, Any] = {
        "thread_id": thread_id, "seq": seq, "ts": ts.isoformat(), "kind": kind,
        "actor": actor, "tool_call_id": tool_call_id, "data": data,
        "prev_hash": prev_hash,
    }
    if key is None:
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()
    body["key_id"] = key.key_id
    return key.sign(canonical_json(body).encode())


def rehash(record: AuditRecord, key: AuditKey | None) -> str:
    """The hash ``record`` should carry under ``key`` (None: the unsigned form)."""
    return record_hash(thread_id=record.thread_id, seq=record.seq, ts=record.ts,
                       kind=record.kind, actor=record.actor, tool_call_id=record.tool_call_id,
                       data=record.data, prev_hash=record.prev_hash, key=key)


def make_record(
    *, thread_id: str, seq: int, prev_hash: str, ts: datetime, kind: str, actor: str,
    tool_call_id: str | None = None, data: dict[str, Any] | None = None,
    key: AuditKey | None = None,
) -> AuditRecord:
    """A new signed row. ``key`` defaults to the configured audit key (created on first use)."""
    return signed_row(thread_id=thread_id, seq=seq, prev_hash=prev_hash, ts=ts, kind=kind,
                      actor=actor, tool_call_id=tool_call_id, data=data, key=key)[0]


def signed_row(
    *, thread_id: str, seq: int, prev_hash: str, ts: datetime, kind: str, actor: str,
    tool_call_id: str | None = None, data: dict[str, Any] | None = None,
    key: AuditKey | None = None,
) -> tuple[AuditRecord, str]:
    """A new signed row, and the JSON it is stored as (``Commit.audit_rows``): the signed
    text with the hash added, so that the row is serialised once. Reading that JSON gives
    the row back, and :func:`rehash` of it gives the same text again."""
    key = key or load_key(create=True)
    assert key is not None
    payload = to_jsonable_python(data or {})
    global _last_ts
    last = _last_ts
    if last[0] is ts:  # the rows of one commit share its time: formatted once
        ts_text = last[1]
    else:
        ts_text = ts.isoformat()
        _last_ts = (ts, ts_text)
    body: dict[str, Any] = {
        "thread_id": thread_id, "seq": seq, "ts": ts_text, "kind": kind,
        "actor": actor, "tool_call_id": tool_call_id, "data": payload,
        "prev_hash": prev_hash, "key_id": key.key_id,
    }
    text = canonical_json(body)
    h = key.sign(text.encode())
    record = _record(thread_id, seq, ts, kind, actor, tool_call_id, payload, prev_hash, h,
                     key.key_id)
    return record, f'{text[:-1]},"hash":"{h}"}}'


_last_ts: tuple[datetime | None, str] = (None, "")
"""The time :func:`signed_row` formatted last, and its text (held: its id is not reused)."""

_set = object.__setattr__
_SET_FIELDS = frozenset({"thread_id", "seq", "ts", "kind", "actor", "tool_call_id", "data",
                         "prev_hash", "hash", "key_id"})


def _record(thread_id: str, seq: int, ts: datetime, kind: str, actor: str,
            tool_call_id: str | None, payload: dict[str, Any], prev_hash: str, h: str,
            key_id: str) -> AuditRecord:
    """The :class:`AuditRecord` of a new row. Its values are what validation would keep
    as they are (exact types, ``payload`` a new JSON dict): it is built without validating
    them again; any other value goes through validation."""
    if (type(thread_id) is str and type(seq) is int and type(ts) is datetime
            and type(kind) is str and type(actor) is str and type(payload) is dict
            and (tool_call_id is None or type(tool_call_id) is str)
            and type(prev_hash) is str):
        record = AuditRecord.__new__(AuditRecord)
        _set(record, "__dict__", {
            "thread_id": thread_id, "seq": seq, "ts": ts, "kind": kind, "actor": actor,
            "tool_call_id": tool_call_id, "data": payload, "prev_hash": prev_hash,
            "hash": h, "key_id": key_id, "id": None})
        _set(record, "__pydantic_extra__", None)
        _set(record, "__pydantic_fields_set__", set(_SET_FIELDS))
        _set(record, "__pydantic_private__", None)
        return record
    return AuditRecord(thread_id=thread_id, seq=seq, ts=ts, kind=kind, actor=actor,
                       tool_call_id=tool_call_id, data=payload, prev_hash=prev_hash, hash=h,
                       key_id=key_id)


@dataclass(frozen=True)
class AuditProblem:
    thread_id: str
    """The thread concerned ("" for a problem with an exported head)."""
    seq: int | None
    problem: str

    def __str__(self) -> str:
        if not self.thread_id:
            return f"exported head: {self.problem}"
        where = f"row {self.seq}" if self.seq is not None else "chain"
        return f"thread {self.thread_id!r} {where}: {self.problem}"


@dataclass
class ChainStats:
    """What :func:`verify_chain` could and could not check, summed over chains."""

    rows: int = 0
    unsigned: int = 0
    """Rows written before audit keys (plain SHA-256: a rewrite with recomputed hashes is not
    detectable from the chain alone)."""
    unchecked: int = 0
    """Signed rows whose signature could not be checked (no key)."""


def verify_chain(
    thread_id: str, records: Iterable[AuditRecord], head: tuple[int, str] | None,
    key: AuditKey | None = None, *, allow_unsigned: bool = True,
    stats: ChainStats | None = None,
) -> list[AuditProblem]:
    """Check one thread's chain. ``head`` is ``(audit_seq, audit_hash)`` from the thread row.

    With ``key``, every signed row's HMAC is checked; without it only the links are (and
    ``stats.unchecked`` counts what was not). Unsigned rows are accepted only before the
    first signed row of the chain, and only with ``allow_unsigned``."""
    stats = stats if stats is not None else ChainStats()
    problems: list[AuditProblem] = []
    prev = GENESIS
    expected_seq = 1
    signed_seen = False
    last: AuditRecord | None = None
    for rec in sorted(records, key=lambda r: r.seq):
        stats.rows += 1
        if last is not None and last.id is not None and rec.id is not None and \
                rec.id <= last.id:
            problems.append(AuditProblem(thread_id, rec.seq, (
                f"stored out of order: its id {rec.id} comes before the id {last.id} of row "
                f"{last.seq} (rows were swapped or reordered in the database)")))
        last = rec
        if rec.seq != expected_seq:
            problems.append(AuditProblem(thread_id, expected_seq,
                                         f"missing (next row present is {rec.seq})"))
            expected_seq = rec.seq
        if rec.prev_hash != prev:
            problems.append(AuditProblem(thread_id, rec.seq,
                                         "prev_hash does not match the previous row"))
        problem = _content_problem(rec, key, signed_seen, allow_unsigned, stats)
        if problem is None and rec.thread_id != thread_id:
            problem = "content does not match its hash"
        if problem is not None:
            problems.append(AuditProblem(thread_id, rec.seq, problem))
        signed_seen = signed_seen or rec.key_id is not None
        prev = rec.hash
        expected_seq += 1
    if head is not None:
        seq, h = head
        if expected_seq - 1 < seq:
            problems.append(AuditProblem(thread_id, expected_seq,
                                         f"rows {expected_seq}..{seq} are missing"))
        elif seq and prev != h:
            problems.append(AuditProblem(thread_id, seq, "last row does not match the head"))
    return problems


def _content_problem(rec: AuditRecord, key: AuditKey | None, signed_seen: bool,
                     allow_unsigned: bool, stats: ChainStats) -> str | None:
    if rec.key_id is None:
        stats.unsigned += 1
        if signed_seen:
            return ("unsigned row after signed rows: it was written without the audit key "
                    "(forged, or rewritten to hide a change)")
        if not allow_unsigned:
            return ("unsigned row (written before audit keys existed, or forged without the "
                    "key); verify with allow_unsigned if this database predates signed rows")
        return None if rehash(rec, None) == rec.hash else "content does not match its hash"
    if key is None:
        stats.unchecked += 1
        return None
    if rec.key_id != key.key_id:
        return (f"signed with another audit key (key id {rec.key_id}; the key in use, from "
                f"{key.source}, has id {key.key_id})")
    return None if rehash(rec, key) == rec.hash else (
        "content does not match its hash (an HMAC under the audit key)")
