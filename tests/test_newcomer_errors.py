"""The mistakes a newcomer makes that used to pass silently: each is now a message that says
what is wrong and names the fix."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from interlock import (
    Agent,
    ConfigurationError,
    HumanInTheLoop,
    InterlockWarning,
    InvalidDecision,
    ScriptedModel,
    SqliteCheckpointer,
    ThreadNotFound,
    tool,
)


@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement."""
    return f"ran {query}"


def gated(checkpointer: SqliteCheckpointer | None = None) -> Agent:
    return Agent(model=ScriptedModel([{"name": "execute_sql", "args": {"query": "DELETE x"}},
                                      "done"]),
                 tools=[execute_sql], middleware=[HumanInTheLoop(interrupt_on={
                     "execute_sql": True})], checkpointer=checkpointer)


def test_tool_without_docstring_is_warned_about_at_agent() -> None:
    def lookup(order_id: int) -> str:
        return str(order_id)

    with pytest.warns(InterlockWarning) as caught:
        Agent(model=ScriptedModel(["hi"]), tools=[lookup])
    [w] = caught
    text = str(w.message)
    assert "tool 'lookup'" in text and "no docstring" in text
    assert "model sees no description" in text
    assert "add a docstring or @tool(description=...)" in text
    assert w.filename == __file__  # points at the Agent(...) line


def test_tool_without_type_hints_is_warned_about_at_agent() -> None:
    def refund(order_id, amount: float) -> str:  # type: ignore[no-untyped-def]
        """Refund an order."""
        return "ok"

    with pytest.warns(InterlockWarning, match=r"tool 'refund' has no type hint for 'order_id'"
                      r".*annotate, e\.g\. order_id: str"):
        Agent(model=ScriptedModel(["hi"]), tools=[refund])


def test_a_documented_typed_tool_gives_no_warning(recwarn: pytest.WarningsRecorder) -> None:
    Agent(model=ScriptedModel(["hi"]), tools=[execute_sql])
    assert not [w for w in recwarn if issubclass(w.category, InterlockWarning)]


def test_unschemable_argument_type_names_tool_and_parameter() -> None:
    def query(conn: sqlite3.Connection, sql: str) -> str:
        """Run SQL on a connection."""
        return sql

    with pytest.raises(ConfigurationError) as info:
        tool(query)
    text = str(info.value)
    assert "Tool 'query': parameter 'conn' has the type Connection" in text
    assert "cannot be turned into a JSON schema" in text
    assert "a closure" in text  # how to pass the connection instead


def test_unknown_thread_with_the_default_memory_store_names_durable_stores() -> None:
    agent = gated()  # no checkpointer: memory
    with pytest.raises(ThreadNotFound) as info:
        agent.resume("t-from-yesterday", [{"type": "approve"}])
    text = str(info.value)
    assert "keeps its threads in memory" in text
    assert "SqliteCheckpointer('interlock.db')" in text and "PostgresCheckpointer" in text
    with pytest.raises(ThreadNotFound, match="keeps its threads in memory"):
        agent.get_thread("t-from-yesterday")


def test_unknown_thread_with_a_durable_store_has_no_memory_hint(tmp_path: Path) -> None:
    agent = gated(SqliteCheckpointer(tmp_path / "i.db"))
    try:
        with pytest.raises(ThreadNotFound) as info:
            agent.get_thread("nope")
        assert "in memory" not in str(info.value)
    finally:
        agent.close()


def test_extra_key_next_to_decisions_is_reported_and_changes_nothing() -> None:
    agent = gated()
    assert agent.invoke("clean up", thread_id="t1").interrupted
    with pytest.raises(InvalidDecision) as info:
        agent.resume("t1", {"decisions": [{"type": "approve"}], "message": "go ahead"})
    text = str(info.value)
    assert "next to 'decisions' there is also 'message'" in text
    assert "inside a decision" in text
    state = agent.get_thread("t1")
    assert state.status == "interrupted" and len(state.interrupts) == 1
    assert agent.resume("t1", {"decisions": [{"type": "approve"}]}).output == "done"


def test_resume_without_a_thread_id_says_it_is_missing() -> None:
    agent = gated()
    assert agent.invoke("clean up", thread_id="t1").interrupted
    with pytest.raises(ConfigurationError) as info:
        agent.resume([{"type": "approve"}])  # type: ignore[arg-type]
    text = str(info.value)
    assert "the thread id is missing" in text
    assert "agent.resume('t1', [{'type': 'approve'}])" in text
    assert agent.get_thread("t1").status == "interrupted"  # nothing was decided


def test_langchain_config_names_the_thread() -> None:
    agent = gated()
    result = agent.invoke("clean up", config={"configurable": {"thread_id": "lc-1"}})
    assert result.interrupted and result.thread_id == "lc-1"
    assert agent.get_thread("lc-1").status == "interrupted"
    events = list(agent.stream("again", config={"configurable": {"thread_id": "lc-2"}}))
    assert events[-1].result.thread_id == "lc-2"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({}, "invoke() needs a thread id"),
    ({"config": {"configurable": {}}}, "names no thread"),
    ({"config": {"recursion_limit": 5, "configurable": {"thread_id": "x"}}},
     "'recursion_limit', which interlock does not use"),
    ({"thread_id": "a", "config": {"configurable": {"thread_id": "b"}}},
     "two different threads"),
])
def test_a_thread_spelled_wrong_is_refused_with_the_interlock_spelling(
        kwargs: dict[str, object], fragment: str) -> None:
    agent = gated()
    with pytest.raises(ConfigurationError) as info:
        agent.invoke("clean up", **kwargs)  # type: ignore[arg-type]
    text = str(info.value)
    assert fragment in text
    if "two different" not in text:
        assert "agent.invoke(message, thread_id='t1')" in text
    assert agent.list_threads() == []  # nothing was stored
