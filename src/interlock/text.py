"""Text hygiene at the boundary: what may be stored, and what happens to text that may not.

Two kinds of characters cannot be stored reliably: **NUL** (U+0000: Postgres refuses it in
text, many tools truncate at it) and **lone surrogates** (U+D800–U+DFFF: half of a UTF-16
pair, which is not Unicode text and cannot be encoded as UTF-8 at all).

* Input from people and programs (user messages, decisions, answers, reasons, thread ids) that
  contains them is refused with :class:`~interlock.errors.InvalidText`; nothing is stored.
* Text a model or a tool produced is stored with each such character replaced by a visible
  escape (``\\u0000``, ``\\ud800``) and a note saying so, so the thread stays usable.

Numbers JSON has no value for (``NaN``, ``Infinity``, ``-Infinity``; Python's JSON parser
accepts them, and reads ``1e400`` as infinity) are treated the same way: refused in input; in
a model's tool call replaced by the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, with
``args_error`` so that the call never runs with them (stores write them as ``null``, the
signed audit row as ``NaN``: what ran, what was shown and what was signed would differ).

Thread ids: 1 to 128 characters, the first a letter or digit, the others letters, digits and
``. _ : @ -`` (ASCII only), so that an id is one safe URL path segment everywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from .errors import InvalidText
from .messages import AssistantMessage, ToolCall, ToolMessage

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
THREAD_ID_RULE = ("1 to 128 characters: a letter or digit, then letters, digits and . _ : @ - "
                  "(ASCII)")


def _storable(text: str) -> bool:
    """True when ``text`` certainly holds neither NUL nor a lone surrogate, found without the
    regular expression for the common case: an ASCII string (``isascii`` reads a flag the
    string carries) can only hold NUL, which ``in`` finds with ``memchr``."""
    return text.isascii() and "\x00" not in text


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored (its first bad character and where), or None."""
    if _storable(text):
        return None
    m = _UNSTORABLE.search(text)
    if m is None:
        return None
    ch = m.group()
    what = "a NUL character (U+0000)" if ch == "\x00" else \
        f"a lone surrogate (U+{ord(ch):04X}, half of a UTF-16 pair)"
    return f"{what} at position {m.start()}"


MAX_NESTING = 100
"""Levels of lists and objects input may hold (JSON serialisers stop far beyond what any real
decision, answer or message holds; deeper input is refused, not failed on when stored)."""


def _find(value: Any, where: str, depth: int = 0) -> tuple[str, ...] | None:
    kind = type(value)
    if kind is str or isinstance(value, str):
        problem = text_problem(value)
        return (where, f"contains {problem}") if problem else None
    if kind is int or kind is bool or value is None:
        return None
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return (where, f"is {nonfinite_name(value)}, a number JSON has no value for",
                "JSON numbers are finite: send a finite number (or a string such as \"NaN\" "
                "if the tool expects one).")
    if depth >= MAX_NESTING:
        return (where, f"is nested more than {MAX_NESTING} levels deep (lists and objects "
                       f"inside each other)", "Send flatter data.")
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if type(value) is dict or isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str) and (problem := text_problem(k)):
                return f"a key of {where}", f"contains {problem}"
            found = _find(v, f"{where}.{k}", depth + 1)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = _find(v, f"{where}[{i}]", depth + 1)
            if found:
                return found
    return None


def check_input(value: Any, where: str) -> None:
    """Refuse input containing NUL or a lone surrogate anywhere (strings, keys, nested), a
    NaN or infinite number, or nesting deeper than :data:`MAX_NESTING`."""
    found = _find(value, where)
    if found is not None:
        raise InvalidText(*found)


def check_thread_id(thread_id: str) -> None:
    """Refuse a new thread id outside the documented charset (see the module docstring)."""
    check_input(thread_id, "thread_id")
    if not THREAD_ID.fullmatch(thread_id):
        raise InvalidText("thread_id", f"{thread_id!r} is not a valid thread id",
                          f"Use {THREAD_ID_RULE}.")


def _escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def escaped(value: Any) -> tuple[Any, int]:
    """``value`` with every NUL and lone surrogate in its strings (and keys) replaced by a
    visible escape, and how many were replaced. Unchanged values are returned as they are."""
    if isinstance(value, str):
        if _storable(value) or _UNSTORABLE.search(value) is None:
            return value, 0
        return _UNSTORABLE.subn(_escape, value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        total = 0
        for k, v in value.items():
            k2, n1 = escaped(k)
            v2, n2 = escaped(v)
            out[k2] = v2
            total += n1 + n2
        return (out, total) if total else (value, 0)
    if isinstance(value, list | tuple):
        items = [escaped(v) for v in value]
        total = sum(n for _, n in items)
        if not total:
            return value, 0
        return type(value)(v for v, _ in items), total
    return value, 0


def nonfinite_name(number: float) -> str:
    """``NaN``, ``Infinity`` or ``-Infinity``: how Python's JSON writes a number JSON has
    no value for."""
    return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"


def finite(value: Any) -> tuple[Any, int]:
    """``value`` with every NaN or infinite number (at any depth) replaced by its name as a
    string (``"NaN"``, ``"Infinity"``, ``"-Infinity"``), and how many were replaced. Unchanged
    values are returned as they are."""
    if isinstance(value, float):
        return (value, 0) if math.isfinite(value) else (nonfinite_name(value), 1)
    if isinstance(value, dict):
        items = {k: finite(v) for k, v in value.items()}
        total = sum(n for _, n in items.values())
        return ({k: v for k, (v, _) in items.items()}, total) if total else (value, 0)
    if isinstance(value, list | tuple):
        pairs = [finite(v) for v in value]
        total = sum(n for _, n in pairs)
        return (type(value)(v for v, _ in pairs), total) if total else (value, 0)
    return value, 0


def escape_note(count: int) -> str:
    """The note added where model or tool output was escaped."""
    return (f"[interlock: {count} character(s) that cannot be stored (NUL or lone UTF-16 "
            f"surrogates) were replaced by escapes such as \\u0000 and \\ud800]")


def escaped_text(text: str) -> str:
    """Model or tool text, made storable: escapes plus a note when anything was replaced."""
    clean, n = escaped(text)
    return f"{clean}\n\n{escape_note(n)}" if n else text


def storable_reply(message: AssistantMessage) -> AssistantMessage:
    """A model's reply made storable. Its text gets escapes and a note; a tool call whose
    arguments needed escapes gets ``args_error``, so it is never run with arguments the model
    did not send (a reviewer may still edit it)."""
    content = escaped_text(message.content)
    calls: list[ToolCall] = []
    changed = content is not message.content
    for c in message.tool_calls:
        cid, n_id = escaped(c.id)
        name, n_name = escaped(c.name)
        args, n_args = escaped(c.args)
        args, n_num = finite(args)
        error, n_err = escaped(c.args_error)
        if n_id + n_name + n_args + n_num + n_err:
            changed = True
            notes = [error] if error else []
            if n_args:
                notes.append(f"the arguments contain {n_args} character(s) that cannot be "
                             f"stored (NUL or lone UTF-16 surrogates), shown escaped as "
                             f"\\u0000 or \\ud800; the call is not run with altered arguments")
            if n_num:
                notes.append(f"the arguments contain {n_num} number(s) JSON has no value for "
                             f"(NaN or Infinity), shown as the strings \"NaN\", \"Infinity\" "
                             f"or \"-Infinity\"; the call is not run with altered arguments")
            error = "; ".join(notes) if notes else None
            c = c.model_copy(update={"id": cid, "name": name, "args": args, "args_error": error})
        calls.append(c)
    if not changed:
        return message
    return message.model_copy(update={"content": content, "tool_calls": calls})


def storable_result(message: ToolMessage) -> ToolMessage:
    """A tool's result made storable: escapes and a note in its text."""
    content = escaped_text(message.content)
    name, n = escaped(message.name)
    if content is message.content and not n:
        return message
    return message.model_copy(update={"content": content, "name": name})
