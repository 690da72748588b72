"""``result_of``: how a run stands, from what is stored — the one rule the engine, the server's
follower of worker runs and the sub-agent state all read."""

from __future__ import annotations

from datetime import UTC, datetime

from interlock.interrupts import Interrupt
from interlock.messages import AssistantMessage, ToolCall, UserMessage
from interlock.result import final_output, result_of

NOW = datetime(2026, 12, 1, tzinfo=UTC)
ASKED = [UserMessage(content="hi")]
ANSWERED = [*ASKED, AssistantMessage(content="done")]
CALLING = [*ASKED, AssistantMessage(content="", tool_calls=[ToolCall(id="c1", name="t",
                                                                       args={})])]


def test_a_thread_with_pending_requests_is_interrupted() -> None:
    question = Interrupt(id="i1", kind="input", value="why?", created_at=NOW)
    r = result_of("t1", CALLING, [question], version=4)
    assert (r.status, r.interrupts, r.output, r.version) == ("interrupted", [question], None, 4)


def test_an_open_turn_waiting_elsewhere_is_interrupted_without_requests() -> None:
    r = result_of("t1", CALLING, [], waiting=True)
    assert (r.status, r.interrupts, r.output) == ("interrupted", [], None)


def test_a_finished_thread_is_completed_with_its_answer() -> None:
    r = result_of("t1", ANSWERED, [])
    assert (r.status, r.output, r.messages) == ("completed", "done", ANSWERED)
    assert r.messages is not ANSWERED  # a copy: the caller's list is not shared


def test_only_the_models_last_text_without_calls_is_an_answer() -> None:
    assert final_output(ANSWERED) == "done"
    assert final_output(CALLING) is None
    assert final_output(ASKED) is None
    assert final_output([]) is None
    assert final_output([*ASKED, AssistantMessage(content="")]) == ""
