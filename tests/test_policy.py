"""Policy configuration (SPEC §4.1): validated at construction, failing closed."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import StoreFactory
from interlock import (
    Agent,
    ConfigurationError,
    HumanInTheLoop,
    InterruptOn,
    ModelTurn,
    RunLimitExceeded,
    ScriptedModel,
    ToolCall,
)
from seed_agent import SeedTools, call, make_agent


def build(interrupt_on: dict[str, Any]) -> Agent:
    return Agent(model=ScriptedModel(["x"]), tools=SeedTools().all,
                 middleware=[HumanInTheLoop(interrupt_on=interrupt_on)])


def test_unknown_tool_name_fails_at_construction() -> None:
    with pytest.raises(ConfigurationError, match=r"\['wirte_file'\].*fix the name") as info:
        build({"wirte_file": True})
    assert "write_file" in str(info.value)


@pytest.mark.parametrize("allowed", [[], ["approve", "bogus"], "approve", ["maybe"]])
def test_bad_allowed_decisions(allowed: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"approve, edit|allowed values|non-empty"):
        InterruptOn(allowed_decisions=allowed)


def test_when_must_be_callable_and_values_checked() -> None:
    with pytest.raises(ConfigurationError, match="when"):
        InterruptOn(when=True)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="True, False, InterruptOn"):
        build({"write_file": "yes"})
    with pytest.raises(ConfigurationError, match="reviewers"):
        InterruptOn(reviewers="dba")
    with pytest.raises(ConfigurationError, match="on_expire"):
        InterruptOn(on_expire="approve")  # type: ignore[arg-type]


def test_when_and_callable_description_evaluated_once(stores: StoreFactory) -> None:
    seen: list[str] = []

    def when(c: ToolCall) -> bool:
        seen.append(f"when:{c.id}")
        return not str(c.args["query"]).lstrip().upper().startswith("SELECT")

    def describe(c: ToolCall, turn: ModelTurn) -> str:
        seen.append(f"describe:{c.id}")
        return f"{len(turn.messages)} messages so far; run {c.args['query']}?"

    policy = HumanInTheLoop(interrupt_on={
        "execute_sql": InterruptOn(allowed_decisions=["approve", "reject"], when=when,
                                   description=describe)})
    script = [[call("execute_sql", {"query": "select * from t"}, "q1"),
               call("execute_sql", {"query": "DELETE FROM t"}, "q2")], "ok"]
    agent, tools, _ = make_agent(script, stores(), middleware=[policy])
    paused = agent.invoke("go", thread_id="t")
    request = paused.interrupts[0].value
    assert [a.tool_call_id for a in request.action_requests] == ["q2"]
    assert request.action_requests[0].description == "2 messages so far; run DELETE FROM t?"
    assert tools.counts["execute_sql"] == 1  # the SELECT ran without pausing
    agent.resume("t", [{"type": "approve"}])
    assert seen == ["when:q1", "when:q2", "describe:q2"]  # never re-evaluated on resume
    assert tools.counts["execute_sql"] == 2


def test_when_raising_or_unparseable_args_fail_closed(stores: StoreFactory) -> None:
    def broken(c: ToolCall) -> bool:
        raise KeyError("query")

    policy = HumanInTheLoop(interrupt_on={"execute_sql": InterruptOn(when=broken),
                                          "write_file": InterruptOn(when=lambda c: False)})
    script = [[call("execute_sql", {"sql": "DELETE"}, "q1"),
               {"name": "write_file", "args": {}, "id": "w1",
                "args_error": "Expecting value: line 1 column 9"}], "ok"]
    agent, tools, _ = make_agent(script, stores(), middleware=[policy])
    paused = agent.invoke("go", thread_id="t")
    reqs = paused.interrupts[0].value.action_requests
    assert [r.tool_call_id for r in reqs] == ["q1", "w1"]
    assert "`when` predicate raised" in (reqs[0].reason or "")
    assert "could not be parsed" in (reqs[1].reason or "")
    assert tools.counts == {}


def test_async_when_is_refused_and_an_awaitable_answer_fails_closed(
        stores: StoreFactory) -> None:
    """An ``async def`` predicate would never be awaited (a coroutine is always true, so
    every call paused silently): refused at construction, as async descriptions are. A plain
    callable that returns an awaitable pauses the call and says why."""
    async def risky(c: ToolCall) -> bool:
        return False

    class AsyncCheck:
        async def __call__(self, c: ToolCall) -> bool:
            return False

    for predicate in (risky, AsyncCheck()):
        with pytest.raises(ConfigurationError, match=r"when=.*async"):
            InterruptOn(when=predicate)
        with pytest.raises(ConfigurationError, match=r"when=.*async"):
            build({"write_file": {"allowed_decisions": ["approve"], "when": predicate}})

    policy = HumanInTheLoop(interrupt_on={"execute_sql": InterruptOn(
        when=lambda c: risky(c))})
    agent, tools, _ = make_agent([[call("execute_sql", {"query": "SELECT 1"}, "q1")], "ok"],
                                 stores(), middleware=[policy])
    paused = agent.invoke("go", thread_id="t")
    (req,) = paused.interrupts[0].value.action_requests
    assert "returned an awaitable" in (req.reason or "")
    assert tools.counts == {}


def test_when_returning_none_pauses_and_says_why(stores: StoreFactory) -> None:
    """A predicate that forgets its ``return`` answers ``None``: the call pauses (fail
    closed) instead of running unreviewed; other falsy answers still let it run."""
    def forgot_return(c: ToolCall) -> bool:
        c.args["query"].startswith("DELETE")  # no `return`
        return None  # type: ignore[return-value]

    policy = HumanInTheLoop(interrupt_on={"execute_sql": InterruptOn(when=forgot_return),
                                          "write_file": InterruptOn(when=lambda c: 0)})
    script = [[call("execute_sql", {"query": "DELETE FROM t"}, "q1"),
               call("write_file", {"path": "a", "content": "b"}, "w1")], "ok"]
    agent, tools, _ = make_agent(script, stores(), middleware=[policy])
    paused = agent.invoke("go", thread_id="t")
    (req,) = paused.interrupts[0].value.action_requests
    assert req.tool_call_id == "q1"
    assert req.reason == "the `when` predicate returned None, not a bool"
    assert tools.counts == {"write_file": 1}


def test_false_and_absent_never_pause(stores: StoreFactory) -> None:
    policy = HumanInTheLoop(interrupt_on={"write_file": False})
    script = [[call("write_file", {"path": "a", "content": "b"}, "w1"),
               call("read_data", {"table": "t"}, "r1")], "done"]
    agent, tools, _ = make_agent(script, stores(), middleware=[policy])
    assert agent.invoke("go", thread_id="t").output == "done"
    assert tools.counts == {"write_file": 1, "read_data": 1}


def test_default_checkpointer_is_memory_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="interlock"):
        agent = Agent(model=ScriptedModel(["hi"]), tools=[])
    assert "not durable" in repr(agent)
    assert any("not durable" in r.getMessage() for r in caplog.records)


def test_duplicate_tools_and_middleware_rejected() -> None:
    tools = SeedTools()
    with pytest.raises(ConfigurationError, match="named 'write_file'"):
        Agent(model=ScriptedModel(["x"]), tools=[tools.write_file, tools.write_file])
    hitl = HumanInTheLoop(interrupt_on={})
    with pytest.raises(ConfigurationError, match="twice"):
        Agent(model=ScriptedModel(["x"]), tools=[], middleware=[hitl, hitl])
    with pytest.raises(ConfigurationError, match="not a model"):
        Agent(model=object(), tools=[])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unknown provider"):
        Agent(model="gemini:pro", tools=[])


def test_max_turns_counts_the_model_calls_of_one_run(stores: StoreFactory) -> None:
    """``max_turns`` is per run: a resume starts its own count (as LangGraph's
    ``recursion_limit`` is per invocation), and a run past it fails with
    ``RunLimitExceeded``."""
    read = call("read_data", {"table": "t"}, "r1")
    script = [[read], [call("execute_sql", {"query": "DELETE"}, "q1")],
              [call("read_data", {"table": "u"}, "r2")], "done",
              [call("read_data", {"table": "v"}, "r3")], [call("read_data", {"table": "w"},
                                                                "r4")], "never"]
    agent, tools, _ = make_agent(script, stores(), max_turns=2)
    assert agent.invoke("go", thread_id="t").interrupts  # two model calls, then the pause
    done = agent.resume("t", [{"type": "approve"}])  # two more, in a run of its own
    assert done.output == "done"
    assert tools.counts == {"read_data": 2, "execute_sql": 1}
    with pytest.raises(RunLimitExceeded, match="max_turns=2"):
        agent.invoke("again", thread_id="t")  # three model calls in one run
    assert tools.counts == {"read_data": 4, "execute_sql": 1}
