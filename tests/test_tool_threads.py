"""The threads sync tools run in: the hand-off of a call, how long a blocking call's loop may
wait on one, how many run at once, and what happens to a call still running at exit."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from interlock import Agent, MemoryCheckpointer, ScriptedModel, ToolMessage, tool
from interlock._tool_threads import _MAX_THREADS, QUICK_WAIT

ROOT = Path(__file__).resolve().parents[1]


def _calls(n: int, name: str) -> list[dict[str, object]]:
    return [{"name": name, "args": {"i": i}, "id": f"c{i}"} for i in range(n)]


def test_a_long_sync_tool_on_a_blocking_call_leaves_the_loop_free_to_renew_the_lease() -> None:
    """A blocking call's loop waits on a quick tool in its own thread for at most
    ``QUICK_WAIT``; a tool that runs longer is awaited on the loop, which renews the lease
    meanwhile (every renewal is a commit: the thread's version counts them)."""
    lease = timedelta(seconds=0.3)  # renewed every 0.1 s
    seen: dict[str, str] = {}

    @tool
    def slow(i: int) -> str:
        """Slow."""
        seen["thread"] = threading.current_thread().name
        time.sleep(0.6)
        return "slow done"

    @tool
    def quick(i: int) -> str:
        """Quick."""
        return "quick done"

    versions = {}
    for t in (slow, quick):
        agent = Agent(model=ScriptedModel([_calls(1, t.name), "ok"]), tools=[t],
                      checkpointer=MemoryCheckpointer(), lease=lease)
        result = agent.invoke("go", thread_id="t")
        assert result.output == "ok"
        assert [m.content for m in result.messages if isinstance(m, ToolMessage)] == [
            f"{t.name} done"]
        versions[t.name] = agent.get_thread("t").version
    assert seen["thread"].startswith("interlock-tool")
    assert threading.current_thread().name != seen["thread"]
    # 0.6 s at one renewal per 0.1 s: several renewals; the quick tool's run has none
    assert versions["slow"] - versions["quick"] >= 3, versions
    assert QUICK_WAIT <= 0.01


def test_sync_tools_of_many_runs_at_once_share_a_bounded_pool_and_all_finish() -> None:
    """More runs than the pool has threads, each in a sync tool at the same time: every call
    runs exactly once and returns to its own run; at most ``min(32, CPUs + 4)`` run at once,
    and more than one does."""
    runs = _MAX_THREADS + 4
    lock = threading.Lock()
    state = {"now": 0, "most": 0, "calls": 0}

    @tool
    def work(i: int) -> str:
        """Work."""
        with lock:
            state["now"] += 1
            state["calls"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return f"done {i}"

    def script(messages: list[object]) -> object:
        if len(messages) == 1:
            n = int(str(getattr(messages[0], "content", "")).split()[-1])
            return [{"name": "work", "args": {"i": n}, "id": "c"}]
        return "ok"

    agent = Agent(model=ScriptedModel(script), tools=[work], checkpointer=MemoryCheckpointer())

    async def all_runs() -> list[str]:
        results = await asyncio.gather(*(agent.ainvoke(f"run {n}", thread_id=f"t{n}")
                                         for n in range(runs)))
        return [next(m.content for m in r.messages if isinstance(m, ToolMessage))
                for r in results]

    assert asyncio.run(all_runs()) == [f"done {n}" for n in range(runs)]
    assert state["calls"] == runs
    assert 1 < state["most"] <= _MAX_THREADS, state


def test_an_exception_a_sync_tool_raises_reaches_its_run_on_both_paths() -> None:
    """A tool that fails at once (taken by the blocking call's quick wait) and one that fails
    after the quick wait (awaited on the loop) give the same error result."""

    @tool
    def fails(i: int) -> str:
        """Fails."""
        if i:
            time.sleep(QUICK_WAIT * 20)
        raise ValueError(f"no {i}")

    agent = Agent(model=ScriptedModel([_calls(2, "fails"), "ok"]), tools=[fails],
                  checkpointer=MemoryCheckpointer())
    result = agent.invoke("go", thread_id="t")
    assert [m.content for m in result.messages if isinstance(m, ToolMessage)] == [
        "Tool 'fails' failed: ValueError: no 0", "Tool 'fails' failed: ValueError: no 1"]


def test_a_sync_tool_still_running_when_the_interpreter_exits_finishes_first(
    tmp_path: Path,
) -> None:
    """As with ``ThreadPoolExecutor``: the interpreter lets a tool call that is still running
    finish before it exits (its run gave up on it after ``tool_grace``), and the pool's idle
    threads do not keep it alive."""
    mark = tmp_path / "finished"
    code = textwrap.dedent(f"""
        import asyncio, time
        from datetime import timedelta
        from interlock import Agent, MemoryCheckpointer, ScriptedModel, tool

        @tool
        def slow() -> str:
            "Slow."
            time.sleep(0.8)
            open({str(mark)!r}, "w").write("yes")
            return "done"

        @tool
        def idle() -> str:
            "Quick."
            return "ok"

        agent = Agent(model=ScriptedModel([{{"name": "slow", "args": {{}}, "id": "c"}}, "ok"]),
                      tools=[slow, idle], checkpointer=MemoryCheckpointer(),
                      tool_grace=timedelta(seconds=0.05))

        async def main():
            try:
                await asyncio.wait_for(agent.ainvoke("go", thread_id="t"), 0.2)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                print("gave up", flush=True)

        asyncio.run(main())
        print("exiting", flush=True)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=env, check=False)
    took = time.monotonic() - started
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["gave", "up", "exiting"]
    assert mark.read_text() == "yes"
    assert took < 30


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_quick_sync_tool_in_a_forked_child_of_a_busy_parent_runs() -> None:
    """A child forked while the parent's tool thread was busy starts a pool of its own."""
    code = textwrap.dedent("""
        import os, signal, threading, time
        from interlock import Agent, MemoryCheckpointer, ScriptedModel, tool

        @tool
        def where() -> str:
            "Sync."
            return threading.current_thread().name.split("_")[0]

        started = threading.Event()

        @tool
        def busy() -> str:
            "Busy."
            started.set()
            time.sleep(0.5)
            return "done"

        def agent(name):
            return Agent(model=ScriptedModel([{"name": name, "args": {}, "id": "c"}, "ok"]),
                         tools=[where, busy], checkpointer=MemoryCheckpointer())

        t = threading.Thread(target=lambda: agent("busy").invoke("go", thread_id="b"))
        t.start()
        started.wait(10)
        pid = os.fork()
        if pid == 0:
            signal.alarm(30)
            try:
                r = agent("where").invoke("go", thread_id="c")
                print("child", r.messages[-2].content, flush=True)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        t.join()
        print("parent done", flush=True)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=env, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["child interlock-tool", "parent done"]
