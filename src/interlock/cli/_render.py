"""Rich renderings shared by ``show`` and ``review``. Text that came from a model or a tool is
always wrapped in ``Text`` (never parsed as markup), and never cut silently: every table column
and text folds a word longer than the screen onto the next line (rich's default for a table
cell is to cut it with a bare ``…``); a one-line view that cuts on purpose says how much with
``… (+N chars)`` (:func:`interlock.display.one_line`)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.highlighter import JSONHighlighter
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .. import display
from ..audit.records import AuditKind
from ..interrupts import Interrupt, PathStep
from ..messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from ..review_request import ActionRequest, ReviewConfig, read_request
from ..storage.base import AuditRecord, JournalEntry, ThreadRecord
from ..subagent_tree import path_text
from ._common import short, when

STATUS_STYLE = {
    "interrupted": "bold yellow",
    "running": "cyan",
    "completed": "green",
    "failed": "bold red",
    "idle": "dim",
}


def folded(text: str, style: str = "") -> Text:
    """Untrusted text for a table cell: a word wider than the cell continues on the next line."""
    return Text(text, style=style, overflow="fold")


class TitledPanel:
    """A panel whose title is never cut: a title wider than the screen (a long thread id) is
    shown as the first line inside the box instead (rich cuts a panel title silently)."""

    def __init__(self, body: RenderableType, title: Text, *, border_style: str) -> None:
        self.body, self.title, self.border_style = body, title, border_style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.title.cell_len + 6 <= options.max_width:
            yield Panel(self.body, title=self.title, title_align="left",
                        border_style=self.border_style)
        else:
            title = self.title.copy()
            title.overflow = "fold"
            yield Panel(Group(title, self.body), border_style=self.border_style)


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def _via(path: list[PathStep] | None) -> str:
    """" (in researcher)" for a request raised inside sub-agents."""
    return f" (in {' › '.join(s.agent for s in path[1:])})" if path else ""


def waiting_on(pending: list[Interrupt]) -> str:
    """"execute_sql, send_email" for a thread row's pending interrupts; a sub-agent's request
    names the sub-agents: "delete_file (in researcher)"."""
    names: list[str] = []
    for intr in pending:
        if intr.kind == "review":
            names.extend(a.name + _via(a.path) for a in read_request(intr.value).action_requests)
        else:
            names.append("answer to a question" + _via(intr.path))
    return ", ".join(names)


def thread_name(rec: ThreadRecord) -> str:
    """The thread id, and for a sub-agent's thread the thread its requests are shown on."""
    name = display.one_line(rec.thread_id)
    if rec.parent is not None:
        name += f" (sub-agent of {display.one_line(rec.parent.thread_id)})"
    return name


def path_lines(path: list[PathStep] | None) -> list[RenderableType]:
    """Where a request of a sub-agent comes from: the path, and the thread that raised it."""
    if not path:
        return []
    return [Text.assemble(("path     ", "bold"), (path_text(path), "bold magenta")),
            Text.assemble(("raised in", "bold"), (f" thread {display.one_line(path[-1].thread_id)}"
                                                 f" by agent {display.one_line(path[-1].agent)}"
                                                 f"; decided here, applied there", "dim"))]


def threads_table(rows: list[ThreadRecord], width: int) -> RenderableType:
    """A table on wide terminals, two lines per thread on narrow ones."""
    if width < 110:
        lines: list[RenderableType] = []
        for rec in rows:
            waiting = waiting_on(rec.pending)
            lines.append(Text.assemble(
                (thread_name(rec), "bold"), "  ", status_text(rec.status),
                (f"  waiting on {display.one_line(waiting)}" if waiting else "", "yellow"),
                (f"  {when(rec.updated_at)}", "dim")))
            if rec.preview:
                lines.append(Text("    " + short(rec.preview, max(30, width - 6)), style="dim"))
        return Group(*lines)
    table = Table(header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("thread", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("updated", no_wrap=True)
    table.add_column("waiting on", overflow="fold")
    table.add_column("request", overflow="fold")
    for rec in rows:
        table.add_row(folded(thread_name(rec)), status_text(rec.status),
                      when(rec.updated_at), folded(display.one_line(waiting_on(rec.pending))),
                      folded(short(rec.preview, 100)))
    return table


def json_block(value: Any) -> RenderableType:
    """Pretty JSON that wraps (long strings are never cut off); hidden characters visible."""
    try:
        text = display.json_view(value)
    except (TypeError, ValueError):
        return folded(display.visible(repr(value)))
    return JSONHighlighter()(folded(text))


def args_block(args: dict[str, Any]) -> RenderableType:
    """Tool arguments for a reviewer: one row per argument, text shown as written (an e-mail
    body keeps its line breaks) with hidden characters made visible, other values as JSON."""
    if not args:
        return Text("(no arguments)", style="dim")
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", overflow="fold", max_width=40)
    grid.add_column(ratio=1, overflow="fold")
    for key, value in args.items():
        shown: RenderableType = folded(display.visible(value)) if isinstance(value, str) \
            else json_block(value)
        grid.add_row(folded(display.one_line(str(key))), shown)
    return grid


def warning_lines(name: str, description: str | None, args: Any) -> list[RenderableType]:
    """The visible warning for a call whose texts hide something (none if clean)."""
    found = display.inspect(display.call_texts(name, description, args))
    return [Text.assemble(("⚠ ", "bold red"), (line, "red"))
            for line in display.warnings(found)]


def message_lines(messages: list[Message], *, width: int = 600) -> RenderableType:
    parts: list[RenderableType] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            continue
        if isinstance(m, UserMessage):
            parts.append(Text.assemble(("user  ", "bold blue"), (display.visible(m.content), "")))
        elif isinstance(m, AssistantMessage):
            if m.content:
                parts.append(Text.assemble(("agent ", "bold magenta"),
                                           (display.visible(m.content), "")))
            for c in m.tool_calls:
                parts.append(Text.assemble(
                    ("  → ", "magenta"), (display.one_line(c.name), "bold"), (" ", ""),
                    (short(json.dumps(c.args, ensure_ascii=False), width), "dim"),
                    (f"  [{display.one_line(c.id)}]", "dim")))
        elif isinstance(m, ToolMessage):
            style = "green" if m.status == "success" else "red"
            how = f" ({m.decision})" if m.decision else ""
            parts.append(Text.assemble(
                ("  ← ", style), (display.one_line(m.name), "bold"), (f" {m.status}{how}: ", style),
                (short(m.content, width), "")))
    return Group(*parts) if parts else Text("(no messages)", style="dim")


def quorum(config: ReviewConfig) -> str | None:
    """"approvals 1 of 2 (alice)" for a call that needs several approvals; the revision of
    an edited call; escalation."""
    parts = []
    if config.revision > 1:
        parts.append(f"revision {config.revision}, edited by "
                     f"{display.one_line(config.edited_by or '?')}")
    if config.approvals_required > 1:
        given = config.approved_by or []
        who = ", ".join(a.by for a in given) or "none yet"
        parts.append(f"approvals {len(given)} of {config.approvals_required} ({who})")
    if config.escalated_at is not None:
        parts.append(f"escalated to {', '.join(config.escalate_to or [])}")
    return " · ".join(parts) or None


def deadline(expires_at: datetime | None, now: datetime) -> str | None:
    if expires_at is None:
        return None
    left = (expires_at - now).total_seconds()
    if left <= 0:
        return f"deadline passed at {when(expires_at)} (rejected when the thread is touched)"
    if left < 120:
        span = f"{int(left)} s"
    elif left < 7200:
        span = f"{int(left // 60)} min"
    else:
        span = f"{left / 3600:.1f} h"
    return f"rejected automatically in {span} (at {when(expires_at)}) if nobody decides"


def request_panel(
    request: ActionRequest, config: ReviewConfig, *, thread_id: str, preview: str,
    agent_text: str | None, index: int, total: int, now: datetime,
) -> RenderableType:
    rows: list[RenderableType] = warning_lines(request.name, request.description, request.args)
    if preview:
        rows.append(Text.assemble(("request  ", "bold"), (display.visible(preview), "")))
    if agent_text:
        rows.append(Text.assemble(("agent    ", "bold"), (display.visible(agent_text), "")))
    rows.extend(path_lines(request.path))
    rows.append(Text(""))
    if request.reason == "outcome_unknown":
        rows.append(Text("OUTCOME UNKNOWN: this call may already have run before the process "
                         "stopped. Check by hand before approving it again.",
                         style="bold white on red"))
    description = display.shown_description(request.description or "", request.name,
                                            request.args)
    if description:
        rows.append(Text(display.visible(description)))
    rows.append(Text(""))
    rows.append(Text.assemble(("tool ", "bold"), (display.one_line(request.name), "bold cyan"),
                              (f"   call {display.one_line(request.tool_call_id)}", "dim")))
    rows.append(args_block(request.args))
    rows.append(Text(""))
    info = [f"allowed: {', '.join(config.allowed_decisions)}"]
    if config.reviewers:
        info.append(f"reviewers with role: {', '.join(config.reviewers)}")
    if (q := quorum(config)) is not None:
        info.append(q)
    if (d := deadline(config.expires_at, now)) is not None:
        info.append(d)
    rows.append(Text(" · ".join(info), style="dim"))
    title = Text.assemble(("thread ", ""), (display.one_line(thread_id), "bold"),
                          (f" · call {index} of {total} in this request", ""))
    return TitledPanel(Group(*rows), title, border_style="yellow")


def journal_table(entries: list[JournalEntry], width: int) -> RenderableType:
    """Every tool call of a thread: what ran, with which arguments, who decided."""
    lines: list[RenderableType] = [Text("tool calls", style="bold")]
    for e in entries:
        run = e.effective
        args = run.args
        name = e.name if run.name == e.name else f"{e.name} → {run.name}"
        lines.append(Text.assemble(
            ("  ", ""), (display.one_line(e.tool_call_id), "dim"), "  ",
            (display.one_line(name), "bold"), "  ",
            (e.state.value, STATE_STYLE.get(e.state.value, "")),
            (f"  by {display.one_line(e.decided_by)}" if e.decided_by else "", "dim")))
        lines.append(Text("      " + short(json.dumps(args, ensure_ascii=False),
                                           max(40, width - 8)), style="dim"))
    return Group(*lines)


STATE_STYLE = {
    "succeeded": "green", "failed": "red", "rejected": "red", "expired": "red",
    "cancelled": "red", "pending_review": "yellow", "unknown": "bold red",
}


def audit_summary(rec: AuditRecord) -> str:
    d = rec.data
    name = d.get("name") or d.get("tool_name") or ""
    if rec.kind == AuditKind.DECISION:
        text = f"{d.get('type')} {name}"
        edited = d.get("edited_action")
        if isinstance(edited, dict):
            text += f" → {json.dumps(edited.get('args'), ensure_ascii=False)}"
        if d.get("message"):
            text += f": {d['message']}"
        if d.get("remember"):
            text += f" (remember: {d['remember']})"
        if d.get("via_thread_id"):
            text += f" (given on thread {d['via_thread_id']})"
        return text
    if rec.kind == AuditKind.INPUT_ANSWERED and d.get("via_thread_id"):
        return (f"answered {json.dumps(d.get('value'), ensure_ascii=False)} (given on thread "
                f"{d['via_thread_id']})")
    if rec.kind == AuditKind.REQUEST_RAISED:
        calls = d.get("calls") or []
        return "review requested: " + ", ".join(str(c.get("name")) for c in calls)
    if rec.kind == AuditKind.TOOL_FINISHED:
        return f"{name} {d.get('status')}: {d.get('result', '')}"
    if rec.kind in (AuditKind.TOOL_STARTED, AuditKind.EXPIRED, AuditKind.AUTO_APPROVED,
                    AuditKind.RULE_CREATED, AuditKind.RULE_REVOKED, AuditKind.OUTCOME_UNKNOWN,
                    AuditKind.RETRY_IDEMPOTENT):
        return f"{name} {json.dumps(d.get('args'), ensure_ascii=False)}" if d.get("args") \
            else str(name)
    if rec.kind == AuditKind.CANCELLED:
        return f"reason: {d.get('reason')}" if d.get("reason") else "cancelled"
    return _subagent_summary(rec) or json.dumps(d, ensure_ascii=False)


def _subagent_summary(rec: AuditRecord) -> str | None:
    """The rows that link a parent thread and a sub-agent's thread, in words."""
    d = rec.data
    if rec.kind == AuditKind.SUBAGENT_STARTED:
        return (f"sub-agent thread of {d.get('parent_thread_id')} (call "
                f"{d.get('parent_tool_call_id')}, tool {d.get('tool_name')})")
    if rec.kind == AuditKind.SUBAGENT_WAITING:
        return (f"{d.get('name')} waits for sub-agent thread {d.get('child_thread_id')}; "
                f"its requests shown here: {', '.join(map(str, d.get('interrupts') or []))}")
    if rec.kind == AuditKind.DECISION_ROUTED:
        step = d.get("step") or {}
        return (f"decision passed to sub-agent thread {d.get('child_thread_id')} (call "
                f"{step.get('tool_call_id')}, tool {step.get('tool_name')}; request "
                f"{d.get('interrupt_id')})")
    return None


def audit_table(records: list[AuditRecord], width: int) -> RenderableType:
    """A table on wide terminals, two lines per record on narrow ones."""
    if width < 130:
        lines: list[RenderableType] = []
        for r in records:
            lines.append(Text.assemble(
                (f"{r.id or '':>5} ", "dim"), (when(r.ts), "dim"), "  ",
                (display.one_line(r.thread_id), "bold"), "  ", (display.one_line(r.kind), "cyan"),
                "  by ", (display.one_line(r.actor), ""),
                (f"  [{display.one_line(r.tool_call_id)}]" if r.tool_call_id else "", "dim")))
            lines.append(Text("      " + short(audit_summary(r), max(40, width - 8))))
        return Group(*lines)
    table = Table(header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("time", no_wrap=True)
    table.add_column("thread", overflow="fold")
    table.add_column("event", overflow="fold")
    table.add_column("actor", overflow="fold")
    table.add_column("call", overflow="fold")
    table.add_column("details", overflow="fold")
    for r in records:
        table.add_row(str(r.id or ""), when(r.ts), folded(display.one_line(r.thread_id)),
                      folded(display.one_line(r.kind)), folded(display.one_line(r.actor)),
                      folded(display.one_line(r.tool_call_id or "-")),
                      folded(short(audit_summary(r), 120)))
    return table


def pending_panel(intr: Interrupt, now: datetime) -> RenderableType:
    if intr.kind == "input":
        return TitledPanel(Group(*path_lines(intr.path), json_block(intr.value)),
                           Text(f"question (interrupt {display.one_line(intr.id)})"),
                           border_style="yellow")
    parts: list[RenderableType] = []
    for a, c in read_request(intr.value).pairs():
        parts.extend(warning_lines(a.name, a.description, a.args))
        parts.extend(path_lines(a.path))
        parts.append(Text.assemble(("tool ", "bold"), (display.one_line(a.name), "bold cyan"),
                                   (f"   call {display.one_line(a.tool_call_id)}", "dim")))
        description = display.shown_description(a.description or "", a.name, a.args)
        if description:  # not the default description's copy of the arguments shown below
            parts.append(Text(display.visible(description)))
        parts.append(args_block(a.args))
        info = [f"allowed: {', '.join(c.allowed_decisions)}"]
        if c.reviewers:
            info.append(f"reviewers with role: {', '.join(c.reviewers)}")
        if (q := quorum(c)) is not None:
            info.append(q)
        if (d := deadline(c.expires_at, now)) is not None:
            info.append(d)
        parts.append(Text(" · ".join(info), style="dim"))
        parts.append(Text(""))
    return TitledPanel(Group(*parts),
                       Text(f"waiting for a decision (interrupt {display.one_line(intr.id)})"),
                       border_style="yellow")
