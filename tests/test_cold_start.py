"""What an agent does once, when it is built, so that the first call of a new process does not
wait for it: the tool pool's thread starts, and the audit key is read."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from interlock import Agent, ConfigurationError, MemoryCheckpointer, ScriptedModel
from interlock.audit import AuditKey

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env=env, check=False)


def test_an_agent_with_a_sync_tool_starts_the_tool_thread_when_it_is_built() -> None:
    out = _python("""
        import threading
        from interlock import Agent, MemoryCheckpointer, ScriptedModel, tool

        def names():
            return sorted(t.name.split("_")[0] for t in threading.enumerate()
                          if t.name.startswith("interlock-tool"))

        @tool
        async def later(n: int) -> int:
            "Async."
            return n

        @tool
        def now(n: int) -> int:
            "Sync."
            return n

        Agent(model=ScriptedModel(["hi"]), tools=[later], checkpointer=MemoryCheckpointer())
        print(names())
        Agent(model=ScriptedModel(["hi"]), tools=[now], checkpointer=MemoryCheckpointer())
        Agent(model=ScriptedModel(["hi"]), tools=[now], checkpointer=MemoryCheckpointer())
        print(names())
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "['interlock-tool']"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_runs_sync_tools_in_a_pool_of_its_own() -> None:
    """The parent's tool thread does not exist in a child it forks (e.g. a server's workers
    forked after the application is imported): the child's sync tools still run."""
    out = _python("""
        import os, signal, threading
        from interlock import Agent, MemoryCheckpointer, ScriptedModel, tool

        @tool
        def where() -> str:
            "Sync."
            return threading.current_thread().name

        def agent():
            return Agent(model=ScriptedModel([{"name": "where", "args": {}}, "done"]),
                         tools=[where], checkpointer=MemoryCheckpointer())

        parent = agent()
        print("parent", parent.invoke("go", thread_id="p").messages[-2].content.split("_")[0])
        pid = os.fork()
        if pid == 0:
            signal.alarm(30)  # a hang would be the bug: end the child instead
            try:
                r = agent().invoke("go", thread_id="c")
                print("child", r.messages[-2].content.split("_")[0], r.output, flush=True)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("status", status)
    """)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert "parent interlock-tool" in lines
    assert "child interlock-tool done" in lines
    assert "status 0" in lines


def test_the_audit_key_is_read_when_the_agent_is_built(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    """The key is read by ``Agent()``: the first commit signs with it without reading the
    file again (here removed in between, so the first commit would otherwise make a new
    key)."""
    path = tmp_path / "audit.key"
    secret = secrets.token_hex(32)
    path.write_text(secret + "\n")
    path.chmod(0o600)
    monkeypatch.delenv("INTERLOCK_AUDIT_KEY", raising=False)
    monkeypatch.setenv("INTERLOCK_AUDIT_KEY_FILE", str(path))
    agent = Agent(model=ScriptedModel(["hi"]), checkpointer=MemoryCheckpointer())
    path.unlink()
    agent.invoke("hello", thread_id="t")
    assert not path.exists()
    assert {r.key_id for r in agent.audit("t")} == {AuditKey(secret.encode(), "").key_id}


def test_a_bad_audit_key_is_still_refused_by_the_first_commit(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """Building the agent does not fail on the key, nor create one; the first commit that
    signs does what it always did."""
    readable = tmp_path / "readable.key"
    readable.write_text(secrets.token_hex(32) + "\n")
    readable.chmod(0o644)
    monkeypatch.delenv("INTERLOCK_AUDIT_KEY", raising=False)
    monkeypatch.setenv("INTERLOCK_AUDIT_KEY_FILE", str(readable))
    agent = Agent(model=ScriptedModel(["hi"]), checkpointer=MemoryCheckpointer())
    with pytest.raises(ConfigurationError, match="chmod 600"):
        agent.invoke("hello", thread_id="t")
    missing = tmp_path / "new" / "audit.key"
    monkeypatch.setenv("INTERLOCK_AUDIT_KEY_FILE", str(missing))
    agent = Agent(model=ScriptedModel(["hi"]), checkpointer=MemoryCheckpointer())
    assert not missing.exists()
    agent.invoke("hello", thread_id="t")
    assert missing.exists()
