"""Verifying a whole store's audit log: the signed chains, the journal and the messages against
the signed rows, and the log against a head exported earlier (see docs/security.md)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from ..errors import ConfigurationError
from ..messages import AssistantMessage, Message, ToolMessage
from ..paging import iter_threads
from ..storage.base import AuditRecord, CallState, Checkpointer, JournalEntry
from .key import AuditKey, key_location, load_key
from .records import AuditProblem, ChainStats, digest, verify_chain

HEAD_FORMAT: Literal["interlock-audit-head/1"] = "interlock-audit-head/1"
_PAGE = 5000
_RAN = frozenset({CallState.APPROVED, CallState.EDITED, CallState.RUNNING, CallState.INTERRUPTED,
                  CallState.SUCCEEDED, CallState.FAILED, CallState.UNKNOWN, CallState.WAITING})
"""States in which a reviewer-approved call will run, runs or ran."""


class AuditReport(list[AuditProblem]):
    """The problems :func:`verify_store` found (a list: empty means none were found), and what
    it could not check (``unchecked``: sentences saying what and why)."""

    def __init__(self, problems: Iterable[AuditProblem] = (), *, rows: int = 0,
                 threads: int = 0, unchecked: Sequence[str] = ()) -> None:
        super().__init__(problems)
        self.rows = rows
        self.threads = threads
        self.unchecked = list(unchecked)

    @property
    def ok(self) -> bool:
        return not self


class AuditHead(BaseModel):
    """A summary of the audit log up to one row, signed with the audit key: kept somewhere the
    database's users cannot write, it shows later whether any row up to ``last_id`` was
    changed, removed or re-signed (even by someone holding the key)."""

    format: Literal["interlock-audit-head/1"] = HEAD_FORMAT
    created_at: datetime
    last_id: int
    """The newest audit row covered (global id)."""
    threads: int
    rows: int
    digest: str
    """SHA-256 over every thread's last covered row (thread id, seq, hash), sorted."""
    key_id: str
    mac: str
    """HMAC-SHA256 of the other fields under the audit key."""

    def signed_text(self) -> bytes:
        body = self.model_dump(mode="json", exclude={"mac"})
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


async def _all_records(store: Checkpointer, thread_id: str | None) -> list[AuditRecord]:
    out: list[AuditRecord] = []
    after = 0
    while True:
        batch = await store.audit(thread_id=thread_id, after_id=after, limit=_PAGE)
        out.extend(batch)
        if len(batch) < _PAGE:
            return out
        after = batch[-1].id or after


async def _thread_ids(store: Checkpointer) -> set[str]:
    return {row.thread_id async for row in iter_threads(store.list_threads, page=1000)}


async def verify_store(
    store: Checkpointer, thread_id: str | None = None, *, key: AuditKey | None = None,
    allow_unsigned: bool = False, head: AuditHead | None = None,
) -> AuditReport:
    """Check every chain (or one thread's), the journal and messages against the signed rows,
    and — with ``head`` — the log against a head exported earlier. ``key`` defaults to the
    configured audit key; without one, signatures are not checked and the report says so."""
    key = key or load_key(create=False)
    records = await _all_records(store, thread_id)
    by_thread: dict[str, list[AuditRecord]] = {}
    for r in records:
        by_thread.setdefault(r.thread_id, []).append(r)
    tids = {thread_id} if thread_id is not None else set(by_thread) | await _thread_ids(store)
    problems: list[AuditProblem] = []
    stats = ChainStats()
    for tid in sorted(tids):
        snap = await store.load(tid)
        rows = by_thread.get(tid, [])
        chain_head = (snap.thread.audit_seq, snap.thread.audit_hash) if snap else None
        found = verify_chain(tid, rows, chain_head, key, allow_unsigned=allow_unsigned,
                             stats=stats)
        if snap is not None:
            found += cross_check(tid, await store.journal(tid), snap.messages, rows)
        problems += sorted(found, key=lambda p: p.seq if p.seq is not None else 1 << 62)
    unchecked: list[str] = []
    if stats.unchecked:
        unchecked.append(
            f"No audit key was found at {key_location()}: the signatures of {stats.unchecked} "
            f"row(s) were not checked, so a row rewritten together with every later hash and "
            f"the chain head would not be detected. Run verify where the key that the writers "
            f"use is available.")
    if stats.unsigned:
        unchecked.append(
            f"{stats.unsigned} row(s) were written before audit rows were signed (plain "
            f"SHA-256): a rewrite of them with recomputed hashes is detected only against an "
            f"exported head.")
    if head is not None:  # a head covers the whole log
        every = records if thread_id is None else await _all_records(store, None)
        problems += _check_head(every, head, key, unchecked)
    return AuditReport(problems, rows=len(records), threads=len(tids), unchecked=unchecked)


# -- the journal and the messages against the signed rows ------------------------------------


def _problem(tid: str, row: AuditRecord | None, text: str) -> AuditProblem:
    return AuditProblem(tid, row.seq if row is not None else None, text)


def _same(value: Any, other: Any) -> bool:
    return digest(value) == digest(other)


def cross_check(thread_id: str, journal: Sequence[JournalEntry], messages: Sequence[Message],
                records: Sequence[AuditRecord]) -> list[AuditProblem]:
    """Problems where the journal or the messages disagree with the signed audit rows: a
    rewritten argument, result, decision or reviewer shows up here."""
    by_call: dict[str, list[AuditRecord]] = {}
    for r in sorted(records, key=lambda r: r.seq):
        if r.tool_call_id is not None:
            by_call.setdefault(r.tool_call_id, []).append(r)
        elif r.kind == "request_raised":  # one row for the calls of a review request
            for c in r.data.get("calls", []):
                if isinstance(c, dict) and isinstance(c.get("tool_call_id"), str):
                    one = r.model_copy(update={"data": {**c, "reason": r.data.get("reason")}})
                    by_call.setdefault(c["tool_call_id"], []).append(one)
    out: list[AuditProblem] = []
    entries = {e.tool_call_id: e for e in journal}
    for e in journal:
        out += _check_entry(thread_id, e, by_call.get(e.tool_call_id, []))
    for n, m in enumerate(messages):
        if isinstance(m, AssistantMessage):
            for c in m.tool_calls:
                j = entries.get(c.id)
                if j is None:
                    out.append(AuditProblem(thread_id, None, f"message {n}: call {c.id!r} has "
                                            f"no journal row"))
                elif c.name != j.name or not _same(c.args, j.args):
                    out.append(AuditProblem(thread_id, None, f"message {n}: call {c.id!r} "
                                            f"({c.name}) differs from its journal row"))
        elif isinstance(m, ToolMessage):
            j = entries.get(m.tool_call_id)
            if j is not None and j.result is not None and j.result.content != m.content:
                out.append(AuditProblem(thread_id, None, f"message {n}: the result of call "
                                        f"{m.tool_call_id!r} differs from its journal row"))
    return out


def _check_entry(tid: str, e: JournalEntry, rows: list[AuditRecord]) -> list[AuditProblem]:
    out: list[AuditProblem] = []
    cid = e.tool_call_id
    run_name = e.exec_name or e.name
    run_args = e.exec_args if e.exec_args is not None else e.args
    decisions = [r for r in rows if r.kind == "decision"]
    for r in rows:
        d = r.data
        if r.kind in ("decision", "auto_approved", "rejected_by_policy", "expired"):
            args_ok = _same(d["args"], e.args) if "args" in d else \
                d.get("args_sha256", digest(e.args)) == digest(e.args)
            if d.get("name", e.name) != e.name or not args_ok:
                out.append(_problem(tid, r, f"the journal's call {cid!r} ({e.name}) differs "
                                    f"from the call this {r.kind} row signed"))
        elif r.kind == "request_raised":
            # a review of an outcome-unknown call shows what ran (the edited call, if edited),
            # and one asked again under a changed policy what would run
            unknown = d.get("reason") in ("outcome_unknown", "policy_changed")
            shown = (run_name, run_args) if unknown else (e.name, e.args)
            if d.get("name") != shown[0] or d.get("args_sha256") != digest(shown[1]):
                out.append(_problem(tid, r, f"the journal's call {cid!r} ({e.name}) differs "
                                    f"from the call this review request signed"))
        elif r.kind == "tool_started" and (
                d.get("name") != run_name or d.get("args_sha256") != digest(run_args)):
            out.append(_problem(tid, r, f"the journal's call {cid!r} now names {run_name} "
                                f"with other arguments than the ones that were started"))
    if decisions and e.state != CallState.CANCELLED:
        last = decisions[-1]
        d = last.data
        kind = e.decision.type if e.decision is not None else None
        message = e.decision.message if e.decision is not None else None
        if kind != d.get("type") or e.decided_by != last.actor:
            out.append(_problem(tid, last, f"the journal's decision on call {cid!r} differs "
                                f"from the signed one ({d.get('type')} by {last.actor})"))
        elif message != d.get("message"):
            out.append(_problem(tid, last, f"the journal's decision message on call {cid!r} "
                                f"differs from the signed one"))
        if e.state in _RAN and d.get("type") in ("approve", "edit"):
            signed = d.get("run") or d.get("edited_action") or {"name": d.get("name"),
                                                                "args": d.get("args", e.args)}
            if signed.get("name") != run_name or not _same(signed.get("args"), run_args):
                out.append(_problem(tid, last, f"call {cid!r} runs {run_name} with other "
                                    f"arguments than the signed decision approved"))
    finished = [r for r in rows if r.kind == "tool_finished"]
    if finished and e.result is not None and e.state in (CallState.SUCCEEDED, CallState.FAILED):
        last = finished[-1]
        if last.data.get("result_sha256") != digest(e.result.content):
            out.append(_problem(tid, last, f"the journal's result of call {cid!r} differs "
                                f"from the signed one"))
    return out


# -- exported heads --------------------------------------------------------------------------


def _summary(records: Iterable[AuditRecord], last_id: int) -> tuple[int, int, str]:
    """(threads, rows, digest) of the rows with id <= last_id."""
    heads: dict[str, tuple[int, str]] = {}
    rows = 0
    for r in records:
        if r.id is None or r.id > last_id:
            continue
        rows += 1
        if r.thread_id not in heads or heads[r.thread_id][0] < r.seq:
            heads[r.thread_id] = (r.seq, r.hash)
    listing = sorted([tid, seq, h] for tid, (seq, h) in heads.items())
    text = json.dumps(listing, separators=(",", ":"), ensure_ascii=False)
    return len(heads), rows, hashlib.sha256(text.encode()).hexdigest()


async def export_head(store: Checkpointer, now: datetime, key: AuditKey | None = None
                      ) -> AuditHead:
    """Sign a head covering every audit row stored so far."""
    key = key or load_key(create=False)
    if key is None:
        raise ConfigurationError(
            f"No audit key was found at {key_location()}, so a head cannot be signed. Export "
            f"it where the key that the writers use is available.")
    records = await _all_records(store, None)
    last_id = max((r.id or 0 for r in records), default=0)
    threads, rows, dig = _summary(records, last_id)
    head = AuditHead(created_at=now, last_id=last_id, threads=threads, rows=rows, digest=dig,
                     key_id=key.key_id, mac="")
    return head.model_copy(update={"mac": key.sign(head.signed_text())})


def _check_head(records: list[AuditRecord], head: AuditHead, key: AuditKey | None,
                unchecked: list[str]) -> list[AuditProblem]:
    out: list[AuditProblem] = []
    where = ""
    if key is None:
        unchecked.append("The exported head's signature was not checked (no audit key).")
    elif head.key_id != key.key_id or key.sign(head.signed_text()) != head.mac:
        out.append(AuditProblem(where, None, "its signature does not match: it was not "
                                "exported with this audit key, or it was edited"))
    threads, rows, dig = _summary(records, head.last_id)
    if (threads, rows, dig) != (head.threads, head.rows, head.digest):
        out.append(AuditProblem(where, None, (
            f"the audit rows up to id {head.last_id} no longer match it (then {head.threads} "
            f"thread(s), {head.rows} row(s); now {threads}, {rows}, "
            f"{'same' if dig == head.digest else 'different'} digest): rows were changed, "
            f"removed or re-signed since it was exported")))
    return out
