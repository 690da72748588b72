"""Metadata a reviewer gives with a decision reaches the tool (as Pydantic AI's approvals can
carry it): ``{"type": "approve", "metadata": {...}}`` is stored with the decision and handed
to the tool as ``ToolContext.decision_metadata``. Metadata that is not a JSON object, or too
large, or holds text no store can keep, is refused and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import StoreFactory
from interlock import (
    Agent,
    HumanInTheLoop,
    InterlockError,
    InvalidDecision,
    ScriptedModel,
    StaleRevision,
    ToolContext,
    ToolMessage,
    UserMessage,
    tool,
)
from interlock.decisions import METADATA_MAX_BYTES
from interlock.errors import InvalidText

SEEN: list[tuple[str, Any]] = []


@tool
def refund(order: str, ctx: ToolContext) -> str:
    """Refund an order."""
    SEEN.append((order, ctx.decision_metadata))
    return f"refunded {order}"


@tool
def lookup(order: str, ctx: ToolContext) -> str:
    """Look an order up (no review)."""
    SEEN.append((order, ctx.decision_metadata))
    return f"order {order}: paid"


def script(messages: Any) -> Any:
    if any(isinstance(m, ToolMessage) for m in messages):
        return "done"
    user = next(m for m in messages if isinstance(m, UserMessage))
    name, order = user.content.split()
    return {"name": name, "args": {"order": order}}


def make(stores: StoreFactory) -> Agent:
    return Agent(model=ScriptedModel(script), tools=[refund, lookup], checkpointer=stores(),
                 middleware=[HumanInTheLoop({"refund": True, "lookup": False})])


def test_approve_and_edit_hand_their_metadata_to_the_tool(stores: StoreFactory) -> None:
    SEEN.clear()
    agent = make(stores)
    ticket = {"ticket": "OPS-12", "limit": 40.5, "notify": ["ann", "bo"], "urgent": False}
    paused = agent.invoke("refund A1", thread_id="t1")
    result = agent.resume("t1", [{"type": "approve", "metadata": ticket}],
                          interrupt_id=paused.interrupts[0].id)
    assert result.status == "completed"
    assert SEEN[0] == ("A1", ticket) and len(SEEN) == 1
    (entry,) = agent.journal("t1")
    assert entry.decision is not None and entry.decision.metadata == ticket
    (row,) = [r for r in agent.audit("t1") if r.kind == "decision"]
    assert row.data["metadata"] == ticket  # in the signed record of the decision

    paused = agent.invoke("refund B2", thread_id="t2")
    agent.resume("t2", [{"type": "edit", "edited_action": {"name": "refund",
                                                            "args": {"order": "B3"}},
                         "metadata": {"reason": "the model named the wrong order"}}],
                 interrupt_id=paused.interrupts[0].id)
    assert SEEN[1:] == [("B3", {"reason": "the model named the wrong order"})]


def test_without_metadata_or_without_a_person_the_tool_sees_none(stores: StoreFactory) -> None:
    SEEN.clear()
    agent = make(stores)
    paused = agent.invoke("refund A1", thread_id="t1")
    agent.resume("t1", [{"type": "approve"}], interrupt_id=paused.interrupts[0].id)
    agent.invoke("lookup A1", thread_id="t2")  # not reviewed: no decision at all
    assert SEEN == [("A1", None), ("A1", None)]


@pytest.mark.parametrize("metadata, error", [
    (["not", "an", "object"], InvalidDecision),
    ("OPS-12", InvalidDecision),
    ({"limit": float("nan")}, InvalidText),  # JSON has no NaN: refused as input, by its path
    ({"blob": "x" * METADATA_MAX_BYTES}, InvalidDecision),
    ({"note": "a\x00b"}, InvalidText),
])
def test_bad_metadata_is_refused_and_changes_nothing(
        stores: StoreFactory, metadata: Any, error: type[InterlockError]) -> None:
    SEEN.clear()
    agent = make(stores)
    paused = agent.invoke("refund A1", thread_id="t1")
    before = agent.get_thread("t1")
    with pytest.raises(error) as raised:
        agent.resume("t1", [{"type": "approve", "metadata": metadata}],
                     interrupt_id=paused.interrupts[0].id)
    assert "metadata" in str(raised.value)
    after = agent.get_thread("t1")
    assert after.version == before.version and after.status == "interrupted"
    assert SEEN == []
    # the same request is still open, and a good decision settles it
    agent.resume("t1", [{"type": "approve", "metadata": {"ok": True}}],
                 interrupt_id=paused.interrupts[0].id)
    assert SEEN == [("A1", {"ok": True})]


def test_metadata_with_a_decision_for_another_revision_is_refused(stores: StoreFactory) -> None:
    """Invariant 1 with metadata: a decision made for a revision the call does not have is
    refused whole; its metadata is neither stored nor audited nor seen by the tool."""
    SEEN.clear()
    agent = make(stores)
    paused = agent.invoke("refund A1", thread_id="t1")
    before = agent.get_thread("t1")
    with pytest.raises(StaleRevision):
        agent.resume("t1", [{"type": "approve", "revision": 2, "metadata": {"ticket": "X"}}],
                     interrupt_id=paused.interrupts[0].id)
    after = agent.get_thread("t1")
    assert after.version == before.version and after.status == "interrupted"
    assert SEEN == [] and not any("X" in str(r.data) for r in agent.audit("t1"))
    agent.resume("t1", [{"type": "approve", "revision": 1, "metadata": {"ticket": "Y"}}],
                 interrupt_id=paused.interrupts[0].id)
    assert SEEN == [("A1", {"ticket": "Y"})]
