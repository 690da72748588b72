"""Acceptance 4 of the core issue: a thread paused in one OS process is resumed by another."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from interlock import SqliteCheckpointer, ToolMessage
from interlock.storage.base import CallState

AGENT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from interlock import Agent, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, tool

    db, out = sys.argv[1], Path(sys.argv[2])

    @tool
    def write_file(path: str, content: str) -> str:
        '''Write a file.'''
        with out.open("a") as f:
            f.write(content + "\\n")
        return f"wrote {path}"

    agent = Agent(
        model=ScriptedModel([
            {"name": "write_file", "args": {"path": "x.txt", "content": "来自另一个进程"},
             "id": "w1"},
            "all written",
        ]),
        tools=[write_file],
        middleware=[HumanInTheLoop(interrupt_on={"write_file": True})],
        checkpointer=SqliteCheckpointer(db),
    )
    """
)


def run(tmp_path: Path, body: str) -> dict[str, object]:
    script = tmp_path / "child.py"
    script.write_text(AGENT + textwrap.dedent(body))
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "t.db"), str(tmp_path / "out.txt")],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_resume_in_a_different_process(tmp_path: Path) -> None:
    first = run(tmp_path, """
        import os
        r = agent.invoke("write it", thread_id="t1")
        print(json.dumps({"pid": os.getpid(), "status": r.status,
                          "interrupt": r.interrupts[0].id}))
    """)
    assert first["status"] == "interrupted"
    assert not (tmp_path / "out.txt").exists()

    second = run(tmp_path, f"""
        import os
        r = agent.resume("t1", [{{"type": "approve"}}], interrupt_id={first["interrupt"]!r})
        print(json.dumps({{"pid": os.getpid(), "status": r.status, "output": r.output}}))
    """)
    assert second["pid"] != first["pid"]
    assert second == {"pid": second["pid"], "status": "completed", "output": "all written"}
    assert (tmp_path / "out.txt").read_text() == "来自另一个进程\n"

    # the stored thread is complete and consistent when read from this (third) process
    import asyncio

    store = SqliteCheckpointer(tmp_path / "t.db")
    snap = asyncio.run(store.load("t1"))
    assert snap is not None and snap.thread.status == "completed"
    assert [m.role for m in snap.messages] == ["user", "assistant", "tool", "assistant"]
    result = snap.messages[2]
    assert isinstance(result, ToolMessage) and result.content == "wrote x.txt"
    journal = asyncio.run(store.journal("t1"))
    assert [(e.tool_call_id, e.state, e.attempts) for e in journal] == [
        ("w1", CallState.SUCCEEDED, 1)]
    asyncio.run(store.close())
