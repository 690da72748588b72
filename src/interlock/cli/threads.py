"""``interlock threads``, ``interlock show`` and ``interlock cancel``."""

from __future__ import annotations

import itertools
import shlex

import click
from rich.panel import Panel
from rich.text import Text

from .. import display
from ..agent import Agent
from ..inputs import MAX_INDEX
from ..storage.base import FINAL_STATES
from ._common import (
    STATUSES,
    dump_json,
    iter_threads,
    make_reviewer,
    out,
    reviewer_options,
    when,
    with_agent,
)
from ._render import (
    journal_table,
    message_lines,
    pending_panel,
    status_text,
    threads_table,
)


@click.command("threads")
@click.option("--status", type=click.Choice(STATUSES),
              help="Only threads with this status (interrupted = waiting for a decision).")
@click.option("--limit", type=click.IntRange(1, MAX_INDEX), default=50, show_default=True,
              metavar="N",
              help="At most this many threads, most recently updated first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@with_agent()
def threads(agent: Agent, status: str | None, limit: int, as_json: bool) -> None:
    """List threads, most recently updated first.

    \b
    Examples:
      interlock threads --db sqlite:///interlock.db
      interlock threads --db sqlite:///interlock.db --status interrupted
      interlock threads --agent interlock.demo:agent --json
    """
    rows = list(itertools.islice(iter_threads(agent, status), limit))
    if as_json:
        dump_json([r.model_dump(mode="json", exclude={"hooks", "lease_owner", "lease_until",
                                                      "audit_hash"}) for r in rows])
        return
    console = out()
    if not rows:
        what = f"with status {status!r}" if status else "in this store"
        console.print(f"No threads {what}.")
        return
    console.print(threads_table(rows, console.width))
    # a sub-agent's thread waits through its parent, which shows its requests
    waiting = sum(1 for r in rows if r.status == "interrupted" and r.parent is None)
    if waiting and status != "interrupted":
        spec = click.get_current_context().params.get("agent_spec")
        agent_arg = shlex.quote(spec) if spec else "MODULE:AGENT"
        console.print(f"{waiting} thread(s) wait for a decision: review them with "
                      f"`interlock review --agent {agent_arg} --reviewer YOUR_ID`"
                      + ("" if spec else " (the agent whose tools run the calls)") + ".",
                      style="dim")


@click.command("show", short_help="Show a thread: conversation, pending requests, calls.")
@click.argument("thread_id", metavar="THREAD")
@click.option("--json", "as_json", is_flag=True, help="Print the thread as JSON.")
@with_agent()
def show(agent: Agent, thread_id: str, as_json: bool) -> None:
    """Show one thread: status, conversation, pending requests and its tool calls.

    \b
    Example:
      interlock show cleanup-cancelled-orders --db sqlite:///interlock.db
    """
    state = agent.get_thread(thread_id)
    journal = agent.journal(thread_id)
    if as_json:
        dump_json({
            "thread_id": state.thread_id, "status": state.status, "version": state.version,
            "created_at": state.created_at, "updated_at": state.updated_at,
            "error": state.error, "preview": state.preview, "metadata": state.metadata,
            "messages": [m.model_dump(mode="json") for m in state.messages],
            "interrupts": [i.model_dump(mode="json") for i in state.interrupts],
            "remembered": [r.model_dump(mode="json") for r in state.remembered],
            "journal": [e.model_dump(mode="json") for e in journal],
        })
        return
    console = out()
    head = Text.assemble(("thread ", ""), (display.one_line(state.thread_id), "bold"), ("  ", ""),
                         status_text(state.status),
                         (f"  version {state.version} · created {when(state.created_at)} · "
                          f"updated {when(state.updated_at)}", "dim"))
    console.print(head)
    if state.error:
        console.print(Text.assemble(("error: ", "bold red"), (display.visible(state.error), "")))
    for rule in state.remembered:
        console.print(Text(f"remembered approval: {display.one_line(rule.tool_name)} (this "
                           f"thread), by {display.one_line(rule.created_by)} at "
                           f"{when(rule.created_at)}", style="cyan"))
    console.print(Panel(message_lines(state.messages), title="conversation",
                        title_align="left"))
    now = agent.clock()
    for intr in state.interrupts:
        console.print(pending_panel(intr, now))
    if journal:
        console.print(journal_table(journal, console.width))


@click.command("cancel", short_help="Close the pending calls of a thread without running them.")
@click.argument("thread_id", metavar="THREAD")
@click.option("--reason", default=None, help="Why; recorded and given to the model.")
@reviewer_options
@with_agent()
def cancel(agent: Agent, thread_id: str, reason: str | None, reviewer: str | None,
           roles: tuple[str, ...]) -> None:
    """Close every pending call of THREAD as "cancelled by reviewer"; the thread goes idle.

    The calls do not run. The conversation stays valid (each call gets a result), so the
    thread can take a new message afterwards.

    \b
    Example:
      interlock cancel late-order-1042 --db sqlite:///interlock.db --reviewer bob \\
          --reason "handled by phone"
    """
    who = make_reviewer(reviewer, roles, command="interlock cancel")
    before = {e.tool_call_id for e in agent.get_thread(thread_id).journal
              if e.state not in FINAL_STATES}
    agent.cancel(thread_id, reason=reason, reviewer=who)
    # what the cancellation recorded: a call that was running when its process stopped was
    # closed as "outcome unknown", and one whose result was kept got that result
    row = next((a for a in reversed(agent.audit(thread_id)) if a.kind == "cancelled"), None)
    closed = row.data.get("calls", []) if row is not None else sorted(before)
    unknown = row.data.get("outcome_unknown", []) if row is not None else []
    finished = len(before - set(closed))
    parts = [f"{len(closed) - len(unknown)} open call(s) closed without running"] if len(
        closed) > len(unknown) else []
    if not (closed or finished):
        parts.append("no call was open (its run had stopped after its calls; it is ended)")
    if unknown:
        parts.append(f"{len(unknown)} call(s) closed with their outcome unknown (they were "
                     f"running when their process stopped and may have taken effect: check "
                     f"before doing them again)")
    if finished:
        parts.append(f"{finished} call(s) had finished; their results are stored")
    out().print(f"Cancelled thread {display.one_line(thread_id)!r}: {'; '.join(parts)}; the "
                f"thread is idle.", highlight=False, markup=False)
