"""Text of a request for messages outside the inbox (Slack, e-mail): untrusted strings shown by
the shared display policy (:mod:`interlock.display`: hidden characters as ``⟨U+…⟩``, padding
folded, a visible warning for what was found) and size-limited with a visible note."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from .. import display
from ..interrupts import PathStep
from ..outbox import Notice, NoticeCall


def _cut(shown: str, limit: int) -> str:
    if len(shown) > limit:
        return shown[:limit] + f" … [{len(shown) - limit} more characters not shown]"
    return shown


def visible(text: str, limit: int = 1500) -> str:
    """``text`` as the display policy shows it, cut at ``limit`` characters with a note."""
    return _cut(display.visible(text), limit)


def args_text(args: dict[str, object], limit: int = 1500) -> str:
    """The arguments as pretty JSON (keys sorted), shown by the display policy and
    size-limited."""
    return visible(json.dumps(args, ensure_ascii=False, indent=2, sort_keys=True), limit)


def args_whole(args: dict[str, object], limit: int) -> bool:
    """Whether :func:`args_text` with ``limit`` shows the arguments whole (nothing cut).

    A surface that shows arguments cut short offers no approval of them: what runs on an
    approval is only ever what its reviewer was shown."""
    return len(display.visible(json.dumps(args, ensure_ascii=False, indent=2,
                                          sort_keys=True))) <= limit


def warning_lines(calls: Iterable[NoticeCall]) -> list[str]:
    """The display policy's warnings for what the calls contain (hidden characters, mixed
    scripts, padding); empty when nothing was found."""
    texts: list[str] = []
    for c in calls:
        texts += display.call_texts(c.name, c.description, c.args)
    return display.warnings(display.inspect(texts))


def path_text(path: Sequence[PathStep]) -> str:
    """A sub-agent call's path as one line: ``orchestrator: researcher (ask_researcher) ›
    researcher: delete_file (call_1)``, every part shown by the display policy."""
    parts = []
    for step in path:
        part = display.one_line(step.agent, 80)
        if step.tool_name:
            part += f": {display.one_line(step.tool_name, 80)}"
        if step.tool_call_id:
            part += f" ({display.one_line(step.tool_call_id, 80)})"
        parts.append(part)
    return " › ".join(parts)


def path_lines(path: Sequence[PathStep] | None, decided_on: str) -> list[str]:
    """Where a sub-agent's call comes from (empty for a thread's own calls): its path, the
    sub-agent's thread that raised it and the thread it is decided on."""
    if not path:
        return []
    return [f"Path: {path_text(path)}",
            f"Raised in sub-agent thread {display.one_line(path[-1].thread_id, 200)}; "
            f"decided on thread {display.one_line(decided_on, 200)}"]


def subagent_lines(notice: Notice, call: NoticeCall) -> list[str]:
    return path_lines(call.path, notice.thread_id)


def call_lines(call: NoticeCall, notice: Notice | None = None) -> list[str]:
    """A plain-text description of one call."""
    lines = subagent_lines(notice, call) if notice is not None else []
    lines += [f"Tool: {visible(call.name, 200)}", "Arguments:", args_text(call.args)]
    lines += [f"Warning: {w}" for w in warning_lines([call])]
    if call.description:
        lines += ["Description:", visible(call.description, 600)]
    if call.approvals_required > 1:
        who = ", ".join(visible(a.by, 100) for a in call.approvals) or "nobody yet"
        lines.append(f"Approvals: {len(call.approvals)} of {call.approvals_required} "
                     f"({who})")
    return lines


def outcome_text(call: NoticeCall) -> str:
    by = f" by {visible(call.decided_by, 100)}" if call.decided_by else ""
    if call.state == "pending_review":
        return "waiting for a decision"
    text = f"{call.state.replace('_', ' ')}{by}"
    if call.message:
        text += f": {visible(call.message, 300)}"
    return text
