"""One of the processes that give the final approval of a four-eyes request at the same moment.

Arguments: ``--db URL --runs FILE --reviewer NAME``. Prints ``ready``; on ``go THREAD`` approves
the thread's pending call as NAME (role ``dba``) and prints ``result won``, ``result conflict``
or ``result refused <type>``; ``quit`` ends it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interlock import InterlockError, InterruptConflict, InterruptOn, Reviewer
from interlock.storage import from_url
from notify.agents import make_agent


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--runs", required=True)
    p.add_argument("--reviewer", required=True)
    a = p.parse_args()
    os.environ["INTERLOCK_TEST_RUNS"] = a.runs
    agent = make_agent(from_url(a.db), InterruptOn(approvals=2, reviewers=["dba"]))
    agent.list_threads(limit=1)  # connect before racing
    print("ready", flush=True)
    for raw in sys.stdin:
        cmd = raw.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "go":
            try:
                result = agent.resume(cmd[1], [{"type": "approve"}],
                                      reviewer=Reviewer(a.reviewer, frozenset({"dba"})))
                outcome = "won" if result.status == "completed" else f"partial {result.status}"
            except InterruptConflict:
                outcome = "conflict"
            except InterlockError as exc:
                outcome = f"refused {type(exc).__name__}"
            print(f"result {outcome}", flush=True)
    agent.close()


if __name__ == "__main__":
    main()
