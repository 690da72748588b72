"""An edit to a value Python finds equal but JSON does not (``True`` for ``1``, ``1.0`` for
``1``, ``[True]`` for ``[1]``) is an edit: it makes a new revision, and that revision is what
runs once approved.

Invariant 1: what runs is exactly the revision its approvers were shown, type for type; the
model's ``1`` never runs on approvals given to ``True``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interlock import (
    Agent,
    HumanInTheLoop,
    InterruptOn,
    MemoryCheckpointer,
    Reviewer,
    ScriptedModel,
    SqliteCheckpointer,
    tool,
)

DBA = frozenset({"dba"})
ALICE, BOB, CAROL, DAVE = (Reviewer(n, DBA) for n in ("alice", "bob", "carol", "dave"))
# pairs Python compares equal while their JSON differs
LOOKALIKES = [(1, True), (0, False), (1, 1.0), (2, 2.0), ([1], [True]), ({"a": 0}, {"a": False}),
              ([1, [0]], [1.0, [False]])]


def agent(store: Any, ran: list[str], first: Any, approvals: int) -> Agent:
    @tool
    def setv(key: str, value: Any) -> str:
        """Set a configuration value."""
        ran.append(json.dumps(value))
        return "set"

    return Agent(
        model=ScriptedModel([{"name": "setv", "args": {"key": "k", "value": first}}, "done"]),
        tools=[setv], checkpointer=store,
        middleware=[HumanInTheLoop(interrupt_on={"setv": InterruptOn(
            allowed_decisions=["approve", "edit", "reject"], reviewers=["dba"],
            approvals=approvals)})])


def edit_to(value: Any, revision: int) -> dict[str, Any]:
    return {"type": "edit", "revision": revision,
            "edited_action": {"name": "setv", "args": {"key": "k", "value": value}}}


def shown(a: Agent) -> tuple[int, Any]:
    (intr,) = a.get_thread("t").interrupts
    return intr.value.review_configs[0].revision, intr.value.action_requests[0].args["value"]


@pytest.mark.parametrize(("model", "edited"), LOOKALIKES)
def test_an_edit_to_a_lookalike_value_makes_a_revision_that_is_what_runs(
        tmp_path: Path, model: Any, edited: Any) -> None:
    ran: list[str] = []
    a = agent(SqliteCheckpointer(tmp_path / "db.sqlite"), ran, model, approvals=2)
    try:
        a.invoke("go", thread_id="t", reviewer=ALICE)
        a.resume("t", [edit_to(2 if edited != 2 else 3, 1)], reviewer=BOB)  # revision 2
        a.resume("t", [edit_to(edited, 2)], reviewer=CAROL)  # revision 3: carol's approval
        revision, value = shown(a)
        assert revision == 3 and json.dumps(value) == json.dumps(edited)
        assert a.resume("t", [{"type": "approve", "revision": 3}],
                        reviewer=DAVE).status == "completed"
        assert ran == [json.dumps(edited)]
        [entry] = a.journal("t")
        assert json.dumps(entry.effective.args["value"]) == json.dumps(edited)
    finally:
        a.close()


@pytest.mark.parametrize(("model", "edited"), LOOKALIKES)
def test_an_edit_after_one_approval_is_not_taken_for_a_second_approval(
        tmp_path: Path, model: Any, edited: Any) -> None:
    """bob approves the model's value; carol's edit to its lookalike is a new revision (not
    the second approval of the first): it needs its own two approvals before it runs."""
    ran: list[str] = []
    a = agent(SqliteCheckpointer(tmp_path / "db.sqlite"), ran, model, approvals=2)
    try:
        a.invoke("go", thread_id="t", reviewer=ALICE)
        a.resume("t", [{"type": "approve", "revision": 1}], reviewer=BOB)
        assert a.resume("t", [edit_to(edited, 1)], reviewer=CAROL).interrupted
        revision, value = shown(a)
        assert revision == 2 and json.dumps(value) == json.dumps(edited) and ran == []
        assert a.resume("t", [{"type": "approve", "revision": 2}],
                        reviewer=DAVE).status == "completed"
        assert ran == [json.dumps(edited)]
    finally:
        a.close()


# text that can be stored (NUL and lone surrogates are refused at the boundary, by design)
texts = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                max_size=3)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=json_values, edited=json_values)
def test_what_runs_after_an_edit_is_the_edited_value_exactly(model: Any, edited: Any) -> None:
    """One approval: an edit runs at once, as written (type for type), or, when it is the
    model's value exactly, as the model's call."""
    ran: list[str] = []
    a = agent(MemoryCheckpointer(), ran, model, approvals=1)
    a.invoke("go", thread_id="t", reviewer=ALICE)
    a.resume("t", [edit_to(edited, 1)], reviewer=BOB)
    assert ran == [json.dumps(edited)]
