"""Assertions on transcripts that every provider would accept."""

from __future__ import annotations

from collections.abc import Sequence

from interlock import AssistantMessage, Message, ToolMessage


def assert_valid_transcript(messages: Sequence[Message]) -> None:
    """Every tool call is followed, before the next model turn, by exactly one result,
    in the model's call order; no result without a call."""
    i = 0
    seen: set[str] = set()
    while i < len(messages):
        m = messages[i]
        if isinstance(m, AssistantMessage) and m.tool_calls:
            ids = [c.id for c in m.tool_calls]
            assert not (set(ids) & seen), f"tool call id reused: {ids}"
            seen.update(ids)
            results = messages[i + 1 : i + 1 + len(ids)]
            assert all(isinstance(r, ToolMessage) for r in results), (
                f"assistant turn {i} is not followed by {len(ids)} tool results"
            )
            assert [r.tool_call_id for r in results if isinstance(r, ToolMessage)] == ids
            i += 1 + len(ids)
            continue
        assert not isinstance(m, ToolMessage), f"tool result without a call at {i}"
        i += 1


def tool_results(messages: Sequence[Message]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
