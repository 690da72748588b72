"""MCP servers' tools in an interlock agent: the reference git server from PyPI over stdio on a
temporary repository, a streamable-HTTP server built with the SDK, and a server that dies in
the middle of a call."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from interlock import (
    Agent,
    HumanInTheLoop,
    NoPendingInterrupt,
    ScriptedModel,
    SqliteCheckpointer,
    ToolMessage,
)
from interlock.integrations.mcp import MCPServerHTTP, MCPServerStdio, MCPTool

from .notes_server import build

HERE = Path(__file__).parent
GIT_SERVER = Path(sys.executable).with_name("mcp-server-git")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    git(path, "config", "user.email", "dev@example.com")
    git(path, "config", "user.name", "Dev")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial")
    return path


def commits(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


def test_git_server_commit_waits_for_approval_and_commits_once(repo: Path,
                                                               tmp_path: Path) -> None:
    assert GIT_SERVER.exists(), "mcp-server-git is a dev dependency: pip install -e '.[dev]'"
    (repo / "notes.txt").write_text("旧记录已清理\n")
    git(repo, "add", "notes.txt")
    server = MCPServerStdio(str(GIT_SERVER), ["--repository", str(repo)], name="git")
    status = {"name": "git_status", "args": {"repo_path": str(repo)}}
    commit = {"name": "git_commit", "args": {"repo_path": str(repo), "message": "清理旧记录"}}
    agent = Agent(model=ScriptedModel([[status, commit], "已提交。"]), tools=[server],
                  middleware=[HumanInTheLoop(interrupt_on=server.policy())],
                  checkpointer=SqliteCheckpointer(tmp_path / "interlock.db"))
    try:
        tools = {t.name: t for t in agent.tools}
        assert isinstance(tools["git_commit"], MCPTool)
        # schema and description as the server declares them
        assert tools["git_commit"].args_schema["required"] == ["repo_path", "message"]
        assert tools["git_status"].description
        # annotations: read-only tools run ungated and are idempotent; writes pause
        assert server.policy()["git_status"] is False
        assert server.policy()["git_commit"] is True and server.policy()["git_reset"] is True
        assert tools["git_status"].idempotent and tools["git_add"].idempotent
        assert not tools["git_commit"].idempotent

        # ---- approve: one commit, exactly once
        result = agent.invoke("提交暂存的修改", thread_id="approve")
        assert result.interrupted
        request = result.interrupts[0].value
        assert [a.name for a in request.action_requests] == ["git_commit"]
        assert request.review_configs[0].args_schema["required"] == ["repo_path", "message"]
        assert commits(repo) == ["initial"]
        journal = {e.name: e.state for e in agent.journal("approve")}
        assert journal["git_status"] == "succeeded"  # the read-only call already ran
        result = agent.resume("approve", [{"type": "approve"}])
        assert result.output == "已提交。"
        assert commits(repo) == ["清理旧记录", "initial"]
        results = [m for m in result.messages if isinstance(m, ToolMessage)]
        assert "Changes to be committed" in results[0].content
        assert results[1].status == "success"
        assert results[1].content.startswith("Changes committed successfully")
        with pytest.raises(NoPendingInterrupt):
            agent.resume("approve", [{"type": "approve"}])
        assert commits(repo) == ["清理旧记录", "initial"]

        # ---- reject: nothing is committed
        (repo / "more.txt").write_text("x\n")
        git(repo, "add", "more.txt")
        assert agent.invoke("再提交一次", thread_id="reject").interrupted
        result = agent.resume("reject", [{"type": "reject", "message": "先别提交"}])
        assert commits(repo) == ["清理旧记录", "initial"]
        rejected = [m for m in result.messages if isinstance(m, ToolMessage)][1]
        assert rejected.status == "error" and "先别提交" in rejected.content
        assert server.connects == 1  # one server process served both threads
    finally:
        agent.close()
    assert server._loop is None  # the agent closed the connection and its loop


@pytest.fixture
def notes_http(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    notes = tmp_path / "notes.json"
    app = build(str(notes)).streamable_http_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "MCP server did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}/mcp", notes
    server.should_exit = True
    thread.join(timeout=10)


def test_streamable_http_server_gated_by_its_annotations(
    notes_http: tuple[str, Path], tmp_path: Path
) -> None:
    url, notes = notes_http
    server = MCPServerHTTP(url, name="notes")
    script: list[Any] = [
        [{"name": "list_notes", "args": {}}, {"name": "add_note", "args": {"text": "买牛奶"}}],
        {"name": "delete_all", "args": {}},
        {"name": "archive", "args": {"label": " "}},
        "好的。",
    ]
    agent = Agent(model=ScriptedModel(script), tools=[server],
                  middleware=[HumanInTheLoop(interrupt_on={**server.policy(),
                                                           "archive": False})],
                  checkpointer=SqliteCheckpointer(tmp_path / "interlock.db"))
    try:
        policy = server.policy()
        # look_up is read-only but open-world (openWorldHint absent: MCP's default is true)
        assert policy == {"list_notes": False, "look_up": True, "add_note": True,
                          "delete_all": True, "clear_notes": True, "archive": True,
                          "crash": True}
        assert server.policy(open_world=False)["look_up"] is False
        tools = {t.name: t for t in agent.tools}
        assert tools["delete_all"].idempotent and not tools["add_note"].idempotent
        result = agent.invoke("记一下", thread_id="t")
        assert [a.name for a in result.interrupts[0].value.action_requests] == ["add_note"]
        assert not notes.exists()
        result = agent.resume("t", [{"type": "approve"}])
        assert json.loads(notes.read_text()) == ["买牛奶"]
        assert [a.name for a in result.interrupts[0].value.action_requests] == ["delete_all"]
        result = agent.resume("t", [{"type": "reject"}])
        assert json.loads(notes.read_text()) == ["买牛奶"]
        assert result.status == "completed"
        by_name = {m.name: m for m in result.messages if isinstance(m, ToolMessage)}
        assert by_name["list_notes"].content == "(no notes)"
        assert by_name["add_note"].content == "added note 1"
        # an isError result reaches the model as an error result
        assert by_name["archive"].status == "error"
        assert "archive" in by_name["archive"].content
    finally:
        agent.close()


def test_server_dying_mid_call_gives_a_clear_error_and_a_usable_thread(tmp_path: Path) -> None:
    notes = tmp_path / "notes.json"
    server = MCPServerStdio(sys.executable, [str(HERE / "notes_server.py"), str(notes)],
                            name="notes")
    script: list[Any] = [{"name": "crash", "args": {"text": "半截"}}, "工具出错了。",
                         {"name": "list_notes", "args": {}}, "还在。"]
    agent = Agent(model=ScriptedModel(script), tools=[server],
                  middleware=[HumanInTheLoop(interrupt_on={**server.policy(),
                                                           "crash": False})],
                  checkpointer=SqliteCheckpointer(tmp_path / "interlock.db"))
    try:
        result = agent.invoke("记一下", thread_id="t")
        assert result.status == "completed" and result.output == "工具出错了。"
        [failed] = [m for m in result.messages if isinstance(m, ToolMessage)]
        assert failed.status == "error"
        assert "connection to MCP server 'notes' broke while it ran 'crash'" in failed.content
        assert "Whether the call took effect is unknown" in failed.content
        assert [e.state for e in agent.journal("t")] == ["failed"]
        # the thread goes on; the server is started again for the next call
        result = agent.invoke("还有笔记吗？", thread_id="t")
        assert result.output == "还在。"
        listed = [m for m in result.messages if isinstance(m, ToolMessage)][-1]
        assert (listed.status, listed.content) == ("success", "半截")
        assert server.connects == 2
    finally:
        agent.close()


def test_server_question_becomes_an_interrupt_and_the_answer_goes_back(
    notes_http: tuple[str, Path], tmp_path: Path
) -> None:
    url, notes = notes_http
    notes.write_text(json.dumps(["买牛奶", "写周报"]))
    # the SDK's ctx.elicit sends a server-initiated request: the pre-2026 protocol
    server = MCPServerHTTP(url, name="notes", protocol="legacy")
    script: list[Any] = [{"name": "clear_notes", "args": {}}, "清空了。",
                         {"name": "clear_notes", "args": {}}, "没删。"]
    agent = Agent(model=ScriptedModel(script), tools=[server],
                  middleware=[HumanInTheLoop(interrupt_on={"clear_notes": False})],
                  checkpointer=SqliteCheckpointer(tmp_path / "interlock.db"))
    try:
        result = agent.invoke("清空笔记", thread_id="t")
        [question] = result.interrupts
        assert question.kind == "input"
        assert question.value["type"] == "mcp_elicitation"
        assert (question.value["server"], question.value["tool"]) == ("notes", "clear_notes")
        assert question.value["message"] == "Really delete 2 notes?"
        assert question.value["requested_schema"]["properties"]["confirm"]["type"] == "boolean"
        assert json.loads(notes.read_text()) == ["买牛奶", "写周报"]
        result = agent.resume("t", value={"confirm": True, "reason": "周末清理"})
        assert result.output == "清空了。"
        assert json.loads(notes.read_text()) == []
        [done] = [m for m in result.messages if isinstance(m, ToolMessage)]
        assert done.content == "deleted 2 notes (周末清理)"

        # declined: the server hears "decline" and keeps the notes
        notes.write_text(json.dumps(["a"]))
        assert agent.invoke("再清空一次", thread_id="t").interrupts[0].kind == "input"
        result = agent.resume("t", value="decline")
        assert json.loads(notes.read_text()) == ["a"]
        assert [m for m in result.messages if isinstance(m, ToolMessage)][-1].content == \
            "kept 1 notes (decline)"
    finally:
        agent.close()


def test_missing_extra_names_it() -> None:
    code = ("import sys; sys.modules['mcp'] = None\n"
            "from interlock import MissingDependency\n"
            "try:\n    import interlock.integrations.mcp\n"
            "except MissingDependency as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "MCP servers needs the optional dependency 'mcp'" in out
    assert "'.[mcp]'" in out and "whl[mcp]" in out  # the extra, as installed here


def _children(name: str) -> list[int]:
    """This process's child processes whose command line contains ``name``."""
    import os

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and name in cmd:
            found.append(int(pid))
    return found


def test_a_server_that_died_between_calls_is_started_again_before_the_call(
        repo: Path, tmp_path: Path) -> None:
    """mcp-server-git killed while the agent waits: the next call (never sent to the dead
    server) is not "outcome unknown"; the server is started again and the call runs."""
    import os
    import signal

    server = MCPServerStdio(str(GIT_SERVER), ["--repository", str(repo)], name="git")
    status = {"name": "git_status", "args": {"repo_path": str(repo)}}
    agent = Agent(model=ScriptedModel([status, "clean.", status, "still clean."]),
                  tools=[server], middleware=[HumanInTheLoop(interrupt_on=server.policy())],
                  checkpointer=SqliteCheckpointer(tmp_path / "interlock.db"))
    try:
        assert agent.invoke("status?", thread_id="t").output == "clean."
        (pid,) = _children("mcp-server-git")
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _children("mcp-server-git") == [pid] and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.05)
        result = agent.invoke("and now?", thread_id="t")
        assert result.output == "still clean."
        last = [m for m in result.messages if isinstance(m, ToolMessage)][-1]
        assert last.status == "success" and "unknown" not in last.content
        assert "On branch" in last.content or "working tree clean" in last.content
        assert [e.state for e in agent.journal("t")][-1] == "succeeded"
        assert server.connects == 2
    finally:
        agent.close()


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_calls_raise_no_warning_of_the_sdk(repo: Path, tmp_path: Path, protocol: str) -> None:
    """The check before each call (is the server still there?) uses nothing the SDK warns
    about: a user's program sees no ``MCPDeprecationWarning`` (a ``UserWarning``, shown by
    default) however its warning filters are set."""
    import warnings

    server = MCPServerStdio(str(GIT_SERVER), ["--repository", str(repo)], name="git",
                            protocol=protocol)
    status = {"name": "git_status", "args": {"repo_path": str(repo)}}
    agent = Agent(model=ScriptedModel([status, status, "clean."]), tools=[server],
                  middleware=[HumanInTheLoop(interrupt_on=server.policy())],
                  checkpointer=SqliteCheckpointer(tmp_path / "interlock.db"))
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert agent.invoke("status twice?", thread_id="t").output == "clean."
        assert [e.state for e in agent.journal("t")] == ["succeeded", "succeeded"]
        assert [str(w.message) for w in seen if "mcp" in w.filename.lower()
                or "ping" in str(w.message)] == []
    finally:
        agent.close()
