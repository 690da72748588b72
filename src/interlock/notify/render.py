"""Text of a request for messages outside the inbox (Slack, e-mail): untrusted strings made
visible and size-limited."""

from __future__ import annotations

import json
from typing import Any

from .. import display
from ..outbox import NoticeCall


def visible(text: str, limit: int = 1500) -> str:
    """``text`` shown by the display policy (:mod:`interlock.display`: control, bidi,
    zero-width and tag characters as ``⟨U+XXXX⟩``, padding folded) and cut at ``limit``
    characters with a visible note of how much is hidden."""
    shown = display.visible(text)
    if len(shown) > limit:
        return shown[:limit] + f" … [{len(shown) - limit} more characters not shown]"
    return shown


def args_text(args: dict[str, Any], limit: int = 1500) -> str:
    return visible(json.dumps(args, ensure_ascii=False, indent=2, sort_keys=True), limit)


def call_lines(call: NoticeCall) -> list[str]:
    """A plain-text description of one call."""
    lines = [f"Tool: {visible(call.name, 200)}", "Arguments:", args_text(call.args)]
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
