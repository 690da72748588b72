"""``interlock recover``: continue threads whose run stopped (for scripts and cron)."""

from __future__ import annotations

import click

from ..agent import Agent
from ..result import RunResult
from ._common import dump_json, out, with_agent


@click.command("recover", short_help="Continue threads whose process stopped mid-run.")
@click.argument("thread_id", metavar="[THREAD]", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the outcomes as JSON.")
@with_agent(purpose="interlock recover")
def recover(agent: Agent, thread_id: str | None, as_json: bool) -> None:
    """Continue every thread whose run stopped because its process is gone (or only THREAD).

    Calls that had finished are not repeated; a call that was running when its process
    stopped is retried when its tool is idempotent, otherwise the thread pauses with an
    "outcome unknown" request for a reviewer. Threads still advanced by a live process are
    left alone. `interlock serve` does the same by itself, at start and periodically.

    \b
    Examples:
      interlock recover --agent myapp.agents:agent --db sqlite:///interlock.db
      interlock recover late-order-1042 --agent myapp.agents:agent
    """
    results = [agent.recover(thread_id)] if thread_id else agent.recover_stale()
    if as_json:
        dump_json([r.to_json() for r in results])
        return
    console = out()
    if not results:
        console.print("No thread needed recovery.")
        return
    for r in results:
        console.print(_line(r), highlight=False, markup=False)


def _line(r: RunResult) -> str:
    if r.interrupted:
        kinds = ", ".join(sorted({i.kind for i in r.interrupts}))
        return f"{r.thread_id}: waits for a person ({kinds}); see `interlock review`"
    return f"{r.thread_id}: completed"
