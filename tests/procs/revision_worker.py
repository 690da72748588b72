"""One of two processes that decide the same call at the same moment: one edits it, the other
approves the revision both were shown, or both edit it (the revision tests' agent).

Arguments: ``--db URL --runs FILE --reviewer NAME --role ROLE``. Prints ``ready``; on
``task THREAD JSON`` prepares the decision (JSON) and prints ``armed``; on ``go`` sends it and
prints ``result won`` (the run completed), ``result partial`` (stored, the call still waits),
``result conflict`` or ``result refused <type>``; ``quit`` ends it (tests/procs/deciding.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deciding import arguments, serve

from interlock import Reviewer
from interlock.storage import from_url
from security.revision_agent import make_agent


def main() -> None:
    a = arguments("--role")
    serve(make_agent(from_url(a.db)), Reviewer(a.reviewer, frozenset({a.role})))


if __name__ == "__main__":
    main()
