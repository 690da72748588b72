"""The engine's record helpers: copies with fields replaced, the stored JSON of records, the
shared read of a pending request and the audit key's signature."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, PrivateAttr

from interlock._engine.records import replaced
from interlock.audit import AuditKey
from interlock.audit.records import rehash, signed_row, verify_chain
from interlock.authz import read_keys
from interlock.hitl import ActionRequest, HITLRequest, ReviewConfig, read_request
from interlock.interrupts import Interrupt
from interlock.storage.base import (
    AuditRecord,
    CallState,
    DecisionRecord,
    HookProgress,
    JournalEntry,
    MarkRecord,
    ReviewSettings,
    ThreadRecord,
    audit_json,
    journal_json,
    thread_json,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _thread() -> ThreadRecord:
    return ThreadRecord(thread_id="t1", created_at=NOW, updated_at=NOW, version=3,
                        hooks=HookProgress(index=1), preview="hello")


thread_changes = st.fixed_dictionaries({}, optional={
    "status": st.sampled_from(["idle", "running", "interrupted", "completed", "failed"]),
    "version": st.integers(0, 10**6),
    "message_count": st.integers(0, 1000),
    "turn": st.none() | st.integers(0, 1000),
    "preview": st.text(max_size=30),
    "lease_owner": st.none() | st.text(min_size=1, max_size=10),
    "deciders": st.lists(st.text(min_size=1, max_size=5), max_size=3),
    "hooks": st.none() | st.builds(HookProgress, index=st.integers(0, 5)),
})


@settings(max_examples=200, deadline=None)
@given(thread_changes)
def test_replaced_is_the_same_copy_as_model_copy(changes: dict[str, object]) -> None:
    t = _thread()
    ours, theirs = replaced(t, changes), t.model_copy(update=changes)
    assert ours == theirs
    assert ours.model_fields_set == theirs.model_fields_set
    assert thread_json(ours) == thread_json(theirs)
    assert ours is not t and ours.__dict__ is not t.__dict__
    assert t == _thread()  # the original is unchanged


class _Noted(BaseModel):
    """A record with a private attribute (none of the engine's has one)."""

    a: int
    b: str = "x"
    _seen: int = PrivateAttr(default=0)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int


def test_replaced_copies_private_and_extra_attributes_as_model_copy_does() -> None:
    noted = _Noted(a=1)
    noted._seen = 5
    for ours, theirs in ((replaced(noted, {"a": 2}), noted.model_copy(update={"a": 2})),):
        assert ours == theirs and ours._seen == theirs._seen == 5
        assert ours.model_fields_set == theirs.model_fields_set == {"a"}
        ours._seen = 7
        assert noted._seen == 5 and noted.a == 1  # the copy has its own private values
    opened = _Open(a=1, note="kept")
    copy = replaced(opened, {"a": 2})
    assert copy == opened.model_copy(update={"a": 2})
    assert copy.model_extra == {"note": "kept"} and copy.model_extra is not opened.model_extra
    entry = JournalEntry(tool_call_id="c1", turn=1, position=0, name="t", args={"a": 1},
                         state=CallState.PENDING_REVIEW, updated_at=NOW)
    moved = replaced(entry, {"state": CallState.RUNNING, "attempts": 1})
    assert moved == entry.model_copy(update={"state": CallState.RUNNING, "attempts": 1})
    assert moved.__pydantic_private__ is None and moved.__pydantic_extra__ is None
    assert journal_json(moved) == journal_json(
        entry.model_copy(update={"state": CallState.RUNNING, "attempts": 1}))


def test_replaced_refuses_a_name_that_is_not_a_field() -> None:
    t = _thread()
    with pytest.raises(TypeError, match=r"ThreadRecord has no field.*statuss"):
        replaced(t, {"statuss": "running"})
    assert t == _thread()


def test_stored_records_leave_out_none_fields_and_read_back_the_same() -> None:
    e = JournalEntry(
        tool_call_id="c1", turn=1, position=0, name="write_file", args={"path": None},
        state=CallState.PENDING_REVIEW, updated_at=NOW,
        review=ReviewSettings(allowed_decisions=["approve"], on_expire="reject"),
        decision=DecisionRecord(type="reject", message="no"))
    row = json.loads(journal_json(e))
    assert row["review"] == {"allowed_decisions": ["approve"], "on_expire": "reject"}
    assert row["decision"] == {"type": "reject", "message": "no"}
    assert row["args"] == {"path": None}  # a tool's argument is data: its None stays
    assert JournalEntry.model_validate_json(journal_json(e)) == e
    mark = MarkRecord(kind="review", reviewers=["dba"])
    assert mark.model_dump() == {"kind": "review", "reviewers": ["dba"]}
    assert json.loads(mark.model_dump_json()) == {"kind": "review", "reviewers": ["dba"]}


def _request_value() -> dict[str, object]:
    return HITLRequest(
        action_requests=[ActionRequest(tool_call_id="c1", name="t", args={"a": 1}, description="d")],
        review_configs=[ReviewConfig(action_name="t", allowed_decisions=["approve"])],
    ).to_json()


def test_read_request_is_built_once_per_stored_value() -> None:
    value = _request_value()
    first = read_request(value)
    assert read_request(value) is first
    assert first == HITLRequest.model_validate(value)
    equal_but_new = _request_value()
    assert read_request(equal_but_new) is not first
    assert read_request(equal_but_new) == first
    typed = HITLRequest.model_validate(value)
    assert read_request(typed) is typed


def test_read_request_of_a_value_that_is_no_request_raises() -> None:
    intr = Interrupt(id="i1", kind="review", value={"action_requests": "x"}, created_at=NOW)
    with pytest.raises(ValueError):
        read_request(intr.value)


def test_the_audit_key_signs_with_hmac_sha256() -> None:
    key = AuditKey(b"k" * 32, "test")
    for data in (b"", b"row", "é".encode() * 1000):
        assert key.sign(data) == hmac.new(b"k" * 32, data, hashlib.sha256).hexdigest()
    assert "kkkk" not in repr(key)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                   max_size=3),
    max_leaves=10)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=4),
       st.text(min_size=1, max_size=10), st.none() | st.text(min_size=1, max_size=10))
def test_a_signed_row_is_stored_as_its_signed_text_and_reads_back_the_same(
        data: dict[str, object], actor: str, call_id: str | None) -> None:
    """The JSON a signed row is stored as (made from the signed text, so the row is serialised
    once) reads back as the same record, whose hash recomputes and whose chain verifies, as
    the row the store would have serialised itself does."""
    key = AuditKey(b"k" * 32, "test")
    rec, row = signed_row(thread_id="t1", seq=1, prev_hash="0" * 64, ts=NOW, kind="decision",
                          actor=actor, tool_call_id=call_id, data=data, key=key)
    for stored in (row, audit_json(rec)):
        back = AuditRecord.model_validate_json(stored)
        assert back == rec
        assert rehash(back, key) == rec.hash
        assert verify_chain("t1", [back], (1, rec.hash), key) == []
    forged = json.loads(row)
    forged["actor"] = actor + "x"
    assert rehash(AuditRecord.model_validate(forged), key) != rec.hash


def test_read_keys_follow_every_change_of_the_row_they_are_computed_from() -> None:
    """Read keys are reused for a row that shares its lists with the last one asked about;
    every change of what they depend on (the creator, the deciders, the pending requests)
    still gives the keys of the new row."""

    def review(reviewers: list[str] | None) -> Interrupt:
        req = HITLRequest(action_requests=[ActionRequest(tool_call_id="c1", name="drop",
                                                         args={}, description="d")],
                          review_configs=[ReviewConfig(action_name="drop", allowed_decisions=["approve"],
                                                       reviewers=reviewers)])
        return Interrupt(id="i1", kind="review", value=req.to_json(), created_at=NOW)

    row = replaced(_thread(), {"pending": [review(["dba"])], "deciders": ["ann"]})
    assert read_keys(row) == ["role:dba", "user:ann"]
    assert read_keys(replaced(row, {"status": "running"})) == ["role:dba", "user:ann"]
    assert read_keys(replaced(row, {"created_by": "bob"})) == [
        "role:dba", "user:ann", "user:bob"]
    assert read_keys(replaced(row, {"deciders": ["cy"]})) == ["role:dba", "user:cy"]
    assert read_keys(replaced(row, {"pending": [review(None)]})) == ["*", "user:ann"]
    assert read_keys(replaced(row, {"pending": []})) == ["user:ann"]
    other = replaced(row, {"thread_id": "t2"})  # another row with the same lists
    assert read_keys(other) == read_keys(row) == ["role:dba", "user:ann"]
    read_keys(row).append("role:admin")  # a caller's list is its own
    assert read_keys(row) == ["role:dba", "user:ann"]
