"""The canonical JSON that audit rows sign and digests are taken of is, byte for byte, the
standard library's ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)``, whichever encoder writes it: rows signed before must keep verifying,
and a row signed now must verify wherever it is checked.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from enum import IntEnum, StrEnum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interlock._canonical import canonical_json
from interlock.audit import AuditKey
from interlock.audit.records import digest, make_record, record_hash, rehash
from interlock.review_request import ActionRequest, ReviewConfig, shown_digest


def reference(value: Any, default: Any = None) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=default)


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Tagged(str):
    """A subclass of ``str`` (the standard library writes its text)."""


text = st.text(max_size=12)  # every code point, lone surrogates included
keys = st.one_of(text, st.sampled_from(list(Colour)), st.builds(Tagged, text))
scalars = st.one_of(
    st.none(), st.booleans(), text,
    st.integers(),  # beyond 64 bits too
    st.floats(),  # NaN and the infinities too
    st.sampled_from([0.1, 1e16, 1e-7, -0.0, 1.5e300, 123456789012345680.0]),
    st.sampled_from(list(Colour)), st.sampled_from(list(Level)), st.builds(Tagged, text),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4),
                            st.dictionaries(st.integers(), inner, max_size=3),
                            st.tuples(inner, inner)),
    max_leaves=25,
)


def same_outcome(value: Any, default: Any = None) -> None:
    """canonical_json gives the reference text, or the reference's error."""
    try:
        want: str | type[BaseException] = reference(value, default)
    except (TypeError, ValueError, RecursionError) as exc:
        want = type(exc)
    if isinstance(want, str):
        assert canonical_json(value, default=default) == want
    else:
        with pytest.raises(want):
            canonical_json(value, default=default)


@settings(max_examples=600, deadline=None)
@given(values)
def test_every_value_is_written_as_the_standard_library_writes_it(value: Any) -> None:
    same_outcome(value)


@settings(max_examples=300, deadline=None)
@given(st.recursive(
    st.one_of(scalars, st.datetimes(), st.uuids(), st.decimals(allow_nan=False),
              st.frozensets(st.integers(), max_size=3)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)),
    max_leaves=15))
def test_values_json_has_no_type_for_are_written_with_str_as_the_standard_library_does(
        value: Any) -> None:
    same_outcome(value, default=str)


@pytest.mark.parametrize("value", [
    {"b": 1, "a": [True, None, "é\u2028\x7f\x00\x1f</script>\\\"/"], "": {}},
    {"é": 1, "e": 2, "\U0001f600": 3, "\uffff": 4, "\ud7ff": 5},  # sorted by code point
    2**64, -(2**63) - 1, 2**63 - 1, -(2**63),  # orjson's integer range and just beyond it
    {"amount": 12.5, "n": 10**30}, {"small": 1e-7}, [float("nan"), float("inf"), -float("inf")],
    {"lone": "\ud800"},
    {1: "a", 2: "b"}, {"a": 1, 1: "b"},  # keys that are not strings; mixed keys cannot sort
    [[[[]]]] * 3,
])
def test_edge_values(value: Any) -> None:
    same_outcome(value)


@pytest.mark.parametrize("depth", [100, 254, 255, 256, 300, 900])
def test_deep_nesting_is_written_or_refused_as_the_standard_library_does(depth: int) -> None:
    value: Any = "x"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    same_outcome(value)


def test_an_unknown_default_is_refused() -> None:
    with pytest.raises(TypeError, match="default must be None or str"):
        canonical_json({"a": 1.5}, default=repr)


KEY = AuditKey(secret=b"k" * 32, source="test")
TS = datetime(2026, 12, 4, 21, 58, 19, 688235, tzinfo=UTC)
ARGS = {"path": "reports/q3.md", "content": "# Q3\n\nIncidents: 14 — “quoted” ✓\t\x00"}


def test_a_row_is_signed_over_the_standard_librarys_text_and_verifies() -> None:
    """The HMAC is taken over the reference text, computed here without interlock's encoder,
    for a row with a float in its data (the standard library's path) and without (the fast
    path)."""
    for data in ({"args": ARGS, "run": {"name": "write_file", "args": ARGS}, "revision": 1},
                 {"args": {**ARGS, "ratio": 1e-7, "big": 1e16}}):
        rec = make_record(thread_id="t1", seq=4, prev_hash="0" * 64, ts=TS, kind="decision",
                          actor="alice", tool_call_id="call_1", data=data, key=KEY)
        body = {"thread_id": "t1", "seq": 4, "ts": TS.isoformat(), "kind": "decision",
                "actor": "alice", "tool_call_id": "call_1", "data": data,
                "prev_hash": "0" * 64, "key_id": KEY.key_id}
        want = hmac.new(KEY.secret, reference(body).encode(), hashlib.sha256).hexdigest()
        assert rec.hash == want
        assert rehash(rec, KEY) == want
        unsigned = {k: v for k, v in body.items() if k != "key_id"}
        assert record_hash(thread_id="t1", seq=4, ts=TS, kind="decision", actor="alice",
                           tool_call_id="call_1", data=data, prev_hash="0" * 64) == \
            hashlib.sha256(reference(unsigned).encode()).hexdigest()


def test_digests_are_taken_over_the_standard_librarys_text() -> None:
    when = datetime(2026, 1, 2, tzinfo=UTC)
    for value in (ARGS, {"a": [1, 1e-7], "when": when, "id": uuid.UUID(int=7)},
                  {"d": Decimal("1.10")}):
        assert digest(value) == hashlib.sha256(reference(value, str).encode()).hexdigest()
    action = ActionRequest(tool_call_id="call_1", name="write_file", args=ARGS,
                           description="")
    config = ReviewConfig(action_name="write_file", allowed_decisions=["approve", "reject"])
    shown = {"name": "write_file", "args": ARGS, "revision": config.revision,
             "allowed_decisions": ["approve", "reject"], "reviewers": config.reviewers,
             "approvals": config.approvals_required, "self_approval": config.self_approval,
             "allow_remember": config.allow_remember}
    assert shown_digest(action, config) == \
        hashlib.sha256(reference(shown).encode()).hexdigest()[:32]
