"""One of the processes that give the final approval of a four-eyes request at the same moment.

Arguments: ``--db URL --runs FILE --reviewer NAME``. Prints ``ready``; on ``go THREAD`` approves
the thread's pending call as NAME (role ``dba``) and prints ``result won``, ``result conflict``
or ``result refused <type>``; ``quit`` ends it (tests/procs/deciding.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deciding import arguments, serve

from interlock import InterruptOn, Reviewer
from interlock.storage import from_url
from notify.agents import make_agent


def main() -> None:
    a = arguments()
    agent = make_agent(from_url(a.db), InterruptOn(approvals=2, reviewers=["dba"]))
    serve(agent, Reviewer(a.reviewer, frozenset({"dba"})))


if __name__ == "__main__":
    main()
