"""The server tests' agent on a Postgres store that gives up quickly (for the outage tests,
loaded by `interlock serve` / `interlock worker` as ``server.outage_agents:make_agent``).

Its DSN is ``$INTERLOCK_TEST_OUTAGE_DSN``; a free connection is waited for 1 s and a new one
for 1 s, so that while the database is down each attempt of a background job fails within
about a second instead of waiting the default 30 s for the pool.
"""

from __future__ import annotations

import os

from interlock import Agent, PostgresCheckpointer

from . import server_agents


def make_agent() -> Agent:
    store = PostgresCheckpointer(os.environ["INTERLOCK_TEST_OUTAGE_DSN"], timeout=1,
                                 connect_timeout=1)
    return server_agents.make_agent(store)
