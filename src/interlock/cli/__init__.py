"""The ``interlock`` command line.

\b
  interlock demo                        the sample operations agent with the web inbox
  interlock serve MODULE:agent          the HTTP API and web inbox for your agent
  interlock worker MODULE:agent         run what API-only servers queue (Postgres)
  interlock migrate --db URL            create or upgrade the Postgres tables
  interlock review --agent MODULE:agent walk pending requests in the terminal
  interlock threads / show / cancel     inspect and close threads
  interlock recover --agent MODULE:agent continue threads whose process stopped
  interlock audit [verify]              the hash-chained audit log
  interlock dispatch / outbox           deliver notifications; see and retry them

Errors are printed as one line (``error: ...``); the exit status is 1 for errors and 2 for
usage mistakes.
"""

from __future__ import annotations

import logging

import click

from .. import __version__
from ._common import InterlockGroup
from .audit import audit
from .demo import demo
from .migrate import migrate
from .notify import dispatch, outbox
from .recover import recover
from .review import review
from .threads import cancel, show, threads
from .worker import worker


@click.group("interlock", cls=InterlockGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="interlock")
def main() -> None:
    """interlock: human approval for AI-agent tool calls.

    Start with `interlock demo`: a sample operations agent whose SQL, e-mail and questions
    wait for you in a web inbox (and in `interlock review`).

    Commands that read threads take --db URL (sqlite:///path.db or postgresql://...; env
    INTERLOCK_DB) or --agent MODULE:ATTR (env INTERLOCK_AGENT), whose store is used.
    Commands that continue runs after a decision (review) need --agent.
    """
    # connection retries are reported once, as the command's error line
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)


for _command in (demo, review, threads, show, cancel, recover, audit, dispatch, outbox,
                 worker, migrate):
    main.add_command(_command)

try:
    from .serve import serve as _serve
except ImportError as _exc:  # pragma: no cover - only without the server module
    if getattr(_exc, "name", None) not in ("interlock.cli.serve", None):
        raise
else:
    main.add_command(_serve)


__all__ = ["main"]
