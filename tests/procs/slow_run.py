"""Child process: one blocking call on the slow agent (see ``slow_agent.py``), then print how it
ended on stdout: ``completed`` / ``interrupted`` / the exception's class name.

Usage: ``python slow_run.py invoke|approve|recover THREAD``
"""

from __future__ import annotations

import sys

from slow_agent import agent

action, thread_id = sys.argv[1], sys.argv[2]
try:
    if action == "invoke":
        result = agent.invoke("go", thread_id=thread_id)
    elif action == "approve":
        result = agent.resume(thread_id, [{"type": "approve"}])
    else:
        result = agent.recover(thread_id)
    print(result.status, flush=True)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
except Exception as exc:
    print(type(exc).__name__, exc, flush=True)
