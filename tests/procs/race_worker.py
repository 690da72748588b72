"""One of the processes that resume the same interrupt at the same moment.

Commands on stdin: ``task THREAD INTERRUPT_ID`` (answers ``armed`` once ready), then ``go``
(resumes the thread with an approval for that interrupt and answers ``result won``,
``result conflict`` or ``result error <type>: <message>``); ``quit``.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from common import build_agent

from interlock import Agent, InterruptConflict, RunResult


def serve(agent: Agent, won: Callable[[RunResult], bool]) -> None:
    """Answer ``task`` / ``go`` / ``quit`` lines on stdin: ``go`` approves the armed interrupt
    and prints ``result won`` (when ``won(result)``), ``result conflict <where>`` or
    ``result error ...``."""
    agent.list_threads(limit=1)  # open the connection (and check the schema) before racing
    print("ready", flush=True)
    task: tuple[str, str] | None = None
    for raw in sys.stdin:
        cmd = raw.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "task":
            task = (cmd[1], cmd[2])
            print("armed", flush=True)
        elif cmd[0] == "go":
            assert task is not None
            thread, interrupt_id = task
            try:
                result = agent.resume(thread, [{"type": "approve"}], interrupt_id=interrupt_id)
                outcome = "won" if won(result) else f"error status {result}"
            except InterruptConflict as exc:
                # where the loser found out: "commit" (compare-and-set failed) or
                # "_raise_if_answered" (it loaded after the winner's decision)
                outcome = f"conflict {traceback.extract_tb(exc.__traceback__)[-1].name}"
            except Exception as exc:
                outcome = f"error {type(exc).__name__}: {exc}".replace("\n", " ")
            print(f"result {outcome}", flush=True)
    agent.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--effects", required=True, type=Path)
    a = p.parse_args()
    serve(build_agent(a.db, a.effects), lambda result: result.status == "completed")


if __name__ == "__main__":
    main()
