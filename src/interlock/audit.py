"""Hash-chained audit records: each row carries the hash of the previous row of its thread,
and the thread row carries the head (last seq and hash), so editing, deleting or reordering
any row — including the last — is detected by :func:`verify_chain`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic_core import to_jsonable_python

from .storage.base import AuditRecord

GENESIS = "0" * 64


class AuditKind(StrEnum):
    """Every kind of audit row interlock writes (``AuditRecord.kind`` holds the value)."""

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

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""The encoder of the hashed form (built once: ``json.dumps`` with options builds one per call)."""


def record_hash(
    *, thread_id: str, seq: int, ts: datetime, kind: str, actor: str,
    tool_call_id: str | None, data: dict[str, Any], prev_hash: str,
) -> str:
    """SHA-256 of the record's canonical JSON (``data`` must already be JSON-compatible)."""
    body = {
        "thread_id": thread_id, "seq": seq, "ts": ts.isoformat(), "kind": kind,
        "actor": actor, "tool_call_id": tool_call_id, "data": data,
        "prev_hash": prev_hash,
    }
    canon = _CANONICAL.encode(body)
    return hashlib.sha256(canon.encode()).hexdigest()


def make_record(
    *, thread_id: str, seq: int, prev_hash: str, ts: datetime, kind: str, actor: str,
    tool_call_id: str | None = None, data: dict[str, Any] | None = None,
) -> AuditRecord:
    payload = to_jsonable_python(data or {})
    h = record_hash(thread_id=thread_id, seq=seq, ts=ts, kind=kind, actor=actor,
                    tool_call_id=tool_call_id, data=payload, prev_hash=prev_hash)
    return AuditRecord(thread_id=thread_id, seq=seq, ts=ts, kind=kind, actor=actor,
                       tool_call_id=tool_call_id, data=payload, prev_hash=prev_hash, hash=h)


@dataclass(frozen=True)
class AuditProblem:
    thread_id: str
    seq: int | None
    problem: str

    def __str__(self) -> str:
        where = f"row {self.seq}" if self.seq is not None else "chain"
        return f"thread {self.thread_id!r} {where}: {self.problem}"


def verify_chain(
    thread_id: str, records: Iterable[AuditRecord], head: tuple[int, str] | None
) -> list[AuditProblem]:
    """Check one thread's chain. ``head`` is ``(audit_seq, audit_hash)`` from the thread row."""
    problems: list[AuditProblem] = []
    prev = GENESIS
    expected_seq = 1
    for rec in sorted(records, key=lambda r: r.seq):
        if rec.seq != expected_seq:
            problems.append(AuditProblem(thread_id, expected_seq,
                                         f"missing (next row present is {rec.seq})"))
            expected_seq = rec.seq
        if rec.prev_hash != prev:
            problems.append(AuditProblem(thread_id, rec.seq,
                                         "prev_hash does not match the previous row"))
        again = record_hash(thread_id=rec.thread_id, seq=rec.seq, ts=rec.ts, kind=rec.kind,
                            actor=rec.actor, tool_call_id=rec.tool_call_id, data=rec.data,
                            prev_hash=rec.prev_hash)
        if again != rec.hash or rec.thread_id != thread_id:
            problems.append(AuditProblem(thread_id, rec.seq, "content does not match its hash"))
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
