"""A gated call whose arguments do not fit its tool: asked with the reason (LangChain's way,
the default) or sent back to the model without asking anyone (Pydantic AI's way,
``HumanInTheLoop(invalid_args="model")``). Either way the tool never runs with them, and the
corrected call is reviewed as any other."""

from __future__ import annotations

import pytest

from conftest import StoreFactory
from interlock import ConfigurationError, HumanInTheLoop, InterruptOn, ToolMessage
from seed_agent import call, make_agent


def _policy(**kw: object) -> HumanInTheLoop:
    return HumanInTheLoop(interrupt_on={"execute_sql": InterruptOn(
        allowed_decisions=["approve", "edit", "reject"])}, **kw)  # type: ignore[arg-type]


def test_invalid_arguments_go_back_to_the_model_first(stores: StoreFactory) -> None:
    script = [[call("execute_sql", {"sql": "DELETE FROM t"}, "bad"),
               {"name": "execute_sql", "args": {}, "id": "broken",
                "args_error": "Expecting value: line 1 column 9"}],
              [call("execute_sql", {"query": "DELETE FROM t"}, "good")], "done"]
    agent, tools, _ = make_agent(script, stores(), middleware=[_policy(invalid_args="model")])
    paused = agent.invoke("clean up", thread_id="t")
    # the model was called again with the two errors; only the corrected call waits
    (req,) = paused.interrupts[0].value.action_requests
    assert (req.tool_call_id, req.args, req.reason) == ("good", {"query": "DELETE FROM t"}, None)
    results = {m.tool_call_id: m for m in paused.messages if isinstance(m, ToolMessage)}
    assert results["bad"].status == results["broken"].status == "error"
    assert "Invalid arguments for tool 'execute_sql'" in results["bad"].content
    assert "query" in results["bad"].content and "nobody was asked" in results["bad"].content
    assert "could not be parsed" in results["broken"].content
    assert tools.counts == {}
    done = agent.resume("t", [{"type": "approve"}])
    assert done.status == "completed" and done.output == "done"
    assert tools.executed == [("execute_sql", {"query": "DELETE FROM t"})]
    # the audit log says who turned them back, and that nobody decided them
    kept = {r.tool_call_id: (r.kind, r.actor) for r in agent.audit("t")
            if r.tool_call_id in ("bad", "broken")}
    assert kept == dict.fromkeys(("bad", "broken"),
                                 ("rejected_by_policy", "middleware:HumanInTheLoop"))


def test_by_default_a_person_is_asked_and_told_what_is_wrong(stores: StoreFactory) -> None:
    script = [[call("execute_sql", {"sql": "DELETE FROM t"}, "bad")], "fixed", "done"]
    agent, tools, _ = make_agent(script, stores(), middleware=[_policy()])
    paused = agent.invoke("clean up", thread_id="t")
    (req,) = paused.interrupts[0].value.action_requests
    assert req.tool_call_id == "bad"
    assert "do not match the tool's schema" in (req.reason or "")
    assert "query" in (req.reason or "")  # the missing field is named
    # approved as it is: the tool is not run, the model gets the error
    after = agent.resume("t", [{"type": "approve"}])
    result = next(m for m in after.messages if isinstance(m, ToolMessage))
    assert result.status == "error" and "Invalid arguments" in result.content
    assert tools.counts == {}


def test_a_reviewer_can_fix_the_arguments(stores: StoreFactory) -> None:
    script = [[call("execute_sql", {"sql": "DELETE FROM t"}, "bad")], "done"]
    agent, tools, _ = make_agent(script, stores(), middleware=[_policy()])
    agent.invoke("clean up", thread_id="t")
    done = agent.resume("t", [{"type": "edit", "edited_action": {
        "name": "execute_sql", "args": {"query": "DELETE FROM t WHERE old"}}}])
    assert done.status == "completed"
    assert tools.executed == [("execute_sql", {"query": "DELETE FROM t WHERE old"})]


def test_the_option_is_checked() -> None:
    with pytest.raises(ConfigurationError, match=r"invalid_args='never'.*'ask'.*'model'"):
        _policy(invalid_args="never")
