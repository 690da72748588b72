"""What the processes that decide a call at the same moment share: their arguments, and the
loop that reads commands and answers by lines.

Commands: ``task THREAD JSON`` prepares a decision (JSON) and answers ``armed``; ``go`` sends
it, ``go THREAD`` approves THREAD's pending call; either answers ``result won`` (the run
completed), ``result partial`` (stored, the call still waits), ``result conflict`` or
``result refused <type>``; ``quit`` ends it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from interlock import Agent, InterlockError, InterruptConflict, Reviewer


def arguments(*extra: str) -> argparse.Namespace:
    """``--db URL --runs FILE --reviewer NAME`` and the ``extra`` options; the tools write
    their runs to FILE."""
    p = argparse.ArgumentParser()
    for name in ("--db", "--runs", "--reviewer", *extra):
        p.add_argument(name, required=True)
    a = p.parse_args()
    os.environ["INTERLOCK_TEST_RUNS"] = a.runs
    return a


def serve(agent: Agent, who: Reviewer) -> None:
    """Answer the commands on stdin as ``who`` until ``quit`` or their end, then close
    ``agent``."""
    agent.list_threads(limit=1)  # connect before racing
    print("ready", flush=True)
    thread, decision = "", None
    for raw in sys.stdin:
        cmd = raw.split(maxsplit=2)
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "task":
            thread, decision = cmd[1], json.loads(cmd[2])
            print("armed", flush=True)
        elif cmd[0] == "go":
            if len(cmd) > 1:
                thread, decision = cmd[1], {"type": "approve"}
            try:
                result = agent.resume(thread, [decision], reviewer=who)
                outcome = "won" if result.status == "completed" else "partial"
            except InterruptConflict:
                outcome = "conflict"
            except InterlockError as exc:
                outcome = f"refused {type(exc).__name__}"
            print(f"result {outcome}", flush=True)
    agent.close()
