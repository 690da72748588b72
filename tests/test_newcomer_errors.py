"""The mistakes a newcomer makes that used to pass silently: each is now a message that says
what is wrong and names the fix."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from interlock import (
    Agent,
    ConfigurationError,
    HumanInTheLoop,
    InterlockWarning,
    InterruptOn,
    InvalidDecision,
    Reviewer,
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


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"tools": execute_sql}, r"tools=.* is not a list: .*e\.g\. tools=\[execute_sql\]"),
    ({"tools": "execute_sql"}, r"tools='execute_sql' is not a list"),
    ({"middleware": HumanInTheLoop(interrupt_on={"execute_sql": True})},
     r"middleware=HumanInTheLoop\(\.\.\.\) is not a list: .*middleware=\[HumanInTheLoop"),
    ({"middleware": [HumanInTheLoop]}, r"lists a class: pass an instance, e\.g\. HumanInTheLoop"),
    ({"checkpointer": "interlock.db"},
     r"checkpointer='interlock\.db' is a path or URL, not a checkpointer: .*"
     r"SqliteCheckpointer\('interlock\.db'\)"),
    ({"checkpointer": Path("interlock.db")}, r"is a path or URL, not a checkpointer"),
    ({"checkpointer": SqliteCheckpointer}, r"checkpointer=SqliteCheckpointer is a class"),
    ({"checkpointer": object()}, r"is not a checkpointer: pass MemoryCheckpointer\(\)"),
    ({"model": ScriptedModel}, r"model=ScriptedModel is a class: pass an instance"),
    ({"lease": 60}, r"lease must be a datetime\.timedelta, got int 60: write "
                    r"lease=timedelta\(seconds=\.\.\.\)"),
    ({"lease": timedelta(0)}, r"lease must be positive"),
    ({"tool_grace": 5.0}, r"tool_grace must be a datetime\.timedelta, got float"),
    ({"max_turns": "5"}, r"max_turns must be a whole number, got str '5'"),
    ({"max_turns": 0}, r"max_turns must be at least 1"),
    ({"cached_threads": -1}, r"cached_threads must be at least 0"),
    ({"system_prompt": ["be brief"]}, r"system_prompt must be a string \(or None\), got list"),
    ({"name": ""}, r"name must be a non-empty string"),
    ({"clock": "now"}, r"clock must be a function"),
])
def test_an_agent_argument_of_the_wrong_kind_is_refused_at_agent(
        kwargs: dict[str, object], expected: str) -> None:
    args: dict[str, object] = {
        "model": ScriptedModel([{"name": "execute_sql", "args": {"query": "DELETE x"}}, "done"]),
        "tools": [execute_sql], "middleware": []}
    args.update(kwargs)
    with pytest.raises(ConfigurationError, match=expected):
        Agent(**args)  # type: ignore[arg-type]


def test_a_lease_given_as_a_number_stores_nothing(tmp_path: Path) -> None:
    """``lease=60`` used to be taken and to fail mid-run, once the call was approved, with a
    TypeError, leaving the thread stored as failed."""
    store = SqliteCheckpointer(tmp_path / "lease.db")
    ran: list[str] = []

    @tool
    def lookup(order_id: int) -> str:
        """Look up an order."""
        ran.append(str(order_id))
        return "found"

    with pytest.raises(ConfigurationError, match=r"lease must be a datetime\.timedelta"):
        agent = Agent(model=ScriptedModel([{"name": "lookup", "args": {"order_id": 7}}, "done"]),
                      tools=[lookup], checkpointer=store, lease=60)  # type: ignore[arg-type]
        agent.invoke("find order 7", thread_id="t1")
    ok = Agent(model=ScriptedModel(["hi"]), tools=[lookup], checkpointer=store)
    assert ok.list_threads() == [] and ran == []


@pytest.mark.parametrize(("path", "expected"), [
    ("sqlite:///interlock.db", r"got a URL; it takes a file path: "
                               r"SqliteCheckpointer\('interlock\.db'\)\. A --db URL is opened "
                               r"with interlock\.storage\.from_url"),
    ("sqlite:////srv/agents/interlock.db", r"SqliteCheckpointer\('/srv/agents/interlock\.db'\)"),
    ("postgresql://app@db/agents", r"got a postgresql:// URL; .*PostgresCheckpointer\(url\)"),
    (42, r"needs a file path \(str or pathlib\.Path\), got int 42"),
])
def test_sqlite_checkpointer_refuses_a_url_or_a_non_path_and_creates_nothing(
        path: object, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The --db spelling typed into Python used to create a directory ``sqlite:`` (a file
    ``42`` for a number) in the current directory and keep the threads there."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=expected):
        agent = Agent(model=ScriptedModel(["hi"]), tools=[execute_sql],
                      checkpointer=SqliteCheckpointer(path))  # type: ignore[arg-type]
        agent.invoke("hi", thread_id="t1")
    assert list(tmp_path.iterdir()) == []


def test_sqlite_checkpointer_reads_a_tilde_as_the_home_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    agent = Agent(model=ScriptedModel(["hi"]), tools=[execute_sql],
                  checkpointer=SqliteCheckpointer("~/agents.db"))
    assert agent.invoke("hi", thread_id="t1").output == "hi"
    agent.close()
    assert (home / "agents.db").is_file()
    assert list(work.iterdir()) == []  # no directory named "~"


def test_tool_decorated_method_is_refused_with_the_bound_method_fix() -> None:
    """@tool on a method inside a class used to make ``self`` a required argument the model
    had to supply (every call failed with "self: Field required"), and the warning advised
    annotating ``self: str``."""
    with pytest.raises(ConfigurationError,
                       match=r"Tool 'lookup': its first parameter is 'self', so it is a method "
                             r".*tools=\[tool\(obj\.lookup\)\]"):
        class Orders:
            @tool
            def lookup(self, order_id: int) -> str:
                """Look up an order."""
                return f"order {order_id}"

    class Shop:
        def __init__(self) -> None:
            self.prefix = "order"

        def lookup(self, order_id: int) -> str:
            """Look up an order."""
            return f"{self.prefix} {order_id}"

    bound = tool(Shop().lookup)  # the fix the message names
    assert list(bound.args_schema["properties"]) == ["order_id"]
    agent = Agent(model=ScriptedModel([{"name": "lookup", "args": {"order_id": 7}}, "done"]),
                  tools=[bound])
    result = agent.invoke("find 7", thread_id="t1")
    assert [m.content for m in result.messages if m.role == "tool"] == ["order 7"]


def test_tool_given_its_name_positionally_or_no_usable_name_says_how_to_name_it() -> None:
    with pytest.raises(ConfigurationError, match=r"@tool\('lookup'\): the name is a keyword "
                                                 r"argument, @tool\(name='lookup'\)"):
        tool("lookup")  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match=r"Tool name '<lambda>' .*give the tool a name"):
        tool(lambda order_id: order_id)


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"expires_after": 3600}, r"InterruptOn\(expires_after=3600\) must be a datetime\.timedelta,"
                              r" e\.g\. expires_after=timedelta\(hours=1\)"),
    ({"escalate_to": ["dba"], "escalate_after": 600},
     r"InterruptOn\(escalate_after=600\) must be a datetime\.timedelta"),
    ({"escalate_to": [1], "escalate_after": timedelta(minutes=5)},
     r"give a non-empty list of roles"),
    ({"allow_remember": "no"}, r"InterruptOn\(allow_remember='no'\) must be True or False"),
    ({"self_approval": 0}, r"InterruptOn\(self_approval=0\) must be True or False"),
    ({"reviewers": []}, r"InterruptOn\(reviewers=\[\]\) names no role, so no reviewer could "
                        r"decide the calls: leave reviewers out"),
])
def test_an_interrupt_on_value_of_the_wrong_kind_is_refused(
        kwargs: dict[str, object], expected: str) -> None:
    """``expires_after=3600`` raised a TypeError comparing int and timedelta;
    ``allow_remember="no"`` (a true value) allowed remembering; ``reviewers=[]`` was taken and
    made every reviewer's decision NotAuthorized ("it needs one of the roles: .")."""
    with pytest.raises(ConfigurationError, match=expected):
        InterruptOn(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"interrupt_on\['execute_sql'\]: .*" + expected):
        HumanInTheLoop(interrupt_on={"execute_sql": {"allowed_decisions": ["approve", "reject"],
                                                     **kwargs}})


@pytest.mark.parametrize(("args", "expected"), [
    (("alice", "dba"), r"Reviewer\('alice', roles='dba'\): roles is a collection of role names, "
                       r"e\.g\. roles=\{'dba'\}"),
    (("alice", 7), r"roles is a collection of role names"),
    (("alice", [1]), r"every role is a string"),
    ((None,), r"Reviewer\(id=None\): the id is a string"),
])
def test_a_reviewer_with_roles_as_one_string_is_refused(
        args: tuple[object, ...], expected: str) -> None:
    """``Reviewer("alice", "dba")`` used to hold the roles 'd', 'b' and 'a'."""
    with pytest.raises(ConfigurationError, match=expected):
        Reviewer(*args)  # type: ignore[arg-type]
    assert Reviewer("alice", ["dba"]).roles == frozenset({"dba"})


@pytest.mark.parametrize(("decision", "expected"), [
    ({"action": "approve"}, r"decision 1 of 1 \(for call 'call_1_0', tool 'execute_sql'\) has no "
                            r"'type' key; write \{'type': 'approve'\} instead of "
                            r"\{'action': 'approve'\}"),
    ({"decision": "Rejected", "message": "no"}, r"write \{'type': 'reject'\} instead of "
                                                r"\{'decision': 'Rejected'\}"),
    ({"message": "not now"}, r"has no 'type' key \(it has \['message'\]\); a decision is an "
                             r"object like \{'type': 'approve'\}"),
])
def test_a_decision_without_a_type_key_says_so(decision: dict[str, str], expected: str) -> None:
    """It used to say "has type None, which is not a decision type"."""
    agent = gated()
    agent.invoke("clean up", thread_id="t1")
    before = agent.get_thread("t1").version
    with pytest.raises(InvalidDecision, match=expected):
        agent.resume("t1", [decision])
    after = agent.get_thread("t1")
    assert after.status == "interrupted" and after.version == before
