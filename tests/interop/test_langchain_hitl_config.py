"""LangChain's HumanInTheLoopMiddleware configuration, as LangChain's own tests exercise it,
in interlock: the dict form of ``interrupt_on``, three-argument description callables, the
default description prefix; plus glob keys in ``interrupt_on``."""

from __future__ import annotations

from typing import Any

import pytest

from interlock import (
    Agent,
    ConfigurationError,
    HumanInTheLoop,
    InterruptOn,
    InvalidDecision,
    NotAuthorized,
    ScriptedModel,
    ToolMessage,
    tool,
)
from interlock.hitl import DEFAULT_PREFIX


class Tools:
    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        def make(name: str) -> Any:
            def fn(path: str) -> str:
                self.ran.append((name, {"path": path}))
                return f"{name} {path}: ok"
            fn.__name__ = name
            fn.__doc__ = f"{name} a file."
            return tool(fn)

        self.tools = [make(n) for n in ("write_file", "delete_file", "read_file",
                                        "git_status", "git_commit", "git_push")]


def agent_for(interrupt_on: dict[str, Any], calls: list[dict[str, Any]],
              tools: Tools | None = None, **hitl: Any) -> Agent:
    tools = tools or Tools()
    return Agent(model=ScriptedModel([calls, "done", "done"]), tools=tools.tools,
                 middleware=[HumanInTheLoop(interrupt_on=interrupt_on, **hitl)])


def call(name: str, path: str = "/tmp/a.txt", cid: str | None = None) -> dict[str, Any]:
    return {"name": name, "args": {"path": path}, "id": cid or f"id_{name}"}


# ---------------------------------------------------------------- dict configs


def test_dict_config_sets_allowed_decisions_and_description() -> None:
    tools = Tools()
    agent = agent_for({
        "write_file": True,
        "delete_file": {"allowed_decisions": ["approve", "reject"],
                        "description": "🚨 Deleting requires approval"},
        "read_file": False,
    }, [call("write_file"), call("delete_file"), call("read_file")], tools)
    result = agent.invoke("go", thread_id="t")
    request = result.interrupts[0].value
    assert [(a.name, a.description) for a in request.action_requests] == [
        ("write_file", f'{DEFAULT_PREFIX}\n\nTool: write_file\nArgs: {{"path": "/tmp/a.txt"}}'),
        ("delete_file", "🚨 Deleting requires approval"),
    ]
    assert [c.allowed_decisions for c in request.review_configs] == [
        ["approve", "edit", "reject", "respond"], ["approve", "reject"]]
    assert tools.ran == [("read_file", {"path": "/tmp/a.txt"})]
    # a decision the dict does not allow is refused before anything is stored
    with pytest.raises(InvalidDecision, match="'edit', which this call does not allow"):
        agent.resume("t", [{"type": "approve"},
                           {"type": "edit", "edited_action": {"name": "delete_file",
                                                              "args": {"path": "/x"}}}])
    assert agent.resume("t", [{"type": "approve"}, {"type": "reject"}]).status == "completed"
    assert tools.ran[1:] == [("write_file", {"path": "/tmp/a.txt"})]


def test_default_description_prefix_is_langchains() -> None:
    assert DEFAULT_PREFIX == "Tool execution requires approval"
    agent = agent_for({"write_file": True}, [call("write_file")],
                      description_prefix="Tool execution pending approval")
    [action] = agent.invoke("go", thread_id="t").interrupts[0].value.action_requests
    assert action.description.startswith("Tool execution pending approval\n\nTool: write_file")


@pytest.mark.parametrize("config", [{}, {"allowed_decisions": []},
                                    {"allowed_decision": ["approve"]},
                                    {"description": "no decisions"}])
def test_dict_config_without_allowed_decisions_fails_at_construction(
        config: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match=r"interrupt_on\['write_file'\]"):
        HumanInTheLoop(interrupt_on={"write_file": config})


def test_dict_config_rejects_unknown_keys_and_decisions_accepts_args_schema() -> None:
    with pytest.raises(ConfigurationError, match="unknown key 'allowed'"):
        HumanInTheLoop(interrupt_on={"write_file": {"allowed_decisions": ["approve"],
                                                    "allowed": True}})
    with pytest.raises(ConfigurationError, match="unknown decision"):
        HumanInTheLoop(interrupt_on={"write_file": {"allowed_decisions": ["approve", "bogus"]}})
    hitl = HumanInTheLoop(interrupt_on={"write_file": {
        "allowedDecisions": ["approve"], "args_schema": {"type": "object"}}})
    assert hitl.policy["write_file"].allowed_decisions == ["approve"]


def test_dict_config_when_predicate_gates_some_calls() -> None:
    tools = Tools()
    agent = agent_for({"write_file": {"allowed_decisions": ["approve", "reject"],
                                      "when": lambda c: c.args["path"].startswith("/etc")}},
                      [call("write_file", "/tmp/x", "a"), call("write_file", "/etc/passwd", "b")],
                      tools)
    result = agent.invoke("go", thread_id="t")
    assert [a.tool_call_id for a in result.interrupts[0].value.action_requests] == ["b"]
    assert tools.ran == [("write_file", {"path": "/tmp/x"})]


def test_when_predicate_written_for_langchain_reads_the_request() -> None:
    seen: list[tuple[str, int]] = []

    def when(request: Any) -> bool:  # LangChain's ToolCallRequest shape
        seen.append((request.runtime.thread_id, len(request.state["messages"])))
        return bool(request.tool_call["args"]["path"].startswith("/etc"))

    tools = Tools()
    agent = agent_for({"write_file": {"allowed_decisions": ["approve", "reject"],
                                      "when": when}},
                      [call("write_file", "/tmp/x", "a"), call("write_file", "/etc/hosts", "b")],
                      tools)
    result = agent.invoke("go", thread_id="t9")
    assert [a.tool_call_id for a in result.interrupts[0].value.action_requests] == ["b"]
    assert tools.ran == [("write_file", {"path": "/tmp/x"})]
    assert seen == [("t9", 2), ("t9", 2)]


# ---------------------------------------------------------------- description callables


def test_three_argument_description_callable_written_for_langchain() -> None:
    seen: list[tuple[Any, Any, Any]] = []

    def describe(tool_call: Any, state: Any, runtime: Any) -> str:
        seen.append((tool_call, state, runtime))
        return (f"Delete {tool_call['args']['path']}? ({len(state['messages'])} messages, "
                f"thread {runtime.thread_id})")

    agent = agent_for({"delete_file": {"allowed_decisions": ["approve", "reject"],
                                       "description": describe}},
                      [call("delete_file", "/srv/db.sqlite")])
    result = agent.invoke("clean up", thread_id="t1")
    [action] = result.interrupts[0].value.action_requests
    assert action.description == "Delete /srv/db.sqlite? (2 messages, thread t1)"
    [(tool_call, state, _)] = seen
    assert tool_call == {"name": "delete_file", "args": {"path": "/srv/db.sqlite"},
                         "id": "id_delete_file", "type": "tool_call"}
    assert state["messages"][0].content == "clean up"
    # evaluated once: resuming does not call it again
    agent.resume("t1", [{"type": "approve"}])
    assert len(seen) == 1


def test_lambda_three_arguments_and_native_two_arguments_both_work() -> None:
    agent = agent_for({
        "delete_file": InterruptOn(description=lambda tc, st, rt: f"LC {tc['name']}"),
        "write_file": InterruptOn(description=lambda call, turn: f"native {call.name}"),
    }, [call("delete_file"), call("write_file")])
    actions = agent.invoke("go", thread_id="t").interrupts[0].value.action_requests
    assert [a.description for a in actions] == ["LC delete_file", "native write_file"]


async def _async_description(tool_call: Any, state: Any, runtime: Any) -> str:
    return "never"


def _four(a: Any, b: Any, c: Any, d: Any) -> str:
    return "never"


def _keyword_only(tool_call: Any, *, state: Any) -> str:
    return "never"


@pytest.mark.parametrize("fn", [lambda call: "one", _four, _async_description, _keyword_only])
def test_unusable_description_callable_fails_at_construction(fn: Any) -> None:
    with pytest.raises(ConfigurationError, match="description callable"):
        HumanInTheLoop(interrupt_on={"delete_file": {"allowed_decisions": ["approve"],
                                                     "description": fn}})
    with pytest.raises(ConfigurationError, match="description callable"):
        InterruptOn(description=fn)


def test_description_callable_that_raises_falls_back_to_default_text() -> None:
    def broken(tool_call: Any, state: Any, runtime: Any) -> str:
        return str(tool_call["nope"])

    agent = agent_for({"delete_file": {"allowed_decisions": ["approve"],
                                       "description": broken}}, [call("delete_file")])
    [action] = agent.invoke("go", thread_id="t").interrupts[0].value.action_requests
    assert action.description.startswith(f"{DEFAULT_PREFIX}\n\nTool: delete_file")
    assert "The description callback failed: KeyError('nope')" in action.description


# ---------------------------------------------------------------- glob keys


def test_glob_pattern_gates_matching_tools_exact_names_win() -> None:
    tools = Tools()
    agent = agent_for({"git_*": True, "git_status": False},
                      [call("git_status"), call("git_commit"), call("git_push"),
                       call("read_file")], tools)
    result = agent.invoke("go", thread_id="t")
    assert [a.name for a in result.interrupts[0].value.action_requests] == [
        "git_commit", "git_push"]
    assert [n for n, _ in tools.ran] == ["git_status", "read_file"]


def test_first_matching_pattern_wins_and_star_gates_everything() -> None:
    agent = agent_for({"git_c*": {"allowed_decisions": ["reject"]}, "git_*": True, "*": False},
                      [call("git_commit"), call("git_push"), call("write_file")])
    request = agent.invoke("go", thread_id="t").interrupts[0].value
    assert [(c.action_name, c.allowed_decisions) for c in request.review_configs] == [
        ("git_commit", ["reject"]), ("git_push", ["approve", "edit", "reject", "respond"])]
    agent = agent_for({"*": {"allowed_decisions": ["approve", "reject"]}},
                      [call("read_file"), call("write_file")])
    request = agent.invoke("go", thread_id="t").interrupts[0].value
    assert [a.name for a in request.action_requests] == ["read_file", "write_file"]


def test_typos_are_still_refused_with_patterns() -> None:
    with pytest.raises(ConfigurationError, match=r"names tool\(s\) \['git_comit'\]"):
        agent_for({"git_*": True, "git_comit": False}, [])
    with pytest.raises(ConfigurationError, match=r"pattern\(s\) \['gti_\*'\] that match none"):
        agent_for({"gti_*": True}, [])


def test_edit_into_a_tool_gated_by_pattern_respects_its_policy() -> None:
    agent = agent_for({"git_push": True, "git_c*": {"allowed_decisions": ["reject"]}},
                      [call("git_push")])
    assert agent.invoke("go", thread_id="t").interrupted
    with pytest.raises(NotAuthorized, match="does not allow 'approve'"):
        agent.resume("t", [{"type": "edit", "edited_action": {"name": "git_commit",
                                                              "args": {"path": "/x"}}}])
    result = agent.resume("t", [{"type": "reject"}])
    assert [m.status for m in result.messages if isinstance(m, ToolMessage)] == ["error"]
