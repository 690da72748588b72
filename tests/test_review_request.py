"""The review request (``interlock.review_request``): the stored JSON keeps its shape, a value
made by ``request_value`` reads back as what a fresh parse of its JSON gives, rows of earlier
versions load, and what a store indexes is read from the JSON of any writer."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from interlock.review_request import (
    ActionRequest,
    ApprovalRecord,
    HITLRequest,
    PendingCall,
    ReviewConfig,
    index_calls,
    index_deadline,
    read_request,
    request_value,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _call(n: int, *, expires: timedelta | None = None, escalate: timedelta | None = None,
          escalated: bool = False, approved: int = 0) -> PendingCall:
    return PendingCall(
        ActionRequest(tool_call_id=f"c{n}", name=f"tool{n}", args={"n": n, "s": "é"},
                      description=f"call {n}"),
        ReviewConfig(action_name=f"tool{n}", allowed_decisions=["approve", "reject"],
                     expires_at=NOW + expires if expires else None,
                     escalate_to=["lead"] if escalate else None,
                     escalate_at=NOW + escalate if escalate else None,
                     escalated_at=NOW if escalated else None,
                     approvals=2 if approved else None,
                     approved_by=[ApprovalRecord(by=f"r{i}", at=NOW)
                                  for i in range(approved)] or None))


def test_the_stored_value_is_plain_json_of_the_langchain_shape() -> None:
    value = request_value([_call(1), _call(2, expires=timedelta(hours=1))])
    assert json.loads(json.dumps(value)) == value
    assert set(value) == {"action_requests", "review_configs"}
    assert [a["tool_call_id"] for a in value["action_requests"]] == ["c1", "c2"]
    assert value["review_configs"][1]["expires_at"] == "2026-12-01T13:00:00Z"
    assert "expires_at" not in value["review_configs"][0]  # None is left out


calls_st = st.lists(st.builds(
    _call, st.integers(0, 50),
    expires=st.none() | st.timedeltas(timedelta(seconds=1), timedelta(days=3)),
    escalate=st.none() | st.timedeltas(timedelta(seconds=1), timedelta(days=3)),
    escalated=st.booleans(), approved=st.integers(0, 1)), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(calls_st)
def test_a_value_reads_back_as_a_fresh_parse_of_its_json(calls: list[PendingCall]) -> None:
    value = request_value(calls)
    req = read_request(value)
    assert read_request(value) is req  # built once
    fresh = HITLRequest.model_validate(json.loads(json.dumps(value)))
    assert req == fresh
    assert req.calls() == fresh.calls() == list(calls)
    # what a store indexes is the same whether it reads the JSON or the typed request
    assert index_deadline(value) == index_deadline(req)
    assert index_calls(value) == index_calls(req) == [(c.request.name, c.request.args)
                                                      for c in calls]


def test_calls_pairs_and_remaining_keep_the_request_order() -> None:
    req = read_request(request_value([_call(3), _call(1), _call(2)]))
    assert [a.tool_call_id for a, _ in req.pairs()] == ["c3", "c1", "c2"]
    assert [c.tool_call_id for c in req.remaining({"c1"})] == ["c3", "c2"]
    assert req.remaining({"c1", "c2", "c3"}) == []
    assert req.tool_names() == ["tool3", "tool1", "tool2"]
    assert req.paths() == {"c3": None, "c1": None, "c2": None}


def test_a_request_stored_by_an_earlier_version_loads_with_the_defaults() -> None:
    old = {"action_requests": [{"tool_call_id": "c1", "name": "t", "args": {},
                                "description": "d"}],
           "review_configs": [{"action_name": "t", "allowed_decisions": ["approve"],
                               "expires_at": "2026-12-01T12:00:00+00:00"}]}
    (call,) = read_request(old).calls()
    assert call.config.revision == 1 and call.config.allow_remember is True
    assert call.config.approvals_required == 1 and call.config.edited_by is None
    assert call.config.expires_at == NOW


def test_the_deadline_is_the_earliest_expiry_or_escalation_not_made_yet() -> None:
    value = request_value([_call(1, expires=timedelta(hours=5), escalate=timedelta(hours=2)),
                           _call(2, expires=timedelta(hours=3))])
    assert index_deadline(value) == NOW + timedelta(hours=2)
    escalated = request_value([_call(1, expires=timedelta(hours=5),
                                     escalate=timedelta(hours=2), escalated=True),
                               _call(2, expires=timedelta(hours=3))])
    assert index_deadline(escalated) == NOW + timedelta(hours=3)
    assert index_deadline(request_value([_call(1)])) is None


def test_a_partial_request_from_another_writer_is_indexed_as_far_as_it_goes() -> None:
    partial = {"action_requests": [{"name": "execute_sql", "args": {"q": "x"}}],
               "review_configs": []}
    assert index_calls(partial) == [("execute_sql", {"q": "x"})]
    assert index_deadline(partial) is None
