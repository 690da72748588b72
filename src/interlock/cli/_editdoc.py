"""The document ``interlock review`` opens in ``$EDITOR`` to edit a call's arguments, and the
difference shown before an edit is sent.

One section per argument, so that text with line breaks (an e-mail body, SQL) is edited as
text, not as a JSON string full of ``\\n``::

    // comment lines are ignored
    == to (text) ==
    noah@example.com
    == body (text) ==
    Dear Noah,

    your parcel is on its way.
    == retries (JSON) ==
    3

A ``(text)`` section's value is its lines as written (the line break before the next section
is not part of it); a ``(JSON)`` section holds any JSON value. A file that holds one JSON object
and no sections is read as the whole arguments object, as before.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from .. import display
from .._canonical import same_json

_HEADER = re.compile(r"^== (?P<name>[^\s()=][^()=]*?) \((?P<kind>text|JSON)\) ==$")


class EditDocError(ValueError):
    """The edited document cannot be read; the message says where and why."""


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters other than line breaks and tabs: an escape sequence a terminal would act
on, a carriage return an editor (or the reading of the file) would turn into a line break."""


def _plain(text: str) -> bool:
    """Whether ``text`` can be edited as it is: nothing in it that a terminal would hide or
    interpret, or an editor change (those go in a JSON section, where they are escapes)."""
    return (not _CONTROL.search(text)
            and display.safe_json(text) == json.dumps(text, ensure_ascii=False))


def render(args: dict[str, Any]) -> str:
    """The editable document for ``args``: text values as text, everything else (and text
    with hidden or control characters) as JSON with those characters escaped."""
    if not all(_plain(name) and _HEADER.match(f"== {name} (text) ==") for name in args):
        return display.safe_json(args)  # names that a section header cannot carry
    lines: list[str] = []
    for name, value in args.items():
        if isinstance(value, str) and _plain(value):
            lines.append(f"== {name} (text) ==")
            lines.extend(value.split("\n"))
        else:
            lines.append(f"== {name} (JSON) ==")
            lines.extend(display.safe_json(value).split("\n"))
    return "\n".join(lines)


def parse(text: str) -> dict[str, Any]:
    """The arguments in an edited document (comment lines already blanked or removed)."""
    lines = text.split("\n")
    if not any(_HEADER.match(ln) for ln in lines):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise EditDocError(
                "no '== name (text) ==' section and not a JSON object either: write each "
                "argument under its section header"
            ) from exc
        if not isinstance(value, dict):
            raise EditDocError("the arguments must be a JSON object or argument sections")
        return value
    if lines and lines[-1] == "":
        lines.pop()  # the file's final newline
    args: dict[str, Any] = {}
    current: tuple[str, str, int] | None = None
    body: list[str] = []

    def close() -> None:
        if current is None:
            return
        name, kind, line_no = current
        if name in args:
            raise EditDocError(f"argument {name!r} appears twice (line {line_no})")
        if kind == "text":
            args[name] = "\n".join(body)
            return
        raw = "\n".join(body).strip()
        try:
            args[name] = json.loads(raw)
        except ValueError as exc:
            raise EditDocError(
                f"argument {name!r} (line {line_no}) is marked JSON but is not valid JSON: "
                f"{getattr(exc, 'msg', exc)}; write it as JSON, e.g. 3, true, null, "
                f"[1, 2] or \"text\""
            ) from exc

    for n, line in enumerate(lines, start=1):
        m = _HEADER.match(line)
        if m:
            close()
            current = (m.group("name"), m.group("kind"), n)
            body = []
        elif current is None:
            if line.strip():
                raise EditDocError(
                    f"line {n} is outside any argument section; start it with "
                    f"'== name (text) ==' or remove it"
                )
        else:
            body.append(line)
    close()
    return args


def _value_text(value: Any) -> str:
    return display.visible(value) if isinstance(value, str) else display.json_view(value)


def diff_lines(before: dict[str, Any], after: dict[str, Any]) -> RenderableType:
    """What changed, argument by argument: removed lines in red with ``-``, added lines in
    green with ``+``, context lines plain; unchanged arguments named once."""
    parts: list[RenderableType] = []
    names = list(dict.fromkeys([*before, *after]))
    # compared as JSON values, type for type (Python finds 1, 1.0 and True equal)
    unchanged = [n for n in names if n in before and n in after
                 and same_json(before[n], after[n])]
    for name in names:
        if name in unchanged:
            continue
        note = " (added)" if name not in before else " (removed)" if name not in after else ""
        parts.append(Text.assemble((display.one_line(name), "bold"), (note, "dim")))
        old = _value_text(before[name]).split("\n") if name in before else []
        new = _value_text(after[name]).split("\n") if name in after else []
        for op in difflib.ndiff(old, new):
            tag, line = op[:2], op[2:]
            if tag == "- ":
                parts.append(Text(f"  - {line}", style="red"))
            elif tag == "+ ":
                parts.append(Text(f"  + {line}", style="green"))
            elif tag == "  ":
                parts.append(Text(f"    {line}", style="dim"))
    if unchanged:
        parts.append(Text(f"unchanged: {', '.join(map(display.one_line, unchanged))}",
                          style="dim"))
    return Group(*parts)
